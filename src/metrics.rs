//! The run's figures in the Prometheus text format (`--metrics-file`), for node_exporter's
//! textfile collector: rendered here, and written atomically, as the collector asks (a
//! temporary file in the same directory, then a rename over the file), so a scrape never reads
//! half a file.
//!
//! Rendering and reading back the last success are pure; `write` is the only side effect.

use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::ownership::owned_by_another;

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

/// Writes the figures to `path`, keeping the last success of the file there before: the text
/// goes to a new file beside it, which then replaces it. Only a regular file is replaced (or
/// made), never what else may be at PATH: a device, a FIFO, a socket or a directory is a file
/// that cannot be written. A symlink to a regular file is followed, and the file it names is
/// replaced. `nonce` (random bits from the caller) makes the temporary file's name.
pub(crate) fn write(path: &Path, job: &str, figures: &Figures, nonce: u64) -> io::Result<()> {
    let target = replaceable(path)?;
    let earlier = read_earlier(&target).and_then(|previous| last_success(&previous, job));
    let text = render(job, figures, earlier);
    let (temporary, mut file) = create_temporary_beside(&target, nonce)?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| fs::rename(&temporary, &target));
    if written.is_err() {
        // This run made it, under a name no one else could have known.
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// Where the figures go: `path` when nothing or a regular file is there, the regular file a
/// chain of symlinks ends at; anything else cannot be replaced. What another user put there (a
/// regular file, or any symlink of the chain) is neither read nor replaced: in a directory
/// shared with a neighbour, it would turn the write on a file of their choosing, or feed the
/// run a last success of their making. Root's own are root's.
fn replaceable(path: &Path) -> io::Result<PathBuf> {
    let not_regular = |kind: fs::FileType| {
        io::Error::other(format!("it is {}, not a regular file", file_kind(kind)))
    };
    let mut at = path.to_path_buf();
    // As many links as the kernel follows (MAXSYMLINKS).
    for _ in 0..40 {
        let found = match fs::symlink_metadata(&at) {
            Err(error) if error.kind() == io::ErrorKind::NotFound && at == path => {
                return Ok(at);
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(io::Error::other(
                    "it is a symlink to nothing, not a regular file",
                ));
            }
            Err(error) => return Err(error),
            Ok(found) => found,
        };
        let kind = found.file_type();
        if (kind.is_file() || kind.is_symlink()) && owned_by_another(found.uid()) {
            let what = if kind.is_file() {
                "a file"
            } else {
                "a symlink"
            };
            return Err(io::Error::other(format!(
                "it is {what} of another user (uid {}), not a regular file of this user's",
                found.uid()
            )));
        }
        if kind.is_file() {
            return if at == path {
                Ok(at)
            } else {
                fs::canonicalize(&at)
            };
        }
        if !kind.is_symlink() {
            return Err(not_regular(kind));
        }
        let target = fs::read_link(&at)?;
        at = match at.parent() {
            Some(parent) => parent.join(target),
            None => target,
        };
    }
    Err(io::Error::other(
        "it is a loop of symlinks, not a regular file",
    ))
}

fn file_kind(kind: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a symlink to one of those"
    }
}

/// The earlier file's text, if a regular file is there: opened without blocking (a FIFO put
/// there since would otherwise hold `retry` in `open`) and without following a symlink put
/// there since, and read up to `EARLIER_MAX`.
fn read_earlier(target: &Path) -> Option<String> {
    use std::io::Read;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(target)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = Vec::new();
    file.take(EARLIER_MAX).read_to_end(&mut text).ok()?;
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// A new file `.NAME.RANDOM.tmp` in the directory of `target`: hidden, and without the
/// `.prom` ending, so the textfile collector never reads it half written; its name cannot be
/// foreseen, so no one can have made it first.
fn create_temporary_beside(target: &Path, nonce: u64) -> io::Result<(PathBuf, fs::File)> {
    let name = target
        .file_name()
        .map_or_else(|| "metrics".into(), |name| name.to_string_lossy());
    let mut tries = 0u32;
    loop {
        let bits = nonce.rotate_left(17 * tries) ^ u64::from(tries);
        let temporary = target.with_file_name(format!(".{name}.{bits:016x}.tmp"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && tries < 3 => tries += 1,
            Err(error) => return Err(error),
        }
    }
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
        write(&path, "job", &figures(true), 1).unwrap();
        write(&path, "job", &figures(false), 2).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("retry_last_run_success{job=\"job\"} 0\n"));
        assert_eq!(last_success(&text, "job"), Some(1_700_000_003.75));
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["job.prom"], "no temporary file is left");
        let missing = dir.path().join("no/such/dir/job.prom");
        assert!(write(&missing, "job", &figures(true), 3).is_err());
    }
}
