//! The one builder over the real binary: a clean environment (no `RETRY_*`, no config, no CI),
//! a private temporary directory as the working directory, and bounded waits everywhere.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use tempfile::TempDir;

/// The `retry` under test: cargo's build of this crate, or the program that `RETRY_TEST_BIN`
/// names when the tests are built (an executable path: `tests/arm64` makes one that runs the
/// arm64 release binary under `qemu-aarch64-static`, so the same tests serve both). Read when
/// the tests compile, so that it stays a `&str` every test can put in a command line; cargo
/// rebuilds them when it changes.
pub const BIN: &str = match option_env!("RETRY_TEST_BIN") {
    Some(path) if !path.is_empty() => path,
    _ => env!("CARGO_BIN_EXE_retry"),
};

/// Every wait on a process ends within this, so a broken build fails instead of hanging.
pub const BOUND: Duration = Duration::from_secs(20);

/// Says that a test cannot check `what` for want of `tool`. In CI (`CI` set and not empty),
/// where `.ci/run` installs every such tool, that fails the test; elsewhere the test is skipped
/// with this reason printed.
pub fn missing(tool: &str, what: &str) {
    let in_ci = std::env::var_os("CI").is_some_and(|value| !value.is_empty());
    assert!(
        !in_ci,
        "{tool} is needed to check {what}, and CI must have it"
    );
    eprintln!("skipped: {tool} is not here, so {what} is not checked");
}

/// Debian's own `retry` package (minfrin/retry), fetched with `apt-get download` into `dir`
/// (never installed); `None` (outside CI) when it cannot be fetched, for `what`.
pub fn debians_package(dir: &Path, what: &str) -> Option<PathBuf> {
    let fetched = std::process::Command::new("apt-get")
        .args(["download", "retry"])
        .current_dir(dir)
        .output();
    let package = fs::read_dir(dir)
        .expect("a readable directory")
        .map(|entry| entry.expect("an entry").path())
        .find(|path| path.extension().is_some_and(|e| e == "deb"));
    if package.is_none() {
        missing("apt-get download retry", &format!("{what} ({fetched:?})"));
    }
    package
}

/// `man --warnings -l PAGE` at 80 columns and without formatting; `None` (outside CI) when
/// there is no man to render `what`.
pub fn render_man(page: &Path, what: &str) -> Option<std::process::Output> {
    let output = std::process::Command::new("man")
        .args(["--warnings", "-l"])
        .arg(page)
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "0")
        .output();
    if output.is_err() {
        missing("man", what);
    }
    output.ok()
}

/// The words that start a command in a PID namespace of its own, where it is PID 1 (root, or
/// user namespaces); `None` (outside CI) where there is none.
pub fn pid_namespace() -> Option<&'static [&'static str]> {
    const NAMESPACE: &[&str] = &["unshare", "--pid", "--fork", "--mount-proc"];
    let usable = std::process::Command::new(NAMESPACE[0])
        .args(&NAMESPACE[1..])
        .arg("true")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !usable {
        missing("a PID namespace (unshare --pid)", "retry as PID 1");
        return None;
    }
    Some(NAMESPACE)
}

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

pub struct Retry {
    pub dir: TempDir,
    args: Vec<String>,
}

pub fn retry() -> Retry {
    Retry {
        dir: tempfile::tempdir().expect("temporary directory"),
        args: Vec::new(),
    }
}

