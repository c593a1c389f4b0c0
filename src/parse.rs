//! Parsing of the value types `retry` accepts: durations, exit-code lists, signals,
//! jitter kinds and multipliers.
//!
//! Pure functions from `&str` to a value or a one-line message; the message never repeats the
//! input's flag name, because the caller (clap, or the config loader) adds where the value came
//! from. Nothing here reads the environment, files or clocks.

use std::fmt;
use std::time::Duration;

use crate::backoff::Jitter;

/// What a duration may look like, for the messages that refuse one.
const DURATION_FORMS: &str = "expected e.g. 500ms, 1.5, 1m30s, 2h (units: ms, s, m, h)";

/// The units, for a message that already says what was meant.
const DURATION_UNITS: &str = "(units: ms, s, m, h)";

/// A duration: humantime (`250ms`, `1m30s`, `2h`) or bare decimal seconds (`1.5`).
///
/// Negative, empty, NaN, exponent notation and values past `Duration::MAX` are rejected, and
/// so is humantime's `M` (months), which reads as minutes to many (`1M`).
pub fn duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(format!("empty duration; {DURATION_FORMS}"));
    }
    if text.starts_with("--") {
        return Err(format!("expected a duration, found the flag '{text}'"));
    }
    if text.starts_with('-') {
        return Err(format!("negative duration '{text}'"));
    }
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return bare_seconds(text);
    }
    if is_exponent_notation(text) {
        return Err(format!(
            "'{text}' uses exponent notation, which durations do not accept; write the digits out (1000, 0.5) or use a unit (16m40s, 500ms)"
        ));
    }
    // Units are lower case but for humantime's `M`: `1S`, `500MS`, `2H` are slips of the case.
    let lower = text.to_lowercase();
    let cased = (lower != text && humantime::parse_duration(&lower).is_ok())
        .then(|| format!("did you mean '{lower}'? {DURATION_UNITS}"));
    if text
        .split(|c: char| !c.is_alphabetic())
        .any(|unit| unit == "M")
    {
        let fix = cased.unwrap_or_else(|| DURATION_FORMS.into());
        return Err(format!(
            "duration '{text}' is ambiguous (M: a month or a minute?); {fix}"
        ));
    }
    humantime::parse_duration(text).map_err(|error| match cased {
        Some(fix) => format!("invalid duration '{text}'; {fix}"),
        None => {
            let why = match error {
                humantime::DurationError::UnknownUnit { unit, value, .. } if unit.is_empty() => {
                    format!("no unit after the last number, {value}")
                }
                humantime::DurationError::UnknownUnit { unit, .. } => {
                    format!("unknown unit '{unit}'")
                }
                humantime::DurationError::NumberOverflow => "too large".into(),
                _ => "not a number with a unit".into(),
            };
            format!("invalid duration '{text}' ({why}); {DURATION_FORMS}")
        }
    })
}

/// A duration above zero (`--reset-after`): zero would be no length at all.
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    match duration(text)? {
        Duration::ZERO => Err("0 is no length of time here; give a duration above 0".into()),
        positive => Ok(positive),
    }
}

/// The delays of `--delays`, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayList(pub Vec<Duration>);

/// A list of delays, `0,2s,5s,30s`: durations separated by commas, blanks around each allowed.
/// An empty list or an empty entry (`1s,,2s`, `1s,`) is refused.
pub fn delays(text: &str) -> Result<DelayList, String> {
    duration_list(text, "delays", "0,2s,5s,30s").map(DelayList)
}

/// The per-attempt time limits of `--timeouts`, in order; 0 is none for that attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeoutList(pub Vec<Duration>);

/// A list of time limits, `5s,30s,2m`, read as `--delays` reads its list.
pub fn timeouts(text: &str) -> Result<TimeoutList, String> {
    duration_list(text, "timeouts", "5s,30s,2m").map(TimeoutList)
}

/// Durations separated by commas, blanks around each allowed; an empty list or an empty entry
/// is refused, naming `what` the list is of and an `example` of one.
fn duration_list(text: &str, what: &str, example: &str) -> Result<Vec<Duration>, String> {
    if text.trim().is_empty() {
        return Err(format!("empty list of {what}; expected e.g. {example}"));
    }
    text.split(',')
        .enumerate()
        .map(|(i, entry)| {
            if entry.trim().is_empty() {
                return Err(format!(
                    "entry {} of '{text}' is empty; expected e.g. {example}",
                    i + 1
                ));
            }
            // `1s 2s` would read as one duration of 3s: a comma forgotten, most likely.
            if entry.trim().contains(char::is_whitespace) {
                return Err(format!(
                    "entry {} of '{text}' holds a space; separate the entries with commas, \
                     e.g. {example}",
                    i + 1
                ));
            }
            duration(entry)
        })
        .collect()
}

