//! Custody of held output (`--hold-stdout`, `--failed-output`): which attempt's output is still
//! held, and, at each turn of the run, what becomes of it.
//!
//! The executor holds the latest attempt's output and passes it on as it is told (`OutputOf`),
//! and keeps what `--failed-output on-give-up` keeps of earlier attempts until it is told how the
//! run stands (`Settle`). Whether an attempt's output is an earlier attempt's or the final one's
//! is known only once the next attempt is certain to start, or the run has ended: `HeldBack`
//! holds that question open, and `Custody` answers it, one method a turn of the run. Neither
//! decides the turns themselves (whether a retry follows, whether the run gives up): the loop
//! does, and says which came.

use crate::log::Logger;
use crate::outcome::AttemptEnd;

use super::traits::{Execute, Halt, OutputOf, Settle};

/// Where the run's held output stands between turns.
pub(super) struct HeldBack {
    /// A failed attempt's output waits for the next attempt to be certain to start
    /// (`--failed-output drop|on-give-up`, `--hold-stdout`); else it goes out as soon as a retry
    /// is planned.
    holding: bool,
    /// The attempt (its number and end) whose held output waits for the next attempt to be
    /// certain to start: only then is it an earlier attempt's. Should the run end first (the
    /// breaker found open, the deadline, a signal during the wait), it is the final attempt's.
    waiting: Option<(u64, AttemptEnd)>,
    /// The output kept for the give-up has gone out.
    settled: bool,
}

impl HeldBack {
    /// `holding`: whether a failed attempt's output waits for the next attempt to start.
    pub(super) fn new(holding: bool) -> HeldBack {
        HeldBack {
            holding,
            waiting: None,
            settled: false,
        }
    }
}

/// The custody at one turn of the run: where the held output stands, the executor that holds
/// it, and the logger that says what goes out.
pub(super) struct Custody<'r, E> {
    pub(super) held: &'r mut HeldBack,
    pub(super) executor: &'r mut E,
    pub(super) logger: &'r mut Logger,
}

