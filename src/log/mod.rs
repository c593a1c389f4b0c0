//! `retry`'s log: every line it writes on stderr about a run (text, or JSON under
//! `--log-format json`), and the only place that writes them.
//!
//! The driver hands over events; the logger decides, by verbosity, what to say and how. A
//! failed write (stderr closed) is ignored: losing a message must never change the run. The
//! `--report` file is not written here: that is `report`'s, which borrows the JSON forms of a
//! signal and a timeout from `json` so the two say an attempt's end alike.

mod event;
mod json;
mod plain;

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

pub(crate) use event::{Count, Event, GiveUp, HintUse, OwnFile, Why};
#[cfg(test)]
pub(crate) use json::tests::table_of_fields;
pub(crate) use json::{signal_value, timed_out};
pub(crate) use plain::cannot_start;
use plain::whole_seconds;

use crate::cli::LogFormat;
use crate::fleet::{BreakerShown, BudgetState, FleetSettings, Notice};
use crate::settings::Verbosity;
use crate::text::{human, one_line, without_secrets};

/// What the terminal (if stderr is one) allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Terminal {
    /// stderr is a terminal, `NO_COLOR` is unset (set to anything, even the empty string, it
    /// turns colour off) and `TERM` names a terminal other than `dumb` (unset or empty, as git
    /// reads it, it says nothing of what the terminal draws).
    pub color: bool,
    /// stderr is a terminal and `CI` is unset or empty: long waits show a live countdown.
    pub countdown: bool,
}

impl Terminal {
    /// Looks at stderr and the environment.
    pub fn detect() -> Terminal {
        let tty = io::stderr().is_terminal();
        let ci = std::env::var_os("CI").is_some_and(|value| !value.is_empty());
        Terminal {
            color: tty
                && std::env::var_os("NO_COLOR").is_none()
                && std::env::var_os("TERM").is_some_and(|term| !term.is_empty() && term != "dumb"),
            countdown: tty && !ci,
        }
    }
}

/// Waits longer than this show a countdown on a terminal.
pub(crate) const COUNTDOWN_AFTER: Duration = Duration::from_secs(2);

/// Whether an event is said in every format, or only in a JSON log, where every attempt and
/// every run has its end: a text line may go without saying when another said it (the line
/// saying that a command cannot be started says that its run ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    Always,
    LogOnly,
}

/// Writes the run's events to stderr, as `--log-format` and the verbosity say.
pub struct Logger {
    verbosity: Verbosity,
    format: LogFormat,
    terminal: Terminal,
    out: Box<dyn Write>,
    /// The width of the countdown line on screen (0: none), erased before anything else.
    countdown_width: usize,
    /// `--label` or `-m`: the name every line gives the command.
    label: Option<String>,
    /// `retry` exits with the last attempt's status, success included (Debian's `-u`/`-w`).
    last_status_exits: bool,
}

impl Logger {
    pub fn new(
        verbosity: Verbosity,
        format: LogFormat,
        terminal: Terminal,
        out: Box<dyn Write>,
    ) -> Logger {
        Logger {
            verbosity,
            format,
            terminal,
            out,
            countdown_width: 0,
            label: None,
            last_status_exits: false,
        }
    }

    /// This logger, naming the command by `label` in every line: `retry: LABEL: ...`, and
    /// a `label` field in every JSON object.
    pub fn labelled(self, label: Option<String>) -> Logger {
        Logger { label, ..self }
    }

    /// This logger, for a run that exits with its last attempt's status, success included
    /// (Debian's `-u`/`-w`): the JSON `success` event gives that status.
    pub fn exiting_with_last_status(self, last_status_exits: bool) -> Logger {
        Logger {
            last_status_exits,
            ..self
        }
    }

    /// `LABEL: `, or nothing without a label.
    fn label_prefix(&self) -> String {
        self.label
            .as_ref()
            .map_or_else(String::new, |label| format!("{label}: "))
    }

    /// `emit`, or with `Visibility::LogOnly`, only to a JSON log.
    pub fn tell(&mut self, event: &Event<'_>, visibility: Visibility) {
        if visibility == Visibility::Always || self.format == LogFormat::Json {
            self.emit(event);
        }
    }

