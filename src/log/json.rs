//! Events as JSON lines, for `--log-format json`: each event is one or two objects, typed
//! structs whose fields are the documented ones in their documented order, rendered by
//! serde_json with the event's name and the time of writing in front.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use serde::{Serialize, Serializer};

use crate::outcome::AttemptEnd;
use crate::parse::signal_name;
use crate::settings::HookKind;

use super::event::{Count, Event, Family, HintUse, OwnFile};
use super::plain::{HOLD_FULL, REPLACED};
use crate::fleet::{BreakerShown, BudgetState, Notice, Transition};

/// One line of the log: the event's name and time, then its own fields.
#[derive(Serialize)]
struct Line<'a> {
    event: &'static str,
    time: &'a str,
    /// `--label` or `-m`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    #[serde(flatten)]
    fields: &'a Fields<'a>,
}

/// The event as JSON: one object per line (two when an attempt ended and another follows, or
/// the run succeeded).
/// `label` is `--label`'s text; `last_status_exits` says that `retry` exits with the last
/// attempt's status, success included (Debian's `-u`/`-w`), which the `success` event then
/// gives as its `exit_code`.
pub(super) fn lines(event: &Event<'_>, label: Option<&str>, last_status_exits: bool) -> String {
    let time = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    objects(event, last_status_exits)
        .iter()
        .map(|(event, fields)| {
            let line = Line {
                event,
                time: &time,
                label,
                fields,
            };
            // Maps of strings, numbers and options: nothing here can fail to serialize.
            without_c1(&serde_json::to_string(&line).unwrap_or_default()) + "\n"
        })
        .collect()
}

