//! Waiting for a condition: a line in a file, a pid written, a process gone, a child ended, a
//! line on a child's stderr. Every wait is bounded (`BOUND`), so a broken build fails instead
//! of hanging, and each is one `poll` of a condition: a test never waits for a sleep to have
//! been long enough.
//!
//! It starts nothing: it waits on what the test started (through `builder`, or by hand).

use std::fs;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use super::process::{alive, peak_rss_kib, send, shell_status};

/// Every wait on a process ends within this, so a broken build fails instead of hanging.
pub const BOUND: Duration = Duration::from_secs(20);

/// Asks `probe` every `every` until it answers, for up to `bound`; `None` when it never did.
/// The one poll loop of the tests: every wait below is one.
pub fn poll<T>(
    bound: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(answer) = probe() {
            return Some(answer);
        }
        if start.elapsed() >= bound {
            return None;
        }
        std::thread::sleep(every);
    }
}

/// `poll` up to `BOUND`, and its answer; panics with `what` past that.
pub fn poll_until<T>(what: &str, every: Duration, probe: impl FnMut() -> Option<T>) -> T {
    poll(BOUND, every, probe).unwrap_or_else(|| panic!("never: {what}"))
}

/// Waits up to `BOUND` for `condition`; panics with `what` past that.
pub fn eventually(what: &str, condition: impl Fn() -> bool) {
    poll_until(what, Duration::from_millis(2), || condition().then_some(()));
}

/// Waits until `path` holds at least `lines` lines, up to `BOUND`.
pub fn wait_for_lines(path: &Path, lines: usize) -> Vec<String> {
    let what = format!("{} has {lines} lines", path.display());
    poll_until(&what, Duration::from_millis(2), || {
        let text = fs::read_to_string(path).unwrap_or_default();
        let found: Vec<String> = text.lines().map(str::to_string).collect();
        (found.len() >= lines).then_some(found)
    })
}

/// The pid that a test's command wrote to `path`, once it is there.
pub fn pid_in(path: &Path) -> i32 {
    wait_for_lines(path, 1)[0].parse().expect("a pid")
}

/// Waits up to `BOUND` for a process to be gone; returns whether it went. (Whether it went at
/// once is for the benchmarks: a loaded machine may take its time to deliver a signal.)
pub fn gone_soon(pid: i32) -> bool {
    poll(BOUND, Duration::from_millis(5), || {
        (!alive(pid)).then_some(())
    })
    .is_some()
}

/// Kills `child`, which outlived `BOUND`, and fails the test.
fn outlived_the_bound(child: &mut Child) -> ! {
    let _ = child.kill();
    panic!("retry did not exit within {BOUND:?}");
}

/// Waits for `child` up to `BOUND`; kills it and panics past that.
pub fn wait_bounded(child: &mut Child) -> ExitStatus {
    let ended = poll(BOUND, Duration::from_millis(2), || {
        child.try_wait().expect("wait")
    });
    ended.unwrap_or_else(|| outlived_the_bound(child))
}

/// Waits for `child` as `wait_bounded` does, and returns with its status the CPU time that it
/// (and the children it collected) used.
pub fn wait_with_cpu_time(child: &mut Child) -> (ExitStatus, Duration) {
    let pid = child.id() as i32;
    let ended = poll(BOUND, Duration::from_millis(2), || {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value; wait4(2) with WNOHANG on our own child
        // returns at once.
        let (ended, usage) = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            let ended = libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage);
            (ended, usage)
        };
        (ended > 0).then(|| {
            let time = |t: libc::timeval| {
                Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
            };
            let status = std::os::unix::process::ExitStatusExt::from_raw(status);
            (status, time(usage.ru_utime) + time(usage.ru_stime))
        })
    });
    ended.unwrap_or_else(|| outlived_the_bound(child))
}

/// Waits for `child`, up to `BOUND`, and returns how it ended with its peak resident set
/// size in KiB, as its VmHWM read while it runs. Not wait4's `ru_maxrss`: that counts the
/// memory of the process that spawned it too (the test binary's, which may be large), since
/// exec records the high-water mark of the image it replaces.
pub fn wait_with_peak_rss(child: &mut Child) -> (ExitStatus, u64) {
    let mut peak = 0;
    let ended = poll(BOUND, Duration::from_millis(10), || {
        peak = peak.max(peak_rss_kib(child.id()));
        child.try_wait().expect("wait")
    });
    let ended = ended.unwrap_or_else(|| outlived_the_bound(child));
    (ended, peak)
}

/// Waits for `child` (see `wait_bounded`), asserts that it ended within `limit` of `since`,
/// and returns its status as a shell sees it.
pub fn status_within(child: &mut Child, since: Instant, limit: Duration) -> i32 {
    let status = shell_status(wait_bounded(child));
    let took = since.elapsed();
    assert!(took < limit, "ended after {took:?}, not within {limit:?}");
    status
}

/// Sends SIGTERM: `retry` must end by it at once.
pub fn sigterm_ends_retry_at_once(mut child: Child) {
    let sent = Instant::now();
    send(&child, libc::SIGTERM);
    assert_eq!(status_within(&mut child, sent, Duration::from_secs(2)), 143);
}

/// Reads the child's stderr until a line containing `needle` appears, or the bound passes.
pub fn wait_for_stderr(child: &mut Child, needle: &str) -> String {
    use std::io::{BufRead, BufReader};
    let stderr = child.stderr.take().expect("piped stderr");
    let (sender, receiver) = std::sync::mpsc::channel();
    let needle = needle.to_string();
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(&needle) {
                let _ = sender.send(seen.clone());
            }
        }
    });
    receiver
        .recv_timeout(BOUND)
        .expect("the expected stderr line")
}
