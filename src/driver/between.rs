//! What happens between one attempt and the next: whether a wait follows an attempt, and how
//! long (the schedule, the attempt's hint, `--reset-after`, the last chance before
//! `--max-time`), what is told of it, `--on-retry`, and the wait itself.
//!
//! It decides what follows an attempt that did not stop the run; it does not run attempts nor
//! judge them (`attempts.rs`), and a run that ends here ends through `run.rs`.

use std::time::Duration;

use crate::deadline::{Fit, LAST_CHANCE_MARGIN, WaitKind};
use crate::ending::Ending;
use crate::fleet::Gate;
use crate::http;
use crate::log::{Count, Event, GiveUp, HintUse, Logger, Visibility};
use crate::settings::HookKind;

use super::run::Run;
use super::traits::{AskedWait, AttemptResult, Execute, Halt, Sleep};

/// What follows an attempt.
pub(super) enum Next {
    /// A wait, and whether a hint the attempt gave set it.
    Wait {
        wait: Duration,
        hinted: bool,
    },
    End(Ending),
}

/// The kind of attempt a wait follows, which says what is told of it.
#[derive(Clone, Copy)]
enum Between {
    /// A retryable failure; the wait may have heeded the attempt's hint, or be d(1) again
    /// because the attempt ran past `--reset-after`.
    /// A last chance is a wait shortened so that one last attempt starts before `--max-time`.
    Failure {
        hint: Option<HintUse>,
        reset: bool,
        last_chance: bool,
    },
    /// A success that leaves a `--consecutive` streak unfinished.
    Streak,
    /// A success under `--restart`.
    Restart,
}

impl Between {
    /// What the deadline may do to the wait that follows: a hint cut to `retry_after_max` is
    /// the least it may become.
    fn wait_kind(self, retry_after_max: Duration) -> WaitKind {
        match self {
            Between::Failure {
                hint: Some(hint), ..
            } if hint.lengthened => WaitKind::Hinted,
            Between::Failure { hint, .. } => WaitKind::AfterFailure {
                not_before: hint.map_or(Duration::ZERO, |hint| hint.asked.min(retry_after_max)),
            },
            Between::Streak | Between::Restart => WaitKind::AfterSuccess,
        }
    }
}

impl<'a, E: Execute, S: Sleep, G: Gate + ?Sized> Run<'a, E, S, G> {
    /// A success: the run's end; with `--consecutive`, the wait before the streak goes on; with
    /// `--restart`, `--on-success` and then the wait before the command starts again.
    pub(super) fn after_success(
        &mut self,
        attempt: u64,
        result: &AttemptResult,
    ) -> Result<Next, Halt> {
        let settings = self.settings;
        let count = self.tally.count(attempt);
        let streak = self.tally.succeeded();
        if settings.restart {
            self.hook(HookKind::Success, attempt, result.end.status(), None)?;
        }
        if settings.restart || streak < settings.consecutive {
            // After a success the schedule starts over at d(1).
            let retry_number = self.tally.schedule_starts_over();
            self.delays.restart();
            let wait = self.delays.delay(retry_number);
            let between = if settings.restart {
                // The limit counts the attempts after this success.
                self.tally.restarts_after(attempt);
                Between::Restart
            } else {
                Between::Streak
            };
            let next = self.after_attempt(count, result, wait, between)?;
            if settings.restart {
                self.tally.waits_to_restart(result.end, result.ran);
            }
            return Ok(next);
        }
        self.custody().succeeded()?;
        self.logger.emit(&Event::Success {
            count,
            end: result.end,
            ran: result.ran,
            total: self.total(),
            not_restarting: None,
        });
        self.say_notices();
        self.hook(HookKind::Success, attempt, result.end.status(), None)?;
        Ok(Next::End(Ending::Success))
    }

