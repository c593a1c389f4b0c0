//! How a run ended, the one place that says so: `Ending` is what the driver returns, what the
//! give-up event's `reason` and the `--report` `outcome` name (with the one word for each), what
//! `--metrics-file` counts as success, and what `retry`'s exit status is derived from (Debian's
//! `-u`/`-w` rule on top of it is `Settings::exit_status`'s). Pure: no process, no output.

use crate::outcome::{AttemptEnd, TEMPORARY_FAILURE, TIMED_OUT};

/// How a whole run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// An attempt succeeded (under `--restart`, also a loop that stops after a success).
    Success,
    /// The attempt limit was reached.
    Exhausted,
    /// `--max-time` was reached, or the next wait would have crossed it.
    MaxTime,
    /// A failure that is not retried (`--stop-on-exit`, `--stop-if-*`, a command that cannot
    /// start, a code whose retries are spent).
    Permanent,
    /// The retry budget could not pay for a retry.
    Budget,
    /// The breaker was open: before any attempt ran, or before a retry.
    Breaker,
    /// `retry` itself received this signal, which ends it.
    Signal(i32),
    /// An attempt died of SIGPIPE, or `retry`'s own reader went away: the run ends quietly.
    BrokenPipe,
}

impl Ending {
    /// The run's one word, as the give-up event's `reason` and the report's `outcome` say it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Ending::Success => "success",
            Ending::Exhausted => "exhausted",
            Ending::MaxTime => "max-time",
            Ending::Permanent => "permanent",
            Ending::Budget => "budget",
            Ending::Breaker => "breaker",
            Ending::Signal(_) => "signal",
            Ending::BrokenPipe => "broken-pipe",
        }
    }

    /// The run gave up: it failed, by a limit, a verdict or the fleet, rather than succeeding
    /// or being cut short.
    pub(crate) fn gave_up(self) -> bool {
        !matches!(
            self,
            Ending::Success | Ending::Signal(_) | Ending::BrokenPipe
        )
    }

    /// The exit status of `retry` for a run that ended so, whose final attempt ended with
    /// `last` (`None` when no attempt ran), with `--fail-exit` replacing a given-up run's.
    pub(crate) fn exit_status(self, last: Option<AttemptEnd>, fail_exit: Option<u8>) -> u8 {
        match (self, last) {
            (Ending::Success, _) => 0,
            (Ending::Signal(signal), _) => AttemptEnd::Signaled(signal).status(),
            (Ending::BrokenPipe, _) => AttemptEnd::Signaled(libc::SIGPIPE).status(),
            // Kept from its first attempt: a temporary failure, EX_TEMPFAIL.
            (Ending::Breaker, None) => fail_exit.unwrap_or(TEMPORARY_FAILURE),
            // No attempt fit before `--max-time` (a `--splay` that left no time).
            (_, None) => fail_exit.unwrap_or(TIMED_OUT),
            // A failed run never reports success, even when the last attempt exited 0.
            (_, Some(end)) => fail_exit.unwrap_or(end.status().max(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Limit;

    /// The words are part of the interface: JSON events, `--report` and the docs say them.
    #[test]
    fn each_ending_has_its_one_word() {
        let words: Vec<&str> = [
            Ending::Success,
            Ending::Exhausted,
            Ending::MaxTime,
            Ending::Permanent,
            Ending::Budget,
            Ending::Breaker,
            Ending::Signal(libc::SIGTERM),
            Ending::BrokenPipe,
        ]
        .iter()
        .map(|ending| ending.name())
        .collect();
        assert_eq!(
            words,
            [
                "success",
                "exhausted",
                "max-time",
                "permanent",
                "budget",
                "breaker",
                "signal",
                "broken-pipe"
            ]
        );
    }

    #[test]
    fn run_statuses() {
        let failed = |end| Ending::Exhausted.exit_status(Some(end), None);
        assert_eq!(Ending::Success.exit_status(None, None), 0);
        assert_eq!(
            Ending::Success.exit_status(Some(AttemptEnd::Exited(0)), Some(1)),
            0
        );
        assert_eq!(failed(AttemptEnd::Exited(3)), 3);
        assert_eq!(failed(AttemptEnd::Exited(0)), 1);
        assert_eq!(failed(AttemptEnd::Signaled(9)), 137);
        assert_eq!(failed(AttemptEnd::TimedOut(Limit::Run)), 124);
        assert_eq!(failed(AttemptEnd::NotFound), 127);
        assert_eq!(failed(AttemptEnd::NotExecutable), 126);
        assert_eq!(Ending::MaxTime.exit_status(None, None), 124);
        assert_eq!(Ending::Breaker.exit_status(None, None), 75);
        assert_eq!(Ending::Breaker.exit_status(None, Some(1)), 1);
        assert_eq!(
            Ending::Breaker.exit_status(Some(AttemptEnd::Exited(3)), None),
            3
        );
        assert_eq!(Ending::BrokenPipe.exit_status(None, None), 141);
        assert_eq!(Ending::Signal(libc::SIGINT).exit_status(None, None), 130);
        let last = Some(AttemptEnd::Exited(3));
        assert_eq!(Ending::Signal(libc::SIGTERM).exit_status(last, None), 143);
    }

    #[test]
    fn fail_exit_replaces_only_given_up_runs() {
        for ending in [
            Ending::Exhausted,
            Ending::MaxTime,
            Ending::Permanent,
            Ending::Budget,
            Ending::Breaker,
        ] {
            assert!(ending.gave_up());
            for end in [
                AttemptEnd::Exited(3),
                AttemptEnd::Exited(0),
                AttemptEnd::TimedOut(Limit::Attempt),
                AttemptEnd::NotFound,
                AttemptEnd::NotExecutable,
                AttemptEnd::SpawnFailed,
                AttemptEnd::Signaled(9),
            ] {
                assert_eq!(ending.exit_status(Some(end), Some(1)), 1);
            }
        }
        assert_eq!(Ending::MaxTime.exit_status(None, Some(2)), 2);
        let last = Some(AttemptEnd::Exited(3));
        for (ending, status) in [
            (Ending::Success, 0),
            (Ending::BrokenPipe, 141),
            (Ending::Signal(libc::SIGTERM), 143),
        ] {
            assert!(!ending.gave_up());
            assert_eq!(ending.exit_status(last, Some(1)), status);
        }
    }
}
