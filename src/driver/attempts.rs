//! The loop: attempt after attempt, each admitted (the deadline, the breaker, a signal), run,
//! judged and recorded, until the run ends or is cut short.
//!
//! What follows an attempt that did not stop the run is `between.rs`'s to decide; this file
//! only waits as it says.

use crate::ending::Ending;
use crate::fleet::{Admit, Gate, Outcome};
use crate::log::{Event, GiveUp, Visibility};
use crate::outcome::{AttemptEnd, Limit};
use crate::predicate::{Permanent, Verdict};
use crate::report::AttemptRecord;

use super::between::{Next, count_down};
use super::run::Run;
use super::traits::{AttemptResult, AttemptSpec, Execute, Halt, Interrupted, Sleep};

impl<'a, E: Execute, S: Sleep, G: Gate + ?Sized> Run<'a, E, S, G> {
    /// Runs the whole loop and says how it ended. `seed` is the one the delays draw from, to be
    /// said.
    pub(super) fn drive(&mut self, seed: u64) -> Ending {
        // Before the first word is said: a reader that does not read must not hold even that one
        // past the deadline.
        if let Some(deadline) = self.max_time.deadline() {
            self.executor.end_by(deadline);
        }
        self.logger.emit(&Event::Start {
            command: &self.settings.command,
            max_attempts: self.settings.max_attempts,
            seed,
        });
        match self.attempts() {
            Ok(ending) => ending,
            Err(Halt::BrokenPipe) => Ending::BrokenPipe,
            Err(Halt::Interrupted(signal)) => {
                self.custody().interrupted();
                self.logger.emit(&Event::Interrupted { signal });
                Ending::Signal(signal)
            }
        }
    }

    /// The splay, then attempt after attempt until the run ends, or a `Halt` cuts it short.
    fn attempts(&mut self) -> Result<Ending, Halt> {
        if let Some(end) = self.splay()? {
            return Ok(end);
        }
        for attempt in 1u64.. {
            if self.max_time.passed(self.clock.now()) {
                if let Some(success) = self.tally.restarting_after() {
                    return self.end_restarts(attempt - 1, success, GiveUp::MaxTime);
                }
                return self.give_up(GiveUp::MaxTime, attempt - 1, Visibility::Always);
            }
            if let Some(end) = self.admit(attempt)? {
                return Ok(end);
            }
            self.clock.interrupted()?;
            // The attempt is certain to start: the one before it was not the final one.
            self.custody().next_starts()?;
            let result = self.attempt(attempt)?;
            let next = match self.judge(&result) {
                Verdict::BrokenPipe => return Err(Halt::BrokenPipe),
                Verdict::Stop(rule) => return self.stop(rule, attempt, &result),
                Verdict::Succeed => self.after_success(attempt, &result)?,
                Verdict::Retry => self.after_failure(attempt, &result)?,
            };
            match next {
                Next::Wait { wait, hinted } => {
                    self.wait_after_latest = Some((wait, hinted));
                    count_down(self.clock, self.logger, wait)?;
                }
                Next::End(end) => return Ok(end),
            }
        }
        unreachable!("attempt numbers are unbounded")
    }

    /// Asks the breaker whether attempt `attempt` may start; the run's end when it may not: with
    /// 75 before any attempt ran, else with the last attempt's status.
    fn admit(&mut self, attempt: u64) -> Result<Option<Ending>, Halt> {
        let admitted = self.gate.admit(attempt);
        self.say_notices();
        let Admit::BreakerOpen { next_probe } = admitted else {
            return Ok(None);
        };
        let name = self.breaker_name();
        let reason = GiveUp::Breaker { name, next_probe };
        if let Some(success) = self.tally.restarting_after() {
            return self.end_restarts(attempt - 1, success, reason).map(Some);
        }
        self.give_up(reason, attempt - 1, Visibility::Always)
            .map(Some)
    }