/// `1e3`, `1.5E-2`, `2e3ms`: a number written the way Python or C would print it.
fn is_exponent_notation(text: &str) -> bool {
    let Some((mantissa, rest)) = text.split_once(['e', 'E']) else {
        return false;
    };
    let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    let exponent_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    !mantissa.is_empty()
        && mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && mantissa.bytes().any(|b| b.is_ascii_digit())
        && exponent_digits > 0
        && rest[exponent_digits..]
            .bytes()
            .all(|b| b.is_ascii_alphabetic())
}

/// Decimal seconds with an optional fraction, exact to the nanosecond (digits past the ninth
/// decimal are dropped).
fn bare_seconds(text: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration '{text}'; {DURATION_FORMS}");
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (text, ""),
    };
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err(invalid());
    }
    let secs: u64 = if whole.is_empty() {
        0
    } else {
        whole
            .parse()
            .map_err(|_| format!("duration '{text}' is too large"))?
    };
    let mut nanos: u32 = 0;
    for (i, digit) in fraction.bytes().take(9).enumerate() {
        nanos += u32::from(digit - b'0') * 10u32.pow(8 - i as u32);
    }
    Ok(Duration::new(secs, nanos))
}

/// A set of exit statuses 0..=255, written like `1,75-78`.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct CodeSet([u128; 2]);

impl CodeSet {
    pub fn contains(&self, code: u8) -> bool {
        self.0[usize::from(code / 128)] & (1u128 << (code % 128)) != 0
    }

    pub fn insert(&mut self, code: u8) {
        self.0[usize::from(code / 128)] |= 1u128 << (code % 128);
    }

    pub fn is_empty(&self) -> bool {
        self.0 == [0, 0]
    }

    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&code| self.contains(code))
    }
}

impl fmt::Debug for CodeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// An exit-code list: comma-separated codes and inclusive ranges, e.g. `1,75-78`.
pub fn code_set(text: &str) -> Result<CodeSet, String> {
    let mut set = CodeSet::default();
    for (low, high, limit) in code_items(text)? {
        if limit.is_some() {
            return Err(format!(
                "'{text}' gives a retry limit (@N), which only --retry-on-exit takes"
            ));
        }
        for code in low..=high {
            set.insert(code);
        }
    }
    Ok(set)
}

/// A limit on the retries after attempts that ended with a code in `low..=high`: `137@1`,
/// `75-78@3`. A range shares one count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeLimit {
    pub low: u8,
    pub high: u8,
    pub retries: u64,
}

/// The list of `--retry-on-exit`: the codes that are retried, and limits on some of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetryCodes {
    pub codes: CodeSet,
    pub limits: Vec<CodeLimit>,
}

/// An exit-code list whose codes and ranges may each carry a retry limit:
/// `1,137@1,75-78@3`. `@0` is valid (never retried).
pub fn retry_codes(text: &str) -> Result<RetryCodes, String> {
    let mut list = RetryCodes::default();
    for (low, high, limit) in code_items(text)? {
        for code in low..=high {
            list.codes.insert(code);
        }
        if let Some(retries) = limit {
            list.limits.push(CodeLimit { low, high, retries });
        }
    }
    Ok(list)
}

/// The items of an exit-code list: each a code or an inclusive range, with its `@N`, if any.
fn code_items(text: &str) -> Result<Vec<(u8, u8, Option<u64>)>, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!("negative exit code in '{text}'; expected 0..255"));
    }
    let mut items = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(if text.trim().is_empty() {
                "empty exit-code list; expected e.g. 1,75-78".into()
            } else {
                format!("empty item in exit-code list '{text}'")
            });
        }
        let (codes, limit) = match item.split_once('@') {
            Some((codes, limit)) => {
                let limit = limit.trim();
                if limit.is_empty() {
                    return Err(format!(
                        "'{item}' has no number after '@'; expected a retry limit such as {}@3",
                        codes.trim()
                    ));
                }
                let limit =
                    count(limit).map_err(|error| format!("retry limit in '{item}': {error}"))?;
                (codes.trim(), Some(limit))
            }
            None => (item, None),
        };
        let (low, high) = match codes.split_once('-') {
            Some((low, high)) => (exit_code(low.trim())?, exit_code(high.trim())?),
            None => {
                let code = exit_code(codes)?;
                (code, code)
            }
        };
        if low > high {
            return Err(format!("reversed range '{codes}' in exit-code list"));
        }
        items.push((low, high, limit));
    }
    Ok(items)
}

/// A count: a whole number, 0 or more (`--retries`, `--seed`).
pub fn count(text: &str) -> Result<u64, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{text}' is not a whole number (0, 1, 2, ...)"));
    }
    text.parse()
        .map_err(|_| format!("'{text}' is too large; the most is {}", u64::MAX))
}

/// A size in bytes (`--keep-max`): a whole number, or one followed by `K`, `M` or `G` (powers
/// of 1024, `KiB`/`MiB`/`GiB` and lower case too).
pub fn size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => {
            return Err(format!(
                "'{text}' is not a size; write bytes, or a number with K, M or G (1M, 512K)"
            ));
        }
    };
    count(number)?
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("'{text}' is too large; the most is {} bytes", u64::MAX))
}

