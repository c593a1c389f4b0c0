//! What the driver tells the logger: each event of a run, and the small values events carry
//! (an attempt's count, why it failed, a hint heeded, why the run gave up and so which
//! `Ending` it had), and the family of each, by which `plain` and `json` render it. Data
//! only: how an event reads is `plain`'s and `json`'s.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use crate::ending::Ending;
use crate::fleet::Notice;
use crate::http::HintSource;
use crate::outcome::AttemptEnd;
use crate::predicate::Permanent;
use crate::settings::HookKind;
use crate::stdio::Stream;

/// Why an attempt failed, beyond how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why<'a> {
    /// The system's reason the command could not start.
    CannotStart(&'a str),
    StopIf,
    /// Under `--http`, the attempt's last status was a 4xx or 5xx.
    HttpStatus(u16),
    RetryIf,
    NoUntil,
}

impl std::fmt::Display for Why<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::CannotStart(error) => f.write_str(error),
            Why::StopIf => f.write_str("a --stop-if line matched"),
            Why::HttpStatus(status) => write!(f, "HTTP {status}"),
            Why::RetryIf => f.write_str("a --retry-if line matched"),
            Why::NoUntil => f.write_str("no --until line matched"),
        }
    }
}

/// A hint that the wait after a failed attempt heeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HintUse {
    /// The wait the hint asked for, as read: before `--retry-after-max` and the spread.
    pub asked: Duration,
    pub source: HintSource,
    /// The hint made the wait longer than the schedule's.
    pub lengthened: bool,
}

/// A file `retry` writes when the run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnFile {
    /// `--metrics-file`.
    Metrics,
    /// `--report`.
    Report,
}

/// Why a run gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUp<'a> {
    /// The attempt limit was reached.
    Exhausted,
    /// The verdict was a permanent failure, by this rule.
    Permanent(Permanent),
    /// `--max-time` was reached.
    MaxTime,
    /// The last chance before `--max-time` was taken and failed.
    LastChanceUsed,
    /// The next wait (the splay, before a first attempt) would end past `--max-time`.
    MaxTimeAhead { wait: Duration },
    /// The budget of this name could not pay for a retry.
    Budget(&'a str),
    /// The breaker of this name is open; its next probe is due in `next_probe`.
    Breaker { name: &'a str, next_probe: Duration },
}

impl GiveUp<'_> {
    /// How a run that gives up for this reason ended.
    pub(crate) fn ending(self) -> Ending {
        match self {
            GiveUp::Exhausted => Ending::Exhausted,
            GiveUp::Permanent(_) => Ending::Permanent,
            GiveUp::MaxTime | GiveUp::LastChanceUsed | GiveUp::MaxTimeAhead { .. } => {
                Ending::MaxTime
            }
            GiveUp::Budget(_) => Ending::Budget,
            GiveUp::Breaker { .. } => Ending::Breaker,
        }
    }
}

/// An attempt's number in the run, and where it stands against the attempt limit, which counts
/// the attempts after the last reset (a long attempt under `--reset-after`, a success under
/// `--restart`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    /// 1-based, never reset.
    pub attempt: u64,
    /// The limit per streak; `None` when unlimited.
    pub max_attempts: Option<u64>,
    /// The attempt after which the limit counts: 0, or the last reset's.
    pub limit_from: u64,
}

