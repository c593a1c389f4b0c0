//! Every line `retry` prints about a run, and the only place that writes them.
//!
//! The driver hands over events; the reporter decides, by verbosity, what to say and how. A
//! failed write (stderr closed) is ignored: losing a message must never change the run.

use std::ffi::OsString;
use std::io::{self, Write};
use std::time::Duration;

use crate::driver::HookKind;
use crate::outcome::AttemptEnd;
use crate::parse::signal_name;
use crate::settings::Verbosity;

/// Why a run gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUp {
    /// The attempt limit was reached.
    Exhausted,
    /// The verdict was a permanent failure (`--stop-on-exit`, or a code outside
    /// `--retry-on-exit`).
    Permanent,
    /// `--max-time` was reached, or the next wait would have crossed it.
    MaxTime,
}

#[derive(Debug)]
pub enum Event<'a> {
    Start {
        command: &'a [OsString],
        max_attempts: Option<u64>,
        seed: u64,
    },
    Splay {
        wait: Duration,
    },
    AttemptStart {
        attempt: u64,
        max_attempts: Option<u64>,
    },
    /// An attempt failed; `next` is the wait before the next one, if there is one.
    AttemptFailed {
        attempt: u64,
        max_attempts: Option<u64>,
        end: AttemptEnd,
        /// What the output predicates decided, when they decided the failure.
        why: Option<&'static str>,
        ran: Duration,
        next: Option<Duration>,
    },
    /// An attempt succeeded but `--consecutive` wants more in a row.
    StreakContinues {
        attempt: u64,
        max_attempts: Option<u64>,
        streak: u64,
        needed: u64,
        next: Option<Duration>,
    },
    CannotStart {
        command: &'a OsString,
        end: AttemptEnd,
        error: &'a str,
    },
    Success {
        attempt: u64,
        max_attempts: Option<u64>,
        ran: Duration,
        total: Duration,
    },
    GiveUp {
        reason: GiveUp,
        attempts: u64,
        total: Duration,
        status: u8,
    },
    /// Stdin is a pipe or socket under `--stdin auto`: said once, before the first retry.
    StdinShared,
    HookFailed {
        kind: HookKind,
        end: AttemptEnd,
    },
    Interrupted {
        signal: i32,
    },
}

pub struct Reporter {
    verbosity: Verbosity,
    out: Box<dyn Write>,
}

impl Reporter {
    pub fn stderr(verbosity: Verbosity) -> Reporter {
        Reporter::new(verbosity, Box::new(io::stderr()))
    }

    pub fn new(verbosity: Verbosity, out: Box<dyn Write>) -> Reporter {
        Reporter { verbosity, out }
    }

    pub fn emit(&mut self, event: &Event<'_>) {
        let needed = match event {
            Event::CannotStart { .. } => Verbosity::Quiet,
            Event::Start { .. }
            | Event::Splay { .. }
            | Event::AttemptStart { .. }
            | Event::Success { .. } => Verbosity::Verbose,
            _ => Verbosity::Normal,
        };
        if self.verbosity < needed {
            return;
        }
        // One write per line, so lines from concurrent writers never interleave mid-line.
        let line = format!("retry: {}\n", text(event));
        let _ = self.out.write_all(line.as_bytes());
        let _ = self.out.flush();
    }
}

fn text(event: &Event<'_>) -> String {
    match *event {
        Event::Start {
            command,
            max_attempts,
            seed,
        } => {
            let limit = match max_attempts {
                Some(1) => "1 attempt".to_string(),
                Some(n) => format!("up to {n} attempts"),
                None => "no attempt limit".to_string(),
            };
            format!("running {} ({limit}, seed {seed})", quote_command(command))
        }
        Event::Splay { wait } => format!("splay: first attempt in {}", human(wait)),
        Event::AttemptStart {
            attempt,
            max_attempts,
        } => format!("attempt {} starting", of(attempt, max_attempts)),
        Event::AttemptFailed {
            attempt,
            max_attempts,
            end,
            why,
            ran,
            next,
        } => {
            let why = why.map_or(String::new(), |why| format!("; {why}"));
            let mut line = format!(
                "attempt {} failed ({end}{why}) after {}",
                of(attempt, max_attempts),
                human(ran)
            );
            if let Some(next) = next {
                line += &format!("; next attempt in {}", human(next));
            }
            line
        }
        Event::StreakContinues {
            attempt,
            max_attempts,
            streak,
            needed,
            next,
        } => {
            let mut line = format!(
                "attempt {} succeeded ({streak} of {needed} in a row)",
                of(attempt, max_attempts)
            );
            if let Some(next) = next {
                line += &format!("; next attempt in {}", human(next));
            }
            line
        }
        Event::CannotStart {
            command,
            end,
            error,
        } => format!("cannot run {}: {error} ({end})", quote(command)),
        Event::Success {
            attempt,
            max_attempts,
            ran,
            total,
        } => format!(
            "attempt {} succeeded after {}; done in {}",
            of(attempt, max_attempts),
            human(ran),
            human(total)
        ),
        Event::GiveUp {
            reason,
            attempts,
            total,
            status,
        } => {
            let why = match reason {
                GiveUp::Exhausted => "no retries left",
                GiveUp::Permanent => "permanent failure",
                GiveUp::MaxTime => "--max-time reached",
            };
            let attempts = match attempts {
                1 => "1 attempt".to_string(),
                n => format!("{n} attempts"),
            };
            format!(
                "giving up after {attempts} in {}: {why} (exit status {status})",
                human(total)
            )
        }
        Event::StdinShared => {
            "stdin is a pipe: later attempts see only what earlier ones left unread; \
             use --stdin replay to give every attempt the same input"
                .to_string()
        }
        Event::HookFailed { kind, end } => format!("{} hook failed ({end})", kind.flag()),
        Event::Interrupted { signal } => {
            let name = signal_name(signal).unwrap_or_else(|| format!("signal {signal}"));
            format!("stopped by {name}")
        }
    }
}

