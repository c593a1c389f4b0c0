//! The verdict on one attempt: succeed, retry, or stop.
//!
//! Pure: it sees how the attempt ended and what its output predicates matched, never a process.
//! The order of the rules is the contract's (fine point 16) and is written once, in `judge`.

use crate::outcome::AttemptEnd;
use crate::parse::CodeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Succeed,
    Retry,
    /// A permanent failure, by this rule: end the run now with this attempt's status.
    Stop(Permanent),
    /// The attempt died of SIGPIPE: its reader has gone and another attempt cannot help.
    BrokenPipe,
}

/// The rule that makes a failure permanent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permanent {
    /// `--stop-on-exit` lists its status.
    StopOnExit,
    /// `--retry-on-exit` is given and does not list its status.
    NotInRetryOnExit,
    /// The command cannot be started, and will not start on the next try either.
    CannotStart,
}

/// The judging rules, from the flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Judge {
    pub retry_on_exit: Option<CodeSet>,
    pub stop_on_exit: Option<CodeSet>,
    pub invert: bool,
    /// `--until-stdout` or `--until-stderr` is given: a match, not the exit code, means success.
    pub has_until: bool,
}

/// What the output predicates saw during one attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Matches {
    pub until: bool,
    pub retry_if: bool,
}

impl Judge {
    pub fn judge(&self, end: AttemptEnd, matches: Matches) -> Verdict {
        if end == AttemptEnd::Signaled(libc::SIGPIPE) {
            return Verdict::BrokenPipe;
        }
        let status = end.status();
        if self
            .stop_on_exit
            .is_some_and(|codes| codes.contains(status))
        {
            return Verdict::Stop(Permanent::StopOnExit);
        }
        let succeeded = match end {
            AttemptEnd::TimedOut(_)
            | AttemptEnd::NotFound
            | AttemptEnd::NotExecutable
            | AttemptEnd::SpawnFailed => false,
            _ if self.has_until => matches.until,
            _ => (status == 0) != self.invert,
        } && !matches.retry_if;
        if succeeded {
            return Verdict::Succeed;
        }
        match self.retry_on_exit {
            Some(codes) if !codes.contains(status) => Verdict::Stop(Permanent::NotInRetryOnExit),
            None if end.could_not_start() => Verdict::Stop(Permanent::CannotStart),
            _ => Verdict::Retry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Limit;
    use crate::parse::code_set;
    use AttemptEnd::*;
    use Permanent::*;
    use Verdict::*;

    fn codes(text: &str) -> Option<CodeSet> {
        Some(code_set(text).unwrap())
    }

    const NONE: Matches = Matches {
        until: false,
        retry_if: false,
    };

    #[test]
    fn default_rules() {
        let judge = Judge::default();
        assert_eq!(judge.judge(Exited(0), NONE), Succeed);
        assert_eq!(judge.judge(Exited(1), NONE), Retry);
        assert_eq!(judge.judge(Exited(255), NONE), Retry);
        assert_eq!(judge.judge(Signaled(libc::SIGKILL), NONE), Retry);
        assert_eq!(judge.judge(TimedOut(Limit::Attempt), NONE), Retry);
        assert_eq!(judge.judge(NotFound, NONE), Stop(CannotStart));
        assert_eq!(judge.judge(NotExecutable, NONE), Stop(CannotStart));
        assert_eq!(judge.judge(SpawnFailed, NONE), Retry);
        assert_eq!(judge.judge(Signaled(libc::SIGPIPE), NONE), BrokenPipe);
    }

    #[test]
    fn retry_on_exit_limits_what_is_retried() {
        let judge = Judge {
            retry_on_exit: codes("1,75-78"),
            ..Judge::default()
        };
        assert_eq!(judge.judge(Exited(1), NONE), Retry);
        assert_eq!(judge.judge(Exited(76), NONE), Retry);
        assert_eq!(judge.judge(Exited(2), NONE), Stop(NotInRetryOnExit));
        assert_eq!(
            judge.judge(TimedOut(Limit::Attempt), NONE),
            Stop(NotInRetryOnExit)
        );
        assert_eq!(judge.judge(SpawnFailed, NONE), Stop(NotInRetryOnExit));
        assert_eq!(judge.judge(Exited(0), NONE), Succeed);
    }

    #[test]
    fn retry_on_exit_can_retry_timeouts_and_missing_commands() {
        let judge = Judge {
            retry_on_exit: codes("124,127"),
            ..Judge::default()
        };
        assert_eq!(judge.judge(TimedOut(Limit::Attempt), NONE), Retry);
        assert_eq!(judge.judge(NotFound, NONE), Retry);
        assert_eq!(judge.judge(NotExecutable, NONE), Stop(NotInRetryOnExit));
    }

    #[test]
    fn stop_wins_over_retry() {
        let judge = Judge {
            retry_on_exit: codes("1-5"),
            stop_on_exit: codes("3"),
            ..Judge::default()
        };
        assert_eq!(judge.judge(Exited(3), NONE), Stop(StopOnExit));
        assert_eq!(judge.judge(Exited(2), NONE), Retry);
    }

    #[test]
    fn stop_on_exit_applies_to_reported_statuses() {
        let judge = Judge {
            stop_on_exit: codes("124,137"),
            ..Judge::default()
        };
        assert_eq!(
            judge.judge(TimedOut(Limit::Attempt), NONE),
            Stop(StopOnExit)
        );
        assert_eq!(judge.judge(Signaled(libc::SIGKILL), NONE), Stop(StopOnExit));
        assert_eq!(judge.judge(Exited(1), NONE), Retry);
    }

    #[test]
    fn invert_swaps_the_exit_code_judgement_only() {
        let judge = Judge {
            invert: true,
            ..Judge::default()
        };
        assert_eq!(judge.judge(Exited(0), NONE), Retry);
        assert_eq!(judge.judge(Exited(1), NONE), Succeed);
        assert_eq!(judge.judge(Signaled(libc::SIGTERM), NONE), Succeed);
        assert_eq!(judge.judge(TimedOut(Limit::Attempt), NONE), Retry);
        assert_eq!(judge.judge(NotFound, NONE), Stop(CannotStart));
        assert_eq!(judge.judge(SpawnFailed, NONE), Retry);
    }

    #[test]
    fn invert_with_retry_on_exit_does_not_retry_an_exit_0_failure_outside_the_list() {
        let judge = Judge {
            invert: true,
            retry_on_exit: codes("1"),
            ..Judge::default()
        };
        assert_eq!(judge.judge(Exited(0), NONE), Stop(NotInRetryOnExit));
    }

    #[test]
    fn until_decides_success_whatever_the_exit_code() {
        let judge = Judge {
            has_until: true,
            ..Judge::default()
        };
        let matched = Matches {
            until: true,
            retry_if: false,
        };
        assert_eq!(judge.judge(Exited(1), matched), Succeed);
        assert_eq!(judge.judge(Exited(0), NONE), Retry);
        assert_eq!(judge.judge(TimedOut(Limit::Attempt), matched), Retry);
        let inverted = Judge {
            invert: true,
            ..judge
        };
        assert_eq!(inverted.judge(Exited(1), matched), Succeed);
    }

    #[test]
    fn retry_if_turns_success_into_failure() {
        let judge = Judge::default();
        let matched = Matches {
            until: false,
            retry_if: true,
        };
        assert_eq!(judge.judge(Exited(0), matched), Retry);
        let limited = Judge {
            retry_on_exit: codes("1"),
            ..judge
        };
        assert_eq!(limited.judge(Exited(0), matched), Stop(NotInRetryOnExit));
        assert_eq!(limited.judge(Exited(1), matched), Retry);
    }
}
