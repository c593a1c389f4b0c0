//! Where a run stands against its limits: `Tally`, the attempts against the attempt limit (the
//! streak of successes, the schedule's retry number, the resets and restarts that start the
//! count afresh), and `MaxTime`, the `--max-time` deadline and its last chance.
//!
//! Pure: numbers and instants in, answers out. The loop reads the clock and says what happened;
//! nothing here waits, runs or tells.

use std::time::{Duration, Instant};

use crate::deadline::{self, Fit, WaitKind};
use crate::log::{Count, GiveUp};
use crate::outcome::{AttemptEnd, Limit};
use crate::parse::CodeLimit;
use crate::predicate::CodeLimits;

/// The attempts of a run, as its limits count them.
pub(super) struct Tally {
    /// The attempt limit per streak, `None` when unlimited.
    max_attempts: Option<u64>,
    /// Attempts started so far.
    attempts: u64,
    /// Successes in a row, for `--consecutive`.
    streak: u64,
    /// The retry the schedule is at: 1 for the wait before the second attempt.
    retry_number: u64,
    /// The attempt after which the attempt limit counts: 0, or the last reset's (a long
    /// attempt under `--reset-after`, a success under `--restart`).
    limit_from: u64,
    /// Under `--restart`, the success the run is waiting after: how it ended and how long it
    /// ran. A run that ends before the next attempt then ends as a success.
    restarting_after: Option<(AttemptEnd, Duration)>,
    /// What the `CODE@N` limits of `--retry-on-exit` have left.
    code_limits: CodeLimits,
}

impl Tally {
    pub(super) fn new(max_attempts: Option<u64>, code_limits: CodeLimits) -> Tally {
        Tally {
            max_attempts,
            attempts: 0,
            streak: 0,
            retry_number: 0,
            limit_from: 0,
            restarting_after: None,
            code_limits,
        }
    }

    /// Attempts started so far.
    pub(super) fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Successes in a row, for `--consecutive`.
    pub(super) fn streak(&self) -> u64 {
        self.streak
    }

    /// Under `--restart`, the success the run is waiting after, if it is.
    pub(super) fn restarting_after(&self) -> Option<(AttemptEnd, Duration)> {
        self.restarting_after
    }

    /// Attempt `attempt` as the run counts it against the limit.
    pub(super) fn count(&self, attempt: u64) -> Count {
        Count {
            attempt,
            max_attempts: self.max_attempts,
            limit_from: self.limit_from,
        }
    }

    /// Whether attempt number `attempt` is the last the limit allows, counting the attempts
    /// after the last reset.
    pub(super) fn is_last(&self, attempt: u64) -> bool {
        self.max_attempts
            .is_some_and(|max| attempt - self.limit_from >= max)
    }

    /// Attempt `attempt` starts: the run no longer waits after a success.
    pub(super) fn started(&mut self, attempt: u64) {
        self.attempts = attempt;
        self.restarting_after = None;
    }

    /// Takes one retry from the `CODE@N` limits, for an attempt that ended with `status`: the
    /// limit used up, if one is.
    pub(super) fn take_retry(&mut self, status: u8) -> Result<(), CodeLimit> {
        self.code_limits.take(status)
    }

    /// A success: the streak it makes.
    pub(super) fn succeeded(&mut self) -> u64 {
        self.streak += 1;
        self.streak
    }

    /// After a success the command runs again (`--consecutive`, `--restart`): the schedule
    /// starts over at d(1), the retry number of the wait that follows.
    pub(super) fn schedule_starts_over(&mut self) -> u64 {
        self.retry_number = 1;
        self.retry_number
    }

    /// Under `--restart`, attempt `attempt` succeeded: the limit counts the attempts after it.
    pub(super) fn restarts_after(&mut self, attempt: u64) {
        self.limit_from = attempt;
    }

    /// Under `--restart`, the run waits after a success that ended as `end` after `ran`.
    pub(super) fn waits_to_restart(&mut self, end: AttemptEnd, ran: Duration) {
        self.restarting_after = Some((end, ran));
    }