impl<E: Execute> Custody<'_, E> {
    /// A wait and another attempt are planned after attempt `attempt`, which ended as `end`:
    /// when holding, its output waits, since the run may yet end before the next attempt;
    /// else it goes out now as an earlier attempt's.
    pub(super) fn another_follows(mut self, attempt: u64, end: AttemptEnd) -> Result<(), Halt> {
        if self.held.holding {
            self.held.waiting = Some((attempt, end));
            return Ok(());
        }
        self.release(OutputOf::EarlierAttempt { attempt, end })
    }

    /// The next attempt is certain to start: the output held back is an earlier attempt's.
    pub(super) fn next_starts(mut self) -> Result<(), Halt> {
        match self.held.waiting.take() {
            Some((attempt, end)) => self.release(OutputOf::EarlierAttempt { attempt, end }),
            None => Ok(()),
        }
    }

    /// The attempt that just ended is the run's answer: a success that ends the run, or any
    /// success under `--restart`. Its output is the one copy a pipeline downstream receives,
    /// and what was kept of failed attempts is forgotten.
    pub(super) fn succeeded(mut self) -> Result<(), Halt> {
        self.release(OutputOf::FinalAttempt)?;
        self.executor
            .settle_failed_output(Settle::Succeeded, self.logger)
    }

    /// The run gives up after the attempt that just ended: what `--failed-output on-give-up`
    /// kept of the earlier attempts goes out first, then this one's output as the final
    /// attempt's of a run that gave up: a reader (a cron mail) reads the attempts in order.
    pub(super) fn gave_up_after_latest(mut self) -> Result<(), Halt> {
        self.settle_given_up()?;
        self.release(OutputOf::GaveUp)
    }

    /// The run gives up between attempts (the deadline, the breaker found open, the time an
    /// `--on-retry` hook took): what was kept goes out, unless it has, then the output held
    /// back, if any, as the final attempt's.
    pub(super) fn gave_up(mut self) -> Result<(), Halt> {
        self.settle_given_up()?;
        match self.held.waiting.take() {
            Some(_) => self.release(OutputOf::GaveUp),
            None => Ok(()),
        }
    }

    /// A signal to `retry` ended the run: what was kept goes out, then the output held back,
    /// if any, each while the reader downstream takes it.
    pub(super) fn interrupted(self) {
        // Interrupted too, the run did not succeed: what was kept goes out (a second signal
        // cuts that short), before the final attempt's, in attempt order.
        let _ = self
            .executor
            .settle_failed_output(Settle::Interrupted, self.logger);
        // Ended during a wait, the attempt before it is the final one.
        if self.held.waiting.take().is_some() {
            self.executor.release_final_output_interrupted(self.logger);
        }
    }

    /// Passes on the latest attempt's held output.
    fn release(&mut self, output_of: OutputOf) -> Result<(), Halt> {
        self.executor.release_output(output_of, self.logger)
    }

    /// Settles the kept output of a run that gave up, once.
    fn settle_given_up(&mut self) -> Result<(), Halt> {
        if !std::mem::replace(&mut self.held.settled, true) {
            self.executor
                .settle_failed_output(Settle::GaveUp, self.logger)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::LogFormat;
    use crate::driver::traits::{
        AttemptResult, AttemptSpec, HookSpec, Interrupted, InterruptedAttempt,
    };
    use crate::log::Terminal;
    use crate::settings::Verbosity;
    use std::time::Instant;

    /// What the custody asked of the executor, in order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Asked {
        Release(OutputOf),
        Settle(Settle),
        ReleaseInterrupted,
    }

    /// An executor that only passes on output, and notes what it was asked to; `halt` makes
    /// its next release or settle find the reader gone.
    #[derive(Default)]
    struct Outlet {
        asked: Vec<Asked>,
        halt: bool,
    }

    impl Outlet {
        fn answer(&mut self, asked: Asked) -> Result<(), Halt> {
            self.asked.push(asked);
            if std::mem::take(&mut self.halt) {
                return Err(Halt::BrokenPipe);
            }
            Ok(())
        }
    }

    impl Execute for Outlet {
        fn run(
            &mut self,
            _: &AttemptSpec,
            _: &mut Logger,
        ) -> Result<AttemptResult, InterruptedAttempt> {
            unreachable!("no attempt runs here")
        }
        fn release_output(&mut self, output_of: OutputOf, _: &mut Logger) -> Result<(), Halt> {
            self.answer(Asked::Release(output_of))
        }
        fn release_final_output_interrupted(&mut self, _: &mut Logger) {
            self.asked.push(Asked::ReleaseInterrupted);
        }
        fn settle_failed_output(&mut self, settle: Settle, _: &mut Logger) -> Result<(), Halt> {
            self.answer(Asked::Settle(settle))
        }
        fn end_by(&mut self, _: Instant) {}
        fn stdin_shared(&self) -> bool {
            false
        }
        fn run_hook(
            &mut self,
            _: &HookSpec<'_>,
            _: &mut Logger,
        ) -> Result<AttemptEnd, Interrupted> {
            unreachable!("no hook runs here")
        }
    }

    const FAILED: AttemptEnd = AttemptEnd::Exited(1);

    /// A turn of the run, as the loop tells it to the custody (`Signalled`: `interrupted`).
    /// `ReaderGoes` is no turn: it
    /// makes the executor's next release or settle find the reader downstream gone.
    #[derive(Clone, Copy)]
    enum Turn {
        /// Attempt n failed, and a retry follows.
        AnotherFollows(u64),
        NextStarts,
        Succeeded,
        GaveUpAfterLatest,
        GaveUp,
        Signalled,
        ReaderGoes,
    }

    use Turn::*;

    /// Takes a custody, `holding` or not, through `turns`: what it asked of the executor, in
    /// order, and what the last turn returned.
    fn through(holding: bool, turns: &[Turn]) -> (Vec<Asked>, Result<(), Halt>) {
        let (mut held, mut outlet) = (HeldBack::new(holding), Outlet::default());
        let mut logger = Logger::new(
            Verbosity::Normal,
            LogFormat::Text,
            Terminal::default(),
            Box::new(std::io::sink()),
        );
        let mut returned = Ok(());
        for turn in turns {
            let custody = Custody {
                held: &mut held,
                executor: &mut outlet,
                logger: &mut logger,
            };
            returned = match *turn {
                AnotherFollows(attempt) => custody.another_follows(attempt, FAILED),
                NextStarts => custody.next_starts(),
                Succeeded => custody.succeeded(),
                GaveUpAfterLatest => custody.gave_up_after_latest(),
                GaveUp => custody.gave_up(),
                Signalled => {
                    custody.interrupted();
                    Ok(())
                }
                ReaderGoes => {
                    outlet.halt = true;
                    Ok(())
                }
            };
        }
        (outlet.asked, returned)
    }

    fn asked(holding: bool, turns: &[Turn]) -> Vec<Asked> {
        through(holding, turns).0
    }

    fn earlier(attempt: u64) -> Asked {
        Asked::Release(OutputOf::EarlierAttempt {
            attempt,
            end: FAILED,
        })
    }

    const SETTLE_GAVE_UP: Asked = Asked::Settle(Settle::GaveUp);
    const RELEASE_GAVE_UP: Asked = Asked::Release(OutputOf::GaveUp);
    const SETTLE_INTERRUPTED: Asked = Asked::Settle(Settle::Interrupted);

    #[test]
    fn holding_an_attempts_output_waits_for_the_next_attempt_to_start() {
        let none: [Asked; 0] = [];
        assert_eq!(
            asked(true, &[AnotherFollows(1)]),
            none,
            "the run may yet end before attempt 2"
        );
        assert_eq!(
            asked(true, &[AnotherFollows(1), NextStarts, NextStarts]),
            [earlier(1)],
            "released once"
        );
    }

    #[test]
    fn without_holding_an_attempts_output_goes_out_as_soon_as_a_retry_is_planned() {
        assert_eq!(asked(false, &[AnotherFollows(1)]), [earlier(1)]);
        assert_eq!(
            asked(false, &[AnotherFollows(1), NextStarts, GaveUp]),
            [earlier(1), SETTLE_GAVE_UP],
            "nothing is held back to give up with"
        );
    }

    #[test]
    fn output_held_back_when_the_run_gives_up_is_the_final_attempts() {
        assert_eq!(
            asked(true, &[AnotherFollows(1), GaveUp, GaveUp]),
            [SETTLE_GAVE_UP, RELEASE_GAVE_UP],
            "what was kept first, in attempt order; each once"
        );
    }

    #[test]
    fn a_run_that_gives_up_after_an_attempt_settles_once_then_releases_it() {
        let turns = [
            AnotherFollows(1),
            NextStarts,
            AnotherFollows(2),
            NextStarts,
            GaveUpAfterLatest,
            GaveUp,
        ];
        assert_eq!(
            asked(true, &turns),
            [earlier(1), earlier(2), SETTLE_GAVE_UP, RELEASE_GAVE_UP]
        );
    }

    #[test]
    fn a_success_is_the_final_attempt_and_forgets_what_was_kept() {
        let success = [
            Asked::Release(OutputOf::FinalAttempt),
            Asked::Settle(Settle::Succeeded),
        ];
        assert_eq!(
            asked(true, &[Succeeded, Succeeded, GaveUp]),
            [&success[..], &success, &[SETTLE_GAVE_UP]].concat(),
            "each --restart; a give-up after successes still settles"
        );
    }

    #[test]
    fn an_interrupt_passes_on_what_was_kept_then_what_was_held_back() {
        assert_eq!(
            asked(true, &[AnotherFollows(1), Signalled]),
            [SETTLE_INTERRUPTED, Asked::ReleaseInterrupted]
        );
        assert_eq!(
            asked(true, &[AnotherFollows(1), NextStarts, Signalled]),
            [earlier(1), SETTLE_INTERRUPTED],
            "interrupted while an attempt ran, nothing was held back"
        );
        assert_eq!(
            asked(true, &[AnotherFollows(1), ReaderGoes, Signalled]),
            [SETTLE_INTERRUPTED, Asked::ReleaseInterrupted],
            "even when the reader of what was kept went"
        );
    }

    #[test]
    fn a_reader_gone_while_settling_stops_the_give_up_before_the_release() {
        assert_eq!(
            through(true, &[AnotherFollows(1), ReaderGoes, GaveUp]),
            (vec![SETTLE_GAVE_UP], Err(Halt::BrokenPipe))
        );
    }
}