impl Count {
    /// A count with no reset behind it.
    pub fn new(attempt: u64, max_attempts: Option<u64>) -> Count {
        Count {
            attempt,
            max_attempts,
            limit_from: 0,
        }
    }
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
        count: Count,
    },
    /// An attempt failed; `next` is the wait before the next one, if there is one.
    AttemptFailed {
        count: Count,
        end: AttemptEnd,
        /// What the output predicates decided, when they decided the failure, or why the
        /// attempt could not start.
        why: Option<Why<'a>>,
        ran: Duration,
        next: Option<Duration>,
        /// The hint the wait heeded, if the attempt gave one.
        hint: Option<HintUse>,
        /// The attempt ran for `--reset-after` or longer: the wait is d(1) again.
        reset: bool,
        /// The wait was shortened so that the next attempt, the last, starts before
        /// `--max-time`.
        last_chance: bool,
    },
    /// The `--on-retry` hook used up so much of the wait that `--max-time` cut what was left
    /// into the last chance: attempt `attempt` starts after `next`.
    CutByHook {
        attempt: u64,
        next: Duration,
    },
    /// An attempt ran for `--reset-after` or longer and failed: the schedule and the attempt
    /// limit start over after it.
    Reset {
        attempt: u64,
        ran: Duration,
    },
    /// An attempt succeeded under `--restart`: the command starts again after `next`.
    Restart {
        count: Count,
        end: AttemptEnd,
        ran: Duration,
        next: Duration,
    },
    /// What the fleet limits (budget, breaker, their store) have to say.
    Fleet(&'a Notice),
    /// A hint value that is none of the accepted forms was ignored (`--verbose`).
    HintIgnored {
        attempt: u64,
        value: &'a str,
    },
    /// An attempt succeeded but `--consecutive` wants more in a row.
    StreakContinues {
        count: Count,
        end: AttemptEnd,
        ran: Duration,
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
        count: Count,
        end: AttemptEnd,
        ran: Duration,
        total: Duration,
        /// Under `--restart`: why the command is not started again.
        not_restarting: Option<GiveUp<'a>>,
    },
    GiveUp {
        reason: GiveUp<'a>,
        attempts: u64,
        total: Duration,
        status: u8,
    },
    /// Stdin is a pipe or socket under `--stdin auto`: said once, before the first retry.
    StdinShared,
    /// Held stdout (`"stdout"`) or replayed stdin (`"stdin"`) outgrew memory and no temporary
    /// file would take it: it stays in memory. Said once for each.
    SpillFailed {
        stream: Stream,
        error: &'a str,
    },
    /// Held output (`"stdout"`, `"stderr"`) or replayed stdin (`"stdin"`) that no file takes
    /// has filled the memory it may use: `retry` reads that stream no more. Said once for each.
    HoldFull {
        stream: Stream,
    },
    /// Under `--failed-output on-give-up`, the kept output of an earlier attempt follows.
    FailedOutput {
        attempt: u64,
        end: AttemptEnd,
    },
    /// The metrics file or the report could not be written; the run's status stands.
    Unwritten {
        file: OwnFile,
        path: &'a Path,
        error: &'a str,
    },
    /// Reading stdin for `--stdin replay` failed before its end: the attempts get only what
    /// was read before. Said once.
    ReadFailed {
        error: &'a str,
    },
    /// Writing an attempt's output to `retry`'s `stream` failed (not for a reader gone): what
    /// follows is lost. Said once for each stream.
    WriteFailed {
        stream: Stream,
        error: &'a str,
    },
    /// The attempt was stopped by SIGTTIN or SIGTTOU: it used the terminal from its own
    /// process group, and will wait there until it is killed.
    TerminalStop {
        attempt: u64,
        signal: i32,
    },
    /// SIGUSR1 or SIGUSR2 sent to `retry` was handed to the running attempt.
    Relayed {
        attempt: u64,
        signal: i32,
    },
    HookFailed {
        kind: HookKind,
        end: AttemptEnd,
    },
    /// Lines of the `--on-retry` hook's `RETRY_ENV_FILE` were skipped: `count` of them, the
    /// first at `line` for `error`. With no line, the file could not be made or read, and
    /// `error` says why.
    HookValuesSkipped {
        line: Option<usize>,
        error: &'a str,
        count: usize,
    },
    Interrupted {
        signal: i32,
    },
    /// How a timed-out or interrupted attempt's leftovers are ended in this run: through the
    /// attempts' cgroups, made below `cgroup`, or (`None`) by a walk of /proc.
    Sweep {
        cgroup: Option<&'a Path>,
    },
}

/// The families of events, each rendered by one function in `plain` and one in `json`: where
/// an event is routed, written once, and checked whole by the compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    /// The run's course: its start, the splay, an attempt's start, a wait cut short or started
    /// over, a hint ignored, and what the fleet limits say.
    Course,
    /// An attempt that failed or could not start, and the give-up.
    Failure,
    /// An attempt that succeeded: the run's end, a restart, a streak going on.
    Success,
    /// `retry`'s own streams and files: stdin shared, spilled, read; held and kept output;
    /// output written; a file not written.
    Streams,
    /// Signals and processes: a child stopped by the terminal, a signal relayed, `retry`
    /// interrupted, how leftovers are ended.
    Processes,
    /// Hooks: one that failed, the values one handed on that were skipped.
    Hooks,
}

impl Event<'_> {
    pub(super) fn family(&self) -> Family {
        match self {
            Event::Start { .. }
            | Event::Splay { .. }
            | Event::AttemptStart { .. }
            | Event::CutByHook { .. }
            | Event::Reset { .. }
            | Event::HintIgnored { .. }
            | Event::Fleet(_) => Family::Course,
            Event::AttemptFailed { .. } | Event::CannotStart { .. } | Event::GiveUp { .. } => {
                Family::Failure
            }
            Event::Success { .. } | Event::Restart { .. } | Event::StreakContinues { .. } => {
                Family::Success
            }
            Event::StdinShared
            | Event::SpillFailed { .. }
            | Event::HoldFull { .. }
            | Event::FailedOutput { .. }
            | Event::Unwritten { .. }
            | Event::ReadFailed { .. }
            | Event::WriteFailed { .. } => Family::Streams,
            Event::TerminalStop { .. }
            | Event::Relayed { .. }
            | Event::Interrupted { .. }
            | Event::Sweep { .. } => Family::Processes,
            Event::HookFailed { .. } | Event::HookValuesSkipped { .. } => Family::Hooks,
        }
    }
}