/// `json` with its C1 control characters escaped too (`\u009b`), as JSON allows but does not
/// ask: a terminal that shows a log line may take U+009B for the start of an escape.
fn without_c1(json: &str) -> String {
    if !json.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)) {
        return json.to_string();
    }
    json.chars()
        .map(|c| match c {
            '\u{80}'..='\u{9f}' => format!("\\u{:04x}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

/// One object's fields, as one of the shapes below.
#[derive(Serialize)]
#[serde(untagged)]
enum Fields<'a> {
    Start(Start<'a>),
    Delay(Delay),
    AttemptStart(AttemptStart),
    Attempt(AttemptFields),
    Retry(Retry),
    Reset(Reset),
    HintIgnored(HintIgnored<'a>),
    Success(Success),
    GiveUp(GiveUpFields),
    CannotStart(CannotStart<'a>),
    StateUnavailable(StateUnavailable<'a>),
    Budget(Budget<'a>),
    Breaker(Breaker<'a>),
    Message(Message),
    Stream(StreamFailure<'a>),
    Signal(AttemptSignal),
    Hook(HookFailedFields),
    HookValues(HookValuesFields<'a>),
    Interrupted(InterruptedFields),
    FailedOutput(FailedOutputFields),
    Unwritten(FileFailure<'a>),
}

#[derive(Serialize)]
struct Start<'a> {
    command: Vec<Cow<'a, str>>,
    max_attempts: Option<u64>,
    seed: u64,
}

#[derive(Serialize)]
struct Delay {
    delay_ms: Millis,
}

#[derive(Serialize)]
struct AttemptStart {
    attempt: u64,
    max_attempts: Option<u64>,
}

#[derive(Serialize)]
struct AttemptFields {
    attempt: u64,
    max_attempts: Option<u64>,
    exit_code: u8,
    signal: Option<String>,
    timed_out: bool,
    duration_ms: u64,
    outcome: &'static str,
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    streak: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    needed: Option<u64>,
}

#[derive(Serialize)]
struct Retry {
    attempt: u64,
    delay_ms: Millis,
    hint_ms: Option<Millis>,
    /// The wait was shortened so that this attempt, the last, starts before `--max-time`.
    last_chance: bool,
}

#[derive(Serialize)]
struct Reset {
    attempt: u64,
    ran_ms: u64,
}

#[derive(Serialize)]
struct HintIgnored<'a> {
    attempt: u64,
    value: &'a str,
}

#[derive(Serialize)]
struct Success {
    attempt: u64,
    exit_code: u8,
    duration_ms: u64,
    reason: Option<&'static str>,
}

#[derive(Serialize)]
struct GiveUpFields {
    attempts: u64,
    reason: &'static str,
    exit_code: u8,
    duration_ms: u64,
}

#[derive(Serialize)]
struct CannotStart<'a> {
    // `program`, not `command`: `start` has `command` as the whole argument list.
    program: Cow<'a, str>,
    exit_code: u8,
    error: &'a str,
}

#[derive(Serialize)]
struct StateUnavailable<'a> {
    name: Option<&'a str>,
    error: &'a str,
}

#[derive(Serialize)]
struct Budget<'a> {
    name: &'a str,
    decision: &'static str,
    balance: Decimal,
}

#[derive(Serialize)]
struct Breaker<'a> {
    name: &'a str,
    transition: &'static str,
    next_probe_ms: Option<WholeMillis>,
}

#[derive(Serialize)]
struct Message {
    message: String,
}

/// A stream `retry` could not spill, read or write.
#[derive(Serialize)]
struct StreamFailure<'a> {
    stream: &'a str,
    error: &'a str,
}

/// A signal that concerned the running attempt.
#[derive(Serialize)]
struct AttemptSignal {
    attempt: u64,
    signal: String,
}

#[derive(Serialize)]
struct HookFailedFields {
    hook: &'static str,
    exit_code: u8,
    timed_out: bool,
}

#[derive(Serialize)]
struct HookValuesFields<'a> {
    line: Option<usize>,
    error: &'a str,
    skipped: usize,
}

#[derive(Serialize)]
struct InterruptedFields {
    signal: String,
    exit_code: u64,
}

#[derive(Serialize)]
struct FailedOutputFields {
    attempt: u64,
    exit_code: u8,
    timed_out: bool,
}

#[derive(Serialize)]
struct FileFailure<'a> {
    path: Cow<'a, str>,
    error: &'a str,
}

/// Milliseconds with microsecond precision (`250.5`).
#[derive(Clone, Copy)]
struct Millis(Duration);

impl Serialize for Millis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0.as_micros() as f64 / 1000.0)
    }
}

/// A duration in whole milliseconds, rounded up (a time still to come never reads shorter):
/// for the fleet's windows and probes, which no one needs to the microsecond.
#[derive(Clone, Copy)]
struct WholeMillis(Duration);

impl Serialize for WholeMillis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let millis = self.0.as_nanos().div_ceil(1_000_000);
        serializer.serialize_u64(u64::try_from(millis).unwrap_or(u64::MAX))
    }
}

/// A number to three decimal places (a budget's balance); null when it is no number.
#[derive(Clone, Copy)]
struct Decimal(f64);

impl Serialize for Decimal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            serializer.serialize_f64((self.0 * 1000.0).round() / 1000.0)
        } else {
            serializer.serialize_none()
        }
    }
}

/// A signal as a JSON or `--report` value: its name (`SIGTERM`), or its number when it has none.
pub(crate) fn signal_value(signal: i32) -> String {
    signal_name(signal).unwrap_or_else(|| signal.to_string())
}

pub(crate) fn timed_out(end: AttemptEnd) -> bool {
    matches!(end, AttemptEnd::TimedOut(_))
}

/// An event's objects, each with its event name, in the order written.
type Objects<'a> = Vec<(&'static str, Fields<'a>)>;

/// The event's objects, by its family (`Event::family`).
fn objects<'a>(event: &'a Event<'a>, last_status_exits: bool) -> Objects<'a> {
    match event.family() {
        Family::Course => course_objects(event),
        Family::Failure => failure_objects(event),
        Family::Success => success_objects(event, last_status_exits),
        Family::Streams => streams_objects(event),
        Family::Processes => processes_objects(event),
        Family::Hooks => hooks_objects(event),
    }
}

