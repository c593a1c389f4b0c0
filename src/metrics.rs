//! The run's figures in the Prometheus text format (`--metrics-file`), for node_exporter's
//! textfile collector: rendered here, and written atomically, as the collector asks (a
//! temporary file in the same directory, then a rename over the file), so a scrape never reads
//! half a file.
//!
//! Rendering and reading back the last success are pure; `write` is the only side effect.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::files;

/// What a run's figures are made of.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Figures {
    pub(crate) start: SystemTime,
    pub(crate) end: SystemTime,
    pub(crate) duration: Duration,
    pub(crate) succeeded: bool,
    pub(crate) attempts: u64,
    /// `retry`'s own exit status.
    pub(crate) exit_status: u8,
}

/// The gauge that carries the last success over from one run's file to the next.
const LAST_SUCCESS: &str = "retry_last_success_timestamp_seconds";

/// The exposition of `figures` for `job`, with the time of the last success: this run's end if
/// it succeeded, else `earlier` (from the previous file), else none.
pub(crate) fn render(job: &str, figures: &Figures, earlier: Option<f64>) -> String {
    let last_success = if figures.succeeded {
        Some(seconds(figures.end))
    } else {
        earlier
    };
    let gauges: [(&str, &str, Option<f64>); 7] = [
        (
            "retry_last_run_start_timestamp_seconds",
            "When the last run of the job started, in seconds since the Unix epoch.",
            Some(seconds(figures.start)),
        ),
        (
            "retry_last_run_end_timestamp_seconds",
            "When the last run of the job ended, in seconds since the Unix epoch.",
            Some(seconds(figures.end)),
        ),
        (
            "retry_last_run_duration_seconds",
            "How long the last run of the job took, waits included.",
            Some(figures.duration.as_secs_f64()),
        ),
        (
            "retry_last_run_success",
            "Whether the last run of the job succeeded (1) or not (0).",
            Some(f64::from(u8::from(figures.succeeded))),
        ),
        (
            "retry_last_run_attempts",
            "How many attempts the last run of the job made.",
            Some(figures.attempts as f64),
        ),
        (
            "retry_last_run_exit_status",
            "The exit status of retry in the last run of the job.",
            Some(f64::from(figures.exit_status)),
        ),
        (
            LAST_SUCCESS,
            "When a run of the job last succeeded, in seconds since the Unix epoch.",
            last_success,
        ),
    ];
    let label = escape(job);
    let mut out = String::new();
    for (name, help, value) in gauges {
        let Some(value) = value else {
            continue;
        };
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        let _ = writeln!(out, "{name}{{job=\"{label}\"}} {value}");
    }
    out
}

/// The last success that an earlier file records for `job`, if it does.
pub(crate) fn last_success(previous: &str, job: &str) -> Option<f64> {
    let sample = format!("{LAST_SUCCESS}{{job=\"{}\"}} ", escape(job));
    previous
        .lines()
        .find_map(|line| line.strip_prefix(&sample))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .filter(|value| value.is_finite() && *value >= 0.0)
}

/// The most of an earlier file read for its last success (the file `retry` writes is about
/// 1.3 KB): whatever a neighbour left at PATH costs no more.
const EARLIER_MAX: u64 = 64 * 1024;

/// Writes the figures to `path`, keeping the last success of the file there before; the file
/// is replaced whole, and only a regular file is (see `files::writable`). A path that names
/// one of `retry`'s own descriptors is written through it, and no earlier file read. `nonce`
/// (random bits from the caller) makes the temporary file's name.
pub(crate) fn write(
    path: &Path,
    job: &str,
    figures: &Figures,
    nonce: u64,
    inherited: &files::InheritedFds,
) -> io::Result<()> {
    let target = files::writable(path, files::Use::Replace, inherited)?;
    let earlier = files::read_target(&target, EARLIER_MAX)
        .ok()
        .and_then(|previous| last_success(&String::from_utf8_lossy(&previous), job));
    files::replace(&target, &render(job, figures, earlier), nonce)
}

/// A label value as the text format writes it: `\`, `"` and line feeds escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

