//! Events as JSON lines, for `--log-format json`: each event is one or two objects, built as
//! data (`objects`) and rendered with the time of writing.

use std::ffi::OsString;
use std::time::{Duration, SystemTime};

use crate::outcome::AttemptEnd;
use crate::parse::signal_name;
use crate::settings::HookKind;

use super::{Count, Event, GiveUp, HintUse};
use crate::fleet::{BreakerShown, BudgetState, Notice, Transition};

/// One JSON object: the event's name and its fields, in order.
type Object = (&'static str, Vec<(&'static str, Json)>);

/// The event as JSON: one object per line (two when an attempt ended and another follows, or
/// the run succeeded).
pub(super) fn lines(event: &Event<'_>) -> String {
    let time = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    objects(event)
        .into_iter()
        .map(|(name, fields)| {
            let mut out = format!("{{\"event\":\"{name}\",\"time\":\"{time}\"");
            for (key, value) in fields {
                out += &format!(",\"{key}\":{}", value.render());
            }
            out + "}\n"
        })
        .collect()
}

fn objects(event: &Event<'_>) -> Vec<Object> {
    match *event {
        Event::Start {
            command,
            max_attempts,
            seed,
        } => vec![start(command, max_attempts, seed)],
        Event::Splay { wait } => vec![("splay", vec![("delay_ms", Json::Millis(wait))])],
        Event::AttemptStart { count } => vec![(
            "attempt-start",
            vec![
                ("attempt", Json::Number(count.attempt)),
                ("max_attempts", Json::limit(count.max_attempts)),
            ],
        )],
        Event::AttemptFailed {
            count,
            end,
            why,
            ran,
            next,
            hint,
            reset: _,
        } => {
            let why = why.map_or(Json::Null, |why| Json::Text(why.to_string()));
            let fields = attempt_fields(count, end, ran, "failure", why);
            with_retry(("attempt", fields), count.attempt, next, hint)
        }
        Event::Reset { attempt, ran } => vec![(
            "reset",
            vec![
                ("attempt", Json::Number(attempt)),
                ("ran_ms", Json::Number(ran.as_millis() as u64)),
            ],
        )],
        Event::Restart {
            count,
            end,
            ran,
            next,
        } => {
            let fields = attempt_fields(count, end, ran, "success", Json::Null);
            with_retry(("attempt", fields), count.attempt, Some(next), None)
        }
        Event::StreakContinues {
            count,
            end,
            ran,
            streak,
            needed,
            next,
        } => {
            let mut fields = attempt_fields(count, end, ran, "success", Json::Null);
            fields.push(("streak", Json::Number(streak)));
            fields.push(("needed", Json::Number(needed)));
            with_retry(("attempt", fields), count.attempt, next, None)
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
                attempt_fields(count, end, ran, "success", Json::Null),
            ),
            (
                "success",
                vec![
                    ("attempt", Json::Number(count.attempt)),
                    ("exit_code", Json::Number(0)),
                    ("duration_ms", Json::Number(total.as_millis() as u64)),
                    (
                        "reason",
                        not_restarting.map_or(Json::Null, |why| Json::text(give_up_reason(why))),
                    ),
                ],
            ),
        ],
        Event::CannotStart {
            command,
            end,
            error,
        } => vec![cannot_start(command, end, error)],
        Event::GiveUp {
            reason,
            attempts,
            total,
            status,
        } => vec![(
            "give-up",
            vec![
                ("attempts", Json::Number(attempts)),
                ("reason", Json::text(give_up_reason(reason))),
                ("exit_code", Json::Number(u64::from(status))),
                ("duration_ms", Json::Number(total.as_millis() as u64)),
            ],
        )],
        Event::Fleet(notice) => vec![fleet_object(notice)],
        Event::HintIgnored { attempt, value } => vec![(
            "hint-ignored",
            vec![
                ("attempt", Json::Number(attempt)),
                ("value", Json::text(value)),
            ],
        )],
        Event::StdinShared => vec![(
            "stdin-warning",
            vec![("message", Json::Text(super::plain::line(event)))],
        )],
        Event::FailedOutput { attempt, end } => vec![(
            "failed-output",
            vec![
                ("attempt", Json::Number(attempt)),
                ("exit_code", Json::status(end)),
                (
                    "timed_out",
                    Json::Bool(matches!(end, AttemptEnd::TimedOut(_))),
                ),
            ],
        )],
        Event::MetricsUnwritten { path, error } => vec![(
            "metrics-failed",
            vec![
                ("path", Json::Text(path.to_string_lossy().into_owned())),
                ("error", Json::text(error)),
            ],
        )],
        Event::SpillFailed { stream, error } => {
            vec![stream_failure("spill-failed", stream.name(), error)]
        }
        Event::ReadFailed { error } => vec![stream_failure("read-failed", "stdin", error)],
        Event::WriteFailed { stream, error } => {
            vec![stream_failure("write-failed", stream.name(), error)]
        }
        Event::TerminalStop { attempt, signal } => {
            vec![attempt_signal("terminal-stop", attempt, signal)]
        }
        Event::Relayed { attempt, signal } => vec![attempt_signal("relay", attempt, signal)],
        Event::HookFailed { kind, end } => vec![hook_failed(kind, end)],
        Event::Interrupted { signal } => vec![(
            "interrupted",
            vec![
                ("signal", Json::signal(signal)),
                ("exit_code", Json::Number(128 + signal.clamp(0, 127) as u64)),
            ],
        )],
    }
}