/// The run's course, and what the fleet limits say.
fn course_objects<'a>(event: &'a Event<'a>) -> Objects<'a> {
    match *event {
        Event::Start {
            command,
            max_attempts,
            seed,
        } => vec![(
            "start",
            Fields::Start(Start {
                command: command.iter().map(|word| word.to_string_lossy()).collect(),
                max_attempts,
                seed,
            }),
        )],
        Event::Splay { wait } => vec![(
            "splay",
            Fields::Delay(Delay {
                delay_ms: Millis(wait),
            }),
        )],
        Event::AttemptStart { count } => vec![(
            "attempt-start",
            Fields::AttemptStart(AttemptStart {
                attempt: count.attempt,
                max_attempts: count.max_attempts,
            }),
        )],
        Event::CutByHook { attempt, next } => vec![(
            "retry",
            Fields::Retry(Retry {
                attempt,
                delay_ms: Millis(next),
                hint_ms: None,
                last_chance: true,
            }),
        )],
        Event::Reset { attempt, ran } => vec![(
            "reset",
            Fields::Reset(Reset {
                attempt,
                ran_ms: ran.as_millis() as u64,
            }),
        )],
        Event::Fleet(notice) => vec![fleet_object(notice)],
        Event::HintIgnored { attempt, value } => vec![(
            "hint-ignored",
            Fields::HintIgnored(HintIgnored { attempt, value }),
        )],
        // Another family's: `objects` sends none here.
        _ => Vec::new(),
    }
}

/// An attempt that failed or could not start, and the give-up.
fn failure_objects<'a>(event: &'a Event<'a>) -> Objects<'a> {
    match *event {
        Event::AttemptFailed {
            count,
            end,
            why,
            ran,
            next,
            hint,
            reset: _,
            last_chance,
        } => {
            let attempt = attempt(count, end, ran, "failure", why.map(|why| why.to_string()));
            with_retry(attempt, count.attempt, next, hint, last_chance)
        }
        Event::CannotStart {
            command,
            end,
            error,
        } => vec![(
            "cannot-start",
            Fields::CannotStart(CannotStart {
                program: command.to_string_lossy(),
                exit_code: end.status(),
                error,
            }),
        )],
        Event::GiveUp {
            reason,
            attempts,
            total,
            status,
        } => vec![(
            "give-up",
            Fields::GiveUp(GiveUpFields {
                attempts,
                reason: reason.ending().name(),
                exit_code: status,
                duration_ms: total.as_millis() as u64,
            }),
        )],
        // Another family's: `objects` sends none here.
        _ => Vec::new(),
    }
}

/// An attempt that succeeded.
fn success_objects<'a>(event: &'a Event<'a>, last_status_exits: bool) -> Objects<'a> {
    match *event {
        Event::Restart {
            count,
            end,
            ran,
            next,
        } => with_retry(
            attempt(count, end, ran, "success", None),
            count.attempt,
            Some(next),
            None,
            false,
        ),
        Event::StreakContinues {
            count,
            end,
            ran,
            streak,
            needed,
            next,
        } => {
            let attempt = AttemptFields {
                streak: Some(streak),
                needed: Some(needed),
                ..attempt(count, end, ran, "success", None)
            };
            with_retry(attempt, count.attempt, next, None, false)
        }
        Event::Success {
            count,
            end,
            ran,
            total,
            not_restarting,
        } => vec![
            (
                "attempt",
                Fields::Attempt(attempt(count, end, ran, "success", None)),
            ),
            (
                "success",
                Fields::Success(Success {
                    attempt: count.attempt,
                    exit_code: if last_status_exits { end.status() } else { 0 },
                    duration_ms: total.as_millis() as u64,
                    reason: not_restarting.map(|reason| reason.ending().name()),
                }),
            ),
        ],
        // Another family's: `objects` sends none here.
        _ => Vec::new(),
    }
}

