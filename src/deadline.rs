//! Fitting a wait to `--max-time`: the last chance. Pure: durations
//! in, a decision out; the driver and `--dry-run` both ask it, so they cannot disagree.
//!
//! A deadline is a promise to keep trying until then: a wait after a failure that would end
//! past it is shortened so that one last attempt still starts, early enough to have a chance
//! to finish (twice the longest attempt so far before the deadline) and never later than
//! [`LAST_CHANCE_MARGIN`] before it. A server's wait (a hint) is never shortened, nor a wait
//! after a success: the first is what the server asked for, the second is no retry. A last
//! chance never comes sooner than a hint asked, even one the schedule's longer wait outgrew.

use std::time::Duration;

/// The latest a last chance starts before the deadline.
pub(crate) const LAST_CHANCE_MARGIN: Duration = Duration::from_millis(100);

/// What the wait after an attempt is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitKind {
    /// After a retryable failure, from the schedule; `not_before` is the least wait the
    /// attempt's hint asked for (zero without one), which a last chance never cuts into.
    AfterFailure { not_before: Duration },
    /// After a retryable failure, lengthened by the attempt's own hint (`Retry-After`).
    Hinted,
    /// After a success (`--consecutive`, `--restart`).
    AfterSuccess,
}

/// What becomes of a wait under a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fit {
    /// The wait ends before the deadline: it stands.
    Keep,
    /// The wait would end at or past the deadline; this shorter one lets the next attempt, the
    /// last, start in time.
    LastChance(Duration),
    /// No attempt may start after this wait: no time is left, or the wait is not one to shorten.
    End,
}

