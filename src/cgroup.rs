//! Each attempt in a cgroup of its own, where `retry` may create one (cgroup v2, and a cgroup
//! of `retry`'s own that it may write to: root, a container, a delegated systemd unit): the
//! sweep of an attempt that `retry` ends is then the kernel's `cgroup.kill`, which reaches
//! every process the attempt started, however it forked or re-parented, and no other, with no
//! pid read and none recycled. Elsewhere `sweep` walks /proc.
//!
//! The attempt's cgroup is made below `retry`'s own before it starts, and its child joins it
//! before exec. A finished attempt's cgroup is left alone with whatever it holds, and removed
//! once empty: looked at before each attempt starts, and when `retry` ends; one that still
//! holds an earlier attempt's daemon then stays.

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::process::{Pid, WaitOptions, waitpid};

use crate::poll::{self, Wait};
use crate::sweep;

/// Set (to anything), `retry` never creates a cgroup: for the tests of the other way.
pub(crate) const TEST_NO_CGROUP: &str = "RETRY_TEST_NO_CGROUP";

/// The cgroups of a run's attempts.
pub(crate) struct Cgroups {
    /// `retry`'s own cgroup, where the attempts' are made.
    parent: PathBuf,
    /// What names this run's cgroups apart from another's, whose `retry` may have the same pid
    /// in another PID namespace.
    run: u64,
    /// The finished attempts' cgroups not removed yet (they held something).
    finished: Vec<PathBuf>,
}

/// One attempt's cgroup.
pub(crate) struct Attempt {
    dir: PathBuf,
    /// Its `cgroup.procs`, open for the child to write itself into.
    procs: OwnedFd,
    /// `cgroup.kill` was written: what is left in it is being ended.
    killed: std::cell::Cell<bool>,
}

impl Cgroups {
    /// `retry`'s own cgroup, where it may make cgroups; `None` where it may not (no cgroup v2,
    /// no cgroup of its own in it, no right to write there, or the tests said so).
    pub(crate) fn here() -> Option<Cgroups> {
        if std::env::var_os(TEST_NO_CGROUP).is_some() {
            return None;
        }
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
        let own = fs::read_to_string("/proc/self/cgroup").ok()?;
        let parent = own_cgroup(&mountinfo, &own)?;
        // Moving a process between two cgroups takes the right to write their common
        // ancestor's `cgroup.procs`: this one.
        let procs = parent.join("cgroup.procs");
        rustix::fs::access(&procs, rustix::fs::Access::WRITE_OK).ok()?;
        Some(Cgroups {
            parent,
            run: crate::process::entropy(),
            finished: Vec::new(),
        })
    }

    /// Makes the cgroup of attempt `number`, after removing the finished attempts' that are
    /// empty now. `None` when it cannot be made: the attempt then runs where `retry` does.
    pub(crate) fn for_attempt(&mut self, number: u64) -> Option<Attempt> {
        self.remove_empty();
        let dir = self
            .parent
            .join(format!("retry-{:016x}-{number}", self.run));
        fs::create_dir(&dir).ok()?;
        match fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(file) => Some(Attempt {
                dir,
                procs: file.into(),
                killed: std::cell::Cell::new(false),
            }),
            Err(_) => {
                let _ = fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The attempt has ended: its cgroup goes when it is empty. One whose processes were
    /// killed is empty a moment later, when the kernel has ended them: `retry` does not wait
    /// for that, a process of its own does (see `remove_when_empty`).
    pub(crate) fn finished(&mut self, attempt: Attempt) {
        if remove_tree(&attempt.dir).is_err() {
            if attempt.killed.get() {
                remove_when_empty(&attempt.dir);
            } else {
                self.finished.push(attempt.dir);
            }
        }
    }

    fn remove_empty(&mut self) {
        self.finished.retain(|dir| remove_tree(dir).is_err());
    }
}

impl Drop for Cgroups {
    /// Removes the cgroups that are empty when `retry` ends; one that holds a process an
    /// attempt left stays, with it.
    fn drop(&mut self) {
        self.remove_empty();
    }
}

impl Attempt {
    /// Writes the calling process into this cgroup: for the child, between fork and exec, so
    /// nothing but async-signal-safe calls. Failure leaves it where `retry` is, which
    /// `holds` then tells.
    pub(crate) fn join(procs: libc::c_int) {
        // SAFETY: write(2) of two bytes from a static buffer; "0" names the writer itself.
        unsafe {
            libc::write(procs, b"0\n".as_ptr().cast(), 2);
        }
    }

    /// The descriptor `join` writes to.
    pub(crate) fn procs(&self) -> libc::c_int {
        self.procs.as_raw_fd()
    }

    /// Whether process `pid` is in this cgroup or one below it (an attempt may make its own:
    /// a nested `retry` does).
    pub(crate) fn holds(&self, pid: libc::pid_t) -> bool {
        let Ok(text) = fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            return false;
        };
        let Some(name) = self.dir.file_name() else {
            return false;
        };
        text.lines()
            .find_map(|line| line.strip_prefix("0::"))
            .is_some_and(|path| Path::new(path).iter().any(|part| part == name))
    }

    /// Whether any process is left in it.
    pub(crate) fn populated(&self) -> bool {
        fs::read_to_string(self.dir.join("cgroup.events"))
            .map(|events| events.lines().any(|line| line == "populated 1"))
            .unwrap_or(false)
    }

    /// The processes in it now (not in the cgroups below it: a nested `retry` there passes
    /// the signal on itself, and a second one would cut its grace short).
    pub(crate) fn processes(&self) -> Vec<libc::pid_t> {
        fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| text.lines().filter_map(|pid| pid.parse().ok()).collect())
            .unwrap_or_default()
    }

