//! The run's figures in the Prometheus text format (`--metrics-file`), for node_exporter's
//! textfile collector: rendered here, and written atomically, as the collector asks (a
//! temporary file in the same directory, then a rename over the file), so a scrape never reads
//! half a file.
//!
//! Rendering and reading back the last success are pure; `write` is the only side effect.

use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

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

/// Writes the figures to `path`, keeping the last success of the file there before: the text
/// goes to a new file beside it, which then replaces it.
pub(crate) fn write(path: &Path, job: &str, figures: &Figures) -> io::Result<()> {
    let earlier = fs::read_to_string(path)
        .ok()
        .and_then(|previous| last_success(&previous, job));
    let text = render(job, figures, earlier);
    let temporary = temporary_beside(path);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&temporary)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .and_then(|()| fs::rename(&temporary, path));
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// `.NAME.PID.tmp` in the directory of `path`: hidden, and without the `.prom` ending, so the
/// textfile collector never reads it half written.
fn temporary_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "metrics".into(), |name| name.to_string_lossy());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
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
        write(&path, "job", &figures(true)).unwrap();
        write(&path, "job", &figures(false)).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("retry_last_run_success{job=\"job\"} 0\n"));
        assert_eq!(last_success(&text, "job"), Some(1_700_000_003.75));
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["job.prom"], "no temporary file is left");
        let missing = dir.path().join("no/such/dir/job.prom");
        assert!(write(&missing, "job", &figures(true)).is_err());
    }
}