fn seconds(time: SystemTime) -> f64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn figures(succeeded: bool) -> Figures {
        Figures {
            start: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250),
            end: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_003_750),
            duration: Duration::from_millis(3500),
            succeeded,
            attempts: 3,
            exit_status: if succeeded { 0 } else { 7 },
        }
    }

    #[test]
    fn a_success_writes_every_gauge_with_help_and_type() {
        let text = render("backup", &figures(true), Some(12.0));
        assert_eq!(
            text,
            "# HELP retry_last_run_start_timestamp_seconds When the last run of the job started, in seconds since the Unix epoch.\n\
             # TYPE retry_last_run_start_timestamp_seconds gauge\n\
             retry_last_run_start_timestamp_seconds{job=\"backup\"} 1700000000.25\n\
             # HELP retry_last_run_end_timestamp_seconds When the last run of the job ended, in seconds since the Unix epoch.\n\
             # TYPE retry_last_run_end_timestamp_seconds gauge\n\
             retry_last_run_end_timestamp_seconds{job=\"backup\"} 1700000003.75\n\
             # HELP retry_last_run_duration_seconds How long the last run of the job took, waits included.\n\
             # TYPE retry_last_run_duration_seconds gauge\n\
             retry_last_run_duration_seconds{job=\"backup\"} 3.5\n\
             # HELP retry_last_run_success Whether the last run of the job succeeded (1) or not (0).\n\
             # TYPE retry_last_run_success gauge\n\
             retry_last_run_success{job=\"backup\"} 1\n\
             # HELP retry_last_run_attempts How many attempts the last run of the job made.\n\
             # TYPE retry_last_run_attempts gauge\n\
             retry_last_run_attempts{job=\"backup\"} 3\n\
             # HELP retry_last_run_exit_status The exit status of retry in the last run of the job.\n\
             # TYPE retry_last_run_exit_status gauge\n\
             retry_last_run_exit_status{job=\"backup\"} 0\n\
             # HELP retry_last_success_timestamp_seconds When a run of the job last succeeded, in seconds since the Unix epoch.\n\
             # TYPE retry_last_success_timestamp_seconds gauge\n\
             retry_last_success_timestamp_seconds{job=\"backup\"} 1700000003.75\n"
        );
    }

    #[test]
    fn a_failure_carries_the_last_success_over_or_leaves_it_out() {
        let text = render("backup", &figures(false), Some(1_600_000_000.5));
        assert!(text.contains("retry_last_run_success{job=\"backup\"} 0\n"));
        assert!(text.contains("retry_last_run_exit_status{job=\"backup\"} 7\n"));
        assert!(
            text.ends_with("retry_last_success_timestamp_seconds{job=\"backup\"} 1600000000.5\n")
        );
        let never = render("backup", &figures(false), None);
        assert!(!never.contains("retry_last_success_timestamp_seconds"));
        assert_eq!(never.lines().count(), 18);
    }

    #[test]
    fn the_last_success_is_read_back_for_the_same_job_only() {
        let earlier = render("a \"b\"\\c\nd", &figures(true), None);
        assert_eq!(
            last_success(&earlier, "a \"b\"\\c\nd"),
            Some(1_700_000_003.75)
        );
        assert_eq!(last_success(&earlier, "other"), None);
        assert_eq!(last_success("", "a"), None);
        assert_eq!(
            last_success("retry_last_success_timestamp_seconds{job=\"a\"} NaN\n", "a"),
            None
        );
        assert_eq!(
            last_success(
                "retry_last_success_timestamp_seconds{job=\"a\"} soon\n",
                "a"
            ),
            None
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(escape("a\nb"), r"a\nb");
        let text = render("x\"y", &figures(true), None);
        assert!(text.contains("retry_last_run_attempts{job=\"x\\\"y\"} 3\n"));
    }

    #[test]
    fn the_file_is_replaced_whole_and_keeps_the_last_success() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.prom");
        write(
            &path,
            "job",
            &figures(true),
            1,
            &files::InheritedFds::default(),
        )
        .unwrap();
        write(
            &path,
            "job",
            &figures(false),
            2,
            &files::InheritedFds::default(),
        )
        .unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("retry_last_run_success{job=\"job\"} 0\n"));
        assert_eq!(last_success(&text, "job"), Some(1_700_000_003.75));
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["job.prom"], "no temporary file is left");
        let missing = dir.path().join("no/such/dir/job.prom");
        assert!(
            write(
                &missing,
                "job",
                &figures(true),
                3,
                &files::InheritedFds::default()
            )
            .is_err()
        );
    }
}
