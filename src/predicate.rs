//! The verdict on one attempt: succeed, retry, or stop.
//!
//! Pure: it sees how the attempt ended and what its output predicates matched, never a process.
//! The order of the rules is written once, in `judge`.

use crate::debian::{Criteria, Meaning};
use crate::http::StatusClass;
use crate::outcome::AttemptEnd;
use crate::parse::{CodeLimit, CodeSet};

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
    /// A `--stop-if-stdout` or `--stop-if-stderr` line matched.
    StopIf,
    /// Under `--http`, a 4xx or 5xx status that retrying cannot help.
    HttpStatus(u16),
    /// The retries a `CODE@N` of `--retry-on-exit` allows for its status are used up.
    RetryLimit(CodeLimit),
}

/// What the `CODE@N` limits of `--retry-on-exit` have left over the run: each limit counts the
/// retries that followed an attempt ending with a status it covers (a range shares one count),
/// and resets never refill them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CodeLimits {
    limits: Vec<CodeLimit>,
    used: Vec<u64>,
}

impl CodeLimits {
    pub(crate) fn new(limits: Vec<CodeLimit>) -> CodeLimits {
        let used = vec![0; limits.len()];
        CodeLimits { limits, used }
    }

    /// Takes one retry after an attempt that ended with `status`: allowed when every limit
    /// that covers it has one left (so the smallest holds), and then counted against each. The
    /// limit that is used up, when one is.
    pub(crate) fn take(&mut self, status: u8) -> Result<(), CodeLimit> {
        let covers = |limit: &CodeLimit| (limit.low..=limit.high).contains(&status);
        if let Some((limit, _)) = self
            .limits
            .iter()
            .zip(&self.used)
            .find(|(limit, used)| covers(limit) && **used >= limit.retries)
        {
            return Err(*limit);
        }
        for (limit, used) in self.limits.iter().zip(&mut self.used) {
            if covers(limit) {
                *used += 1;
            }
        }
        Ok(())
    }
}

/// The judging rules, from the flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Judge {
    pub retry_on_exit: Option<CodeSet>,
    pub stop_on_exit: Option<CodeSet>,
    pub invert: bool,
    /// `--until-stdout` or `--until-stderr` is given: a match, not the exit code, means success.
    pub has_until: bool,
    /// `--http`: the attempt's last HTTP status counts too.
    pub http: bool,
    /// Debian's `-u`/`-w`: the criteria alone decide, after `--stop-if-*`.
    pub criteria: Option<Criteria>,
}

