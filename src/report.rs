//! The run's summary for `--report`: how many attempts, how the run ended, and each attempt's
//! end and the wait after it, for a CI step to read once the run is over. The driver records
//! it as the run goes; here it is kept, rendered (as GitHub's step outputs and as one JSON
//! object) and written, through `files`, when the run has ended. Nothing here is said on
//! stderr: that is `log`'s, and a file not written is the caller's to say.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::cli::ReportFormat;
use crate::ending::Ending;
use crate::files;
use crate::log::{signal_value, timed_out};
use crate::outcome::AttemptEnd;
use crate::process;

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
    /// The last attempt's status as the log gives it, if one ran.
    pub(crate) last_exit: Option<u8>,
}

impl Summary<'_> {
    /// Every attempt after the run's first is a retry, as the budget counts them: the
    /// successes of a `--consecutive` streak or a `--restart` loop too.
    pub(crate) fn retries(&self) -> u64 {
        self.attempts.saturating_sub(1)
    }
}

/// Writes the summary to `path` in `format`: as JSON, replacing the file whole (a new file
/// beside it takes its name); for GitHub, appended to what earlier steps wrote. Only a regular
/// file is written, or one of `retry`'s own descriptors that the path names (see
/// `files::writable`).
pub(crate) fn write(
    path: &Path,
    format: ReportFormat,
    summary: &Summary<'_>,
    inherited: &files::InheritedFds,
) -> io::Result<()> {
    match format {
        ReportFormat::Json => {
            let target = files::writable(path, files::Use::Replace, inherited)?;
            files::replace(&target, &json(summary), process::entropy())
        }
        ReportFormat::Github => {
            let target = files::writable(path, files::Use::Append, inherited)?;
            files::append(&target, &github(summary))
        }
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

/// `--report` under `json`: one object, the run's figures and then each attempt's.
#[derive(Serialize)]
struct Report {
    attempts: u64,
    retries: u64,
    exit_status: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_exit: Option<u8>,
    outcome: &'static str,
    elapsed_ms: u64,
    seed: u64,
    attempts_detail: Vec<AttemptDetail>,
    attempts_omitted: u64,
}

/// One attempt of a report: `exit` (its status as messages give it: 124 when timed out, 126
/// or 127 when it could not start) or `signal` (the one it died of).
#[derive(Serialize)]
struct AttemptDetail {
    attempt: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<String>,
    duration_ms: u64,
    timed_out: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_ms: Option<u64>,
    hint: bool,
}

/// The summary as one JSON object (and a line feed), the shape `docs/reference.md` gives.
pub(crate) fn json(summary: &Summary<'_>) -> String {
    let report = Report {
        attempts: summary.attempts,
        retries: summary.retries(),
        exit_status: summary.exit_status,
        last_exit: summary.last_exit,
        outcome: summary.ending.name(),
        elapsed_ms: summary.elapsed.as_millis() as u64,
        seed: summary.seed,
        attempts_detail: summary
            .history
            .records()
            .map(|record| AttemptDetail {
                attempt: record.attempt,
                exit: match record.end {
                    AttemptEnd::Signaled(_) => None,
                    end => Some(end.status()),
                },
                signal: match record.end {
                    AttemptEnd::Signaled(n) => Some(signal_value(n)),
                    _ => None,
                },
                duration_ms: record.ran.as_millis() as u64,
                timed_out: timed_out(record.end),
                wait_ms: record.wait.map(|wait| wait.as_millis() as u64),
                hint: record.hinted,
            })
            .collect(),
        attempts_omitted: summary.history.omitted(),
    };
    // Numbers, booleans and fixed names: nothing here can fail to serialize.
    serde_json::to_string(&report).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::outcome::Limit;

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

    /// The report holds exactly the fields the reference's table gives, the report's and each
    /// attempt's (an attempt has `exit` or `signal`, and `wait_ms` only when a wait followed).
    #[test]
    fn the_report_holds_to_the_documented_schema() {
        let documented = crate::log::table_of_fields("| report object | fields |");
        let mut history = History::default();
        for (attempt, end, wait) in [
            (1, AttemptEnd::Exited(1), Some(Duration::from_millis(1500))),
            (2, AttemptEnd::Signaled(libc::SIGKILL), Some(Duration::ZERO)),
            (3, AttemptEnd::TimedOut(Limit::Attempt), None),
        ] {
            history.push(AttemptRecord {
                attempt,
                end,
                ran: Duration::from_millis(2),
                wait,
                hinted: attempt == 1,
            });
        }
        let text = json(&Summary {
            attempts: 3,
            exit_status: 124,
            last_exit: Some(124),
            ending: Ending::Exhausted,
            elapsed: Duration::from_millis(1600),
            seed: 5,
            history: &history,
        });
        assert!(text.ends_with("}\n") && text.lines().count() == 1, "{text}");
        let report: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).unwrap();
        let keys = |object: &serde_json::Map<String, serde_json::Value>| -> BTreeSet<String> {
            object.keys().cloned().collect()
        };
        assert_eq!(keys(&report), documented["report"]);
        let attempts = report["attempts_detail"].as_array().unwrap();
        let mut fields = BTreeSet::new();
        for attempt in attempts {
            let attempt = attempt.as_object().unwrap();
            assert!(attempt.contains_key("exit") != attempt.contains_key("signal"));
            fields.extend(keys(attempt));
        }
        assert_eq!(fields, documented["attempt"]);
        assert_eq!(attempts[1]["signal"], "SIGKILL");
        assert_eq!(attempts[2]["exit"], 124);
        assert_eq!(attempts[2]["timed_out"], true);
        assert!(!attempts[2].as_object().unwrap().contains_key("wait_ms"));
        assert_eq!(
            (
                attempts[0]["wait_ms"].as_u64(),
                attempts[0]["hint"].as_bool()
            ),
            (Some(1500), Some(true))
        );
        assert_eq!(report["outcome"], "exhausted");
    }
}
