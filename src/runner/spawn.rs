//! Starting the run's children: each attempt (the command, or /bin/sh on a script without
//! `#!`, with its stdin, the copies of the streams that a predicate reads or that are held, and
//! its cgroup) and each hook (`sh -c`), with the `RETRY_*` environment each gets, which is set
//! here and nowhere else. Waits for no child and signals none.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cgroup;
use crate::cli::FailedOutput;
use crate::driver::{AttemptSpec, HookSpec};
use crate::hook_values::HookValues;
use crate::input::{Feeder, Input};
use crate::plumbing::{self, Held, OwnStream, Sink, Watch};
use crate::settings::{OutputRules, Settings};
use crate::start;
use crate::stdio::Stream;

/// The `RETRY_*` variables a child of the run gets. One that does not apply to it is removed:
/// an outer retry's (retry run from an --on-retry hook) speak of another run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RunVars<'a> {
    /// `RETRY_ATTEMPT`: the attempt that runs, or for a hook the one that just ended (0 when
    /// none ran).
    attempt: u64,
    /// `RETRY_MAX_ATTEMPTS`: the attempt limit, 0 when unlimited.
    max_attempts: Option<u64>,
    /// `RETRY_LAST_EXIT`: the previous attempt's status; an attempt has one from the second
    /// on, a hook always.
    last_exit: Option<u8>,
    /// `RETRY_NEXT_DELAY_MS`: the coming wait, for `--on-retry` hooks.
    next_delay: Option<Duration>,
    /// `RETRY_ENV_FILE`: where an `--on-retry` hook writes values for the attempts after it.
    env_file: Option<&'a Path>,
}

impl RunVars<'_> {
    pub(super) fn of_attempt(spec: &AttemptSpec) -> RunVars<'static> {
        RunVars {
            attempt: spec.number,
            max_attempts: spec.max_attempts,
            last_exit: spec.last_status,
            next_delay: None,
            env_file: None,
        }
    }

    pub(super) fn of_hook<'a>(hook: &HookSpec<'_>, env_file: Option<&'a Path>) -> RunVars<'a> {
        RunVars {
            attempt: hook.attempt,
            max_attempts: hook.max_attempts,
            last_exit: Some(hook.last_status),
            next_delay: hook.next_delay,
            env_file,
        }
    }

    /// Each variable with its value, or `None` where it is removed.
    fn pairs(&self) -> [(&'static str, Option<OsString>); 5] {
        let number = |number: String| Some(OsString::from(number));
        [
            ("RETRY_ATTEMPT", number(self.attempt.to_string())),
            (
                "RETRY_MAX_ATTEMPTS",
                number(self.max_attempts.unwrap_or(0).to_string()),
            ),
            (
                "RETRY_LAST_EXIT",
                self.last_exit.and_then(|status| number(status.to_string())),
            ),
            (
                "RETRY_NEXT_DELAY_MS",
                self.next_delay
                    .and_then(|delay| number(delay.as_millis().to_string())),
            ),
            (
                "RETRY_ENV_FILE",
                self.env_file.map(|path| path.as_os_str().to_owned()),
            ),
        ]
    }

    fn set_on(&self, command: &mut Command) {
        for (name, value) in self.pairs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
    }
}

/// A started attempt: the child, the feeder of its replayed stdin, the copies of its output.
pub(super) struct Spawned {
    pub(super) child: Child,
    pub(super) feeder: Option<Feeder>,
    pub(super) watches: Vec<Watch>,
}

/// How the attempts are started: the command, its stdin, and which of its streams are watched
/// or held.
pub(super) struct Spawner<'a> {
    command: &'a [OsString],
    stdout_rules: &'a OutputRules,
    stderr_rules: &'a OutputRules,
    pub(super) input: Input,
    hold_stdout: bool,
    failed_output: FailedOutput,
    foreground: bool,
}