    /// SIGKILL to every process in it, at once, by the kernel; then waits until none is left,
    /// up to `until`. Whether any is left.
    pub(crate) fn kill(&self, until: Instant) -> bool {
        self.killed.set(true);
        let killed = fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.kill"))
            .and_then(|mut file| file.write_all(b"1"));
        // A kernel before 5.14 has no cgroup.kill, and cgroup.kill passes over a process whose
        // main thread has ended while others run on: each one listed, again until none is,
        // through a pidfd opened while it was still in the cgroup.
        let mut each = killed.is_err();
        loop {
            if each {
                for pid in self.processes() {
                    let followed = sweep::entry_of(pid)
                        .and_then(|entry| sweep::Followed::new((pid, entry.start), false))
                        .filter(|_| self.holds(pid));
                    if let Some(followed) = followed {
                        followed.signal(&[libc::SIGKILL]);
                    }
                }
            }
            if !self.populated() {
                return false;
            }
            if Instant::now() >= until {
                return true;
            }
            each = true;
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Where it is, for `--verbose`.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Removes the cgroup `dir`, whose processes were all sent SIGKILL, once they have ended:
/// from a process of its own (a grandchild, so no one waits for it), which waits for that
/// (for a minute at most: one in uninterruptible sleep may take its time) and exits.
fn remove_when_empty(dir: &Path) {
    let (Ok(path), Ok(events)) = (
        CString::new(dir.as_os_str().as_bytes()),
        fs::File::open(dir.join("cgroup.events")),
    ) else {
        return;
    };
    // The cgroups an attempt made below its own go first, the deepest first.
    let nested: Vec<CString> = below(dir)
        .iter()
        .rev()
        .filter_map(|dir| CString::new(dir.as_os_str().as_bytes()).ok())
        .collect();
    let events = events.as_raw_fd();
    // SAFETY: fork(2) in a process with other threads: the children call only
    // async-signal-safe functions (fork, setsid, close_range, poll, rmdir, _exit; rustix's are
    // raw system calls) on memory made before the fork; the parent collects the first child,
    // which exits at once.
    let child = unsafe { libc::fork() };
    if let Some(first) = Pid::from_raw(child) {
        let _ = waitpid(Some(first), WaitOptions::empty());
        return;
    }
    if child < 0 {
        return;
    }
    let _ = rustix::process::setsid();
    // SAFETY: as above; the first child ends at once, the second goes on alone.
    if unsafe { libc::fork() } != 0 {
        // SAFETY: _exit(2) ends the first child at once, running nothing of `retry`'s.
        unsafe { libc::_exit(0) };
    }
    // Holding none of `retry`'s pipes open, so that no reader waits for it.
    let all = libc::c_uint::MAX;
    // SAFETY: close_range(2) of this child's own descriptors but `events`.
    unsafe {
        libc::syscall(libc::SYS_close_range, 0, events - 1, 0);
        libc::syscall(libc::SYS_close_range, events + 1, all, 0);
    }
    for _ in 0..60_000 {
        // `cgroup.events` is modified, and so polls as such, when it empties.
        let _ = poll::poll(
            [(events, libc::POLLPRI)],
            Wait::For(Duration::from_millis(1)),
        );
        for dir in &nested {
            let _ = rustix::fs::rmdir(dir.as_c_str());
        }
        if rustix::fs::rmdir(path.as_c_str()).is_ok() {
            break;
        }
    }
    // SAFETY: _exit(2) ends this child without running `retry`'s exit handlers.
    unsafe { libc::_exit(0) }
}

/// The cgroups below `dir`, each before those below it (so the deepest come last).
fn below(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut next = 0;
    let mut at = dir.to_path_buf();
    loop {
        if let Ok(entries) = fs::read_dir(&at) {
            found.extend(
                entries
                    .flatten()
                    .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
                    .map(|entry| entry.path()),
            );
        }
        let Some(dir) = found.get(next) else {
            return found;
        };
        at = dir.clone();
        next += 1;
    }
}

/// Removes the cgroup `dir` and those below it, the deepest first; fails while any holds a
/// process.
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    if fs::remove_dir(dir).is_ok() {
        return Ok(());
    }
    // A tree that still holds a process (an earlier attempt's daemon) is left whole.
    let events = fs::read_to_string(dir.join("cgroup.events")).unwrap_or_default();
    if events.lines().any(|line| line == "populated 1") {
        return Err(std::io::Error::other("populated"));
    }
    for nested in below(dir).iter().rev() {
        let _ = fs::remove_dir(nested);
    }
    fs::remove_dir(dir)
}

/// The directory of the cgroup v2 that `/proc/self/cgroup` (`own`) names, under the mount of
/// the cgroup2 file system that `mountinfo` lists; `None` without one.
fn own_cgroup(mountinfo: &str, own: &str) -> Option<PathBuf> {
    let path = own.lines().find_map(|line| line.strip_prefix("0::"))?;
    mountinfo.lines().find_map(|line| {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let (mount, fs) = line.split_once(" - ")?;
        if fs.split(' ').next()? != "cgroup2" {
            return None;
        }
        let fields: Vec<&str> = mount.split(' ').collect();
        let (root, point) = (*fields.get(3)?, unescape(fields.get(4)?));
        let below = if root == "/" {
            path.strip_prefix('/')?
        } else {
            path.strip_prefix(root)?.strip_prefix('/').or(
                // The mount's root is the cgroup itself.
                (path == root).then_some(""),
            )?
        };
        // A cgroup out of this mount's view (`/..` under a namespace) is not to be reached.
        (!below.split('/').any(|part| part == "..")).then(|| PathBuf::from(point).join(below))
    })
}

/// A mountinfo field, whose spaces, tabs, newlines and backslashes are written as octal
/// escapes.
fn unescape(field: &str) -> String {
    let mut out = Vec::with_capacity(field.len());
    let bytes = field.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let octal = bytes.get(at + 1..at + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[at], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                at += 4;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw
30 22 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
31 22 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
";

    #[test]
    fn the_own_cgroup_is_found_under_the_cgroup2_mount() {
        assert_eq!(
            own_cgroup(MOUNTINFO, "1:name=systemd:/x\n0::/\n"),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            own_cgroup(MOUNTINFO, "0::/system.slice/a b.service\n"),
            Some(PathBuf::from(
                "/sys/fs/cgroup/unified/system.slice/a b.service"
            ))
        );
        assert_eq!(
            own_cgroup(MOUNTINFO, "1:name=systemd:/x\n"),
            None,
            "v1 only"
        );
        assert_eq!(own_cgroup("", "0::/\n"), None, "not mounted");
        // Mounted from within (a container's view): the mount's root is stripped.
        let inner = "40 1 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cgroup(inner, "0::/docker/abc/job\n"),
            Some(PathBuf::from("/sys/fs/cgroup/job"))
        );
        assert_eq!(
            own_cgroup(inner, "0::/docker/abc\n"),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(own_cgroup(inner, "0::/other\n"), None, "out of view");
        assert_eq!(
            own_cgroup(MOUNTINFO, "0::/../x\n"),
            None,
            "above the namespace"
        );
        let spaced = "40 1 0:30 / /mnt/cg\\040two rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cgroup(spaced, "0::/\n"),
            Some(PathBuf::from("/mnt/cg two"))
        );
    }
}
