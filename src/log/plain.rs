//! Events as lines for people (`--log-format text`), without the `retry: ` prefix that the
//! logger adds.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use crate::fleet::{Notice, Transition};
use crate::http::HintSource;
use crate::outcome::AttemptEnd;
use crate::parse::signal_name;
use crate::predicate::Permanent;
use crate::stdio::Stream;
use crate::text::{human, quote, shell_words};

use super::event::{Count, Event, Family, GiveUp, HintUse, OwnFile};

/// The event's text, without the `retry: ` prefix.
pub(super) fn line(event: &Event<'_>) -> String {
    match event.family() {
        Family::Course => course_line(event),
        Family::Failure => failure_line(event),
        Family::Success => success_line(event),
        Family::Streams => streams_line(event),
        Family::Processes => processes_line(event),
        Family::Hooks => hooks_line(event),
    }
}

/// The run's course, and what the fleet limits say.
fn course_line(event: &Event<'_>) -> String {
    match *event {
        Event::Start {
            command,
            max_attempts,
            seed,
        } => start(command, max_attempts, seed),
        Event::Splay { wait } => format!("splay: first attempt in {}", human(wait)),
        Event::AttemptStart { count } => format!("attempt {} starting", of(count)),
        Event::CutByHook { next, .. } => format!(
            "the --on-retry hook used up the wait: next attempt in {}, the last before --max-time",
            human(next)
        ),
        Event::Reset { attempt, ran } => format!(
            "attempt {attempt} ran {}, at least --reset-after: the schedule and the attempt \
             limit start over",
            human(ran)
        ),
        Event::Fleet(notice) => fleet_line(notice),
        Event::HintIgnored { attempt, value } => {
            format!(
                "attempt {attempt} asked for a wait of '{value}', which is no wait retry reads; ignored"
            )
        }
        // Another family's: `line` sends none here.
        _ => String::new(),
    }
}

/// An attempt that failed or could not start, and the give-up.
fn failure_line(event: &Event<'_>) -> String {
    match *event {
        Event::AttemptFailed {
            count,
            end,
            why,
            ran,
            next,
            hint,
            reset,
            last_chance,
        } => {
            let why = why.map_or(String::new(), |why| format!("{}{why}", separator(end)));
            let last_chance = if last_chance && next.is_some() {
                ", the last before --max-time"
            } else {
                ""
            };
            let reset = if reset && next.is_some() {
                " (it ran past --reset-after: the schedule starts over)"
            } else {
                ""
            };
            format!(
                "attempt {} failed ({end}{why}) after {}{}{last_chance}{}{reset}",
                of(count),
                human(ran),
                then(next),
                asked(hint)
            )
        }
        Event::CannotStart {
            command,
            end,
            error,
        } => cannot_start(command, end, error),
        Event::GiveUp {
            reason,
            attempts,
            total,
            status,
        } => give_up(reason, attempts, total, status),
        // Another family's: `line` sends none here.
        _ => String::new(),
    }
}

/// An attempt that succeeded.
fn success_line(event: &Event<'_>) -> String {
    match *event {
        // A success under --restart is no step toward the limit: its number alone.
        Event::Restart {
            count, ran, next, ..
        } => format!(
            "attempt {} succeeded after {}; restarting in {}",
            count.attempt,
            human(ran),
            human(next)
        ),
        Event::StreakContinues {
            count,
            streak,
            needed,
            next,
            ..
        } => {
            format!(
                "attempt {} succeeded ({streak} of {needed} in a row){}",
                of(count),
                then(next)
            )
        }
        Event::Success {
            count,
            ran,
            total,
            not_restarting,
            ..
        } => match not_restarting {
            None => format!(
                "attempt {} succeeded after {}; done in {}",
                of(count),
                human(ran),
                human(total)
            ),
            Some(why) => format!(
                "attempt {} succeeded after {}; not restarting: {}; done in {}",
                count.attempt,
                human(ran),
                give_up_why(why, count.attempt).trim_end_matches("; not retrying"),
                human(total)
            ),
        },
        // Another family's: `line` sends none here.
        _ => String::new(),
    }
}

