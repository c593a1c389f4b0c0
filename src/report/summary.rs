//! The run's summary for `--report`: how many attempts, how the run ended, and each attempt's
//! end and the wait after it, for a CI step to read once the run is over. The driver records
//! it as the run goes; here it is only kept and rendered (the JSON shape lives with the
//! events', in `json`).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Duration;

use crate::outcome::AttemptEnd;

/// One attempt, as the report tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AttemptRecord {
    /// 1-based, never reset.
    pub(crate) attempt: u64,
    pub(crate) end: AttemptEnd,
    pub(crate) ran: Duration,
    /// The wait after it, when another attempt followed that wait.
    pub(crate) wait: Option<Duration>,
    /// A hint the attempt gave (`Retry-After`, `--retry-after-*`) set that wait.
    pub(crate) hinted: bool,
}

/// The attempts a report holds: every one up to `HISTORY_HALF * 2`; past that, the first and
/// the last `HISTORY_HALF`, and a count of those left out between, so that a supervisor that
/// runs for a year holds a few hundred kilobytes at most.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct History {
    first: Vec<AttemptRecord>,
    last: VecDeque<AttemptRecord>,
    omitted: u64,
}

/// Half the attempts a report details.
pub(crate) const HISTORY_HALF: usize = 500;

impl History {
    pub(crate) fn push(&mut self, record: AttemptRecord) {
        if self.first.len() < HISTORY_HALF {
            self.first.push(record);
            return;
        }
        if self.last.len() == HISTORY_HALF {
            self.last.pop_front();
            self.omitted += 1;
        }
        self.last.push_back(record);
    }

    /// The latest attempt, to note the wait that followed it.
    pub(crate) fn latest(&mut self) -> Option<&mut AttemptRecord> {
        match self.last.back_mut() {
            Some(latest) => Some(latest),
            None => self.first.last_mut(),
        }
    }

    /// The attempts held, in order.
    pub(crate) fn records(&self) -> impl Iterator<Item = &AttemptRecord> {
        self.first.iter().chain(&self.last)
    }

    /// How many attempts between the first and the last held were left out.
    pub(crate) fn omitted(&self) -> u64 {
        self.omitted
    }
}

/// How a run ended, as the report names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    Success,
    /// The attempt limit was reached.
    Exhausted,
    /// `--max-time` was reached, or the next wait would have crossed it.
    MaxTime,
    /// A failure that is not retried (`--stop-on-exit`, `--stop-if-*`, a command that cannot
    /// start, a code whose retries are spent).
    Permanent,
    Budget,
    Breaker,
    /// `retry` received a signal that ends it.
    Signal,
    /// The reader downstream went away.
    BrokenPipe,
}

impl Ending {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Ending::Success => "success",
            Ending::Exhausted => "exhausted",
            Ending::MaxTime => "max-time",
            Ending::Permanent => "permanent",
            Ending::Budget => "budget",
            Ending::Breaker => "breaker",
            Ending::Signal => "signal",
            Ending::BrokenPipe => "broken-pipe",
        }
    }
}

/// What a report says of a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Summary<'a> {
    pub(crate) attempts: u64,
    /// `retry`'s own exit status (128 + N when a signal ended it).
    pub(crate) exit_status: u8,
    pub(crate) ending: Ending,
    pub(crate) elapsed: Duration,
    pub(crate) seed: u64,
    pub(crate) history: &'a History,
    /// The last attempt's status as messages report it, if one ran.
    pub(crate) last_exit: Option<u8>,
}

impl Summary<'_> {
    /// Every attempt after the run's first is a retry, as the budget counts them: the
    /// successes of a `--consecutive` streak or a `--restart` loop too.
    pub(crate) fn retries(&self) -> u64 {
        self.attempts.saturating_sub(1)
    }
}

/// The summary as GitHub Actions' step outputs read it (`$GITHUB_OUTPUT`): `name=value`
/// lines, the detail left out, and `last_exit` too when no attempt ran.
pub(crate) fn github(summary: &Summary<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "attempts={}", summary.attempts);
    let _ = writeln!(out, "retries={}", summary.retries());
    let _ = writeln!(out, "exit_status={}", summary.exit_status);
    if let Some(code) = summary.last_exit {
        let _ = writeln!(out, "last_exit={code}");
    }
    let _ = writeln!(out, "outcome={}", summary.ending.name());
    let _ = writeln!(out, "elapsed_ms={}", summary.elapsed.as_millis());
    out
}

/// The summary as one JSON object, the shape `docs/reference.md` gives.
pub(crate) fn json(summary: &Summary<'_>) -> String {
    super::json::summary(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(attempt: u64) -> AttemptRecord {
        AttemptRecord {
            attempt,
            end: AttemptEnd::Exited(1),
            ran: Duration::from_millis(5),
            wait: None,
            hinted: false,
        }
    }

    #[test]
    fn a_long_run_keeps_its_first_and_last_attempts() {
        let mut history = History::default();
        for attempt in 1..=5000 {
            history.push(record(attempt));
        }
        let held: Vec<u64> = history.records().map(|r| r.attempt).collect();
        assert_eq!(held.len(), 2 * HISTORY_HALF);
        assert_eq!(held[..3], [1, 2, 3]);
        assert_eq!(held[HISTORY_HALF - 1..HISTORY_HALF + 1], [500, 4501]);
        assert_eq!(held.last(), Some(&5000));
        assert_eq!(history.omitted(), 4000);
        history.latest().unwrap().wait = Some(Duration::from_secs(1));
        assert_eq!(
            history.records().last().unwrap().wait,
            Some(Duration::from_secs(1))
        );
        let mut short = History::default();
        assert!(short.latest().is_none());
        short.push(record(1));
        short.latest().unwrap().hinted = true;
        assert!(short.records().next().unwrap().hinted);
        assert_eq!(short.omitted(), 0);
    }

    #[test]
    fn github_lines_hold_the_counts_and_the_outcome() {
        let history = History::default();
        let summary = Summary {
            attempts: 3,
            exit_status: 124,
            last_exit: Some(124),
            ending: Ending::MaxTime,
            elapsed: Duration::from_micros(1_500_900),
            seed: 7,
            history: &history,
        };
        assert_eq!(
            github(&summary),
            "attempts=3\nretries=2\nexit_status=124\nlast_exit=124\noutcome=max-time\nelapsed_ms=1500\n"
        );
        let none = Summary {
            attempts: 0,
            exit_status: 75,
            last_exit: None,
            ending: Ending::Breaker,
            ..summary
        };
        assert_eq!(
            github(&none),
            "attempts=0\nretries=0\nexit_status=75\noutcome=breaker\nelapsed_ms=1500\n"
        );
    }
}
