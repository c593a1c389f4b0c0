//! How an attempt ended, and the statuses `retry` gives (the table in the README and the
//! manual): an attempt's own here, a run's in `ending`.

use std::fmt;

use crate::parse::signal_name;

/// Status for an attempt `retry` terminated for `--timeout` or `--max-time`, as `timeout(1)`.
pub(crate) const TIMED_OUT: u8 = 124;
/// Status for misuse of `retry` itself: a bad flag, value or configuration.
pub(crate) const MISUSE: u8 = 125;
/// Status for a command that was found but could not be executed.
pub(crate) const NOT_EXECUTABLE: u8 = 126;
/// Status for a command that was not found.
pub(crate) const NOT_FOUND: u8 = 127;
/// Status for a run that a breaker kept from its first attempt: EX_TEMPFAIL of sysexits.h.
pub(crate) const TEMPORARY_FAILURE: u8 = 75;

/// Which limit made `retry` terminate an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `--timeout`, the per-attempt limit.
    Attempt,
    /// `--max-time`, the deadline of the whole run.
    Run,
}

/// How one attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptEnd {
    Exited(u8),
    Signaled(i32),
    TimedOut(Limit),
    NotFound,
    NotExecutable,
    /// The system could not start a process for the attempt at that moment (no process,
    /// memory or descriptor to spare, or the file was being written): unlike a command that is
    /// missing or not executable, worth another try. Its status is that of a command that
    /// could not be executed.
    SpawnFailed,
}

impl AttemptEnd {
    /// The attempt's status as `retry` gives it: what predicates judge, what
    /// `RETRY_LAST_EXIT` holds, and what `retry` exits with when this attempt is the last.
    pub fn status(self) -> u8 {
        match self {
            AttemptEnd::Exited(code) => code,
            AttemptEnd::Signaled(signal) => 128u8.saturating_add(signal.clamp(0, 127) as u8),
            AttemptEnd::TimedOut(_) => TIMED_OUT,
            AttemptEnd::NotFound => NOT_FOUND,
            AttemptEnd::NotExecutable | AttemptEnd::SpawnFailed => NOT_EXECUTABLE,
        }
    }

    /// The command cannot run: it was not found or is not executable, and will not be on the
    /// next try either.
    pub fn could_not_start(self) -> bool {
        matches!(self, AttemptEnd::NotFound | AttemptEnd::NotExecutable)
    }
}

impl fmt::Display for AttemptEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AttemptEnd::Exited(code) => write!(f, "exit {code}"),
            AttemptEnd::Signaled(signal) => match signal_name(signal) {
                Some(name) => write!(f, "killed by {name}"),
                None => write!(f, "killed by signal {signal}"),
            },
            AttemptEnd::TimedOut(Limit::Attempt) => f.write_str("timed out"),
            AttemptEnd::TimedOut(Limit::Run) => f.write_str("stopped at --max-time"),
            AttemptEnd::NotFound => f.write_str("command not found"),
            AttemptEnd::NotExecutable => f.write_str("command not executable"),
            AttemptEnd::SpawnFailed => f.write_str("could not start"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_statuses() {
        assert_eq!(AttemptEnd::Exited(0).status(), 0);
        assert_eq!(AttemptEnd::Exited(255).status(), 255);
        assert_eq!(AttemptEnd::Signaled(libc::SIGKILL).status(), 137);
        assert_eq!(AttemptEnd::Signaled(libc::SIGTERM).status(), 143);
        assert_eq!(AttemptEnd::TimedOut(Limit::Attempt).status(), 124);
        assert_eq!(AttemptEnd::TimedOut(Limit::Run).status(), 124);
        assert_eq!(AttemptEnd::NotFound.status(), 127);
        assert_eq!(AttemptEnd::NotExecutable.status(), 126);
        assert_eq!(AttemptEnd::SpawnFailed.status(), 126);
    }
}
