//! Debian's `retry` command line (minfrin/retry, 1.0.5 in Debian 12), which this project's .deb
//! replaces: its five options (`-t/--times`, `-d/--delay`, `-u/--until`, `-w/--while`,
//! `-m/--message`) as values, their parsers, how they sit among the config file's keys, and
//! the defaults such a command line leaves unsaid.
//!
//! Pure: it reads values and what a command line gives, never a process, a file or the
//! environment. `cli` declares the options with these parsers; `settings` asks `defaults` what
//! a Debian command line means where it is silent; `config` asks which of the file's keys an
//! option replaces. The differential test (`tests/integration/debian.rs`) holds this reading to
//! the real binary.

use std::time::Duration;

use crate::outcome::AttemptEnd;
use crate::parse::{self, CodeSet};

/// The long names of the five options: on the command line only, never config keys.
pub const OPTIONS: &[&str] = &["times", "delay", "until", "while", "message"];

/// `-t N`: the attempts in all, or none (`-1`, Debian's "for ever").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Times {
    Attempts(u64),
    Unlimited,
}

/// `-t`/`--times`: a count of attempts from 1, or `-1` for no limit. Debian's 1.0.5 runs
/// nothing and exits 0 for `0`: surely a slip, so it is misuse here.
pub fn times(text: &str) -> Result<Times, String> {
    match text.trim() {
        "-1" => Ok(Times::Unlimited),
        "0" => {
            Err("0 would run the command no time at all; the least is 1 (-1 is no limit)".into())
        }
        // A sign, as strtol(3) (Debian's reading) takes one.
        count => parse::positive_count(count.strip_prefix('+').unwrap_or(count))
            .map(Times::Attempts)
            .map_err(|_| {
                format!("'{text}' is not a number of attempts (1, 2, ...; -1 is no limit)")
            }),
    }
}

/// The waits `-d` gives when it is not given: Debian's 10 seconds, for ever.
pub const DEFAULT_DELAY: Duration = Duration::from_secs(10);

/// The statuses that `-u` or `-w` name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Criteria {
    /// `-u` (repeat until one holds); else `-w` (repeat while one holds).
    pub until: bool,
    /// Every status one of the entries holds for.
    pub holds: CodeSet,
    /// The statuses an entry names by its number or range (not by a word): only these can
    /// hold for a command that cannot be started, which is otherwise not retried.
    pub named: CodeSet,
}

/// The words of a criterion, each with the statuses it holds for. Any non-empty prefix of one
/// stands for it (`s`, `fa`), as Debian's reads them; `f` and `fa` fit both `fail` and `false`,
/// which mean the same.
const WORDS: &[(&str, bool)] = &[
    ("success", true),
    ("true", true),
    ("fail", false),
    ("false", false),
];

/// `-u`/`-w`: comma-separated criteria, each `success`/`true` (status 0), `fail`/`false` (any
/// other), a prefix of one of these, a status `N` or a range `N-M`. Every entry counts (Debian's
/// 1.0.5 reads only the first). An empty list or entry, a word that fits none, a reversed range
/// or a status outside 0..255 is refused, as in an exit-code list.
pub fn criteria(text: &str) -> Result<Criteria, String> {
    if text.trim().is_empty() {
        return Err("empty list of criteria; expected e.g. success, fail, 1, 75-78".into());
    }
    let mut criteria = Criteria::default();
    for (i, entry) in text.split(',').enumerate() {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(format!("entry {} of '{text}' is empty", i + 1));
        }
        if entry.starts_with(|c: char| c.is_ascii_digit()) {
            if entry.contains('@') {
                return Err(format!(
                    "'{entry}' is no criterion; a criterion is success, fail, a status or a range"
                ));
            }
            let set = parse::code_set(entry)?;
            for code in set.iter() {
                criteria.holds.insert(code);
                criteria.named.insert(code);
            }
            continue;
        }
        let success = WORDS
            .iter()
            .find(|(word, _)| word.starts_with(entry))
            .map(|&(_, success)| success)
            .ok_or_else(|| {
                format!(
                    "'{entry}' is no criterion; expected success, true, fail, false (or the start \
                     of one), a status or a range such as 75-78"
                )
            })?;
        for code in 0..=255u8 {
            if (code == 0) == success {
                criteria.holds.insert(code);
            }
        }
    }
    Ok(criteria)
}

/// What an attempt's end means under the criteria.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// The criteria are met: the run ends, as a success.
    Met,
    /// Repeat the command.
    Repeat,
    /// The command cannot be started, and no criterion names its status: not retried.
    CannotStart,
}

impl Criteria {
    /// The meaning of an attempt that ended with `end`, judged by its status as `retry`
    /// reports it (124 for a timeout, 128 + N for a signal death).
    pub fn meaning(&self, end: AttemptEnd) -> Meaning {
        let status = end.status();
        if end.could_not_start() && !self.named.contains(status) {
            return Meaning::CannotStart;
        }
        if self.holds.contains(status) == self.until {
            Meaning::Met
        } else {
            Meaning::Repeat
        }
    }
}

/// What a command line gives, among the settings that Debian's defaults stand in for: each
/// `true` when given in any layer (the command line or a table of the config file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExplicitChoices {
    /// One of the five options.
    pub debian: bool,
    /// `-t`, `--retries`, `--attempts` or `--forever`.
    pub limit: bool,
    /// `--backoff ethernet`, which has its own limit.
    pub ethernet: bool,
    /// `-d`, `--delays`, `--base`, `--backoff`, `--multiplier`, `--jitter` or `--max`.
    pub schedule: bool,
    /// `--hold-stdout` or `--failed-output`.
    pub output: bool,
    /// `--stdin`.
    pub stdin: bool,
}