    /// A retryable failure: the wait before the next attempt, or the run's end when no attempt
    /// or no time is left. A failure that ran for `--reset-after` or longer starts the schedule
    /// and the attempt limit afresh first.
    pub(super) fn after_failure(
        &mut self,
        attempt: u64,
        result: &AttemptResult,
    ) -> Result<Next, Halt> {
        let count = self.tally.count(attempt);
        let reset = self
            .settings
            .reset_after
            .is_some_and(|long| result.ran >= long);
        if reset {
            self.logger.emit(&Event::Reset {
                attempt,
                ran: result.ran,
            });
            self.delays.restart();
        }
        let retry_number = self.tally.failed(attempt, reset);
        let delay = self.delays.delay(retry_number);
        if let Some(value) = &result.ignored_hint {
            self.logger.emit(&Event::HintIgnored { attempt, value });
        }
        let (wait, hint) = self.hinted(delay, result.hint);
        let mut between = Between::Failure {
            hint,
            reset,
            last_chance: false,
        };
        let mut wait = wait;
        // No wait follows a last chance: after_attempt ends the run.
        if !self.max_time.last_chance_given()
            && let Fit::LastChance(shorter) = self.fit(wait, between, attempt)
        {
            wait = shorter;
            between = Between::Failure {
                hint,
                reset,
                last_chance: true,
            };
        }
        self.after_attempt(count, result, wait, between)
    }

    /// Fits a wait of `wait` after attempt `attempt` (`between` it and the next) to the
    /// deadline, if the run has one.
    fn fit(&self, wait: Duration, between: Between, attempt: u64) -> Fit {
        let kind = between.wait_kind(self.settings.retry_after_max);
        let next_limit = self.settings.timeouts.of(attempt.saturating_add(1));
        self.max_time.fit(self.clock.now(), wait, kind, next_limit)
    }

    /// What follows an attempt after which the run would wait `wait` and go on: the run's end
    /// when the attempt was the last the limit allows, when the wait would cross the deadline,
    /// or when the fleet limits refuse the next attempt; else the wait, announced.
    fn after_attempt(
        &mut self,
        count: Count,
        result: &AttemptResult,
        wait: Duration,
        between: Between,
    ) -> Result<Next, Halt> {
        let attempt = count.attempt;
        // The fleet limits are asked first: an attempt after which they refuse is the final one.
        let refusal = self.refusal(attempt, wait, between);
        match between {
            // Every success under --restart is the run's answer so far: its output is the one
            // copy.
            Between::Restart => self.custody().succeeded()?,
            _ if refusal.is_some() => self.custody().gave_up_after_latest()?,
            _ => self.custody().another_follows(attempt, result.end)?,
        }
        if let Some(reason) = refusal {
            return self.refused(count, result, between, reason);
        }
        self.logger
            .emit(&self.between_event(count, result, between, Some(wait)));
        self.say_notices();
        if let Between::Failure { .. } = between
            && let Some(next) = self.before_retry(attempt, result, wait, between)?
        {
            return Ok(next);
        }
        let hinted =
            matches!(between, Between::Failure { hint: Some(hint), .. } if hint.lengthened);
        Ok(Next::Wait { wait, hinted })
    }