/// A count of at least 1 (`--attempts`, `--consecutive`).
pub fn positive_count(text: &str) -> Result<u64, String> {
    match count(text)? {
        0 => Err("0 is too few; the least is 1".to_string()),
        n => Ok(n),
    }
}

/// The name of a budget or a breaker: 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
pub fn fleet_name(text: &str) -> Result<String, String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_".contains(c);
    if text.is_empty() || text.len() > 64 || !text.chars().all(allowed) {
        return Err(format!(
            "invalid name '{text}'; a name is 1 to 64 of the characters A-Z a-z 0-9 . _ -"
        ));
    }
    Ok(text.to_string())
}

/// The `job` label of the metrics: any text but none.
pub fn metrics_job(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("empty job name; the metrics need a job label".into());
    }
    Ok(text.to_string())
}

/// A budget's ratio: a decimal number from 0 to 1.
pub fn ratio(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let value = decimal(text, "ratio", "a number from 0 to 1, such as 0.1")?;
    if !(0.0..=1.0).contains(&value) {
        return Err(format!("ratio '{text}' is outside 0..1"));
    }
    Ok(value)
}

/// A budget's floor, `N/DUR`: N retries (at least 1) per DUR (more than 0), e.g. `10/1m`.
pub fn budget_floor(text: &str) -> Result<(u64, Duration), String> {
    let bad = || format!("invalid floor '{text}'; expected N/DUR with N >= 1, such as 10/1m");
    let (count, window) = text.split_once('/').ok_or_else(bad)?;
    let count = positive_count(count.trim()).map_err(|_| bad())?;
    let window = duration(window).map_err(|_| bad())?;
    if window.is_zero() {
        return Err(format!(
            "invalid floor '{text}'; its window must be longer than 0"
        ));
    }
    Ok((count, window))
}

/// One exit status, 0..=255.
pub fn exit_code(text: &str) -> Result<u8, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid exit code '{text}'; expected 0..255"));
    }
    text.parse()
        .map_err(|_| format!("exit code '{text}' is outside 0..255"))
}

/// Signal names `retry` understands, without their `SIG` prefix.
const SIGNALS: &[(&str, libc::c_int)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("CHLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    ("SYS", libc::SIGSYS),
];

/// A signal by name (`TERM`, `SIGTERM`, `term`, `RTMIN+2`) or number (`15`), as `kill -l`
/// lists them.
pub fn signal(text: &str) -> Result<libc::c_int, String> {
    let unknown = || format!("unknown signal '{text}'; expected a name like TERM or a number");
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let number: libc::c_int = text.parse().map_err(|_| unknown())?;
        return if signal_name(number).is_some() {
            Ok(number)
        } else {
            Err(format!("'{text}' is not a signal number"))
        };
    }
    let upper = text.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|&(_, number)| number)
        .or_else(|| realtime_signal(name))
        .ok_or_else(|| {
            let names: Vec<&str> = SIGNALS.iter().map(|&(known, _)| known).collect();
            match suggestion(name, &names) {
                Some(hint) => format!("unknown signal '{text}'; {hint}"),
                None => unknown(),
            }
        })
}

/// `RTMIN`, `RTMIN+N`, `RTMAX` or `RTMAX-N`, within the real-time range.
fn realtime_signal(name: &str) -> Option<libc::c_int> {
    let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    let offset = |digits: &str| {
        let all_digits = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        let n: libc::c_int = digits.parse().ok().filter(|_| all_digits)?;
        (n <= max - min).then_some(n)
    };
    let number = match name {
        "RTMIN" => min,
        "RTMAX" => max,
        _ => {
            if let Some(digits) = name.strip_prefix("RTMIN+") {
                min + offset(digits)?
            } else {
                max - offset(name.strip_prefix("RTMAX-")?)?
            }
        }
    };
    Some(number)
}

/// The conventional name of a signal (`SIGTERM`, `SIGRTMIN+2`), or `None` for a number that is
/// not one.
pub fn signal_name(number: libc::c_int) -> Option<String> {
    let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    SIGNALS
        .iter()
        .find(|&&(_, known)| known == number)
        .map(|(name, _)| format!("SIG{name}"))
        .or_else(|| match number {
            n if n == min => Some("SIGRTMIN".to_string()),
            n if n > min && n <= max => Some(format!("SIGRTMIN+{}", n - min)),
            _ => None,
        })
}

/// The jitter kinds that have a name, with a line on each: for suggestions, and for completion.
pub const JITTER_KINDS: &[(&str, &str)] = &[
    ("none", "the nominal delay"),
    ("full", "uniform in [0, d]"),
    ("equal", "d/2 + uniform in [0, d/2] (the default)"),
    ("decorrelated", "min(max, uniform in [base, 3 * previous])"),
];