/// `retry`'s own streams and files.
fn streams_line(event: &Event<'_>) -> String {
    match *event {
        Event::StdinShared => {
            "stdin is a pipe: later attempts see only what earlier ones left unread; \
             use --stdin replay to give every attempt the same input"
                .to_string()
        }
        Event::FailedOutput { attempt, end } => format!("output of attempt {attempt} ({end}):"),
        Event::Unwritten { file, path, error } => format!(
            "cannot write the {} {}: {error}; the run's status stands",
            match file {
                OwnFile::Metrics => "metrics file",
                OwnFile::Report => "report",
            },
            crate::text::path(path)
        ),
        Event::SpillFailed { stream, error } => {
            let what = match stream {
                Stream::Stdin => "replayed stdin",
                _ => "held stdout",
            };
            format!("{error}; keeping {what} in memory instead")
        }
        Event::HoldFull { stream } => {
            let what = match stream {
                Stream::Stdin => "replayed stdin",
                Stream::Stdout => "held stdout",
                Stream::Stderr => "held stderr",
            };
            format!(
                "cannot keep more of the {what}: {}; the command waits for it until it ends or \
                 its time is up",
                HOLD_FULL
            )
        }
        Event::WriteFailed { stream, error } => {
            format!("cannot write to {stream}: {error}; the command's output to it is lost")
        }
        Event::ReadFailed { error } => {
            format!("cannot read stdin: {error}; the attempts get only what was read before")
        }
        // Another family's: `line` sends none here.
        _ => String::new(),
    }
}

/// Signals and processes.
fn processes_line(event: &Event<'_>) -> String {
    match *event {
        Event::TerminalStop { attempt, signal } => format!(
            "attempt {attempt} is stopped ({}): it used the terminal from its own process \
             group; use --foreground for commands that read the terminal",
            signal_words(signal)
        ),
        Event::Sweep {
            cgroup: Some(parent),
        } => format!(
            "each attempt runs in a cgroup of its own, below {}: what a timed-out or \
             interrupted attempt leaves is ended by cgroup.kill",
            quote(parent.as_os_str())
        ),
        Event::Sweep { cgroup: None } => "attempts run without a cgroup of their own (none \
             can be made here, or the run has no time limit): what a timed-out or interrupted \
             attempt leaves is looked for in /proc"
            .to_string(),
        Event::Relayed { attempt, signal } => {
            format!("passed {} on to attempt {attempt}", signal_words(signal))
        }
        Event::Interrupted { signal } => format!("stopped by {}", signal_words(signal)),
        // Another family's: `line` sends none here.
        _ => String::new(),
    }
}

/// Hooks.
fn hooks_line(event: &Event<'_>) -> String {
    match *event {
        Event::HookFailed { kind, end } => format!("{} hook failed ({end})", kind.flag()),
        Event::HookValuesSkipped {
            line: Some(line),
            error,
            count,
        } => {
            let more = match count {
                0 | 1 => String::new(),
                2 => " (and 1 line more)".to_string(),
                n => format!(" (and {} lines more)", n - 1),
            };
            format!("--on-retry: line {line} of RETRY_ENV_FILE skipped: {error}{more}")
        }
        Event::HookValuesSkipped {
            line: None, error, ..
        } => format!("--on-retry: its RETRY_ENV_FILE is not read: {error}"),
        // Another family's: `line` sends none here.
        _ => String::new(),
    }
}

fn start(command: &[OsString], max_attempts: Option<u64>, seed: u64) -> String {
    let limit = match max_attempts {
        Some(1) => "1 attempt".to_string(),
        Some(n) => format!("up to {n} attempts"),
        None => "no attempt limit".to_string(),
    };
    format!("running {} ({limit}, seed {seed})", shell_words(command))
}

/// Where a wait came from, when a hint made it longer than the schedule's.
fn asked(hint: Option<HintUse>) -> &'static str {
    match hint {
        Some(HintUse {
            lengthened: true,
            source,
            ..
        }) => match source {
            HintSource::RetryAfter => ", as Retry-After asked",
            HintSource::Command => ", as the command asked",
        },
        _ => "",
    }
}