    pub fn emit(&mut self, event: &Event<'_>) {
        let needed = match (self.format, event) {
            (_, Event::CannotStart { .. }) => Verbosity::Quiet,
            // Replayed output is the command's, not retry's: --quiet silences neither it nor
            // the header that says whose it is.
            (_, Event::FailedOutput { .. }) => Verbosity::Quiet,
            // A log pipeline gets every event unless told to be quiet.
            (LogFormat::Json, _) => Verbosity::Normal,
            (
                LogFormat::Text,
                Event::Start { .. }
                | Event::Splay { .. }
                | Event::AttemptStart { .. }
                | Event::Relayed { .. }
                | Event::Sweep { .. }
                | Event::HintIgnored { .. }
                | Event::Reset { .. }
                | Event::Fleet(Notice::Budget { .. } | Notice::Probe { .. })
                | Event::Success {
                    not_restarting: None,
                    ..
                },
            ) => Verbosity::Verbose,
            (LogFormat::Text, _) => Verbosity::Normal,
        };
        if self.verbosity < needed {
            return;
        }
        let lines = match self.format {
            LogFormat::Text => {
                let prefix = if self.terminal.color {
                    format!("{}retry:\x1b[0m ", color_of(event))
                } else {
                    "retry: ".to_string()
                };
                let line = self.label_prefix() + &plain::line(event);
                format!("{prefix}{}\n", one_line(&without_secrets(&line)))
            }
            LogFormat::Json => without_secrets(&json::lines(
                event,
                self.label.as_deref(),
                self.last_status_exits,
            ))
            .into_owned(),
        };
        self.write(&lines);
    }

    /// Whether a wait of `wait` should show a live countdown.
    pub fn wants_countdown(&self, wait: Duration) -> bool {
        self.terminal.countdown
            && self.format == LogFormat::Text
            && self.verbosity > Verbosity::Quiet
            && wait > COUNTDOWN_AFTER
    }

    /// Redraws the countdown line in place. Only `\r` and spaces, no escape sequence, so it is
    /// the same with `NO_COLOR`.
    pub fn countdown(&mut self, left: Duration) {
        let tenths = Duration::from_millis((left.as_millis() as u64 + 50) / 100 * 100);
        let line = format!(
            "retry: {}next attempt in {}...",
            one_line(&self.label_prefix()),
            human(tenths)
        );
        let padding = " ".repeat(self.countdown_width.saturating_sub(line.len()));
        let _ = write!(self.out, "\r{line}{padding}");
        let _ = self.out.flush();
        self.countdown_width = line.len();
    }

    /// Erases the countdown line, if one is shown.
    pub fn clear_countdown(&mut self) {
        if self.countdown_width > 0 {
            let _ = write!(self.out, "\r{}\r", " ".repeat(self.countdown_width));
            let _ = self.out.flush();
            self.countdown_width = 0;
        }
    }

    fn write(&mut self, text: &str) {
        self.clear_countdown();
        // One write per event, so lines from concurrent writers never interleave mid-line.
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }
}

