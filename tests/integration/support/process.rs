//! Processes, signals and pipes as a test sees them from outside: a process's state in /proc,
//! its children, a signal sent, a child killed when the test ends however it ends, the status
//! as a shell sees it. Also the signal dispositions every child of the tests starts with.
//!
//! A leaf: it waits for nothing (`wait` does) and starts no `retry` (`builder` does).

use std::fs;
use std::process::{Child, ExitStatus};

/// The children of the tests get the default disposition of every signal they are sent,
/// whatever this process inherited: under `nohup`, or started as `cmd &` by a script, it
/// ignores SIGHUP or SIGINT, and an ignored signal stays ignored through fork and exec. A
/// handler does not (exec resets it to the default), so at start-up each of those signals
/// that is ignored gets a handler that does nothing: this process still shrugs it off, and
/// what it starts hears it as it would anywhere.
#[used]
#[unsafe(link_section = ".init_array")]
static DEFAULT_DISPOSITIONS_FOR_CHILDREN: extern "C" fn() = default_dispositions_for_children;

extern "C" fn default_dispositions_for_children() {
    extern "C" fn ignore(_: libc::c_int) {}
    for signal in [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
    ] {
        // SAFETY: sigaction(2) with valid pointers, at start-up before any other thread;
        // the handler is async-signal-safe (it does nothing).
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut current);
            if current.sa_sigaction == libc::SIG_IGN {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    }
}

/// A process's state letter from /proc (`S`, `R`, `T` stopped, `Z` zombie...), if it exists.
pub fn state(pid: i32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Whether a process is alive (zombies count as gone: they only wait to be reaped; but one
/// whose main thread alone has ended shows `Z` while its other threads run on).
pub fn alive(pid: i32) -> bool {
    let threads = || {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after_name = stat.rsplit(')').next().unwrap_or("");
        // Field 20, num_threads, is the 18th after the name.
        let field = after_name.split_whitespace().nth(17);
        field
            .and_then(|threads| threads.parse::<u32>().ok())
            .unwrap_or(0)
    };
    state(pid).is_some_and(|state| (state != 'Z' && state != 'X') || threads() > 1)
}

/// The children of process `pid`, from /proc/PID/task/TID/children.
pub fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// The peak resident memory of a running process so far (VmHWM), in KiB; 0 once it is gone.
pub fn peak_rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

pub fn send(child: &Child, signal: i32) {
    // SAFETY: kill(2) on the pid of a child this test spawned.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

/// Kills a process (a negative pid: a group) that a test's command left behind on purpose.
pub fn kill_leftover(pid: i32) {
    // SAFETY: kill(2) on a process or group this test started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// A child of the test, killed and reaped when dropped if it is still running, also when the
/// test fails. (Unlike a bare pid, which once reaped may name a process of another test.)
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Kills a process (a negative pid: a group) when dropped, so that what a test's command
/// leaves running on purpose (a `yes` that never stops) is gone even when the test fails.
pub struct KillOnDrop(pub i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        kill_leftover(self.0);
    }
}

/// The status as a shell sees it: the exit code, or 128 + N for a death by signal N.
pub fn shell_status(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .expect("an exit code or a signal")
}

/// Whether process `pid` has gone from /proc, zombie and all: its parent has collected it.
/// (A pid is not given again within the moments a test waits for this.)
pub fn reaped(pid: i32) -> bool {
    state(pid).is_none()
}

/// Whether a thread of process `pid` waits to write to the pipe whose read end is `reader`:
/// blocked in write(2) on it, or in poll(2) or ppoll(2) for room on it. A full pipe alone does
/// not tell that the writer has reached its wait; `retry` waits in ppoll for everything, so its
/// state letter (`S`) does not either. Read from /proc: each thread's system call and its
/// arguments, and for a poll the descriptors it waits on, from the process's memory (which the
/// parent of `pid`, or root, may read).
pub fn waits_to_write(pid: i32, reader: &impl std::os::fd::AsRawFd) -> bool {
    // SAFETY: an all-zero stat is a valid value; fstat(2) writes it through a valid pointer.
    let pipe = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(reader.as_raw_fd(), &mut stat) != 0 {
            return false;
        }
        format!("pipe:[{}]", stat.st_ino)
    };
    let is_the_pipe =
        |fd: u64| fs::read_link(format!("/proc/{pid}/fd/{fd}")).is_ok_and(|to| *to == *pipe);
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        let call = fs::read_to_string(task.path().join("syscall")).unwrap_or_default();
        let mut words = call.split_whitespace();
        let Some(Ok(number)) = words.next().map(str::parse::<libc::c_long>) else {
            return false; // running, or not in a system call
        };
        let args: Vec<u64> = words
            .filter_map(|word| u64::from_str_radix(word.trim_start_matches("0x"), 16).ok())
            .collect();
        let polls = [libc::SYS_ppoll, polls_by_poll()].contains(&number);
        match args[..] {
            [fd, ..] if number == libc::SYS_write => is_the_pipe(fd),
            [fds, count, ..] if polls && count <= 64 => {
                polls_for_room(pid, fds, count).into_iter().any(is_the_pipe)
            }
            _ => false,
        }
    })
}