fn start(command: &[OsString], max_attempts: Option<u64>, seed: u64) -> Object {
    let words = command
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    (
        "start",
        vec![
            ("command", Json::List(words)),
            ("max_attempts", Json::limit(max_attempts)),
            ("seed", Json::Number(seed)),
        ],
    )
}

fn cannot_start(command: &OsString, end: AttemptEnd, error: &str) -> Object {
    (
        "cannot-start",
        vec![
            // `program`, not `command`: `start` has `command` as the whole argument list.
            (
                "program",
                Json::Text(command.to_string_lossy().into_owned()),
            ),
            ("exit_code", Json::status(end)),
            ("error", Json::text(error)),
        ],
    )
}

/// A stream `retry` could not spill, read or write.
fn stream_failure(name: &'static str, stream: &str, error: &str) -> Object {
    (
        name,
        vec![("stream", Json::text(stream)), ("error", Json::text(error))],
    )
}

/// A signal that concerned the running attempt.
fn attempt_signal(name: &'static str, attempt: u64, signal: i32) -> Object {
    (
        name,
        vec![
            ("attempt", Json::Number(attempt)),
            ("signal", Json::signal(signal)),
        ],
    )
}

fn hook_failed(kind: HookKind, end: AttemptEnd) -> Object {
    (
        "hook-failed",
        vec![
            ("hook", Json::text(kind.flag().trim_start_matches("--"))),
            ("exit_code", Json::status(end)),
            (
                "timed_out",
                Json::Bool(matches!(end, AttemptEnd::TimedOut(_))),
            ),
        ],
    )
}

/// The fields of an `attempt` object: how it ended, its `outcome` and the `reason` for it.
fn attempt_fields(
    count: Count,
    end: AttemptEnd,
    ran: Duration,
    outcome: &str,
    reason: Json,
) -> Vec<(&'static str, Json)> {
    let signal = match end {
        AttemptEnd::Signaled(n) => Json::signal(n),
        _ => Json::Null,
    };
    vec![
        ("attempt", Json::Number(count.attempt)),
        ("max_attempts", Json::limit(count.max_attempts)),
        ("exit_code", Json::status(end)),
        ("signal", signal),
        (
            "timed_out",
            Json::Bool(matches!(end, AttemptEnd::TimedOut(_))),
        ),
        ("duration_ms", Json::Number(ran.as_millis() as u64)),
        ("outcome", Json::text(outcome)),
        ("reason", reason),
    ]
}

/// `attempt`'s object, followed by the `retry` object that announces the next attempt when a
/// wait follows, with the hint it heeded (`hint_ms`, as read; null when there was none).
fn with_retry(
    attempt_object: Object,
    attempt: u64,
    next: Option<Duration>,
    hint: Option<HintUse>,
) -> Vec<Object> {
    let mut objects = vec![attempt_object];
    if let Some(next) = next {
        objects.push((
            "retry",
            vec![
                ("attempt", Json::Number(attempt + 1)),
                ("delay_ms", Json::Millis(next)),
                (
                    "hint_ms",
                    hint.map_or(Json::Null, |h| Json::Millis(h.asked)),
                ),
            ],
        ));
    }
    objects
}