impl Retry {
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_string()));
        self
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A `sh -c` script that fails `n` times (exit 1, or `code`) and then succeeds, counting its
    /// runs in the file `runs`.
    pub fn flaky(&self, n: u32) -> Vec<String> {
        self.flaky_with(n, 1)
    }

    pub fn flaky_with(&self, n: u32, code: u8) -> Vec<String> {
        let runs = self.path("runs");
        sh(&format!(
            "n=$(cat '{runs}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{runs}'; [ $n -gt {n} ] || exit {code}",
            runs = runs.display()
        ))
    }

    /// How many times the flaky script ran.
    /// (Read while the script may be writing it, an emptied file counts as none yet.)
    pub fn runs(&self) -> u32 {
        fs::read_to_string(self.path("runs"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Writes a file in the test's directory, mode 0644 whatever the umask (a config file that
    /// others can write may not give hooks), and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create directories");
        }
        fs::write(&path, text).expect("write file");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("set permissions");
        path
    }

    /// Writes a file in the test's directory with the permission bits `mode` (0o755: an
    /// executable) and returns its path.
    pub fn write_with_mode(&self, name: &str, bytes: impl AsRef<[u8]>, mode: u32) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.write(name, "");
        fs::write(&path, bytes).expect("write file");
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("set permissions");
        path
    }

    /// The command, with stdin from /dev/null unless a test gives it input (`write_stdin`).
    pub fn command(&self) -> Command {
        self.command_under(&[])
    }

    /// The command as the last words of `wrapper`'s: `wrapper[0] wrapper[1..] retry ARGS`.
    pub fn command_under(&self, wrapper: &[&str]) -> Command {
        let mut command = Command::from_std(self.std_command(wrapper));
        command.timeout(BOUND);
        command
    }

    pub fn assert(&self) -> assert_cmd::assert::Assert {
        self.command().assert()
    }

    /// Starts `retry` in the background with stdin from /dev/null and stderr piped.
    pub fn spawn(&self) -> Child {
        self.spawn_under(&[])
    }

    /// `spawn`, as the last words of `wrapper`'s (see `command_under`).
    pub fn spawn_under(&self, wrapper: &[&str]) -> Child {
        self.spawn_from(self.std_command(wrapper))
    }

    /// `spawn`, in a process group of its own in the test's session, as a job-control shell
    /// starts a job: the group is not orphaned, since its parent (the test) is outside it.
    pub fn spawn_as_job(&self) -> Child {
        let mut command = self.std_command(&[]);
        command.process_group(0);
        self.spawn_from(command)
    }

    /// `spawn`, with `signal` blocked in `retry` from its start: a signal mask survives exec,
    /// so a parent can leave one so.
    pub fn spawn_with_blocked(&self, signal: i32) -> Child {
        let mut command = self.std_command(&[]);
        // SAFETY: runs in the forked child before exec, and only calls sigemptyset, sigaddset
        // and sigprocmask, which are async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, signal);
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                Ok(())
            });
        }
        self.spawn_from(command)
    }

    /// `spawn`, with `signals` ignored in `retry` from its start, as `nohup` leaves SIGHUP and
    /// a script's `cmd &` SIGINT and SIGQUIT (an ignored signal stays ignored through exec).
    pub fn spawn_with_ignored(&self, signals: &'static [i32]) -> Child {
        let mut command = self.std_command(&[]);
        // SAFETY: runs in the forked child before exec, and only calls signal(2), which is
        // async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                for &signal in signals {
                    libc::signal(signal, libc::SIG_IGN);
                }
                Ok(())
            });
        }
        self.spawn_from(command)
    }

    /// The command, run with exactly `ignored` ignored, every other signal at its default (the
    /// real-time ones included), and exactly `blocked` blocked. Whatever this process inherited
    /// (std's posix_spawn leaves glibc's signals 32 and 33 ignored in its children, cargo's
    /// test runner included), the state `retry` starts with is the test's.
    pub fn command_with_signals(
        &self,
        ignored: &'static [i32],
        blocked: &'static [i32],
    ) -> Command {
        let mut command = self.std_command(&[]);
        // SAFETY: runs in the forked child before exec, and only calls rt_sigaction(2) and
        // rt_sigprocmask(2) (raw: glibc's calls refuse its own signals 32 and 33), which are
        // async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                let set = |signal: i32, handler: libc::sighandler_t| {
                    // The kernel's struct sigaction starts with the handler; flags, restorer
                    // and mask are zero.
                    let action: [usize; 4] = [handler, 0, 0, 0];
                    libc::syscall(
                        libc::SYS_rt_sigaction,
                        signal,
                        action.as_ptr(),
                        std::ptr::null_mut::<usize>(),
                        8,
                    );
                };
                for signal in 1..=64 {
                    set(signal, libc::SIG_DFL);
                }
                for &signal in ignored {
                    set(signal, libc::SIG_IGN);
                }
                // Raw too: glibc's sigprocmask leaves out 32 and 33.
                let mask = blocked.iter().fold(0u64, |mask, s| mask | 1 << (s - 1));
                libc::syscall(
                    libc::SYS_rt_sigprocmask,
                    libc::SIG_SETMASK,
                    &mask,
                    std::ptr::null_mut::<u64>(),
                    8,
                );
                Ok(())
            });
        }
        let mut command = Command::from_std(command);
        command.timeout(BOUND);
        command
    }

    /// The command, run with at most `limit` open descriptors (RLIMIT_NOFILE).
    pub fn command_with_open_files(&self, limit: u64) -> Command {
        let rlimit = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        // SAFETY: setrlimit(2) with a valid struct.
        self.command_limited(move || unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit) })
    }

    /// The command, run with a file size limit of `bytes` (RLIMIT_FSIZE, `ulimit -f`).
    pub fn command_with_file_size_limit(&self, bytes: u64) -> Command {
        let rlimit = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: bytes,
        };
        // SAFETY: setrlimit(2) with a valid struct.
        self.command_limited(move || unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit) })
    }

    /// The command, with `limit` run in the child before exec (it must be async-signal-safe).
    fn command_limited(&self, limit: impl Fn() -> libc::c_int + Send + Sync + 'static) -> Command {
        let mut command = self.std_command(&[]);
        // SAFETY: runs in the forked child before exec; `limit` only sets a limit, which is
        // async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                limit();
                Ok(())
            });
        }
        let mut command = Command::from_std(command);
        command.timeout(BOUND);
        command
    }

    /// Runs the command with `stdin` under every limit of open descriptors from 3 to 39, and
    /// sorts the runs: those whose attempt ran to a success, and those whose attempts could
    /// not start (126, the first line saying why: descriptors ran out). Every other run must
    /// have failed before any attempt (the loader or `retry`'s own start-up: 127 or 125); both
    /// kinds must be seen.
    pub fn runs_under_open_file_limits(&self, stdin: &str) -> LimitRuns {
        let mut runs = LimitRuns::default();
        for limit in 3..40 {
            let output = self
                .command_with_open_files(limit)
                .write_stdin(stdin)
                .output()
                .expect("run retry");
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first = stderr.lines().next().unwrap_or("");
            if output.status.code() == Some(0) {
                runs.ran.push(output);
            } else if first.contains("failed (could not start: ") {
                assert!(
                    first.starts_with("retry: attempt 1/")
                        && first.contains("(could not start: Too many open files)"),
                    "limit {limit}: {stderr}"
                );
                assert_eq!(output.status.code(), Some(126), "limit {limit}: {stderr}");
                runs.could_not_start.push(output);
            } else {
                assert!(
                    matches!(output.status.code(), Some(125 | 127)),
                    "limit {limit}: {stderr}"
                );
            }
        }
        assert!(
            !runs.ran.is_empty() && !runs.could_not_start.is_empty(),
            "{} ran, {} could not start",
            runs.ran.len(),
            runs.could_not_start.len()
        );
        runs
    }

    /// `spawn`, with stdout and stderr where the test says.
    /// `spawn_under`, with stdout to `stdout` and stderr piped.
    pub fn spawn_under_with(&self, wrapper: &[&str], stdout: impl Into<Stdio>) -> Child {
        self.std_command(wrapper)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn retry")
    }

    pub fn spawn_with(&self, stdout: impl Into<Stdio>, stderr: impl Into<Stdio>) -> Child {
        self.std_command(&[])
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("spawn retry")
    }

    /// Runs `retry` to its end with stdin from `stdin`, and returns what it wrote.
    pub fn output_with_stdin(&self, stdin: impl Into<Stdio>) -> std::process::Output {
        self.std_command(&[])
            .stdin(stdin)
            .output()
            .expect("run retry")
    }

    fn spawn_from(&self, mut command: std::process::Command) -> Child {
        command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn retry")
    }

    /// `wrapper... retry ARGS` in the test's directory, with a clean environment and stdin from
    /// /dev/null.
    fn std_command(&self, wrapper: &[&str]) -> std::process::Command {
        let (program, wrapper_args) = wrapper.split_first().unwrap_or((&BIN, &[]));
        let mut command = std::process::Command::new(program);
        command.args(wrapper_args);
        if !wrapper.is_empty() {
            command.arg(BIN);
        }
        for (key, _) in std::env::vars_os() {
            if is_ours(&key) {
                command.env_remove(&key);
            }
        }
        command
            .current_dir(self.dir.path())
            .env("HOME", self.path("home"))
            .args(&self.args)
            .stdin(Stdio::null());
        command
    }
}