/// The number of poll(2), where the machine has one apart from ppoll(2).
fn polls_by_poll() -> libc::c_long {
    #[cfg(target_arch = "x86_64")]
    return libc::SYS_poll;
    #[cfg(not(target_arch = "x86_64"))]
    return libc::SYS_ppoll;
}

/// The descriptors of the `count` pollfds at `address` in process `pid` that wait for room.
fn polls_for_room(pid: i32, address: u64, count: u64) -> Vec<u64> {
    use std::os::unix::fs::FileExt;
    let size = std::mem::size_of::<libc::pollfd>();
    let mut bytes = vec![0u8; size * count as usize];
    let read = fs::File::open(format!("/proc/{pid}/mem"))
        .and_then(|memory| memory.read_exact_at(&mut bytes, address));
    if read.is_err() {
        return Vec::new();
    }
    bytes
        .chunks_exact(size)
        .filter_map(|pollfd| {
            let fd = i32::from_ne_bytes(pollfd[0..4].try_into().unwrap());
            let events = i16::from_ne_bytes(pollfd[4..6].try_into().unwrap());
            (fd >= 0 && events & libc::POLLOUT != 0).then_some(fd as u64)
        })
        .collect()
}

/// Whether the pipe whose read end is `reader` is full: whoever writes to it now waits.
pub fn pipe_full(reader: &impl std::os::fd::AsRawFd) -> bool {
    let fd = reader.as_raw_fd();
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD stores an int through a valid pointer; F_GETPIPE_SZ only reads the pipe.
    let (read, capacity) = unsafe {
        (
            libc::ioctl(fd, libc::FIONREAD, &mut queued),
            libc::fcntl(fd, libc::F_GETPIPE_SZ),
        )
    };
    read == 0 && capacity > 0 && queued >= capacity
}

/// Sets O_NONBLOCK on an end of a pipe, as some parents (Node.js) leave `retry`'s streams: the
/// flag belongs to the open pipe, shared by everyone who holds it.
pub fn set_non_blocking(fd: &impl std::os::fd::AsRawFd) {
    // SAFETY: fcntl(2) F_GETFL/F_SETFL on a descriptor the test owns.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

/// Tests that load the machine on purpose (a hundred runs at once, a thousand orphans, a Redis
/// Cluster starting) hold this while they do, so that no two of them run beside each other: on
/// two cores, two at once slow each other past the bounds `retry` keeps (a state lock waited
/// for at most 800 ms) and make what they check depend on the machine.
pub fn one_heavy_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that failed while holding it poisons it; the next one may still go.
    HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
