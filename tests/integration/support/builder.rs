//! The one builder over the real binary: `retry()` gives a `Retry`, whose commands run `retry`
//! with an empty environment but `PATH` (nothing of the developer's reaches it), a private
//! temporary directory as the working directory and `$HOME` below it, stdin from /dev/null
//! unless the test gives one, and bounded waits. Every run of `retry` in the tests is one of
//! its commands (a wrapper's last words, a std `Command` for stdio of the test's choosing, or
//! many runs at once with `concurrently`), so a developer's environment never reaches one.
//!
//! It knows how to start `retry`, not what a test checks of it.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Arc;

use assert_cmd::Command;
use tempfile::TempDir;

use super::output::stderr_of;
use super::process::{one_heavy_test_at_a_time, shell_status};
use super::wait::{BOUND, wait_bounded};

/// The `retry` under test: cargo's build of this crate, or the program that `RETRY_TEST_BIN`
/// names when the tests are built (an executable path: `tests/arm64` makes one that runs the
/// arm64 release binary under `qemu-aarch64-static`, so the same tests serve both). Read when
/// the tests compile, so that it stays a `&str` every test can put in a command line; cargo
/// rebuilds them when it changes.
pub const BIN: &str = match option_env!("RETRY_TEST_BIN") {
    Some(path) if !path.is_empty() => path,
    _ => env!("CARGO_BIN_EXE_retry"),
};

/// A test's run of `retry`: its words and its directory. One test, one builder: files the test
/// writes (`write`, `path`) are in the directory its runs start in, and the words given to
/// `args` come before those of each command's own `.args`, so one builder serves every run of
/// a test.
pub struct Retry {
    pub dir: Arc<TempDir>,
    args: Vec<String>,
}

pub fn retry() -> Retry {
    Retry {
        dir: Arc::new(tempfile::tempdir().expect("temporary directory")),
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

    /// Another builder of the same test: the same directory, and the words given so far.
    pub fn again(&self) -> Retry {
        Retry {
            dir: Arc::clone(&self.dir),
            args: self.args.clone(),
        }
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
        let mut command = Command::from_std(self.std_command_under(wrapper));
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
        self.spawn_from(self.std_command_under(wrapper))
    }

    /// `spawn`, in a process group of its own in the test's session, as a job-control shell
    /// starts a job: the group is not orphaned, since its parent (the test) is outside it.
    pub fn spawn_as_job(&self) -> Child {
        let mut command = self.std_command();
        command.process_group(0);
        self.spawn_from(command)
    }

    /// `spawn`, with `signal` blocked in `retry` from its start: a signal mask survives exec,
    /// so a parent can leave one so.
    pub fn spawn_with_blocked(&self, signal: i32) -> Child {
        let mut command = self.std_command();
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
        let mut command = self.std_command();
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
        let mut command = self.std_command();
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
        let mut command = self.std_command();
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

    /// `spawn_under`, with stdout to `stdout` and stderr piped.
    pub fn spawn_under_with(&self, wrapper: &[&str], stdout: impl Into<Stdio>) -> Child {
        self.std_command_under(wrapper)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn retry")
    }

    /// `spawn`, with stdout and stderr where the test says.
    pub fn spawn_with(&self, stdout: impl Into<Stdio>, stderr: impl Into<Stdio>) -> Child {
        self.std_command()
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("spawn retry")
    }

    /// Runs `retry` to its end with stdin from `stdin`, and returns what it wrote.
    pub fn output_with_stdin(&self, stdin: impl Into<Stdio>) -> std::process::Output {
        self.std_command().stdin(stdin).output().expect("run retry")
    }

    fn spawn_from(&self, mut command: std::process::Command) -> Child {
        command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn retry")
    }

    /// `retry ARGS` as a std `Command`, for what `command` and the `spawn` forms do not give
    /// (a stdin, stdout and stderr of the test's choosing, `pre_exec`): in the test's
    /// directory, with a clean environment and stdin from /dev/null. More words added to it
    /// (`.args`) come after the builder's.
    pub fn std_command(&self) -> std::process::Command {
        self.std_command_under(&[])
    }

    /// `std_command`, as the last words of `wrapper`'s: `wrapper[0] wrapper[1..] retry ARGS`.
    pub fn std_command_under(&self, wrapper: &[&str]) -> std::process::Command {
        let (program, wrapper_args) = wrapper.split_first().unwrap_or((&BIN, &[]));
        let mut command = self.std_command_of(program);
        command.args(wrapper_args);
        if !wrapper.is_empty() {
            command.arg(BIN);
        }
        command.args(&self.args);
        command
    }

    /// `program` (a driver of a terminal, a namespace's shell, Debian's `retry`) started as the
    /// builder starts `retry`: the clean environment, the test's directory, `$HOME` below it,
    /// stdin from /dev/null; for a program that runs `retry` its own way, or runs instead.
    pub fn std_command_of(&self, program: impl AsRef<OsStr>) -> std::process::Command {
        let mut command = std::process::Command::new(program);
        clean_environment(&mut command);
        command
            .current_dir(self.dir.path())
            .env("HOME", self.path("home"))
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

/// Starts `command`'s environment empty but for `PATH`: whatever a developer's shell or CI
/// sets (`RETRY_*`, `XDG_STATE_HOME`, `XDG_CONFIG_HOME`, `TMPDIR`, `TERM`, `CI`, `NO_COLOR`,
/// a locale) never reaches `retry`; a test gives what it means to.
fn clean_environment(command: &mut std::process::Command) {
    command.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
}

/// `sh -c SCRIPT` as the command words.
pub fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
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

/// Starts `n` runs of `r`'s command at once (stdout discarded) as the one heavy test running,
/// and waits for them all.
pub fn concurrently(n: usize, r: &Retry) -> Vec<Ended> {
    let _heavy = one_heavy_test_at_a_time();
    let children: Vec<Child> = (0..n)
        .map(|_| r.spawn_with(Stdio::null(), Stdio::piped()))
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

/// Runs `retry ARGS` with its stdout a pipe whose reader has already gone, and asserts that it
/// ends quietly with 141, as a Unix filter does.
pub fn assert_quiet_141_with_closed_stdout(args: &[&str]) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let output = retry()
        .args(args)
        .std_command()
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("run retry");
    assert_eq!(shell_status(output.status), 141, "{args:?}");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "", "{args:?}");
}