/// The ANSI colour of the `retry:` prefix for an event.
fn color_of(event: &Event<'_>) -> &'static str {
    match event {
        Event::GiveUp { .. } | Event::CannotStart { .. } | Event::Interrupted { .. } => {
            "\x1b[1;31m"
        }
        Event::AttemptFailed { .. }
        | Event::HookFailed { .. }
        | Event::HookValuesSkipped { .. }
        | Event::StdinShared
        | Event::SpillFailed { .. }
        | Event::HoldFull { .. }
        | Event::Unwritten { .. }
        | Event::WriteFailed { .. }
        | Event::ReadFailed { .. }
        | Event::TerminalStop { .. } => "\x1b[1;33m",
        Event::Success { .. } | Event::StreakContinues { .. } | Event::Restart { .. } => {
            "\x1b[1;32m"
        }
        _ => "\x1b[1m",
    }
}

/// What `--show-state` prints: a line for the budget and one for the breaker, or with
/// `--log-format json` one object.
pub(crate) fn fleet_state(
    format: LogFormat,
    budget: Option<&BudgetState>,
    breaker: Option<&BreakerShown>,
) -> String {
    match format {
        LogFormat::Json => json::state(budget, breaker),
        LogFormat::Text => {
            let mut out = String::new();
            if let Some(b) = budget {
                out += &format!(
                    "budget '{}': balance {:.2}; in the last {}: {}, {}\n",
                    b.name,
                    b.balance,
                    human(b.window),
                    counted(b.firsts, "first attempt", "first attempts"),
                    counted(b.retries, "retry", "retries"),
                );
            }
            if let Some(b) = breaker {
                // An open breaker keeps no count (opening clears it), and a probe due in
                // 59.992s reads as 1m: the next probe is a matter of seconds.
                let state = match b.state {
                    "closed" => match b.failures {
                        0 => "closed, no failures in a row".to_string(),
                        n => format!("closed, {} in a row", counted(n, "failure", "failures")),
                    },
                    "half-open" => {
                        "half-open: the cooldown is over, one probe at a time may go".to_string()
                    }
                    state => match b.next_probe.filter(|d| !d.is_zero()) {
                        Some(d) => format!("{state}; next probe in {}", human(whole_seconds(d))),
                        None => state.to_string(),
                    },
                };
                out += &format!("breaker '{}': {state}\n", b.name);
            }
            out
        }
    }
}

/// `n` and the noun for that many: `1 retry`, `2 retries`, `0 retries`.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What `--reset-state` prints.
pub(crate) fn fleet_reset(format: LogFormat, fleet: &FleetSettings) -> String {
    let budget = fleet.budget.as_ref().map(|(name, _)| name.as_str());
    let breaker = fleet.breaker.as_ref().map(|(name, _)| name.as_str());
    match format {
        LogFormat::Json => json::reset(budget, breaker),
        LogFormat::Text => {
            let mut out = String::new();
            if let Some(name) = budget {
                out += &format!("budget '{name}' reset: full\n");
            }
            if let Some(name) = breaker {
                out += &format!("breaker '{name}' reset: closed\n");
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::AttemptEnd;
    use crate::outcome::Limit;
    use crate::stdio::Stream;
    use crate::test_support::{SharedBuffer, ms};
    use std::ffi::OsString;

    fn render(verbosity: Verbosity, event: Event<'_>) -> String {
        let out = SharedBuffer::default();
        Logger::new(
            verbosity,
            LogFormat::Text,
            Terminal::default(),
            Box::new(out.clone()),
        )
        .emit(&event);
        out.text()
    }

    #[test]
    fn a_command_with_control_characters_stays_on_one_line() {
        let command = [OsString::from("sh\n"), OsString::from("-c")];
        let line = render(
            Verbosity::Verbose,
            Event::Start {
                command: &command,
                max_attempts: Some(1),
                seed: 7,
            },
        );
        assert_eq!(line, "retry: running $'sh\\n' -c (1 attempt, seed 7)\n");
    }

    #[test]
    fn failed_attempt_line() {
        let line = render(
            Verbosity::Normal,
            Event::AttemptFailed {
                count: Count::new(2, Some(6)),
                end: AttemptEnd::Exited(1),
                why: None,
                hint: None,
                ran: ms(12),
                next: Some(ms(1500)),
                reset: false,
                last_chance: false,
            },
        );
        assert_eq!(
            line,
            "retry: attempt 2/6 failed (exit 1) after 12ms; next attempt in 1.5s\n"
        );
        let line = render(
            Verbosity::Normal,
            Event::AttemptFailed {
                count: Count::new(7, None),
                end: AttemptEnd::TimedOut(Limit::Attempt),
                why: None,
                hint: None,
                ran: ms(100),
                next: None,
                reset: false,
                last_chance: false,
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
            count: Count::new(1, Some(2)),
            end: AttemptEnd::Exited(1),
            why: Some(Why::NoUntil),
            ran: ms(1),
            next: None,
            hint: None,
            reset: false,
            last_chance: false,
        };
        assert_eq!(render(Verbosity::Quiet, failed()), "");
        assert_ne!(render(Verbosity::Normal, failed()), "");
        let start = || Event::AttemptStart {
            count: Count::new(1, None),
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

    #[test]
    fn a_failed_spill_names_what_stays_in_memory() {
        for (stream, what) in [
            (Stream::Stdin, "replayed stdin"),
            (Stream::Stdout, "held stdout"),
        ] {
            let line = render(
                Verbosity::Normal,
                Event::SpillFailed {
                    stream,
                    error: "cannot write a temporary file: No space left on device",
                },
            );
            assert_eq!(
                line,
                format!(
                    "retry: cannot write a temporary file: No space left on device; keeping \
                     {what} in memory instead\n"
                )
            );
        }
    }
}