/// See `Retry::runs_under_open_file_limits`.
#[derive(Default)]
pub struct LimitRuns {
    pub ran: Vec<std::process::Output>,
    pub could_not_start: Vec<std::process::Output>,
}

fn is_ours(key: &OsStr) -> bool {
    let key = key.to_string_lossy();
    key.starts_with("RETRY_") || key == "CI" || key == "NO_COLOR" || key == "XDG_CONFIG_HOME"
}

/// `sh -c SCRIPT` as the command words.
pub fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// Waits for `child` up to `BOUND`; kills it and panics past that.
pub fn wait_bounded(child: &mut Child) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            panic!("retry did not exit within {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits for `child` as `wait_bounded` does, and returns with its status the CPU time that it
/// (and the children it collected) used.
pub fn wait_with_cpu_time(child: &mut Child) -> (ExitStatus, Duration) {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value; wait4(2) with WNOHANG on our own child
        // returns at once.
        let (ended, usage) = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            let ended = libc::wait4(child.id() as i32, &mut status, libc::WNOHANG, &mut usage);
            (ended, usage)
        };
        if ended > 0 {
            let time = |t: libc::timeval| {
                Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
            };
            let status = std::os::unix::process::ExitStatusExt::from_raw(status);
            return (status, time(usage.ru_utime) + time(usage.ru_stime));
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            panic!("retry did not exit within {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits for `child`, up to `BOUND`, and returns how it ended with its peak resident set
/// size in KiB, as its VmHWM read while it runs. Not wait4's `ru_maxrss`: that counts the
/// memory of the process that spawned it too (the test binary's, which may be large), since
/// exec records the high-water mark of the image it replaces.
pub fn wait_with_peak_rss(child: &mut Child) -> (ExitStatus, u64) {
    let start = Instant::now();
    let mut peak = 0;
    loop {
        let status = fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        if let Some(kib) = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| {
                value
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        {
            peak = peak.max(kib);
        }
        if let Some(ended) = child.try_wait().expect("wait") {
            return (ended, peak);
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            panic!("retry did not exit within {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `child` (see `wait_bounded`), asserts that it ended within `limit` of `since`,
/// and returns its status as a shell sees it.
pub fn status_within(child: &mut Child, since: Instant, limit: Duration) -> i32 {
    let status = shell_status(wait_bounded(child));
    let took = since.elapsed();
    assert!(took < limit, "ended after {took:?}, not within {limit:?}");
    status
}

/// Waits until `path` holds at least `lines` lines, up to `BOUND`.
pub fn wait_for_lines(path: &Path, lines: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let text = fs::read_to_string(path).unwrap_or_default();
        let found: Vec<String> = text.lines().map(str::to_string).collect();
        if found.len() >= lines {
            return found;
        }
        assert!(
            start.elapsed() < BOUND,
            "{} never got {lines} lines",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(2));
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

/// Whether a process is alive (zombies count as gone: they only wait to be reaped).
pub fn alive(pid: i32) -> bool {
    state(pid).is_some_and(|state| state != 'Z' && state != 'X')
}

/// Waits up to `BOUND` for `condition`; panics with `what` past that.
pub fn eventually(what: &str, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < BOUND, "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
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

/// Waits up to `BOUND` for a process to be gone; returns whether it went. (Whether it went at
/// once is for the benchmarks: a loaded machine may take its time to deliver a signal.)
pub fn gone_soon(pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < BOUND {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

pub fn send(child: &Child, signal: i32) {
    // SAFETY: kill(2) on the pid of a child this test spawned.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

/// The pid that a test's command wrote to `path`, once it is there.
pub fn pid_in(path: &Path) -> i32 {
    wait_for_lines(path, 1)[0].parse().expect("a pid")
}

/// The JSON events `retry` wrote on `stderr` (`--log-format json`), each line one object; a
/// line that is not one fails the test.
pub fn json_events(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
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

/// How one of `concurrently`'s runs ended: its status as a shell sees it, and its stderr.
pub struct Ended {
    pub status: i32,
    pub stderr: String,
}

impl Ended {
    /// Whether the run went on without its budget and breaker (the state was unavailable).
    pub fn failed_open(&self) -> bool {
        self.stderr.contains("state unavailable")
            || self.stderr.contains("\"event\":\"state-unavailable\"")
    }
}

/// Starts `n` runs of `retry ARGS` at once (no `RETRY_STATE`, stdout discarded) as the one
/// heavy test running, and waits for them all.
pub fn concurrently(n: usize, args: &[String]) -> Vec<Ended> {
    let _heavy = one_heavy_test_at_a_time();
    let children: Vec<Child> = (0..n)
        .map(|_| {
            std::process::Command::new(BIN)
                .args(args)
                .env_remove("RETRY_STATE")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a run of retry")
        })
        .collect();
    children
        .into_iter()
        .map(|mut child| {
            let status = shell_status(wait_bounded(&mut child));
            Ended {
                status,
                stderr: stderr_of(&mut child),
            }
        })
        .collect()
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

/// Runs `sh -c script ARGS` in a private mount namespace (where a test may mount a tmpfs and make
/// device nodes without touching the real ones) and returns its output; `None`, said by
/// `missing` as needing what `what` names, when the script cannot run there (exit 99: no root,
/// no `unshare`, no mount). A script exits 0 when it ran, whatever it found.
pub fn in_mount_namespace(
    script: &str,
    args: &[&OsStr],
    what: &str,
) -> Option<std::process::Output> {
    let output = std::process::Command::new("unshare")
        .args(["--mount", "sh", "-c", script, "sh"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if output.status.code() != Some(0) {
        missing("root in a mount namespace (unshare --mount, mknod)", what);
        return None;
    }
    Some(output)
}

/// Kills a process (a negative pid: a group) that a test's command left behind on purpose.
pub fn kill_leftover(pid: i32) {
    // SAFETY: kill(2) on a process or group this test started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
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

/// The whole of the child's piped stdout: for a child that has ended, with nothing left that
/// holds its stdout open.
pub fn stdout_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut stdout)
        .expect("stdout is text");
    stdout
}

/// Sends SIGTERM: `retry` must end by it at once.
pub fn sigterm_ends_retry_at_once(mut child: Child) {
    let sent = Instant::now();
    send(&child, libc::SIGTERM);
    assert_eq!(status_within(&mut child, sent, Duration::from_secs(2)), 143);
}

/// The whole of the child's piped stderr: for a child that has ended, with nothing left that
/// holds its stderr open.
pub fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr)
        .expect("stderr is text");
    stderr
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

/// Runs `retry ARGS` with its stdout a pipe whose reader has already gone, and asserts that it
/// ends quietly with 141, as a Unix filter does.
pub fn assert_quiet_141_with_closed_stdout(args: &[&str]) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let output = std::process::Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("run retry");
    assert_eq!(shell_status(output.status), 141, "{args:?}");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "", "{args:?}");
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

/// Drives a program under a pseudo-terminal: for each step, waits until the screen shows its
/// text (or the program ends), then types its keys; then reads until the program ends.
const PTY_DRIVER: &str = r#"
import json, os, pty, select, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
screen = b""
def read_until(text, seconds):
    global screen
    end = time.monotonic() + seconds
    while (text is None or text not in screen) and time.monotonic() < end:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return True
            if not data:
                return True
            screen += data
    return text is not None and text in screen
def give_up(why):
    # Said on the screen, so that a test that fails says which step never came.
    global screen
    screen += ("\n[pty driver: %s]\n" % why).encode()
    os.kill(pid, signal.SIGKILL)
for wait_for, keys in json.loads(sys.argv[1]):
    if not read_until(wait_for.encode(), 20):
        give_up("never saw %r" % wait_for)
        break
    os.write(fd, keys.encode())
else:
    if not read_until(None, 20):
        give_up("the program did not end within 20 s")
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(screen)
print("\nstatus", os.waitstatus_to_exitcode(status))
"#;

/// Runs `argv` under a pseudo-terminal, typing each step's keys once the screen shows its
/// text. Returns the screen, then a last line `status N` (N negative for a signal); `None`
/// when `argv[0]` is not installed.
pub fn under_pty(argv: &[&str], steps: &[(&str, &str)], env: &[(&str, &str)]) -> Option<String> {
    let program = std::process::Command::new(argv[0])
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if program.is_err() {
        return None;
    }
    let steps = serde_json::to_string(steps).unwrap();
    let mut command = Command::new("python3");
    command
        .args(["-c", PTY_DRIVER, &steps])
        .args(argv)
        .timeout(BOUND + BOUND);
    // The environment of the builder's: none of the developer's RETRY_* or config.
    for (key, _) in std::env::vars_os() {
        if is_ours(&key) {
            command.env_remove(&key);
        }
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("python3");
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The peak resident memory of a running process so far (VmHWM), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