fn give_up(reason: GiveUp<'_>, attempts: u64, total: Duration, status: u8) -> String {
    let after = match attempts {
        0 => "before the first attempt".to_string(),
        1 => format!("after 1 attempt in {}", human(total)),
        n => format!("after {n} attempts in {}", human(total)),
    };
    let why = give_up_why(reason, attempts);
    format!("giving up {after}: {why} (exit status {status})")
}

/// `; next attempt in 1.5s` when a wait follows, else nothing.
fn then(next: Option<Duration>) -> String {
    next.map_or(String::new(), |next| {
        format!("; next attempt in {}", human(next))
    })
}

/// `3/6`, or `3` when there is no attempt limit; after a reset, `9 (3/6 since attempt 6)`.
fn of(count: Count) -> String {
    match count.max_attempts {
        Some(max) if count.limit_from == 0 => format!("{}/{max}", count.attempt),
        Some(max) => format!(
            "{} ({}/{max} since attempt {})",
            count.attempt,
            count.attempt - count.limit_from,
            count.limit_from
        ),
        None => count.attempt.to_string(),
    }
}

/// Why a run gave up, in words.
fn give_up_why(reason: GiveUp<'_>, attempts: u64) -> String {
    match reason {
        GiveUp::Budget(name) => format!("budget '{name}' is spent; not retrying"),
        GiveUp::Breaker { name, next_probe } => format!(
            "breaker '{name}' is open; next probe in {}",
            human(whole_seconds(next_probe))
        ),
        GiveUp::Exhausted => "no retries left".to_string(),
        GiveUp::Permanent(Permanent::StopOnExit) => {
            "permanent failure, by --stop-on-exit".to_string()
        }
        GiveUp::Permanent(Permanent::NotInRetryOnExit) => {
            "permanent failure, not in --retry-on-exit".to_string()
        }
        GiveUp::Permanent(Permanent::CannotStart) => {
            "permanent failure, the command cannot be started".to_string()
        }
        GiveUp::Permanent(Permanent::StopIf) => {
            "permanent failure, a --stop-if line matched".to_string()
        }
        GiveUp::Permanent(Permanent::RetryLimit(limit)) => {
            let codes = if limit.low == limit.high {
                limit.low.to_string()
            } else {
                format!("{}-{}", limit.low, limit.high)
            };
            format!(
                "permanent failure, the retries that --retry-on-exit {codes}@{} allows are used up",
                limit.retries
            )
        }
        GiveUp::Permanent(Permanent::HttpStatus(status)) => {
            format!("permanent failure, HTTP {status}")
        }
        GiveUp::MaxTime => "--max-time reached".to_string(),
        GiveUp::LastChanceUsed => "that was the last attempt --max-time left time for".to_string(),
        GiveUp::MaxTimeAhead { wait } if attempts == 0 => {
            format!("the splay of {} would end past --max-time", human(wait))
        }
        GiveUp::MaxTimeAhead { wait } => format!(
            "the next attempt, due in {}, would start past --max-time",
            human(wait)
        ),
    }
}

/// What the fleet limits say, in a line.
fn fleet_line(notice: &Notice) -> String {
    match notice {
        Notice::StateUnavailable { error } => {
            format!("state unavailable ({error}); going on without budget and breaker")
        }
        Notice::Replaced { name } => format!("state of '{name}': {}", REPLACED),
        Notice::Budget {
            name,
            spent: true,
            balance,
        } => format!("budget '{name}' pays for a retry; balance left {balance:.2}"),
        Notice::Budget { name, balance, .. } => {
            format!("budget '{name}' cannot pay for a retry (balance {balance:.2})")
        }
        Notice::Probe { name } => format!("this attempt is breaker '{name}''s probe"),
        Notice::Breaker {
            name,
            transition,
            next_probe,
        } => {
            let next = next_probe.map_or(String::new(), |d| {
                format!("; next probe in {}", human(whole_seconds(d)))
            });
            match transition {
                Transition::Opened { .. } => format!("breaker '{name}' opened{next}"),
                Transition::Reopened { .. } => {
                    format!("breaker '{name}': the probe failed, open again{next}")
                }
                Transition::Closed => format!("breaker '{name}' closed"),
            }
        }
    }
}