impl<'a> Spawner<'a> {
    pub(super) fn new(settings: &'a Settings) -> Spawner<'a> {
        Spawner {
            command: &settings.command,
            stdout_rules: &settings.stdout_rules,
            stderr_rules: &settings.stderr_rules,
            input: Input::new(settings.stdin),
            hold_stdout: settings.hold_stdout,
            failed_output: settings.failed_output,
            foreground: settings.foreground,
        }
    }

    /// The command's name, as given.
    pub(super) fn program(&self) -> &OsStr {
        &self.command[0]
    }

    /// Starts the attempt, with its stdin, the values hooks handed on, in `cgroup` if it has
    /// one; `held` becomes where its output is held, if it is. An executable file that the
    /// kernel cannot run but that reads as text (a script with no `#!` line) is run by /bin/sh
    /// instead, as execvp(3) does, and with it env(1) and timeout(1); a binary for another
    /// machine stays an error, as in bash.
    pub(super) fn spawn_attempt(
        &mut self,
        spec: &AttemptSpec,
        hook_values: &HookValues,
        cgroup: Option<&cgroup::Attempt>,
        held: &mut Option<Arc<Mutex<Held>>>,
    ) -> io::Result<Spawned> {
        let program = &self.command[0];
        let mut spawn = |script: Option<&Path>| {
            let command = self.attempt_command(spec, script, hook_values, cgroup);
            self.spawn_with_stdin(spec, command, held)
        };
        match spawn(None) {
            Err(error) if error.raw_os_error() == Some(libc::ENOEXEC) => {
                match start::locate(program).filter(|file| start::reads_as_text(file)) {
                    Some(script) => spawn(Some(&script)),
                    None => Err(error),
                }
            }
            spawned => spawned,
        }
    }

    /// Starts `command` with the attempt's stdin, and the copies of the streams that a
    /// predicate reads. Everything the attempt needs is had before it starts: short of a pipe
    /// or a thread, it does not start, rather than run with part of its input or with output
    /// that nothing judges.
    fn spawn_with_stdin(
        &mut self,
        spec: &AttemptSpec,
        mut command: Command,
        held: &mut Option<Arc<Mutex<Held>>>,
    ) -> io::Result<Spawned> {
        let (stdin, feeder) = self.input.for_attempt(spec.number)?;
        command.stdin(stdin);
        let spawned = self
            .watch_outputs(&mut command, held)
            .and_then(|watches| Ok((command.spawn()?, watches)));
        // The parent's copies of the child's pipe ends close with the command.
        drop(command);
        match spawned {
            Ok((child, watches)) => Ok(Spawned {
                child,
                feeder,
                watches,
            }),
            Err(error) => {
                if let Some(feeder) = feeder {
                    feeder.stop();
                }
                Err(error)
            }
        }
    }

    /// Pipes each stream that a predicate reads (or `--hold-stdout` holds) into a copy that
    /// passes it on (or holds it) and matches it; the others are inherited as they are.
    fn watch_outputs(
        &self,
        command: &mut Command,
        held_now: &mut Option<Arc<Mutex<Held>>>,
    ) -> io::Result<Vec<Watch>> {
        let mut watches = Vec::new();
        let holding = self.failed_output != FailedOutput::Pass;
        // One spool for both streams, so that they go out as they were interleaved.
        let held = (self.hold_stdout || holding).then(|| Arc::new(Mutex::new(Held::default())));
        *held_now = held.clone();
        if self.stdout_rules.any() || self.hold_stdout || holding {
            let (watch, attempt_end) = watched(Stream::Stdout, self.stdout_rules, || {
                Ok(match &held {
                    Some(held) => Sink::Hold(Arc::clone(held), Stream::Stdout),
                    None => Sink::Stream(OwnStream::on(io::stdout().as_fd())?),
                })
            })?;
            watches.push(watch);
            command.stdout(attempt_end);
        }
        if self.stderr_rules.any() || holding {
            let (watch, attempt_end) = watched(Stream::Stderr, self.stderr_rules, || {
                Ok(match &held {
                    Some(held) if holding => Sink::Hold(Arc::clone(held), Stream::Stderr),
                    _ => Sink::Stream(OwnStream::on(io::stderr().as_fd())?),
                })
            })?;
            watches.push(watch);
            command.stderr(attempt_end);
        }
        Ok(watches)
    }

    /// The command, or /bin/sh on `script`, as the attempt runs it.
    fn attempt_command(
        &self,
        spec: &AttemptSpec,
        script: Option<&Path>,
        hook_values: &HookValues,
        cgroup: Option<&cgroup::Attempt>,
    ) -> Command {
        let mut command = match script {
            Some(script) => {
                let mut shell = Command::new("/bin/sh");
                shell.arg(script);
                shell
            }
            None => Command::new(&self.command[0]),
        };
        command.args(&self.command[1..]);
        RunVars::of_attempt(spec).set_on(&mut command);
        command.envs(hook_values.pairs());
        if !self.foreground {
            command.process_group(0);
        }
        if let Some(procs) = cgroup.map(cgroup::Attempt::procs) {
            // SAFETY: the closure only writes to a descriptor (see `cgroup::Attempt::join`),
            // which is async-signal-safe.
            unsafe {
                command.pre_exec(move || {
                    cgroup::Attempt::join(procs);
                    Ok(())
                });
            }
        }
        // Last: its pre_exec execs the command itself.
        start::exactly(&mut command);
        command
    }
}

/// A pipe for the attempt's `stream`, and the copy that reads its other end into `sink` (had
/// once the pipe is) and matches it against `rules`.
fn watched(
    stream: Stream,
    rules: &OutputRules,
    sink: impl FnOnce() -> io::Result<Sink>,
) -> io::Result<(Watch, io::PipeWriter)> {
    let (source, attempt_end) = io::pipe()?;
    Ok((
        plumbing::watch(source, sink()?, stream, rules)?,
        attempt_end,
    ))
}

/// Starts `sh -c script` as a hook with `vars`, in a process group of its own.
pub(super) fn spawn_hook(script: &str, vars: &RunVars<'_>) -> io::Result<Child> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(script)
        // A hook never gets the attempts' input, and its output must not mix into the
        // command's stdout, which may feed a pipeline.
        .stdin(Stdio::null())
        .process_group(0);
    vars.set_on(&mut command);
    start::exactly(&mut command);
    io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|stderr| command.stdout(stderr).spawn())
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Instant;