/// `retry`'s own streams and files.
fn streams_objects<'a>(event: &'a Event<'a>) -> Objects<'a> {
    match *event {
        Event::StdinShared => vec![(
            "stdin-warning",
            Fields::Message(Message {
                message: super::plain::line(event),
            }),
        )],
        Event::FailedOutput { attempt, end } => vec![(
            "failed-output",
            Fields::FailedOutput(FailedOutputFields {
                attempt,
                exit_code: end.status(),
                timed_out: timed_out(end),
            }),
        )],
        Event::Unwritten { file, path, error } => vec![(
            match file {
                OwnFile::Metrics => "metrics-failed",
                OwnFile::Report => "report-failed",
            },
            Fields::Unwritten(FileFailure {
                path: path.to_string_lossy(),
                error,
            }),
        )],
        Event::SpillFailed { stream, error } => vec![(
            "spill-failed",
            Fields::Stream(StreamFailure {
                stream: stream.name(),
                error,
            }),
        )],
        Event::HoldFull { stream } => vec![(
            "hold-full",
            Fields::Stream(StreamFailure {
                stream: stream.name(),
                error: HOLD_FULL,
            }),
        )],
        Event::ReadFailed { error } => vec![(
            "read-failed",
            Fields::Stream(StreamFailure {
                stream: "stdin",
                error,
            }),
        )],
        Event::WriteFailed { stream, error } => vec![(
            "write-failed",
            Fields::Stream(StreamFailure {
                stream: stream.name(),
                error,
            }),
        )],
        // Another family's: `objects` sends none here.
        _ => Vec::new(),
    }
}

/// Signals and processes.
fn processes_objects<'a>(event: &'a Event<'a>) -> Objects<'a> {
    match *event {
        Event::TerminalStop { attempt, signal } => vec![(
            "terminal-stop",
            Fields::Signal(AttemptSignal {
                attempt,
                signal: signal_value(signal),
            }),
        )],
        // Said under --verbose only: a log pipeline's events stay as they were.
        Event::Sweep { .. } => vec![],
        Event::Relayed { attempt, signal } => vec![(
            "relay",
            Fields::Signal(AttemptSignal {
                attempt,
                signal: signal_value(signal),
            }),
        )],
        Event::Interrupted { signal } => vec![(
            "interrupted",
            Fields::Interrupted(InterruptedFields {
                signal: signal_value(signal),
                exit_code: 128 + signal.clamp(0, 127) as u64,
            }),
        )],
        // Another family's: `objects` sends none here.
        _ => Vec::new(),
    }
}

/// Hooks.
fn hooks_objects<'a>(event: &'a Event<'a>) -> Objects<'a> {
    match *event {
        Event::HookFailed { kind, end } => {
            vec![("hook-failed", Fields::Hook(hook_failed(kind, end)))]
        }
        Event::HookValuesSkipped { line, error, count } => vec![(
            "hook-env-skipped",
            Fields::HookValues(HookValuesFields {
                line,
                error,
                skipped: count,
            }),
        )],
        // Another family's: `objects` sends none here.
        _ => Vec::new(),
    }
}

fn hook_failed(kind: HookKind, end: AttemptEnd) -> HookFailedFields {
    HookFailedFields {
        hook: kind.flag().trim_start_matches("--"),
        exit_code: end.status(),
        timed_out: timed_out(end),
    }
}