/// Debian's defaults for what a command line with one of its options leaves unsaid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Defaults {
    /// No attempt limit.
    pub forever: bool,
    /// The waits, without jitter: Debian's 10 s.
    pub delays: Option<Vec<Duration>>,
    /// stdout passed on "once and once only": the stdout of the attempt that met the
    /// criteria goes to stdout, every other attempt's (the last of a run that gave up
    /// included) to stderr.
    pub stdout_once: bool,
    /// stdin captured and replayed to every attempt.
    pub stdin_replay: bool,
}

/// The defaults that stand in for what `given` leaves unsaid: Debian's when one of its options
/// is given, else none (`retry`'s own then hold).
pub fn defaults(given: ExplicitChoices) -> Defaults {
    if !given.debian {
        return Defaults::default();
    }
    Defaults {
        forever: !given.limit && !given.ethernet,
        delays: (!given.schedule).then(|| vec![DEFAULT_DELAY]),
        stdout_once: !given.output,
        stdin_replay: !given.stdin,
    }
}

/// The flags (as clap names them) that decide an attempt's verdict: `-u` and `-w` are misuse
/// with any of them, and on the command line they replace the config file's.
pub const VERDICT_FLAGS: [&str; 10] = [
    "invert",
    "retry_on_exit",
    "stop_on_exit",
    "until_stdout",
    "until_stderr",
    "retry_if_stdout",
    "retry_if_stderr",
    "http",
    "consecutive",
    "restart",
];

/// The config keys that option `long` (one of `OPTIONS`, as given on the command line) stands
/// for when the layers are merged: `-t` is a spelling of the attempt limit, `-d` of the list
/// of delays, `-m` of `--label`, and `-u`/`-w` replace the file's verdict keys.
pub fn keys_replaced(long: &str) -> Vec<String> {
    match long {
        "times" => vec!["attempts".into()],
        "delay" => vec!["delays".into()],
        "message" => vec!["label".into()],
        "until" | "while" => VERDICT_FLAGS
            .iter()
            .map(|id| id.replace('_', "-"))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(text: &str) -> Vec<u8> {
        criteria(text).unwrap().holds.iter().collect()
    }

    #[test]
    fn times_is_a_count_or_minus_one() {
        assert_eq!(times("+3"), Ok(Times::Attempts(3)));
        assert!(times("+").is_err() && times("++3").is_err() && times("+-3").is_err());
        assert_eq!(times("3"), Ok(Times::Attempts(3)));
        assert_eq!(times("-1"), Ok(Times::Unlimited));
        for bad in ["0", "-2", "", "x", "1.5", "3s"] {
            assert!(times(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn words_and_their_prefixes() {
        let fail: Vec<u8> = (1..=255).collect();
        for word in ["success", "succ", "s", "true", "tr", "t"] {
            assert_eq!(holds(word), [0], "{word}");
        }
        for word in ["fail", "fa", "f", "false", "fals"] {
            assert_eq!(holds(word), fail, "{word}");
        }
        for bad in [
            "successes",
            "yes",
            "S",
            "x",
            "-1",
            "1x",
            "256",
            "5-3",
            "1@2",
            "",
            ",",
            "1,",
        ] {
            assert!(criteria(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_entry_counts() {
        assert_eq!(holds("1,3-4,success"), [0, 1, 3, 4]);
        let c = criteria("fail,127").unwrap();
        assert_eq!(c.named.iter().collect::<Vec<_>>(), [127]);
    }

    #[test]
    fn a_command_that_cannot_start_is_judged_only_by_a_status_named() {
        let until = |text: &str| Criteria {
            until: true,
            ..criteria(text).unwrap()
        };
        let during = |text: &str| criteria(text).unwrap();
        assert_eq!(
            until("fail").meaning(AttemptEnd::NotFound),
            Meaning::CannotStart
        );
        assert_eq!(until("127").meaning(AttemptEnd::NotFound), Meaning::Met);
        assert_eq!(during("127").meaning(AttemptEnd::NotFound), Meaning::Repeat);
        assert_eq!(
            during("126").meaning(AttemptEnd::NotExecutable),
            Meaning::Repeat
        );
        assert_eq!(
            during("fail").meaning(AttemptEnd::NotFound),
            Meaning::CannotStart
        );
        assert_eq!(until("s").meaning(AttemptEnd::Exited(0)), Meaning::Met);
        assert_eq!(until("s").meaning(AttemptEnd::Exited(1)), Meaning::Repeat);
        assert_eq!(during("s").meaning(AttemptEnd::Exited(0)), Meaning::Repeat);
        assert_eq!(during("1").meaning(AttemptEnd::Exited(2)), Meaning::Met);
        assert_eq!(
            until("124").meaning(AttemptEnd::TimedOut(crate::outcome::Limit::Attempt)),
            Meaning::Met
        );
        assert_eq!(until("137").meaning(AttemptEnd::Signaled(9)), Meaning::Met);
    }

    #[test]
    fn debians_defaults_stand_in_only_for_what_is_not_given() {
        assert_eq!(defaults(ExplicitChoices::default()), Defaults::default());
        let debian = ExplicitChoices {
            debian: true,
            ..ExplicitChoices::default()
        };
        assert_eq!(
            defaults(debian),
            Defaults {
                forever: true,
                delays: Some(vec![DEFAULT_DELAY]),
                stdout_once: true,
                stdin_replay: true,
            }
        );
        let given = ExplicitChoices {
            limit: true,
            schedule: true,
            output: true,
            stdin: true,
            ..debian
        };
        assert_eq!(defaults(given), Defaults::default());
        let ethernet = ExplicitChoices {
            ethernet: true,
            schedule: true,
            ..debian
        };
        assert!(!defaults(ethernet).forever);
    }
}
