//! The retry loop: run an attempt, judge it, wait, and go again, within the attempt and time
//! limits.
//!
//! Generic over `Execute` (how an attempt runs) and `Sleep` (how time passes), so the loop is
//! unit-tested with fakes that record every wait. No `std::process` and no real clock here.
//!
//! `drive` is the one way in. Below it: `attempts` (the loop) over `between` (what follows an
//! attempt) over `run` (the run's state in one type, and how a run ends), over the leaves
//! `held` (the custody of held output), `limits` (the attempt limit and the deadline) and
//! `traits` (what the loop asks of the world).

mod attempts;
mod between;
mod held;
mod limits;
mod run;
#[cfg(test)]
mod tests;
mod traits;

pub use self::traits::{
    AskedWait, AttemptResult, AttemptSpec, Execute, Halt, HookSpec, Interrupted,
    InterruptedAttempt, OutputOf, Settle, Sleep,
};

use crate::backoff::Delays;
use crate::ending::Ending;
use crate::fleet::Gate;
use crate::log::Logger;
use crate::outcome::AttemptEnd;
use crate::report::History;
use crate::settings::Settings;

use self::run::Run;

/// How a run ended, and the attempts it made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FinishedRun {
    pub(crate) ending: Ending,
    pub(crate) attempts: u64,
    /// How the last attempt ended, if one ran.
    pub(crate) last: Option<AttemptEnd>,
    pub(crate) history: History,
}

/// Runs the whole loop and says how it ended. `seed` is the one `delays` draws from, to be said.
#[allow(clippy::too_many_arguments)] // Each is one of the loop's collaborators, named.
pub(crate) fn drive<E: Execute, S: Sleep, G: Gate + ?Sized>(
    settings: &Settings,
    seed: u64,
    executor: &mut E,
    clock: &mut S,
    delays: &mut Delays,
    gate: &mut G,
    logger: &mut Logger,
) -> FinishedRun {
    let mut run = Run::new(settings, executor, clock, delays, gate, logger);
    let ending = run.drive(seed);
    let (attempts, mut history) = run.into_record();
    FinishedRun {
        ending,
        attempts,
        last: history.latest().map(|latest| latest.end),
        history,
    }
}