/// The fields of an `attempt` object: how it ended, its `outcome` and the `reason` for it.
fn attempt(
    count: Count,
    end: AttemptEnd,
    ran: Duration,
    outcome: &'static str,
    reason: Option<String>,
) -> AttemptFields {
    AttemptFields {
        attempt: count.attempt,
        max_attempts: count.max_attempts,
        exit_code: end.status(),
        signal: match end {
            AttemptEnd::Signaled(n) => Some(signal_value(n)),
            _ => None,
        },
        timed_out: timed_out(end),
        duration_ms: ran.as_millis() as u64,
        outcome,
        reason,
        streak: None,
        needed: None,
    }
}

/// `attempt`'s object, followed by the `retry` object that announces the next attempt when a
/// wait follows, with the hint it heeded (`hint_ms`, as read; null when there was none).
fn with_retry<'a>(
    attempt: AttemptFields,
    number: u64,
    next: Option<Duration>,
    hint: Option<HintUse>,
    last_chance: bool,
) -> Objects<'a> {
    let mut objects = vec![("attempt", Fields::Attempt(attempt))];
    if let Some(next) = next {
        objects.push((
            "retry",
            Fields::Retry(Retry {
                attempt: number + 1,
                delay_ms: Millis(next),
                hint_ms: hint.map(|hint| Millis(hint.asked)),
                last_chance,
            }),
        ));
    }
    objects
}

/// What the fleet limits say: `state-unavailable`, `budget` or `breaker`.
fn fleet_object(notice: &Notice) -> (&'static str, Fields<'_>) {
    match notice {
        Notice::StateUnavailable { error } => (
            "state-unavailable",
            Fields::StateUnavailable(StateUnavailable { name: None, error }),
        ),
        Notice::Replaced { name } => (
            "state-unavailable",
            Fields::StateUnavailable(StateUnavailable {
                name: Some(name),
                error: REPLACED,
            }),
        ),
        Notice::Budget {
            name,
            spent,
            balance,
        } => (
            "budget",
            Fields::Budget(Budget {
                name,
                decision: if *spent { "spent" } else { "refused" },
                balance: Decimal(*balance),
            }),
        ),
        Notice::Probe { name } => (
            "breaker",
            Fields::Breaker(Breaker {
                name,
                transition: "probe",
                next_probe_ms: None,
            }),
        ),
        Notice::Breaker {
            name,
            transition,
            next_probe,
        } => (
            "breaker",
            Fields::Breaker(Breaker {
                name,
                transition: match transition {
                    Transition::Opened { .. } => "opened",
                    Transition::Reopened { .. } => "reopened",
                    Transition::Closed => "closed",
                },
                next_probe_ms: next_probe.map(WholeMillis),
            }),
        ),
    }
}

#[derive(Serialize)]
struct StateObject<'a> {
    event: &'static str,
    budget: Option<BudgetFields<'a>>,
    breaker: Option<BreakerFields<'a>>,
}

#[derive(Serialize)]
struct BudgetFields<'a> {
    name: &'a str,
    balance: Decimal,
    first_attempts: u64,
    retries: u64,
    window_ms: WholeMillis,
}

#[derive(Serialize)]
struct BreakerFields<'a> {
    name: &'a str,
    state: &'static str,
    failures: u64,
    next_probe_ms: Option<WholeMillis>,
}

/// `--show-state` as one JSON object.
pub(super) fn state(budget: Option<&BudgetState>, breaker: Option<&BreakerShown>) -> String {
    let object = StateObject {
        event: "state",
        budget: budget.map(|b| BudgetFields {
            name: &b.name,
            balance: Decimal(b.balance),
            first_attempts: b.firsts,
            retries: b.retries,
            window_ms: WholeMillis(b.window),
        }),
        breaker: breaker.map(|b| BreakerFields {
            name: &b.name,
            state: b.state,
            failures: b.failures,
            next_probe_ms: b.next_probe.map(WholeMillis),
        }),
    };
    serde_json::to_string(&object).unwrap_or_default() + "\n"
}

#[derive(Serialize)]
struct ResetObject<'a> {
    event: &'static str,
    budget: Option<&'a str>,
    breaker: Option<&'a str>,
}