/// A jitter kind: `none`, `full`, `equal`, `decorrelated`, a factor in [0, 1] such as `0.2`, or
/// an addend such as `+1s`.
pub fn jitter(text: &str) -> Result<Jitter, String> {
    let text = text.trim();
    match text {
        "none" => return Ok(Jitter::None),
        "full" => return Ok(Jitter::Full),
        "equal" => return Ok(Jitter::Equal),
        "decorrelated" => return Ok(Jitter::Decorrelated),
        _ => {}
    }
    if let Some(addend) = text.strip_prefix('+') {
        return duration(addend).map(Jitter::Addend);
    }
    // A sign can only be `-`, since `+` starts an addend.
    if text.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-') {
        let factor = decimal(text, "jitter factor", "a number in [0, 1]")?;
        return if (0.0..=1.0).contains(&factor) {
            // Adding 0 turns `-0` into 0, so it is never shown with a sign.
            Ok(Jitter::Factor(factor + 0.0))
        } else {
            Err(format!("jitter factor '{text}' is outside [0, 1]"))
        };
    }
    Err(
        match suggestion(
            text,
            &JITTER_KINDS
                .iter()
                .map(|&(name, _)| name)
                .collect::<Vec<_>>(),
        ) {
            Some(hint) => format!("unknown jitter '{text}'; {hint}"),
            None => format!(
                "unknown jitter '{text}'; expected none, full, equal, decorrelated, a factor like 0.2 or an addend like +1s"
            ),
        },
    )
}

/// A growth factor: a decimal number, at least 1.
pub fn multiplier(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let value = decimal(text, "multiplier", "a number >= 1")?;
    if value < 1.0 {
        return Err(format!("multiplier '{text}' is below 1"));
    }
    Ok(value)
}

/// A number as bare seconds are written (`2`, `1.5`, `.5`, `-0.2`): decimal digits with at most
/// one point, and no exponent, so that every number `retry` takes reads one way.
fn decimal(text: &str, what: &str, expected: &str) -> Result<f64, String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if is_exponent_notation(digits) {
        let written_out = text
            .parse::<f64>()
            .ok()
            .map(|value| value.to_string())
            .filter(|value| value.len() <= 12)
            .map_or(String::new(), |value| format!(": {value}"));
        return Err(format!(
            "'{text}' uses exponent notation, which a {what} does not take; write the digits out{written_out}"
        ));
    }
    let points = digits.bytes().filter(|&b| b == b'.').count();
    if points > 1
        || !digits.bytes().any(|b| b.is_ascii_digit())
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    {
        return Err(format!("invalid {what} '{text}'; expected {expected}"));
    }
    let value: f64 = text
        .parse()
        .map_err(|_| format!("invalid {what} '{text}'; expected {expected}"))?;
    // Past f64::MAX, digits parse as infinity.
    if !value.is_finite() {
        return Err(format!("{what} '{text}' is too large"));
    }
    Ok(value)
}

/// "did you mean 'X'?" for the closest candidate within a small edit distance: two edits at
/// most (a quarter of a long word), and never more than half of the candidate's letters, so
/// that a short word is not "corrected" into an unrelated one ('FOO' is not 'IO').
pub fn suggestion(word: &str, candidates: &[&str]) -> Option<String> {
    nearest(word, candidates).map(|candidate| format!("did you mean '{candidate}'?"))
}

/// The candidate `suggestion` would offer for `word`. A word that negates (`no-retry-on-exit`,
/// `unforever`) is never led to a candidate that does not: that is its opposite. Of candidates
/// equally near, the first in `candidates` is taken.
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let close = |distance: usize, candidate: &str| {
        distance <= 2.max(candidate.len() / 4) && distance * 2 <= candidate.len()
    };
    let length = word.chars().count();
    let negation = negation(word);
    candidates
        .iter()
        .filter(|candidate| negation.is_none_or(|prefix| candidate.starts_with(prefix)))
        // The lengths' difference is a floor on the distance: a long word costs nothing.
        .filter(|candidate| close(length.abs_diff(candidate.chars().count()), candidate))
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|&(distance, candidate)| close(distance, candidate))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| *candidate)
}

/// The prefix by which `word` says "not" (`no-`, `un`, ...), if it has one.
fn negation(word: &str) -> Option<&'static str> {
    const NEGATIONS: [&str; 9] = [
        "no-", "no_", "not-", "not_", "non-", "dont-", "dont_", "disable-", "un",
    ];
    let word = word.to_ascii_lowercase();
    NEGATIONS
        .into_iter()
        .find(|prefix| word.starts_with(prefix))
}

/// The edits from `a` to `b`: a letter put in, taken out, changed, or two beside each other
/// swapped (`--delyas`), each one slip (the optimal string alignment distance).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = Vec::new();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            let mut best = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
            if i > 0 && j > 0 && *ca == b[j - 1] && a[i - 1] == *cb {
                best = best.min(before[j - 1] + 1);
            }
            current.push(best);
        }
        before = std::mem::replace(&mut previous, current);
    }
    previous[b.len()]
}