    use crate::outcome::Limit;
    use crate::settings::HookKind;

    /// The values of `RETRY_ATTEMPT`, `RETRY_MAX_ATTEMPTS`, `RETRY_LAST_EXIT`,
    /// `RETRY_NEXT_DELAY_MS` and `RETRY_ENV_FILE` in turn, `-` for one removed.
    fn values(vars: RunVars<'_>) -> Vec<String> {
        vars.pairs()
            .into_iter()
            .map(|(_, value)| value.map_or("-".into(), |value| value.into_string().unwrap()))
            .collect()
    }

    fn attempt(number: u64, max_attempts: Option<u64>, last_status: Option<u8>) -> AttemptSpec {
        AttemptSpec {
            number,
            max_attempts,
            last_status,
            deadline: Some((Instant::now(), Limit::Attempt)),
        }
    }

    #[test]
    fn an_attempt_gets_its_number_the_limit_and_the_last_status_and_no_hook_variables() {
        let first = attempt(1, None, None);
        assert_eq!(
            values(RunVars::of_attempt(&first)),
            ["1", "0", "-", "-", "-"]
        );
        let third = attempt(3, Some(6), Some(75));
        assert_eq!(
            values(RunVars::of_attempt(&third)),
            ["3", "6", "75", "-", "-"]
        );
    }

    #[test]
    fn a_hook_gets_the_attempt_that_ended_its_status_the_coming_wait_and_its_values_file() {
        let hook = HookSpec {
            kind: HookKind::Retry,
            command: "true",
            attempt: 2,
            max_attempts: Some(4),
            last_status: 0,
            next_delay: Some(Duration::from_micros(1_500_999)),
            deadline: None,
        };
        let file = Path::new("/tmp/retry-env-x/env-y");
        assert_eq!(
            values(RunVars::of_hook(&hook, Some(file))),
            ["2", "4", "0", "1500", "/tmp/retry-env-x/env-y"]
        );
        let before_any = HookSpec {
            attempt: 0,
            max_attempts: None,
            next_delay: None,
            ..hook
        };
        assert_eq!(
            values(RunVars::of_hook(&before_any, None)),
            ["0", "0", "0", "-", "-"]
        );
    }

    #[test]
    fn a_variable_that_does_not_apply_is_removed_from_what_the_child_inherits() {
        let mut command = Command::new("true");
        RunVars::of_attempt(&attempt(1, Some(2), None)).set_on(&mut command);
        let mut set: Vec<(&OsStr, Option<&OsStr>)> = command.get_envs().collect();
        set.sort();
        let removed = |name: &'static str| (OsStr::new(name), None);
        assert_eq!(
            set,
            [
                (OsStr::new("RETRY_ATTEMPT"), Some(OsStr::new("1"))),
                removed("RETRY_ENV_FILE"),
                removed("RETRY_LAST_EXIT"),
                (OsStr::new("RETRY_MAX_ATTEMPTS"), Some(OsStr::new("2"))),
                removed("RETRY_NEXT_DELAY_MS"),
            ]
        );
    }
}