    /// A retryable failure of attempt `attempt`, which ran past `--reset-after` when `reset`
    /// (the schedule and the limit start afresh after it): the retry number of the wait that
    /// follows.
    pub(super) fn failed(&mut self, attempt: u64, reset: bool) -> u64 {
        self.streak = 0;
        if reset {
            self.limit_from = attempt;
            self.retry_number = 0;
        }
        self.retry_number = self.retry_number.saturating_add(1);
        self.retry_number
    }
}

/// The run's `--max-time` deadline, and what fitting a wait to it needs.
pub(super) struct MaxTime {
    /// `None` without `--max-time`; a deadline past what `Instant` can hold is none either.
    deadline: Option<Instant>,
    /// The longest attempt so far (a timed-out one counting as its limit): the last chance
    /// before `--max-time` leaves twice this.
    longest: Duration,
    /// The latest attempt was the last chance before `--max-time`: no wait follows it.
    last_chance: bool,
}

impl MaxTime {
    /// The deadline `limit` after `start`, if there is a limit.
    pub(super) fn new(start: Instant, limit: Option<Duration>) -> MaxTime {
        MaxTime {
            deadline: limit.and_then(|limit| start.checked_add(limit)),
            longest: Duration::ZERO,
            last_chance: false,
        }
    }

    pub(super) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether the latest attempt was the last chance before the deadline.
    pub(super) fn last_chance_given(&self) -> bool {
        self.last_chance
    }

    /// The next attempt is the last chance before the deadline.
    pub(super) fn give_last_chance(&mut self) {
        self.last_chance = true;
    }

    /// Whether `at` is at or past the deadline.
    pub(super) fn passed(&self, at: Instant) -> bool {
        self.deadline.is_some_and(|deadline| at >= deadline)
    }

    /// Whether a wait of `wait` starting at `now` would reach the deadline. A wait that ends
    /// past what the clock can count (`--base 500000000000y`) reaches any deadline.
    pub(super) fn crossed_by(&self, now: Instant, wait: Duration) -> bool {
        self.deadline.is_some() && now.checked_add(wait).is_none_or(|end| self.passed(end))
    }