/// `--reset-state` as one JSON object.
pub(super) fn reset(budget: Option<&str>, breaker: Option<&str>) -> String {
    let object = ResetObject {
        event: "reset",
        budget,
        breaker,
    };
    serde_json::to_string(&object).unwrap_or_default() + "\n"
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::fleet::Notice;
    use crate::log::event::{GiveUp, Why};
    use crate::outcome::Limit;
    use crate::stdio::Stream;
    use std::collections::{BTreeMap, BTreeSet};
    use std::ffi::OsStr;
    use std::path::Path;

    /// JSON strings escape what JSON requires (quotes, backslashes, every control character
    /// below 0x20), and the line stays one line.
    #[test]
    fn strings_are_escaped_and_each_object_is_one_line() {
        let text = lines(
            &Event::HintIgnored {
                attempt: 1,
                value: "a\"b\\c\nd\re\tf\u{1}g\u{1f}h é✓",
            },
            None,
            false,
        );
        assert_eq!(text.lines().count(), 1);
        assert!(
            text.contains(r#""value":"a\"b\\c\nd\re\tf\u0001g\u001fh é✓""#),
            "{text}"
        );
    }

    #[test]
    fn a_failed_attempt_with_a_wait_is_two_objects_and_the_last_one_is_one() {
        let failed = |next| Event::AttemptFailed {
            count: Count::new(2, None),
            end: AttemptEnd::Exited(3),
            why: Some(Why::RetryIf),
            ran: Duration::from_millis(1500),
            next,
            hint: None,
            reset: false,
            last_chance: false,
        };
        let names = |event: &Event<'_>| -> Vec<&str> {
            objects(event, false)
                .iter()
                .map(|(name, _)| *name)
                .collect()
        };
        assert_eq!(
            names(&failed(Some(Duration::from_millis(250)))),
            ["attempt", "retry"]
        );
        assert_eq!(names(&failed(None)), ["attempt"]);
        let text = lines(&failed(Some(Duration::from_micros(250_500))), None, false);
        assert!(
            text.starts_with(r#"{"event":"attempt","time":""#),
            "the name and time come first: {text}"
        );
        assert!(
            text.contains(r#""max_attempts":null,"exit_code":3,"signal":null"#),
            "{text}"
        );
        assert!(
            text.contains(r#""event":"retry""#)
                && text.contains(r#""delay_ms":250.5,"hint_ms":null,"last_chance":false}"#),
            "{text}"
        );
        assert_eq!(text.lines().count(), 2);
    }

    #[test]
    fn numbers_keep_microseconds_and_three_decimals() {
        let text = lines(
            &Event::Splay {
                wait: Duration::from_nanos(1_234_567),
            },
            None,
            false,
        );
        assert!(text.contains(r#""delay_ms":1.234}"#), "{text}");
        let notice = Notice::Budget {
            name: "b".into(),
            spent: true,
            balance: 734.512_49,
        };
        assert!(lines(&Event::Fleet(&notice), None, false).contains(r#""balance":734.512}"#));
        let nan = Notice::Budget {
            name: "b".into(),
            spent: true,
            balance: f64::NAN,
        };
        assert!(lines(&Event::Fleet(&nan), None, false).contains(r#""balance":null}"#));
    }

    /// The fields of each event in the reference's table (docs/reference.md), by event name:
    /// the names in backticks in the last column, outside the parentheses that explain them,
    /// values (`"success"`) and flags (`--consecutive`) left out.
    fn documented() -> BTreeMap<String, BTreeSet<String>> {
        table_of_fields("| event | when | fields |")
    }

    /// The field names of each row of the reference's table under `header`, by the row's
    /// first cell.
    pub(crate) fn table_of_fields(header: &str) -> BTreeMap<String, BTreeSet<String>> {
        let reference = include_str!("../../docs/reference.md");
        let start = reference.find(header).expect("the table");
        let mut table = BTreeMap::new();
        for row in reference[start..].lines().skip(2) {
            if !row.starts_with('|') {
                break;
            }
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
            let name = cells[0].trim().trim_matches('`').to_string();
            // Field names are the backticked words outside parentheses (which explain them).
            let mut names = BTreeSet::new();
            let (mut depth, mut word, mut in_word) = (0, String::new(), false);
            for c in cells.last().unwrap().chars() {
                match c {
                    '`' if in_word => {
                        in_word = false;
                        if depth == 0 && word.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                            names.insert(std::mem::take(&mut word));
                        }
                        word.clear();
                    }
                    '`' => in_word = true,
                    _ if in_word => word.push(c),
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            table.insert(name, names);
        }
        table
    }

    /// One of each event, in every shape it takes.
    fn every_event(test: &mut dyn FnMut(&Event<'_>)) {
        let ms = Duration::from_millis;
        let count = Count::new(2, Some(6));
        let command = [OsStr::new("curl").to_os_string()];
        let hint = HintUse {
            asked: ms(30_000),
            source: crate::http::HintSource::RetryAfter,
            lengthened: true,
        };
        let notices = [
            Notice::StateUnavailable {
                error: "refused".into(),
            },
            Notice::Replaced { name: "b".into() },
            Notice::Budget {
                name: "b".into(),
                spent: false,
                balance: 0.5,
            },
            Notice::Probe { name: "b".into() },
            Notice::Breaker {
                name: "b".into(),
                transition: Transition::Opened { until: 60 },
                next_probe: Some(ms(60_000)),
            },
        ];
        for notice in &notices {
            test(&Event::Fleet(notice));
        }
        let end = AttemptEnd::Exited(1);
        for event in [
            Event::Start {
                command: &command,
                max_attempts: None,
                seed: 7,
            },
            Event::Splay { wait: ms(5) },
            Event::AttemptStart { count },
            Event::AttemptFailed {
                count,
                end: AttemptEnd::Signaled(9),
                why: Some(Why::HttpStatus(503)),
                ran: ms(5),
                next: Some(ms(100)),
                hint: Some(hint),
                reset: false,
                last_chance: false,
            },
            Event::Reset {
                attempt: 3,
                ran: ms(700),
            },
            Event::Restart {
                count,
                end: AttemptEnd::Exited(0),
                ran: ms(5),
                next: ms(100),
            },
            Event::StreakContinues {
                count,
                end: AttemptEnd::Exited(0),
                ran: ms(5),
                streak: 1,
                needed: 3,
                next: Some(ms(100)),
            },
            Event::CannotStart {
                command: &command[0],
                end: AttemptEnd::NotFound,
                error: "No such file or directory",
            },
            Event::Success {
                count,
                end: AttemptEnd::Exited(0),
                ran: ms(5),
                total: ms(200),
                not_restarting: Some(GiveUp::MaxTime),
            },
            Event::GiveUp {
                reason: GiveUp::Exhausted,
                attempts: 6,
                total: ms(9000),
                status: 1,
            },
            Event::HintIgnored {
                attempt: 1,
                value: "soon",
            },
            Event::StdinShared,
            Event::CutByHook {
                attempt: 2,
                next: ms(100),
            },
            Event::FailedOutput {
                attempt: 1,
                end: AttemptEnd::TimedOut(Limit::Attempt),
            },
            Event::Unwritten {
                file: OwnFile::Metrics,
                path: Path::new("/m.prom"),
                error: "No space left on device",
            },
            Event::Unwritten {
                file: OwnFile::Report,
                path: Path::new("/report.json"),
                error: "No space left on device",
            },
            Event::SpillFailed {
                stream: Stream::Stdout,
                error: "full",
            },
            Event::HoldFull {
                stream: Stream::Stderr,
            },
            Event::ReadFailed { error: "EIO" },
            Event::WriteFailed {
                stream: Stream::Stderr,
                error: "full",
            },
            Event::TerminalStop {
                attempt: 1,
                signal: libc::SIGTTIN,
            },
            Event::Relayed {
                attempt: 1,
                signal: libc::SIGUSR1,
            },
            Event::Sweep {
                cgroup: Some(Path::new("/sys/fs/cgroup/job")),
            },
            Event::Sweep { cgroup: None },
            Event::HookFailed {
                kind: HookKind::Retry,
                end,
            },
            Event::HookValuesSkipped {
                line: Some(2),
                error: "it is not KEY=VALUE",
                count: 3,
            },
            Event::HookValuesSkipped {
                line: None,
                error: "No such file or directory",
                count: 0,
            },
            Event::Interrupted {
                signal: libc::SIGTERM,
            },
        ] {
            test(&event);
        }
    }

    /// Each event's family (`Event::family`) renders it: every event has its text, and every
    /// one but `Sweep` (said under --verbose only) its objects, so none is routed to a family
    /// that says nothing of it.
    #[test]
    fn every_event_is_rendered_by_its_family() {
        every_event(&mut |event| {
            assert!(!super::super::plain::line(event).is_empty(), "{event:?}");
            let objects = objects(event, false);
            assert_eq!(
                objects.is_empty(),
                matches!(event, Event::Sweep { .. }),
                "{event:?}"
            );
        });
    }

    /// Every object of every event has exactly the fields the reference documents for it,
    /// besides `event` and `time`; and every event the reference lists is one `retry` writes.
    #[test]
    fn every_event_holds_to_the_documented_schema() {
        let documented = documented();
        let mut seen = BTreeSet::new();
        every_event(&mut |event| {
            for line in lines(event, None, false).lines() {
                let object: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(line).unwrap();
                let name = object["event"].as_str().unwrap().to_string();
                assert!(object["time"].is_string(), "{line}");
                let keys: BTreeSet<String> = object
                    .keys()
                    .filter(|key| *key != "event" && *key != "time")
                    .cloned()
                    .collect();
                let expected = documented
                    .get(&name)
                    .unwrap_or_else(|| panic!("{name} is not in the reference's table"));
                let streak = ["streak".to_string(), "needed".to_string()];
                let optional: BTreeSet<String> = if name == "attempt" {
                    streak.into_iter().collect()
                } else {
                    BTreeSet::new()
                };
                assert!(
                    keys.is_subset(expected)
                        && expected.difference(&keys).all(|k| optional.contains(k)),
                    "{name}: written {keys:?}, documented {expected:?}"
                );
                seen.insert(name);
            }
        });
        let listed: BTreeSet<String> = documented.keys().cloned().collect();
        assert_eq!(seen, listed, "events written against events documented");
    }

    #[test]
    fn show_and_reset_state_are_one_object_each() {
        let budget = BudgetState {
            name: "b".into(),
            balance: 10.0,
            firsts: 3,
            retries: 1,
            window: Duration::from_secs(60),
        };
        assert_eq!(
            state(Some(&budget), None),
            "{\"event\":\"state\",\"budget\":{\"name\":\"b\",\"balance\":10.0,\"first_attempts\":3,\
             \"retries\":1,\"window_ms\":60000},\"breaker\":null}\n"
        );
        // A probe due in 1.5 µs less than a minute is due in a minute: never sooner than it is.
        let breaker = BreakerShown {
            name: "k".into(),
            state: "open",
            failures: 0,
            next_probe: Some(Duration::from_secs(60) - Duration::from_nanos(1500)),
        };
        assert!(
            state(None, Some(&breaker)).contains("\"next_probe_ms\":60000}"),
            "{}",
            state(None, Some(&breaker))
        );
        assert_eq!(
            reset(None, Some("k")),
            "{\"event\":\"reset\",\"budget\":null,\"breaker\":\"k\"}\n"
        );
    }
}