/// Fits `wait` into the `left` time before the deadline. `longest` is the longest attempt of
/// the run so far and `next_limit` the next attempt's own time limit, if it has one: the
/// last chance leaves twice the shorter of the two before the deadline.
pub(crate) fn fit(
    wait: Duration,
    left: Duration,
    kind: WaitKind,
    longest: Duration,
    next_limit: Option<Duration>,
) -> Fit {
    if left.is_zero() {
        return Fit::End;
    }
    // An attempt that would start at the deadline starts past it.
    if wait < left {
        return Fit::Keep;
    }
    let WaitKind::AfterFailure { not_before } = kind else {
        return Fit::End;
    };
    let room = next_limit.map_or(longest, |limit| limit.min(longest));
    let before = room.saturating_mul(2).max(LAST_CHANCE_MARGIN);
    let shorter = left.saturating_sub(before).max(not_before);
    if shorter >= left {
        return Fit::End;
    }
    Fit::LastChance(shorter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ms;
    use proptest::prelude::*;

    const FAILURE: WaitKind = WaitKind::AfterFailure {
        not_before: Duration::ZERO,
    };

    #[test]
    fn a_wait_that_ends_before_the_deadline_stands() {
        for kind in [FAILURE, WaitKind::Hinted, WaitKind::AfterSuccess] {
            assert_eq!(fit(ms(999), ms(1000), kind, ms(5), None), Fit::Keep);
        }
    }

    #[test]
    fn a_wait_past_the_deadline_leaves_twice_the_longest_attempt() {
        // The motivating case: 5.5 s in, the curve's next step is 6.5 s, 4.5 s are left, and
        // the attempts take 20 ms: the last attempt starts 100 ms before the deadline.
        assert_eq!(
            fit(ms(6500), ms(4500), FAILURE, ms(20), None),
            Fit::LastChance(ms(4400))
        );
        // Attempts of 1 s: the last starts 2 s before the deadline.
        assert_eq!(
            fit(ms(6500), ms(4500), FAILURE, ms(1000), None),
            Fit::LastChance(ms(2500))
        );
        // The next attempt's own limit, shorter than the longest attempt, is what it needs.
        assert_eq!(
            fit(ms(6500), ms(4500), FAILURE, ms(1000), Some(ms(300))),
            Fit::LastChance(ms(3900))
        );
        // A longer limit changes nothing.
        assert_eq!(
            fit(ms(6500), ms(4500), FAILURE, ms(1000), Some(ms(9000))),
            Fit::LastChance(ms(2500))
        );
    }

    #[test]
    fn a_moment_already_passed_gives_the_last_chance_at_once() {
        assert_eq!(
            fit(ms(6500), ms(1500), FAILURE, ms(1000), None),
            Fit::LastChance(Duration::ZERO)
        );
        assert_eq!(
            fit(ms(6500), ms(50), FAILURE, ms(0), None),
            Fit::LastChance(Duration::ZERO)
        );
        // A wait that ends exactly at the deadline is one that crosses it.
        assert_eq!(
            fit(ms(500), ms(500), FAILURE, ms(0), None),
            Fit::LastChance(ms(400))
        );
    }

    /// A hint the schedule's longer wait outgrew still holds the last chance back: never
    /// sooner than the server asked, and no chance at all when that is past the deadline.
    #[test]
    fn a_last_chance_never_comes_sooner_than_a_hint_asked() {
        let hinted = |not_before| WaitKind::AfterFailure { not_before };
        assert_eq!(
            fit(ms(10_000), ms(3000), hinted(ms(2000)), ms(500), None),
            Fit::LastChance(ms(2000))
        );
        assert_eq!(
            fit(ms(10_000), ms(3000), hinted(ms(1000)), ms(500), None),
            Fit::LastChance(ms(2000))
        );
        assert_eq!(
            fit(ms(10_000), ms(3000), hinted(ms(3000)), ms(500), None),
            Fit::End
        );
    }

    #[test]
    fn no_time_left_ends_the_run() {
        for kind in [FAILURE, WaitKind::Hinted, WaitKind::AfterSuccess] {
            assert_eq!(fit(ms(0), ms(0), kind, ms(0), None), Fit::End);
            assert_eq!(fit(ms(10), ms(0), kind, ms(0), None), Fit::End);
        }
    }

    #[test]
    fn hinted_waits_and_waits_after_a_success_are_never_shortened() {
        assert_eq!(
            fit(ms(6500), ms(4500), WaitKind::Hinted, ms(20), None),
            Fit::End
        );
        assert_eq!(
            fit(ms(6500), ms(4500), WaitKind::AfterSuccess, ms(20), None),
            Fit::End
        );
    }

    #[test]
    fn no_arithmetic_overflows() {
        assert_eq!(
            fit(
                Duration::MAX,
                Duration::MAX,
                FAILURE,
                Duration::MAX,
                Some(Duration::MAX)
            ),
            Fit::LastChance(Duration::ZERO)
        );
    }

    fn any_kind() -> impl Strategy<Value = WaitKind> {
        prop_oneof![
            (0u64..5_000).prop_map(|ms| WaitKind::AfterFailure {
                not_before: Duration::from_millis(ms)
            }),
            Just(WaitKind::Hinted),
            Just(WaitKind::AfterSuccess)
        ]
    }

    fn any_ms() -> impl Strategy<Value = Duration> {
        prop_oneof![0u64..2_000, 0u64..200_000].prop_map(Duration::from_millis)
    }

    proptest! {
        #[test]
        fn every_fit_keeps_the_promises_of_the_deadline(
            wait in any_ms(),
            left in any_ms(),
            kind in any_kind(),
            longest in any_ms(),
            next_limit in proptest::option::of(any_ms()),
        ) {
            match fit(wait, left, kind, longest, next_limit) {
                Fit::Keep => {
                    // The next attempt starts before the deadline, after the wait as asked.
                    prop_assert!(wait < left);
                }
                Fit::LastChance(shorter) => {
                    // Only a failure's own wait is shortened, and only one that would cross.
                    let WaitKind::AfterFailure { not_before } = kind else {
                        return Err(TestCaseError::fail("only a failure's wait is cut"));
                    };
                    prop_assert!(shorter >= not_before, "never sooner than a hint asked");
                    prop_assert!(wait >= left && shorter < wait);
                    // The last attempt starts before the deadline: at least 100 ms before it
                    // when there is that much time, at once otherwise.
                    prop_assert!(shorter < left);
                    let room = next_limit.map_or(longest, |limit| limit.min(longest));
                    let needed = room.saturating_mul(2).max(LAST_CHANCE_MARGIN);
                    prop_assert!(left - shorter >= needed || shorter == not_before || shorter.is_zero());
                    // And no earlier than it must.
                    prop_assert!(left - shorter <= needed || shorter == not_before);
                }
                Fit::End => {
                    // Time is left only for a wait that is not to be shortened.
                    let hint_past = matches!(kind, WaitKind::AfterFailure { not_before } if not_before >= left);
                    let not_cut = !matches!(kind, WaitKind::AfterFailure { .. });
                    prop_assert!(left.is_zero() || (wait >= left && (not_cut || hint_past)));
                }
            }
        }
    }
}