/// What the output predicates saw during one attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Matches {
    pub until: bool,
    pub retry_if: bool,
    pub stop_if: bool,
    /// The last final HTTP status line's status, when `--http` reads them.
    pub status: Option<u16>,
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
        if matches.stop_if {
            return Verdict::Stop(Permanent::StopIf);
        }
        if let Some(criteria) = self.criteria {
            return match criteria.meaning(end) {
                Meaning::Met => Verdict::Succeed,
                Meaning::Repeat => Verdict::Retry,
                Meaning::CannotStart => Verdict::Stop(Permanent::CannotStart),
            };
        }
        let status_class = matches
            .status
            .filter(|_| self.http)
            .map(|s| (s, StatusClass::of(s)));
        if let Some((status, StatusClass::Permanent)) = status_class {
            return Verdict::Stop(Permanent::HttpStatus(status));
        }
        let retry_if =
            matches.retry_if || matches!(status_class, Some((_, StatusClass::Retryable)));
        let succeeded = match end {
            AttemptEnd::TimedOut(_)
            | AttemptEnd::NotFound
            | AttemptEnd::NotExecutable
            | AttemptEnd::SpawnFailed => false,
            _ if self.has_until => matches.until,
            _ => (status == 0) != self.invert,
        } && !retry_if;
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

    /// Debian's criteria decide alone, after a --stop-if match, and see 124 and 128 + N.
    #[test]
    fn criteria_decide_after_stop_if() {
        let judge = Judge {
            criteria: Some(crate::debian::Criteria {
                until: true,
                ..crate::debian::criteria("fail").unwrap()
            }),
            ..Judge::default()
        };
        let stop_if = Matches {
            stop_if: true,
            ..Matches::default()
        };
        assert_eq!(
            judge.judge(AttemptEnd::Exited(1), Matches::default()),
            Verdict::Succeed
        );
        assert_eq!(
            judge.judge(AttemptEnd::Exited(0), Matches::default()),
            Verdict::Retry
        );
        assert_eq!(
            judge.judge(AttemptEnd::Exited(1), stop_if),
            Verdict::Stop(Permanent::StopIf)
        );
        assert_eq!(
            judge.judge(
                AttemptEnd::TimedOut(crate::outcome::Limit::Attempt),
                Matches::default()
            ),
            Verdict::Succeed
        );
        assert_eq!(
            judge.judge(AttemptEnd::Signaled(libc::SIGPIPE), Matches::default()),
            Verdict::BrokenPipe
        );
        assert_eq!(
            judge.judge(AttemptEnd::NotFound, Matches::default()),
            Verdict::Stop(Permanent::CannotStart)
        );
    }

    #[test]
    fn a_code_limit_counts_the_retries_after_its_codes_and_the_smaller_holds() {
        let limits = crate::parse::retry_codes("1,137@1,75-78@3,77@1,9@0")
            .unwrap()
            .limits;
        let mut left = CodeLimits::new(limits);
        assert_eq!(left.take(1), Ok(()), "no limit on 1");
        assert_eq!(left.take(1), Ok(()));
        assert_eq!(left.take(137), Ok(()));
        assert_eq!(left.take(137).unwrap_err().low, 137, "137@1 is used up");
        assert_eq!(left.take(9).unwrap_err().retries, 0, "@0: never");
        // 77 is under 75-78@3 and 77@1: the smaller holds, and a range shares its count.
        assert_eq!(left.take(77), Ok(()));
        assert_eq!(
            left.take(77).unwrap_err(),
            CodeLimit {
                low: 77,
                high: 77,
                retries: 1
            }
        );
        assert_eq!(left.take(75), Ok(()));
        assert_eq!(left.take(78), Ok(()));
        assert_eq!(left.take(76).unwrap_err().high, 78, "75-78 had 3 in all");
        assert_eq!(left.take(1), Ok(()), "still no limit on 1");
    }

    fn codes(text: &str) -> Option<CodeSet> {
        Some(code_set(text).unwrap())
    }

    const NONE: Matches = Matches {
        until: false,
        retry_if: false,
        stop_if: false,
        status: None,
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
            ..NONE
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
            retry_if: true,
            ..NONE
        };
        assert_eq!(judge.judge(Exited(0), matched), Retry);
        let limited = Judge {
            retry_on_exit: codes("1"),
            ..judge
        };
        assert_eq!(limited.judge(Exited(0), matched), Stop(NotInRetryOnExit));
        assert_eq!(limited.judge(Exited(1), matched), Retry);
    }

    /// The verdict order with the HTTP flags: `--stop-on-exit` first, then a `--stop-if` match,
    /// then a permanent HTTP status; a retryable status counts as a `--retry-if` match.
    #[test]
    fn the_verdict_order_with_http() {
        let http = Judge {
            http: true,
            ..Judge::default()
        };
        let status = |code| Matches {
            status: Some(code),
            ..NONE
        };
        let stop_if = Matches {
            stop_if: true,
            ..NONE
        };
        // A retryable status is a failure whatever the exit code.
        assert_eq!(http.judge(Exited(0), status(503)), Retry);
        assert_eq!(http.judge(Exited(22), status(429)), Retry);
        // Any other 4xx or 5xx ends the run, exit 0 or not.
        assert_eq!(http.judge(Exited(0), status(404)), Stop(HttpStatus(404)));
        assert_eq!(http.judge(Exited(22), status(501)), Stop(HttpStatus(501)));
        // 2xx, 3xx or no status leave it to the exit code.
        assert_eq!(http.judge(Exited(0), status(200)), Succeed);
        assert_eq!(http.judge(Exited(7), status(301)), Retry);
        assert_eq!(http.judge(Exited(7), NONE), Retry);
        assert_eq!(http.judge(Exited(0), NONE), Succeed);
        // Statuses count only under --http.
        assert_eq!(Judge::default().judge(Exited(0), status(503)), Succeed);
        // A stop pattern ends the run, even for an attempt that exited 0 or a retryable status.
        assert_eq!(Judge::default().judge(Exited(0), stop_if), Stop(StopIf));
        let both = Matches {
            stop_if: true,
            status: Some(503),
            ..NONE
        };
        assert_eq!(http.judge(Exited(1), both), Stop(StopIf));
        // --stop-on-exit is still first.
        let stop_on_1 = Judge {
            stop_on_exit: codes("1"),
            ..http
        };
        assert_eq!(stop_on_1.judge(Exited(1), stop_if), Stop(StopOnExit));
        assert_eq!(stop_on_1.judge(Exited(1), status(404)), Stop(StopOnExit));
        // A retryable status under --retry-on-exit: retried only when its code is listed.
        let listed = Judge {
            retry_on_exit: codes("22"),
            ..http
        };
        assert_eq!(listed.judge(Exited(22), status(503)), Retry);
        assert_eq!(listed.judge(Exited(0), status(503)), Stop(NotInRetryOnExit));
        // --until decides success, and a retryable status still makes it a failure.
        let until = Judge {
            has_until: true,
            ..http
        };
        let ready = Matches {
            until: true,
            status: Some(503),
            ..NONE
        };
        assert_eq!(until.judge(Exited(0), ready), Retry);
        let ready_ok = Matches {
            until: true,
            status: Some(200),
            ..NONE
        };
        assert_eq!(until.judge(Exited(3), ready_ok), Succeed);
    }
}