    /// Why the run may not wait `wait` after attempt `attempt` and go on, if it may not.
    fn refusal(&mut self, attempt: u64, wait: Duration, between: Between) -> Option<GiveUp<'a>> {
        if self.tally.is_last(attempt) {
            Some(GiveUp::Exhausted)
        } else if self.max_time.last_chance_given() {
            // No wait follows the last chance, whatever its end: a success that leaves a
            // streak unfinished or restarts the command has no time either.
            Some(GiveUp::LastChanceUsed)
        } else if self.fit(wait, between, attempt) == Fit::End {
            Some(self.max_time.end_reason(self.clock.now(), wait))
        } else {
            self.may_go_on()
        }
    }

    /// Ends the run after an attempt that a wait would have followed, for `reason`: a
    /// `--restart` run as a success, any other as a give-up.
    fn refused(
        &mut self,
        count: Count,
        result: &AttemptResult,
        between: Between,
        reason: GiveUp<'_>,
    ) -> Result<Next, Halt> {
        if let Between::Restart = between {
            self.logger.emit(&Event::Success {
                count,
                end: result.end,
                ran: result.ran,
                total: self.total(),
                not_restarting: Some(reason),
            });
            self.say_notices();
            return Ok(Next::End(Ending::Success));
        }
        self.logger
            .emit(&self.between_event(count, result, between, None));
        self.give_up(reason, count.attempt, Visibility::Always)
            .map(Next::End)
    }

    /// Before the wait of `wait` after a retryable failure, announced: the warning that stdin
    /// is shared, then `--on-retry`; what follows instead of that wait, if the time the hook
    /// took changes it.
    fn before_retry(
        &mut self,
        attempt: u64,
        result: &AttemptResult,
        wait: Duration,
        between: Between,
    ) -> Result<Option<Next>, Halt> {
        if !self.warned_stdin && self.executor.stdin_shared() {
            self.warned_stdin = true;
            self.logger.emit(&Event::StdinShared);
        }
        self.hook(HookKind::Retry, attempt, result.end.status(), Some(wait))?;
        // The hook may have used up the time the wait had; a last chance is fitted again
        // to the time it left, so that it still starts when it should.
        let planned = match between {
            Between::Failure {
                last_chance: true, ..
            } => Duration::MAX,
            _ => wait,
        };
        match self.fit(planned, between, attempt) {
            Fit::Keep => Ok(None),
            Fit::LastChance(shorter) => {
                if planned != Duration::MAX {
                    // The wait was told as any other: say what it became.
                    self.logger.emit(&Event::CutByHook {
                        attempt: attempt + 1,
                        next: shorter,
                    });
                }
                self.max_time.give_last_chance();
                Ok(Some(Next::Wait {
                    wait: shorter,
                    hinted: false,
                }))
            }
            Fit::End => {
                let reason = self.max_time.end_reason(self.clock.now(), wait);
                let ending = self.give_up(reason, attempt, Visibility::Always)?;
                Ok(Some(Next::End(ending)))
            }
        }
    }

    /// The event of an attempt that a wait would follow, with that wait if it does.
    fn between_event<'r>(
        &self,
        count: Count,
        result: &'r AttemptResult,
        between: Between,
        next: Option<Duration>,
    ) -> Event<'r> {
        match between {
            Between::Failure {
                hint,
                reset,
                last_chance,
            } => {
                let hint = hint.filter(|_| next.is_some());
                let last_chance = last_chance && next.is_some();
                self.failure(count, result, next, hint, reset, last_chance)
            }
            Between::Streak => Event::StreakContinues {
                count,
                end: result.end,
                ran: result.ran,
                streak: self.tally.streak(),
                needed: self.settings.consecutive,
                next,
            },
            Between::Restart => Event::Restart {
                count,
                end: result.end,
                ran: result.ran,
                next: next.unwrap_or_default(),
            },
        }
    }

    /// The wait after a retryable failure whose schedule says `delay`: longer when the attempt
    /// asked for more (`hint`), by the hint (cut to `--retry-after-max`) and a random spread of
    /// up to a tenth of it, so that a fleet told the same time does not come back together.
    /// Where the hint ends before `--max-time`, the spread stays within what is left, the last
    /// chance's margin kept: a spread added for the fleet's sake never ends a run that the
    /// server's own wait leaves time in.
    fn hinted(&mut self, delay: Duration, hint: Option<AskedWait>) -> (Duration, Option<HintUse>) {
        let Some(asked) = hint else {
            return (delay, None);
        };
        let most = self.settings.retry_after_max;
        let mut limit = http::spread_limit(asked.wait, most);
        if let Some(deadline) = self.max_time.deadline() {
            let left = deadline.saturating_duration_since(self.clock.now());
            let hint = asked.wait.min(most);
            if hint < left {
                limit = limit.min((left - hint).saturating_sub(LAST_CHANCE_MARGIN));
            }
        }
        let spread = self.delays.up_to(limit);
        let wait = http::hinted_wait(delay, asked.wait, most, spread);
        let used = HintUse {
            asked: asked.wait,
            source: asked.source,
            lengthened: wait > delay,
        };
        (wait, Some(used))
    }
}

/// Waits `wait` before the next attempt; on a terminal, a long wait counts down once a second.
pub(super) fn count_down(
    clock: &mut impl Sleep,
    logger: &mut Logger,
    wait: Duration,
) -> Result<(), Halt> {
    if !logger.wants_countdown(wait) {
        return Ok(clock.sleep(wait)?);
    }
    let Some(until) = clock.now().checked_add(wait) else {
        // An end past what the clock can count has no countdown to show.
        return Ok(clock.sleep(wait)?);
    };
    loop {
        let left = until.saturating_duration_since(clock.now());
        if left.is_zero() {
            break;
        }
        logger.countdown(left);
        // Sleep until the whole seconds left (the number shown) change.
        let whole = Duration::from_secs(left.as_secs());
        let step = if whole == left {
            Duration::from_secs(1)
        } else {
            left - whole
        };
        if let Err(interrupted) = clock.sleep(step) {
            logger.clear_countdown();
            return Err(interrupted.into());
        }
    }
    logger.clear_countdown();
    Ok(())
}