    /// Why a wait of `wait` from `now` that crosses the deadline ends the run: the deadline
    /// has passed already (the attempt ran into it), or it would pass during the wait.
    pub(super) fn end_reason(&self, now: Instant, wait: Duration) -> GiveUp<'static> {
        if self.passed(now) {
            GiveUp::MaxTime
        } else {
            GiveUp::MaxTimeAhead { wait }
        }
    }

    /// Fits a wait of `wait` of kind `kind`, starting at `now`, to the deadline, if the run has
    /// one; `next_limit` is the next attempt's own time limit.
    pub(super) fn fit(
        &self,
        now: Instant,
        wait: Duration,
        kind: WaitKind,
        next_limit: Option<Duration>,
    ) -> Fit {
        let Some(deadline) = self.deadline else {
            return Fit::Keep;
        };
        let left = deadline.saturating_duration_since(now);
        deadline::fit(wait, left, kind, self.longest, next_limit)
    }

    /// An attempt ran for `took` (a timed-out one: its limit).
    pub(super) fn attempt_took(&mut self, took: Duration) {
        self.longest = self.longest.max(took);
    }

    /// When an attempt starting at `now` with the time limit `timeout` must be terminated: the
    /// earlier of its own limit and the run's deadline, and which that is.
    pub(super) fn attempt_deadline(
        &self,
        now: Instant,
        timeout: Option<Duration>,
    ) -> Option<(Instant, Limit)> {
        let own = timeout
            .and_then(|timeout| now.checked_add(timeout))
            .map(|at| (at, Limit::Attempt));
        let run = self.deadline.map(|at| (at, Limit::Run));
        match (own, run) {
            (Some(own), Some(run)) => Some(if own.0 < run.0 { own } else { run }),
            (own, run) => own.or(run),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ms;

    fn new_tally(max_attempts: Option<u64>) -> Tally {
        Tally::new(max_attempts, CodeLimits::new(Vec::new()))
    }

    #[test]
    fn the_limit_counts_from_the_last_reset() {
        let mut tally = new_tally(Some(3));
        assert!(!tally.is_last(2));
        assert!(tally.is_last(3));
        assert_eq!(tally.failed(3, true), 1, "the schedule starts over");
        assert!(!tally.is_last(5));
        assert!(tally.is_last(6));
        assert_eq!(
            tally.count(5),
            Count {
                attempt: 5,
                max_attempts: Some(3),
                limit_from: 3
            }
        );
        tally.restarts_after(6);
        assert!(!tally.is_last(8));
        assert!(tally.is_last(9));
        let unlimited = new_tally(None);
        assert!(!unlimited.is_last(u64::MAX));
    }

    #[test]
    fn a_failure_ends_the_streak_and_a_success_starts_the_schedule_over() {
        let mut tally = new_tally(None);
        assert_eq!(tally.failed(1, false), 1);
        assert_eq!(tally.failed(2, false), 2);
        assert_eq!((tally.succeeded(), tally.succeeded()), (1, 2));
        assert_eq!(tally.schedule_starts_over(), 1);
        assert_eq!(tally.failed(5, false), 2, "the schedule goes on from d(1)");
        assert_eq!(tally.streak(), 0);
    }

    #[test]
    fn a_restart_is_awaited_until_the_next_attempt_starts() {
        let mut tally = new_tally(None);
        tally.started(1);
        tally.waits_to_restart(AttemptEnd::Exited(0), ms(5));
        assert_eq!(
            tally.restarting_after(),
            Some((AttemptEnd::Exited(0), ms(5)))
        );
        tally.started(2);
        assert_eq!((tally.restarting_after(), tally.attempts()), (None, 2));
    }

    #[test]
    fn without_max_time_no_wait_crosses_and_every_wait_stands() {
        let start = Instant::now();
        let none = MaxTime::new(start, None);
        assert!(!none.passed(start + ms(1_000_000)));
        assert!(!none.crossed_by(start, Duration::MAX));
        let failure = WaitKind::AfterFailure {
            not_before: Duration::ZERO,
        };
        assert_eq!(none.fit(start, Duration::MAX, failure, None), Fit::Keep);
        assert_eq!(none.attempt_deadline(start, None), None);
        // Past what `Instant` holds is no deadline either.
        assert_eq!(MaxTime::new(start, Some(Duration::MAX)).deadline(), None);
    }

    #[test]
    fn a_wait_crosses_the_deadline_when_it_reaches_it() {
        let start = Instant::now();
        let limit = MaxTime::new(start, Some(ms(1000)));
        assert!(!limit.crossed_by(start, ms(999)));
        assert!(limit.crossed_by(start, ms(1000)));
        assert!(
            limit.crossed_by(start, Duration::MAX),
            "past what the clock counts"
        );
        assert_eq!(
            limit.end_reason(start, ms(1000)),
            GiveUp::MaxTimeAhead { wait: ms(1000) }
        );
        assert_eq!(limit.end_reason(start + ms(1000), ms(1)), GiveUp::MaxTime);
    }

    #[test]
    fn the_last_chance_leaves_twice_the_longest_attempt() {
        let start = Instant::now();
        let mut limit = MaxTime::new(start, Some(ms(1000)));
        limit.attempt_took(ms(200));
        limit.attempt_took(ms(100));
        let failure = WaitKind::AfterFailure {
            not_before: Duration::ZERO,
        };
        assert_eq!(
            limit.fit(start, ms(2000), failure, None),
            Fit::LastChance(ms(600))
        );
        assert_eq!(
            limit.fit(start, ms(2000), failure, Some(ms(50))),
            Fit::LastChance(ms(900)),
            "or twice the next attempt's own limit, when shorter"
        );
    }

    #[test]
    fn an_attempt_ends_by_the_earlier_of_its_timeout_and_the_deadline() {
        let start = Instant::now();
        let limit = MaxTime::new(start, Some(ms(1000)));
        assert_eq!(
            limit.attempt_deadline(start, Some(ms(300))),
            Some((start + ms(300), Limit::Attempt))
        );
        assert_eq!(
            limit.attempt_deadline(start + ms(800), Some(ms(300))),
            Some((start + ms(1000), Limit::Run))
        );
        assert_eq!(
            limit.attempt_deadline(start, None),
            Some((start + ms(1000), Limit::Run))
        );
        assert_eq!(
            limit.attempt_deadline(start, Some(Duration::MAX)),
            Some((start + ms(1000), Limit::Run)),
            "a timeout past what the clock counts is none"
        );
    }
}