    /// The random wait before the first attempt (`--splay`); the run's end when no time is
    /// left for a first attempt after it.
    fn splay(&mut self) -> Result<Option<Ending>, Halt> {
        let splay = self.settings.splay;
        if splay.is_zero() {
            return Ok(None);
        }
        let wait = self.delays.up_to(splay);
        if self.max_time.crossed_by(self.clock.now(), wait) {
            let reason = GiveUp::MaxTimeAhead { wait };
            return self.give_up(reason, 0, Visibility::Always).map(Some);
        }
        self.logger.emit(&Event::Splay { wait });
        self.clock.sleep(wait)?;
        Ok(None)
    }

    /// Runs attempt number `attempt` and says what must be said of its start.
    fn attempt(&mut self, attempt: u64) -> Result<AttemptResult, Interrupted> {
        let settings = self.settings;
        let spec = AttemptSpec {
            number: attempt,
            max_attempts: settings.max_attempts,
            last_status: self.history.latest().map(|latest| latest.end.status()),
            deadline: self
                .max_time
                .attempt_deadline(self.clock.now(), settings.timeouts.of(attempt)),
        };
        self.logger.emit(&Event::AttemptStart {
            count: self.tally.count(attempt),
        });
        self.tally.started(attempt);
        if let Some((wait, hinted)) = self.wait_after_latest.take()
            && let Some(latest) = self.history.latest()
        {
            (latest.wait, latest.hinted) = (Some(wait), hinted);
        }
        let record = |end, ran| AttemptRecord {
            attempt,
            end,
            ran,
            wait: None,
            hinted: false,
        };
        let result = match self.executor.run(&spec, self.logger) {
            Ok(result) => result,
            Err(cut) => {
                self.history.push(record(cut.end, cut.ran));
                return Err(Interrupted(cut.signal));
            }
        };
        self.history.push(record(result.end, result.ran));
        let took = match (result.end, settings.timeouts.of(attempt)) {
            (AttemptEnd::TimedOut(Limit::Attempt), Some(limit)) => limit,
            _ => result.ran,
        };
        self.max_time.attempt_took(took);
        if let Some(error) = &result.start_error
            && result.end.could_not_start()
            && !self.said_cannot_start
        {
            self.said_cannot_start = true;
            self.logger.emit(&Event::CannotStart {
                command: &settings.command[0],
                end: result.end,
                error,
            });
        }
        Ok(result)
    }

    /// The verdict on an attempt, with what the `CODE@N` limits have left, told to the fleet
    /// limits.
    fn judge(&mut self, result: &AttemptResult) -> Verdict {
        let mut verdict = self.settings.judge.judge(result.end, result.matches);
        if verdict == Verdict::Retry
            && let Err(spent) = self.tally.take_retry(result.end.status())
        {
            verdict = Verdict::Stop(Permanent::RetryLimit(spent));
        }
        self.gate.record(match verdict {
            Verdict::Succeed => Outcome::Success,
            // Retryable, but a system short of processes says nothing of the service.
            Verdict::Retry if result.end != AttemptEnd::SpawnFailed => Outcome::Failure,
            _ => Outcome::Nothing,
        });
        verdict
    }

    /// A permanent failure of attempt `attempt`: the run ends at once.
    fn stop(
        &mut self,
        rule: Permanent,
        attempt: u64,
        result: &AttemptResult,
    ) -> Result<Ending, Halt> {
        let count = self.tally.count(attempt);
        self.custody().gave_up_after_latest()?;
        // A command that cannot start was already said in a line of its own; a log still gets
        // the attempt's end and the run's.
        let visibility = if result.end.could_not_start() {
            Visibility::LogOnly
        } else {
            Visibility::Always
        };
        let event = self.failure(count, result, None, None, false, false);
        self.logger.tell(&event, visibility);
        let reason = GiveUp::Permanent(rule);
        self.give_up(reason, count.attempt, visibility)
    }
}
