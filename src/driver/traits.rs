//! What the loop asks of the world, and the words it asks in: `Execute` (how an attempt and a
//! hook run, and how held output is passed on) and `Sleep` (how time passes), an attempt's spec
//! and result, a hook's spec, and the ways a run is cut short.
//!
//! A leaf of the driver: types and traits only, no logic of the loop, so that every file of
//! the driver and the runner can name them.

use std::time::{Duration, Instant};

use crate::http::HintSource;
use crate::log::Logger;
use crate::outcome::{AttemptEnd, Limit};
use crate::predicate::Matches;
use crate::settings::HookKind;

/// What the executor needs to know to run one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptSpec {
    /// 1-based.
    pub number: u64,
    pub max_attempts: Option<u64>,
    /// The previous attempt's status, from the second attempt on.
    pub last_status: Option<u8>,
    /// When the attempt must be terminated, and which limit that instant comes from.
    pub deadline: Option<(Instant, Limit)>,
}

/// What the executor hands back of one attempt that ran to its end (or could not start).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptResult {
    pub end: AttemptEnd,
    pub ran: Duration,
    pub matches: Matches,
    /// Why the command could not be started, when it could not.
    pub start_error: Option<String>,
    /// The wait the attempt's output asked for (`Retry-After`, `--retry-after-*`), if any.
    pub hint: Option<AskedWait>,
    /// A hint value that was none of the accepted forms, for `--verbose`.
    pub ignored_hint: Option<String>,
}

/// A wait an attempt asked for, as read when it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AskedWait {
    pub wait: Duration,
    pub source: HintSource,
}

/// One run of a hook: `sh -c command` with the facts of the attempt that just ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookSpec<'a> {
    pub kind: HookKind,
    pub command: &'a str,
    /// The attempt that just ended (0 when none ran).
    pub attempt: u64,
    /// The attempt limit, `None` when unlimited.
    pub max_attempts: Option<u64>,
    pub last_status: u8,
    /// The coming wait, for `--on-retry`.
    pub next_delay: Option<Duration>,
    /// The run's `--max-time` deadline, which bounds hooks too.
    pub deadline: Option<Instant>,
}

/// `retry` itself received this signal; the attempt, if any, has been dealt with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupted(pub i32);

/// `retry` itself received this signal while an attempt ran; the attempt has been dealt with,
/// and ended as `end` after running for `ran`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterruptedAttempt {
    pub signal: i32,
    pub end: AttemptEnd,
    pub ran: Duration,
}

/// Why a run ends before its verdict is told: the one early exit of the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    /// The reader downstream has gone: writing held output found stdout closed, or the attempt
    /// died of SIGPIPE. The run ends quietly.
    BrokenPipe,
    /// `retry` received this signal.
    Interrupted(i32),
}

impl From<Interrupted> for Halt {
    fn from(Interrupted(signal): Interrupted) -> Halt {
        Halt::Interrupted(signal)
    }
}

/// Whose held output is passed on, which says where it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputOf {
    /// The run's final attempt (or a success under `--restart`): its stdout to stdout, the one
    /// copy a pipeline downstream receives, and its stderr to stderr.
    FinalAttempt,
    /// The final attempt of a run that did not succeed: as `FinalAttempt`, but when stdout is
    /// passed on only from a success (Debian's "once and once only"), its stdout to stderr.
    GaveUp,
    /// An attempt that a later one replaces, and how it ended: under `--hold-stdout`, its
    /// stdout to stderr; under `--failed-output`, dropped or kept for the give-up.
    EarlierAttempt { attempt: u64, end: AttemptEnd },
}

/// How the run stands when what was kept of its failed attempts' output is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// A success: what was kept is forgotten.
    Succeeded,
    /// The run ended without success: what was kept goes out whole.
    GaveUp,
    /// A signal to `retry` ended it: what was kept goes out while the reader takes it.
    Interrupted,
}

pub trait Execute {
    /// Runs one attempt to its end. `logger` is for what must be said while it runs.
    fn run(
        &mut self,
        spec: &AttemptSpec,
        logger: &mut Logger,
    ) -> Result<AttemptResult, InterruptedAttempt>;
    /// Passes on the last attempt's held output (`--hold-stdout`, `--failed-output`), as
    /// `output_of` says.
    fn release_output(&mut self, output_of: OutputOf, logger: &mut Logger) -> Result<(), Halt>;
    /// A signal to `retry` ended the run during the wait after an attempt whose held output
    /// was held back (`--failed-output`): passes it on as the final attempt's, while the
    /// reader downstream takes it.
    fn release_final_output_interrupted(&mut self, logger: &mut Logger);
    /// The run has ended, or a success under `--restart` closes a streak: under
    /// `--failed-output on-give-up`, writes the output kept of earlier attempts to stderr, or
    /// forgets it, as `settle` says.
    fn settle_failed_output(&mut self, settle: Settle, logger: &mut Logger) -> Result<(), Halt>;
    /// The run ends at `deadline` (`--max-time`): past it, and past the grace an attempt
    /// gets, no wait on a reader downstream may hold `retry` up. Told once, before anything runs.
    fn end_by(&mut self, deadline: Instant);
    /// Whether later attempts see only what earlier ones left of stdin (a pipe under `auto`).
    fn stdin_shared(&self) -> bool;
    /// Runs a hook to its end; how it ended is only logged, never judged. `logger` is for
    /// what must be said of the values an `--on-retry` hook hands on.
    fn run_hook(
        &mut self,
        hook: &HookSpec<'_>,
        logger: &mut Logger,
    ) -> Result<AttemptEnd, Interrupted>;
}

pub trait Sleep {
    fn now(&self) -> Instant;
    /// Waits `duration`, unless a signal ends the wait first.
    fn sleep(&mut self, duration: Duration) -> Result<(), Interrupted>;
    /// A signal that has come to end the run and was not yet taken, if one has, without
    /// waiting: one that comes after the wait, while the fleet limits are asked, ends the run
    /// before the next attempt starts.
    fn interrupted(&mut self) -> Result<(), Interrupted> {
        self.sleep(Duration::ZERO)
    }
}