/// Why a path on the command line that begins with `~` or `~USER` is refused: no shell
/// expanded it (`--state=~/x`, a quoted word), and taken as it is it would make a directory
/// named `~` wherever the run starts. (The config file and `RETRY_STATE`, which no shell reads,
/// expand `~` themselves.)
pub(crate) fn unexpanded_tilde(path: &[u8]) -> Option<String> {
    path.starts_with(b"~").then(|| {
        "a path beginning with ~ was not expanded: a shell expands ~ only at the start of a \
         word (--flag ~/x, not --flag=~/x) and not in quotes; write $HOME/..., or ./~ for a \
         directory named ~"
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ms;

    /// A `~` that reaches `retry` was not expanded by a shell. Anything after the first byte is
    /// the path's own.
    #[test]
    fn a_leading_tilde_was_not_expanded() {
        for text in ["~", "~/x", "~bob", "~bob/x", "~~"] {
            assert!(unexpanded_tilde(text.as_bytes()).is_some(), "{text}");
        }
        for text in ["./~", "a~", "a/~/b", "/~"] {
            assert_eq!(unexpanded_tilde(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn sizes_are_bytes_or_powers_of_1024() {
        assert_eq!(size("0"), Ok(0));
        assert_eq!(size("512"), Ok(512));
        assert_eq!(size("1K"), Ok(1024));
        assert_eq!(size("1M"), Ok(1 << 20));
        assert_eq!(size("2g"), Ok(2 << 30));
        assert_eq!(size("3MiB"), Ok(3 << 20));
        for bad in ["", "M", "1.5M", "1T", "-1", "1 M x"] {
            assert!(size(bad).is_err(), "{bad}");
        }
        assert!(size("99999999999999999999G").is_err());
        assert!(size("17179869184G").is_err(), "overflow");
    }

    #[test]
    fn counts_are_whole_numbers() {
        assert_eq!(count("0"), Ok(0));
        assert_eq!(count("18446744073709551615"), Ok(u64::MAX));
        for bad in ["", "-1", "+1", "1.0", "1e3", " 1", "0x1", "١"] {
            assert_eq!(
                count(bad),
                Err(format!("'{bad}' is not a whole number (0, 1, 2, ...)")),
                "{bad:?}"
            );
        }
        assert_eq!(
            count("18446744073709551616"),
            Err("'18446744073709551616' is too large; the most is 18446744073709551615".into())
        );
        assert_eq!(positive_count("1"), Ok(1));
        assert_eq!(
            positive_count("0"),
            Err("0 is too few; the least is 1".into())
        );
        assert!(positive_count("-1").is_err());
    }

    #[test]
    fn retry_codes_carry_limits_per_code_or_range() {
        let list = retry_codes("1, 137@1,75-78@3,9@0").unwrap();
        assert_eq!(list.codes, code_set("1,137,75-78,9").unwrap());
        assert_eq!(
            list.limits,
            [
                CodeLimit {
                    low: 137,
                    high: 137,
                    retries: 1
                },
                CodeLimit {
                    low: 75,
                    high: 78,
                    retries: 3
                },
                CodeLimit {
                    low: 9,
                    high: 9,
                    retries: 0
                },
            ]
        );
        assert_eq!(retry_codes("1-3").unwrap().limits, []);
        assert_eq!(
            retry_codes("137@").unwrap_err(),
            "'137@' has no number after '@'; expected a retry limit such as 137@3"
        );
        assert!(
            retry_codes("137@x")
                .unwrap_err()
                .starts_with("retry limit in '137@x'")
        );
        assert!(retry_codes("137@-1").is_err());
        assert!(retry_codes("@3").is_err(), "a limit of no code");
        assert!(
            retry_codes("78-75@3")
                .unwrap_err()
                .contains("reversed range '78-75'")
        );
        assert_eq!(
            code_set("2,3@1").unwrap_err(),
            "'2,3@1' gives a retry limit (@N), which only --retry-on-exit takes"
        );
    }

    #[test]
    fn delay_lists_are_durations_between_commas() {
        assert_eq!(
            delays("0,2s, 1.5 ,1m30s"),
            Ok(DelayList(vec![ms(0), ms(2000), ms(1500), ms(90_000)]))
        );
        assert_eq!(delays("250ms"), Ok(DelayList(vec![ms(250)])));
        for (bad, entry) in [("1s,,2s", 2), ("1s,", 2), (",1s", 1), ("1s, ,2s", 2)] {
            assert_eq!(
                delays(bad),
                Err(format!(
                    "entry {entry} of '{bad}' is empty; expected e.g. 0,2s,5s,30s"
                ))
            );
        }
        for empty in ["", "  "] {
            assert_eq!(
                delays(empty),
                Err("empty list of delays; expected e.g. 0,2s,5s,30s".into())
            );
        }
        assert_eq!(delays("1s,-2s"), Err("negative duration '-2s'".into()));
        assert!(
            delays("1s,soon")
                .unwrap_err()
                .contains("invalid duration 'soon'")
        );
    }

    #[test]
    fn timeout_lists_are_read_as_delay_lists_are() {
        assert_eq!(
            timeouts("5s, 0,2m"),
            Ok(TimeoutList(vec![ms(5000), ms(0), ms(120_000)]))
        );
        assert_eq!(
            timeouts("1s,,2s"),
            Err("entry 2 of '1s,,2s' is empty; expected e.g. 5s,30s,2m".into())
        );
        assert_eq!(
            timeouts(" "),
            Err("empty list of timeouts; expected e.g. 5s,30s,2m".into())
        );
        assert_eq!(timeouts("-1s"), Err("negative duration '-1s'".into()));
        for spaced in ["0.2s 0.3s", "1s, 2m 3s"] {
            assert!(
                timeouts(spaced)
                    .unwrap_err()
                    .contains("holds a space; separate the entries"),
                "{spaced}"
            );
            assert!(delays(spaced).is_err(), "{spaced}");
        }
    }

    #[test]
    fn durations_in_humantime_and_bare_seconds() {
        assert_eq!(duration("250ms"), Ok(ms(250)));
        assert_eq!(duration("1s"), Ok(ms(1000)));
        assert_eq!(duration("1m30s"), Ok(ms(90_000)));
        assert_eq!(duration("2h"), Ok(ms(7_200_000)));
        assert_eq!(duration("1.5"), Ok(ms(1500)));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        assert_eq!(duration("0.000000001"), Ok(Duration::from_nanos(1)));
        assert_eq!(duration(".5"), Ok(ms(500)));
        assert_eq!(duration("3."), Ok(ms(3000)));
        assert_eq!(duration("12"), Ok(ms(12_000)));
    }

    #[test]
    fn bad_durations_are_rejected() {
        for bad in [
            "", " ", "-1", "-1s", "nan", "NaN", "inf", "1e3", "1.5e2", "1..5", ".", "abc", "1x",
            "1.2.3",
        ] {
            assert!(duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn exponent_notation_is_named_as_such() {
        for bad in ["1e3", "1E3", "1.5e2", "2e-3", "1e+2", "1.5e2s", "2e3ms"] {
            let message = duration(bad).unwrap_err();
            assert!(message.contains("exponent notation"), "{bad:?}: {message}");
        }
        for other in [
            "1x", "10sec", "e3", "1.5.5", "1me", "1e", "1es", "1xe5", "1e5 s",
        ] {
            let message = duration(other).err().unwrap_or_default();
            assert!(
                !message.contains("exponent notation"),
                "{other:?}: {message}"
            );
        }
    }

    #[test]
    fn a_unit_in_the_wrong_case_is_corrected_and_m_is_refused() {
        for (slip, fix) in [
            ("1S", "1s"),
            ("500MS", "500ms"),
            ("2H", "2h"),
            ("1Min", "1min"),
            ("1M", "1m"),
            ("1h30M", "1h30m"),
        ] {
            let message = duration(slip).unwrap_err();
            assert!(
                message.contains(&format!("did you mean '{fix}'? (units: ms, s, m, h)")),
                "{slip}: {message}"
            );
        }
        assert!(duration("1M").unwrap_err().contains("ambiguous"));
        assert!(duration("1 M").unwrap_err().contains("ambiguous"));
        assert_eq!(duration("1m"), Ok(ms(60_000)));
        assert_eq!(duration("1ms"), Ok(ms(1)));
    }

    #[test]
    fn a_duration_error_says_what_is_wrong_and_names_the_units() {
        for (bad, why) in [
            ("1x", "(unknown unit 'x')"),
            ("1mo", "(unknown unit 'mo')"),
            ("1h1", "(no unit after the last number, 1)"),
            ("1m30", "(no unit after the last number, 30)"),
            ("abc", "(not a number with a unit)"),
            ("99999999999999999999999s", "(too large)"),
            ("", "empty duration"),
            ("1..5", "invalid duration '1..5'"),
        ] {
            let message = duration(bad).unwrap_err();
            assert!(message.contains(why), "{bad}: {message}");
            assert!(
                message.ends_with("expected e.g. 500ms, 1.5, 1m30s, 2h (units: ms, s, m, h)"),
                "{bad}: {message}"
            );
        }
    }

    #[test]
    fn overflowing_durations_are_rejected() {
        assert!(duration("99999999999999999999999").is_err());
        assert!(duration("99999999999999999999999s").is_err());
        assert!(duration("18446744073709551616").is_err());
        assert!(duration("18446744073709551615").is_ok());
    }

    #[test]
    fn error_messages_are_one_line() {
        for bad in ["", "-1", "1e3", "x", "99999999999999999999999"] {
            let message = duration(bad).unwrap_err();
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[test]
    fn code_lists() {
        let set = code_set("1,75-78").unwrap();
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![1, 75, 76, 77, 78]);
        assert_eq!(code_set("0").unwrap().iter().collect::<Vec<_>>(), vec![0]);
        assert_eq!(code_set("0-255").unwrap().iter().count(), 256);
        assert!(code_set("255").unwrap().contains(255));
        assert!(!code_set("254").unwrap().contains(255));
        assert_eq!(
            code_set(" 3 , 5 ").unwrap().iter().collect::<Vec<_>>(),
            vec![3, 5]
        );
    }

    #[test]
    fn code_list_messages_name_the_fault() {
        for (bad, message) in [
            ("", "empty exit-code list; expected e.g. 1,75-78"),
            ("1,", "empty item in exit-code list '1,'"),
            ("1-", "invalid exit code ''; expected 0..255"),
            ("x", "invalid exit code 'x'; expected 0..255"),
            ("256", "exit code '256' is outside 0..255"),
            ("5-3", "reversed range '5-3' in exit-code list"),
            ("-1", "negative exit code in '-1'; expected 0..255"),
        ] {
            assert_eq!(code_set(bad), Err(message.to_string()), "{bad:?}");
        }
        assert!(CodeSet::default().is_empty());
        assert!(!code_set("0").unwrap().is_empty());
        assert!(!code_set("255").unwrap().is_empty());
    }

    #[test]
    fn leading_zeros_are_decimal() {
        // Found by the `codes` fuzz target: a sound reading, kept and pinned here.
        assert_eq!(exit_code("055"), Ok(55));
        assert_eq!(exit_code("0255"), Ok(255));
        assert!(exit_code("0256").is_err());
        assert_eq!(
            code_set("01-003").unwrap().iter().collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn bad_code_lists_are_rejected() {
        for bad in [
            "", " ", ",", "1,", ",1", "256", "-1", "1-", "-", "5-3", "a", "1.5", "1-2-3", "300-301",
        ] {
            assert!(code_set(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn signals_by_name_and_number() {
        assert_eq!(signal("TERM"), Ok(libc::SIGTERM));
        assert_eq!(signal("SIGTERM"), Ok(libc::SIGTERM));
        assert_eq!(signal("term"), Ok(libc::SIGTERM));
        assert_eq!(signal("15"), Ok(libc::SIGTERM));
        assert_eq!(signal("KILL"), Ok(libc::SIGKILL));
        assert_eq!(signal("INT"), Ok(libc::SIGINT));
        assert_eq!(signal("HUP"), Ok(libc::SIGHUP));
        assert_eq!(signal("9"), Ok(libc::SIGKILL));
        let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
        assert_eq!(signal("RTMIN"), Ok(min));
        assert_eq!(signal("sigrtmin+2"), Ok(min + 2));
        assert_eq!(signal("RTMAX"), Ok(max));
        assert_eq!(signal("RTMAX-1"), Ok(max - 1));
        assert_eq!(signal(&max.to_string()), Ok(max));
        assert_eq!(signal_name(min).as_deref(), Some("SIGRTMIN"));
        assert_eq!(signal_name(min + 2).as_deref(), Some("SIGRTMIN+2"));
        assert_eq!(signal_name(max + 1), None);
        // Every signal's name reads back as that signal, so reports and flags agree.
        for number in 1..=max {
            if let Some(name) = signal_name(number) {
                assert_eq!(signal(&name), Ok(number), "{name}");
            }
        }
        for bad in [
            "32",
            "33",
            &(max + 1).to_string(),
            "RTMIN+",
            "RTMIN-1",
            "RTMAX+1",
            &format!("RTMIN+{}", max - min + 1),
            "RTMIN+-1",
        ] {
            assert!(signal(bad).is_err(), "{bad:?} should be rejected");
        }
        for bad in [
            "",
            "0",
            "999",
            "FOO",
            "SIG",
            "-15",
            "SIGFOO",
            "99999999999999999999",
        ] {
            assert!(signal(bad).is_err(), "{bad:?} should be rejected");
        }
        assert_eq!(signal_name(libc::SIGTERM).as_deref(), Some("SIGTERM"));
        assert_eq!(signal_name(0), None);
    }

    #[test]
    fn every_named_jitter_kind_parses() {
        for (name, _) in JITTER_KINDS {
            assert!(jitter(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn jitter_kinds() {
        assert_eq!(jitter("none"), Ok(Jitter::None));
        assert_eq!(jitter("full"), Ok(Jitter::Full));
        assert_eq!(jitter("equal"), Ok(Jitter::Equal));
        assert_eq!(jitter("decorrelated"), Ok(Jitter::Decorrelated));
        assert_eq!(jitter("0.2"), Ok(Jitter::Factor(0.2)));
        assert_eq!(jitter("0"), Ok(Jitter::Factor(0.0)));
        assert_eq!(jitter("1"), Ok(Jitter::Factor(1.0)));
        assert_eq!(jitter("+1s"), Ok(Jitter::Addend(ms(1000))));
        assert_eq!(jitter("+250ms"), Ok(Jitter::Addend(ms(250))));
        assert_eq!(jitter(".2"), Ok(Jitter::Factor(0.2)));
        assert_eq!(jitter(" 0.5 "), Ok(Jitter::Factor(0.5)));
        // Numbers are decimal everywhere, as bare seconds are: no exponent.
        assert_eq!(
            jitter("2e-1"),
            Err("'2e-1' uses exponent notation, which a jitter factor does not take; write the digits out: 0.2".into())
        );
        let Ok(Jitter::Factor(zero)) = jitter("-0") else {
            panic!("-0 is a factor")
        };
        assert!(zero.is_sign_positive());
        for bad in [
            "", "1.5", "+", "+-1s", "NONE", "nan", "random", "2", "1e1", "0.2.3", ".", "-", "-inf",
            "0x1", "1_0",
        ] {
            assert!(jitter(bad).is_err(), "{bad:?} should be rejected");
        }
        for outside in ["-0.2", "1.0001", "-1"] {
            assert_eq!(
                jitter(outside),
                Err(format!("jitter factor '{outside}' is outside [0, 1]"))
            );
        }
    }

    #[test]
    fn edit_distances_and_suggestions() {
        // Two letters beside each other swapped are one slip.
        assert_eq!(edit_distance("retires", "retries"), 1);
        assert_eq!(edit_distance("delyas", "delays"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("abc", "ca"), 3);
        assert_eq!(edit_distance("base", "base"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("abcd", "abc"), 1);
        assert_eq!(edit_distance("abc", "abcd"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(suggestion("zzzzzz", &["base", "max"]), None);
        assert_eq!(suggestion("FOO", &["IO"]), None);
        // One edit in two letters is half of them: still close.
        assert_eq!(suggestion("IP", &["IO"]), Some("did you mean 'IO'?".into()));
        // A long word takes as many edits as a quarter of its letters, and no more.
        let long = ["decorrelated"];
        assert_eq!(
            suggestion("decorrxxxted", &long),
            Some("did you mean 'decorrelated'?".into())
        );
        assert_eq!(suggestion("decoxxxxated", &long), None);
        // Of candidates equally near, the first is taken, whatever their alphabetical order.
        assert_eq!(nearest("delas", &["delays", "delay"]), Some("delays"));
        assert_eq!(nearest("delas", &["delay", "delays"]), Some("delay"));
        assert_eq!(
            suggestion("retires", &["retries", "base"]),
            Some("did you mean 'retries'?".into())
        );
        assert_eq!(
            signal("TREM"),
            Err("unknown signal 'TREM'; did you mean 'TERM'?".into())
        );
        assert_eq!(
            signal("sigkil"),
            Err("unknown signal 'sigkil'; did you mean 'KILL'?".into())
        );
        assert_eq!(
            signal("FOO"),
            Err("unknown signal 'FOO'; expected a name like TERM or a number".into())
        );
        assert_eq!(
            jitter("ful"),
            Err("unknown jitter 'ful'; did you mean 'full'?".into())
        );
        assert!(
            jitter("random")
                .unwrap_err()
                .contains("expected none, full")
        );
    }

    #[test]
    fn multipliers() {
        assert_eq!(multiplier("2"), Ok(2.0));
        assert_eq!(multiplier("1"), Ok(1.0));
        assert_eq!(multiplier("1.5"), Ok(1.5));
        assert_eq!(multiplier("1000000"), Ok(1e6));
        assert_eq!(multiplier(" 1.5 "), Ok(1.5));
        assert_eq!(multiplier("2."), Ok(2.0));
        for bad in [
            "", "0.5", "0", "-2", "nan", "inf", "x", "+2", "1.2.3", "1e3", "2E0",
        ] {
            assert!(multiplier(bad).is_err(), "{bad:?} should be rejected");
        }
        // Found by the fuzzer: digits past f64::MAX parse as infinity.
        let huge = format!("1{}", "0".repeat(400));
        assert_eq!(
            multiplier(&huge),
            Err(format!("multiplier '{huge}' is too large"))
        );
        assert!(jitter(&huge).is_err());
        assert_eq!(
            multiplier("1e3"),
            Err("'1e3' uses exponent notation, which a multiplier does not take; write the digits out: 1000".into())
        );
    }

    #[test]
    fn fleet_values() {
        assert_eq!(
            fleet_name("billing-api.v2_x"),
            Ok("billing-api.v2_x".into())
        );
        assert_eq!(fleet_name(&"a".repeat(64)).map(|n| n.len()), Ok(64));
        for bad in ["", "a b", "a/b", "ä", &"a".repeat(65)] {
            assert!(fleet_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(ratio("0.1"), Ok(0.1));
        assert_eq!(ratio("1"), Ok(1.0));
        assert_eq!(ratio("0"), Ok(0.0));
        for bad in ["1.5", "-0.1", "1e-1", "x", ""] {
            assert!(ratio(bad).is_err(), "{bad:?}");
        }
        assert_eq!(budget_floor("10/1m"), Ok((10, Duration::from_secs(60))));
        assert_eq!(budget_floor("1/10s"), Ok((1, Duration::from_secs(10))));
        for bad in [
            "0/1m", "10", "10/0", "10/", "/1m", "x/1m", "10/-1s", "10/1m/2",
        ] {
            assert!(budget_floor(bad).is_err(), "{bad:?}");
        }
    }
}