/// `3/6`, or `3` when there is no attempt limit.
fn of(attempt: u64, max_attempts: Option<u64>) -> String {
    match max_attempts {
        Some(max) => format!("{attempt}/{max}"),
        None => attempt.to_string(),
    }
}

fn quote(word: &OsString) -> String {
    format!("'{}'", word.to_string_lossy())
}

fn quote_command(command: &[OsString]) -> String {
    let words: Vec<_> = command.iter().map(|w| w.to_string_lossy()).collect();
    format!("'{}'", words.join(" "))
}

/// A short human form: `0s`, `850µs`, `250ms`, `1.5s`, `1m30s`, `2h`, `3d4h`.
pub fn human(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    if d < Duration::from_millis(1) {
        return format!("{}µs", d.as_micros());
    }
    if d < Duration::from_secs(1) {
        return format!("{}ms", trim_decimals(d.as_secs_f64() * 1000.0, 1));
    }
    if d < Duration::from_secs(60) {
        return format!("{}s", trim_decimals(d.as_secs_f64(), 3));
    }
    let total = d.as_secs();
    let (days, hours, minutes, seconds) = (
        total / 86_400,
        total / 3600 % 24,
        total / 60 % 60,
        total % 60,
    );
    let mut out = String::new();
    for (value, unit) in [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")] {
        if value > 0 {
            out += &format!("{value}{unit}");
        }
    }
    out
}

/// `value` with at most `places` decimals and no trailing zeros (truncated, so a wait never
/// reads longer than it is).
fn trim_decimals(value: f64, places: i32) -> String {
    let scale = 10f64.powi(places);
    let truncated = (value * scale).floor() / scale;
    let text = format!("{truncated:.*}", places as usize);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Limit;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn render(verbosity: Verbosity, event: Event<'_>) -> String {
        let out = Shared::default();
        Reporter::new(verbosity, Box::new(out.clone())).emit(&event);
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::ZERO), "0s");
        assert_eq!(human(Duration::from_micros(850)), "850µs");
        assert_eq!(human(ms(250)), "250ms");
        assert_eq!(human(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(human(ms(1500)), "1.5s");
        assert_eq!(human(ms(12_345)), "12.345s");
        assert_eq!(human(ms(90_000)), "1m30s");
        assert_eq!(human(ms(7_200_000)), "2h");
        assert_eq!(human(Duration::from_secs(86_400 * 3 + 3600 * 4)), "3d4h");
        assert_eq!(human(Duration::MAX), "213503982334601d7h15s");
    }

    #[test]
    fn failed_attempt_line() {
        let line = render(
            Verbosity::Normal,
            Event::AttemptFailed {
                attempt: 2,
                max_attempts: Some(6),
                end: AttemptEnd::Exited(1),
                why: None,
                ran: ms(12),
                next: Some(ms(1500)),
            },
        );
        assert_eq!(
            line,
            "retry: attempt 2/6 failed (exit 1) after 12ms; next attempt in 1.5s\n"
        );
        let line = render(
            Verbosity::Normal,
            Event::AttemptFailed {
                attempt: 7,
                max_attempts: None,
                end: AttemptEnd::TimedOut(Limit::Attempt),
                why: None,
                ran: ms(100),
                next: None,
            },
        );
        assert_eq!(line, "retry: attempt 7 failed (timed out) after 100ms\n");
    }

    #[test]
    fn give_up_line() {
        let line = render(
            Verbosity::Normal,
            Event::GiveUp {
                reason: GiveUp::Exhausted,
                attempts: 6,
                total: ms(31_500),
                status: 1,
            },
        );
        assert_eq!(
            line,
            "retry: giving up after 6 attempts in 31.5s: no retries left (exit status 1)\n"
        );
    }

    #[test]
    fn verbosity_filters() {
        let failed = || Event::AttemptFailed {
            attempt: 1,
            max_attempts: Some(2),
            end: AttemptEnd::Exited(1),
            why: Some("no --until line matched"),
            ran: ms(1),
            next: None,
        };
        assert_eq!(render(Verbosity::Quiet, failed()), "");
        assert_ne!(render(Verbosity::Normal, failed()), "");
        let start = || Event::AttemptStart {
            attempt: 1,
            max_attempts: None,
        };
        assert_eq!(render(Verbosity::Normal, start()), "");
        assert_eq!(
            render(Verbosity::Verbose, start()),
            "retry: attempt 1 starting\n"
        );
        let name = OsString::from("nope");
        let cannot = Event::CannotStart {
            command: &name,
            end: AttemptEnd::NotFound,
            error: "No such file or directory",
        };
        assert_eq!(
            render(Verbosity::Quiet, cannot),
            "retry: cannot run 'nope': No such file or directory (command not found)\n"
        );
    }
}