fn give_up_reason(reason: GiveUp<'_>) -> &'static str {
    match reason {
        GiveUp::Exhausted => "exhausted",
        GiveUp::Permanent(_) => "permanent",
        GiveUp::MaxTime | GiveUp::MaxTimeAhead { .. } => "max-time",
        GiveUp::Budget(_) => "budget",
        GiveUp::Breaker { .. } => "breaker",
    }
}

/// What the fleet limits say: `state-unavailable`, `budget` or `breaker`.
fn fleet_object(notice: &Notice) -> Object {
    match notice {
        Notice::StateUnavailable { error } => (
            "state-unavailable",
            vec![("name", Json::Null), ("error", Json::text(error))],
        ),
        Notice::Replaced { name } => (
            "state-unavailable",
            vec![("name", Json::text(name)), ("error", Json::text(REPLACED))],
        ),
        Notice::Budget {
            name,
            spent,
            balance,
        } => (
            "budget",
            vec![
                ("name", Json::text(name)),
                (
                    "decision",
                    Json::text(if *spent { "spent" } else { "refused" }),
                ),
                ("balance", Json::Decimal(*balance)),
            ],
        ),
        Notice::Probe { name } => (
            "breaker",
            vec![
                ("name", Json::text(name)),
                ("transition", Json::text("probe")),
                ("next_probe_ms", Json::Null),
            ],
        ),
        Notice::Breaker {
            name,
            transition,
            next_probe,
        } => (
            "breaker",
            vec![
                ("name", Json::text(name)),
                (
                    "transition",
                    Json::text(match transition {
                        Transition::Opened { .. } => "opened",
                        Transition::Reopened { .. } => "reopened",
                        Transition::Closed => "closed",
                    }),
                ),
                ("next_probe_ms", next_probe.map_or(Json::Null, Json::Millis)),
            ],
        ),
    }
}

/// `--show-state` as one JSON object.
pub(super) fn state(budget: Option<&BudgetState>, breaker: Option<&BreakerShown>) -> String {
    let budget = budget.map_or("null".to_string(), |b| {
        object_text(&[
            ("name", Json::text(&b.name)),
            ("balance", Json::Decimal(b.balance)),
            ("first_attempts", Json::Number(b.firsts)),
            ("retries", Json::Number(b.retries)),
            ("window_ms", Json::Millis(b.window)),
        ])
    });
    let breaker = breaker.map_or("null".to_string(), |b| {
        object_text(&[
            ("name", Json::text(&b.name)),
            ("state", Json::text(b.state)),
            ("failures", Json::Number(b.failures)),
            (
                "next_probe_ms",
                b.next_probe.map_or(Json::Null, Json::Millis),
            ),
        ])
    });
    format!("{{\"event\":\"state\",\"budget\":{budget},\"breaker\":{breaker}}}\n")
}

/// `--reset-state` as one JSON object.
pub(super) fn reset(budget: Option<&str>, breaker: Option<&str>) -> String {
    let name = |n: Option<&str>| n.map_or(Json::Null, Json::text).render();
    format!(
        "{{\"event\":\"reset\",\"budget\":{},\"breaker\":{}}}\n",
        name(budget),
        name(breaker)
    )
}

fn object_text(fields: &[(&str, Json)]) -> String {
    let fields: Vec<String> = fields
        .iter()
        .map(|(key, value)| format!("\"{key}\":{}", value.render()))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// What a corrupt record's replacement is said as.
pub(super) const REPLACED: &str = "the state did not parse; replaced by a fresh one";

/// The few JSON value shapes the events use.
enum Json {
    Null,
    Bool(bool),
    Number(u64),
    /// Milliseconds with microsecond precision.
    Millis(Duration),
    /// A number with a fraction, to three places.
    Decimal(f64),
    Text(String),
    List(Vec<String>),
}

impl Json {
    fn text(text: &str) -> Json {
        Json::Text(text.to_string())
    }

    /// An attempt limit: null when there is none.
    fn limit(max_attempts: Option<u64>) -> Json {
        max_attempts.map_or(Json::Null, Json::Number)
    }

    /// An attempt's status, as `retry` reports it.
    fn status(end: AttemptEnd) -> Json {
        Json::Number(u64::from(end.status()))
    }

    /// A signal: its name (`"SIGTERM"`), or its number as text where it has none.
    fn signal(signal: i32) -> Json {
        Json::Text(signal_name(signal).unwrap_or_else(|| signal.to_string()))
    }

    fn render(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Number(n) => n.to_string(),
            Json::Millis(d) => {
                let micros = d.as_micros();
                format!("{}.{:03}", micros / 1000, micros % 1000)
            }
            Json::Decimal(x) if x.is_finite() => format!("{x:.3}"),
            Json::Decimal(_) => "null".into(),
            Json::Text(t) => quote_json(t),
            Json::List(items) => {
                let items: Vec<String> = items.iter().map(|i| quote_json(i)).collect();
                format!("[{}]", items.join(","))
            }
        }
    }
}

fn quote_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON strings escape what JSON requires (quotes, backslashes, every control character
    /// below 0x20) and nothing else.
    #[test]
    fn json_strings_escape_exactly_the_control_characters() {
        assert_eq!(
            quote_json("a\"b\\c\nd\re\tf\u{1}g\u{1f}h"),
            r#""a\"b\\c\nd\re\tf\u0001g\u001fh""#
        );
        assert_eq!(quote_json(" ~\u{7f}é✓"), "\" ~\u{7f}é✓\"");
        assert_eq!(quote_json(""), "\"\"");
    }

    #[test]
    fn a_failed_attempt_with_a_wait_is_two_objects_and_the_last_one_is_one() {
        let failed = |next| Event::AttemptFailed {
            count: Count::new(2, None),
            end: AttemptEnd::Exited(3),
            why: Some(super::super::Why::RetryIf),
            ran: Duration::from_millis(1500),
            next,
            hint: None,
            reset: false,
        };
        let names = |event: &Event<'_>| -> Vec<&str> {
            objects(event).iter().map(|(name, _)| *name).collect()
        };
        assert_eq!(
            names(&failed(Some(Duration::from_millis(250)))),
            ["attempt", "retry"]
        );
        assert_eq!(names(&failed(None)), ["attempt"]);
        let text = lines(&failed(Some(Duration::from_micros(250_500))));
        assert!(
            text.contains(r#""max_attempts":null,"exit_code":3,"signal":null"#),
            "{text}"
        );
        assert!(
            text.contains(r#""event":"retry""#)
                && text.contains(r#""delay_ms":250.500,"hint_ms":null}"#),
            "{text}"
        );
        assert_eq!(text.lines().count(), 2);
    }
}