/// What a corrupt record's replacement is said as.
pub(super) const REPLACED: &str = "the state did not parse; replaced by a fresh one";

/// Why a held or replayed stream is read no more.
pub(super) const HOLD_FULL: &str =
    "no temporary file takes it and 64 MiB are held in memory already: it is read no more";

/// `d` rounded up to whole seconds, from a second on (when the next probe is due is a matter
/// of seconds; `59.992s` says more than anyone asked): a time to come never reads shorter.
pub(super) fn whole_seconds(d: Duration) -> Duration {
    if d < Duration::from_secs(1) {
        return d;
    }
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// Shell builtins and keywords that are no program of their own, for the hint below.
const SHELL_ONLY: &[&str] = &[
    ".", "[[", "alias", "bg", "builtin", "case", "cd", "declare", "eval", "exec", "exit", "export",
    "fg", "for", "function", "hash", "help", "history", "if", "jobs", "let", "local", "read",
    "return", "set", "shopt", "source", "trap", "type", "ulimit", "umask", "unset", "until",
    "wait", "while",
];

/// The line for a command that cannot be started, as a run says it and `--dry-run` foresees it.
pub(crate) fn cannot_start(command: &OsStr, end: AttemptEnd, error: &str) -> String {
    let line = format!("cannot run {}: {error} ({end})", quote(command));
    match not_found_hint(command, end) {
        Some(hint) => format!("{line}; {hint}"),
        None => line,
    }
}

/// What to try when COMMAND was not found because it is something else than a program: shell
/// syntax, a whole command line, a URL, or an attempt count.
fn not_found_hint(command: &OsStr, end: AttemptEnd) -> Option<String> {
    if end != AttemptEnd::NotFound {
        return None;
    }
    let name = command.as_bytes();
    // `retry 3 curl ...`: the number meant as a limit (a program named `3` would have run);
    // `retry 0 ...` as no retries, since no run has 0 attempts.
    if !name.is_empty() && name.iter().all(u8::is_ascii_digit) {
        let n = command.to_str()?;
        let flag = if name.iter().all(|&digit| digit == b'0') {
            "--retries"
        } else {
            "--attempts"
        };
        return Some(format!("did you mean {flag} {n}?"));
    }
    // `retry 'curl -fsS https://x/y'`: a whole command line given as one word. Its first word
    // names a program, by name or by a path to a file; a file name with a space in it
    // (`./my script`, not found) does not.
    if let Some(blank) = name.iter().position(u8::is_ascii_whitespace) {
        let first = &name[..blank];
        let program = !first.is_empty()
            && (!first.contains(&b'/') || Path::new(OsStr::from_bytes(first)).is_file());
        return program
            .then(|| "for a command line, give its words apart or use sh -c '...'".into());
    }
    // `retry https://x/y`: a URL where the program that fetches it goes.
    if name.windows(3).any(|three| three == b"://") {
        return Some("a URL is not a program: name one that fetches it (curl -fsS URL)".into());
    }
    let name = command.to_str()?;
    SHELL_ONLY
        .contains(&name)
        .then(|| format!("'{name}' is part of the shell, not a program: use sh -c '...'"))
}

/// What joins an attempt's end to why it failed: a start failure's reason is the system's
/// error, which explains the end itself.
fn separator(end: AttemptEnd) -> &'static str {
    match end {
        AttemptEnd::NotFound | AttemptEnd::NotExecutable | AttemptEnd::SpawnFailed => ": ",
        _ => "; ",
    }
}

/// A signal in a sentence: its name, or `signal 34` when it has none.
fn signal_words(signal: i32) -> String {
    signal_name(signal).unwrap_or_else(|| format!("signal {signal}"))
}
