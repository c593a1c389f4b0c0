//! The only code that spawns, waits for and signals attempts.
//!
//! Each attempt runs in a process group of its own (unless `--foreground`), so a timeout or a
//! shutdown reaches the whole tree. Termination follows `timeout(1)`: the terminating signal,
//! SIGCONT so a stopped process can act on it, the `--kill-after` grace, then SIGKILL. Once the
//! attempt itself has died, whatever is left of its group gets the rest of the grace and then
//! SIGKILL too, so no grandchild outlives a terminated attempt.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::{self, PipeReader, Write};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use crate::cgroup::{self, Cgroups};
use crate::cli::FailedOutput;
use crate::driver::{
    AskedWait, AttemptReport, AttemptSpec, Cut, Execute, Halt, HookSpec, Interrupted, OutputOf,
    Settle,
};
use crate::files;
use crate::hook_values::{self, HookValues};
use crate::input::{Feeder, Input};
use crate::outcome::{AttemptEnd, Limit};
use crate::plumbing::{self, Drained, Held, Kept, Leftover, OwnStream, ReaderWait, Sink, Watch};
use crate::predicate::Matches;
use crate::reaper::{reap, reap_orphans};
use crate::report::{Event as Report, Reporter};
use crate::settings::{HookKind, OutputRules, Settings};
use crate::signals::{self, Event, Events};
use crate::start;
use crate::stdio::Stream;
use crate::sweep;

pub(crate) struct Runner<'a> {
    events: &'a Events,
    command: &'a [OsString],
    stdout_rules: &'a OutputRules,
    stderr_rules: &'a OutputRules,
    input: Input,
    hold_stdout: bool,
    /// The final attempt of a run that did not succeed has its held stdout go to stderr.
    stdout_once: bool,
    failed_output: FailedOutput,
    /// The last attempt's held output (its stdout under `--hold-stdout`, its stdout and
    /// stderr under `--failed-output`), until it is released.
    held: Option<Arc<Mutex<Held>>>,
    /// Earlier attempts' output under `--failed-output on-give-up`, until the run ends.
    kept: Kept,
    /// The most kept of each earlier attempt's output (`--keep-max`; 0: no bound).
    keep_max: u64,
    foreground: bool,
    kill_signal: i32,
    kill_after: Duration,
    /// The warnings said already (see `say_once`): what failed, and for which stream.
    warned: Vec<(&'static str, Stream)>,
    /// Copies of earlier attempts' output still running (see `plumbing::Leftover`).
    leftovers: Vec<Leftover>,
    /// What `--on-retry` hooks handed on to later attempts.
    hook_values: HookValues,
    /// The directory of the files `--on-retry` hooks write values to, once made: private (mode
    /// 0700), so that no other user can put a file at a name a hook freed (in a shared `/tmp`,
    /// with `LD_PRELOAD=` in it for the attempts). Removed, with all in it, when the run ends.
    values_dir: Option<tempfile::TempDir>,
    /// What `retry` held below it when the running attempt started (see `sweep::below`), where
    /// the attempt has no cgroup of its own.
    earlier: BTreeSet<sweep::Known>,
    /// Where the attempts' cgroups are made, where `retry` may make them (see `cgroup`).
    cgroups: Option<Cgroups>,
    /// The running attempt's cgroup, if it has one.
    cgroup: Option<cgroup::Attempt>,
    /// The sweep's way was said (`--verbose`).
    said_sweep: bool,
}

impl<'a> Runner<'a> {
    /// A runner for the attempts and hooks of a run with `settings`, whose shutdown signals
    /// arrive through `events`.
    pub(crate) fn new(settings: &'a Settings, events: &'a Events) -> Runner<'a> {
        Runner {
            events,
            command: &settings.command,
            stdout_rules: &settings.stdout_rules,
            stderr_rules: &settings.stderr_rules,
            input: Input::new(settings.stdin),
            hold_stdout: settings.hold_stdout,
            stdout_once: settings.stdout_once,
            failed_output: settings.failed_output,
            held: None,
            kept: Kept::default(),
            keep_max: settings.keep_max,
            foreground: settings.foreground,
            kill_signal: settings.kill_signal,
            kill_after: settings.kill_after,
            warned: Vec::new(),
            leftovers: Vec::new(),
            hook_values: HookValues::default(),
            values_dir: None,
            earlier: BTreeSet::new(),
            // Under --foreground, only the attempt itself is ever signalled. A cgroup costs
            // each attempt's start a tenth of a millisecond or more (a fork instead of a
            // vfork, and a move between cgroups): it is had where attempts are timed, which
            // is where sweeps are made run after run; a run that only a signal ends is swept
            // once, at its end, by /proc.
            cgroups: if settings.foreground || !timed(settings) {
                None
            } else {
                Cgroups::here()
            },
            cgroup: None,
            said_sweep: false,
        }
    }

    /// Once the run has ended: gives the copies of output that outlived their attempts to a
    /// process of their own (see `plumbing::hand_over`). `Err` holds a shutdown signal
    /// received meanwhile.
    pub(crate) fn hand_over(self) -> Result<(), i32> {
        plumbing::hand_over(self.leftovers, self.events)
    }
}

/// Where a signal meant for the attempt goes.
#[derive(Clone, Copy)]
enum Target {
    Group(libc::pid_t),
    Process(libc::pid_t),
}

impl Phase {
    /// When SIGKILL follows, if it does.
    fn kill_at(self) -> Option<Instant> {
        match self {
            Phase::Terminating { kill_at } => Some(kill_at),
            Phase::Running | Phase::Killed => None,
        }
    }
}

impl Target {
    fn send(self, signal: i32) {
        let pid = match self {
            Target::Group(pgid) => -pgid,
            Target::Process(pid) => pid,
        };
        // SAFETY: kill(2) with a pid we spawned (or its group); failure (already gone) is fine.
        unsafe {
            libc::kill(pid, signal);
        }
    }

    /// Sends the terminating signal, then SIGCONT so that a stopped process can act on it.
    fn terminate(self, signal: i32) {
        self.send(signal);
        if signal != libc::SIGKILL && signal != libc::SIGCONT {
            self.send(libc::SIGCONT);
        }
    }

    /// Ctrl-Z: stops the attempt with SIGTSTP (which it may catch, to restore the terminal) and
    /// `retry` with it; once `retry` is continued, continues the attempt.
    fn suspend_with_retry(self) {
        self.send(libc::SIGTSTP);
        signals::stop_self();
        self.send(libc::SIGCONT);
    }

    /// Tells the attempt that the terminal's size changed. Under `--foreground` it shares
    /// `retry`'s process group, which the terminal told already.
    fn pass_resize(self) {
        if let Target::Group(_) = self {
            self.send(libc::SIGWINCH);
        }
    }

    /// Whether the attempt is in `retry`'s own process group (as under `--foreground`, unless
    /// it left).
    fn in_retry_group(self) -> bool {
        let (Target::Group(pid) | Target::Process(pid)) = self;
        // SAFETY: getpgid(2) on the child we spawned and have not yet reaped; getpgrp(2)
        // cannot fail.
        unsafe { libc::getpgid(pid) == libc::getpgrp() }
    }

    /// Hands `signal` to the attempt itself, the group's leader, as if it had been sent there.
    fn relay(self, signal: i32) {
        let (Target::Group(pid) | Target::Process(pid)) = self;
        // SAFETY: kill(2) on the child we spawned and have not yet reaped.
        unsafe {
            libc::kill(pid, signal);
        }
    }

    /// Whether any process of the group is left (always false for a single process: its end
    /// was already seen).
    fn group_alive(self) -> bool {
        match self {
            Target::Group(pgid) => {
                // Members adopted by `retry` (see `reaper::adopt_orphans`) that have died are zombies
                // until collected, and a zombie still counts for kill(2).
                // SAFETY: waitpid(2) with WNOHANG on the group returns at once; kill(2) with
                // signal 0 only checks for existence.
                unsafe {
                    while libc::waitpid(-pgid, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
                    libc::kill(-pgid, 0) == 0
                }
            }
            Target::Process(_) => false,
        }
    }
}

/// What supervising a child has to say while it runs.
enum Notice {
    /// It was stopped by this signal (SIGTTIN, SIGTTOU) for using the terminal.
    TerminalStop(i32),
    /// This signal, sent to `retry`, was handed to it.
    Relayed(i32),
    /// Nothing more of this stream can be kept: it is read no more.
    HoldFull(Stream),
}

/// What a supervised child is, which says whether signals meant for the command reach it, and
/// how what it leaves behind is told from what others left.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Supervisee {
    /// The attempt of this number.
    Attempt(u64),
    Hook,
}

/// Where the attempt is in being stopped by `retry`.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Running,
    /// The terminating signal was sent; SIGKILL follows at this instant.
    Terminating {
        kill_at: Instant,
    },
    Killed,
}

/// A started attempt: the child, the feeder of its replayed stdin, the copies of its output.
struct Spawned {
    child: Child,
    feeder: Option<Feeder>,
    watches: Vec<Watch>,
}

/// How a supervised child ended.
struct Supervised {
    status: ExitStatus,
    ran: Duration,
    /// `retry` terminated it for this limit.
    timed_out: Option<Limit>,
    /// `retry` received this signal meanwhile.
    interrupted: Option<i32>,
}

impl Execute for Runner<'_> {
    fn run(&mut self, spec: &AttemptSpec, reporter: &mut Reporter) -> Result<AttemptReport, Cut> {
        self.cgroup = self
            .cgroups
            .as_mut()
            .and_then(|cgroups| cgroups.for_attempt(spec.number));
        // Under --foreground only the attempt itself is ever signalled: there is no sweep.
        if !self.said_sweep && !self.foreground {
            self.said_sweep = true;
            let parent = self
                .cgroup
                .as_ref()
                .and_then(|cgroup| cgroup.dir().parent());
            reporter.emit(&Report::Sweep { cgroup: parent });
        }
        // Before the first attempt, nothing below `retry` is an attempt's: what it holds then
        // started before it did (children of the process it was exec'd from).
        if self.cgroup.is_none() && !self.foreground && spec.number > 1 {
            self.earlier = own_below();
        }
        let started = Instant::now();
        let Spawned {
            mut child,
            feeder,
            watches,
        } = match self.spawn_attempt(spec) {
            Ok(spawned) => spawned,
            Err(error) => {
                if let (Some(cgroups), Some(cgroup)) = (&mut self.cgroups, self.cgroup.take()) {
                    cgroups.finished(cgroup);
                }
                let (end, why) = start::failure(&error, &self.command[0]);
                return Ok(AttemptReport {
                    end,
                    ran: started.elapsed(),
                    matches: Matches::default(),
                    start_error: Some(why),
                    hint: None,
                    ignored_hint: None,
                });
            }
        };
        if let Some(cgroup) = self
            .cgroup
            .take_if(|cgroup| !cgroup.holds(child.id() as i32))
        {
            // It could not join its cgroup: this attempt, and every later one, is swept by
            // /proc, and what `retry` held before it started is what it holds now, less it.
            if let Some(mut cgroups) = self.cgroups.take() {
                cgroups.finished(cgroup);
            }
            self.earlier = own_below();
            self.earlier
                .retain(|&(pid, _)| pid != child.id() as libc::pid_t);
        }
        let supervised = self.supervise_attempt(&mut child, spec, started, reporter);
        if let (Some(cgroups), Some(cgroup)) = (&mut self.cgroups, self.cgroup.take()) {
            cgroups.finished(cgroup);
        }
        let reader_wait = match supervised.interrupted {
            Some(_) => ReaderWait::WhileFlowing,
            None => ReaderWait::Whole,
        };
        let drained = self.drain(watches, feeder, reader_wait, reporter);
        let drained = match (supervised.interrupted, drained) {
            (None, Ok(drained)) => drained,
            (Some(signal), _) | (None, Err(signal)) => {
                // Under --hold-stdout, an interrupted run has no final attempt, but its held
                // output is not dropped while the reader takes it; under --failed-output, the
                // attempt a signal to retry ended is the final one.
                let output_of = match self.failed_output {
                    FailedOutput::Pass => OutputOf::EarlierAttempt {
                        attempt: spec.number,
                        end: supervised.end(),
                    },
                    _ => OutputOf::FinalAttempt,
                };
                // What was kept of earlier attempts comes first, in attempt order.
                let _ = self.settle_failed_output(Settle::Interrupted, reporter);
                let _ = self.release_held(output_of, ReaderWait::WhileFlowing, reporter);
                return Err(Cut {
                    signal,
                    end: supervised.end(),
                    ran: supervised.ran,
                });
            }
        };
        // A supervisor runs for ever: the copies that earlier attempts left go to processes of
        // their own, and those that have ended are forgotten, so that `retry` holds the copies
        // of two attempts at most.
        for leftover in &mut self.leftovers {
            leftover.hand_over();
        }
        self.leftovers.retain(|leftover| !leftover.finished());
        self.leftovers.extend(drained.leftovers);
        let heard = drained.heard;
        let now = SystemTime::now();
        Ok(AttemptReport {
            end: supervised.end(),
            ran: supervised.ran,
            matches: Matches {
                status: heard.status.map(|(_, status)| status),
                ..drained.matches
            },
            start_error: None,
            hint: heard.hint.map(|(_, hint)| AskedWait {
                wait: hint.value.wait(now),
                source: hint.source,
            }),
            ignored_hint: heard.ignored.map(|(_, value)| value),
        })
    }

    fn release_output(&mut self, output_of: OutputOf, reporter: &mut Reporter) -> Result<(), Halt> {
        self.release_held(output_of, ReaderWait::Whole, reporter)
    }

    fn release_final_output_interrupted(&mut self, reporter: &mut Reporter) {
        // An interrupted run has no answer.
        let _ = self.release_held(OutputOf::GaveUp, ReaderWait::WhileFlowing, reporter);
    }

    fn settle_failed_output(
        &mut self,
        settle: Settle,
        reporter: &mut Reporter,
    ) -> Result<(), Halt> {
        let reader_wait = match (settle, self.failed_output) {
            (Settle::GaveUp, FailedOutput::OnGiveUp) => ReaderWait::Whole,
            (Settle::Interrupted, FailedOutput::OnGiveUp) => ReaderWait::WhileFlowing,
            _ => {
                self.kept.clear();
                return Ok(());
            }
        };
        for (kept, output) in self.kept.take() {
            reporter.emit(&Report::FailedOutput {
                attempt: kept.attempt,
                end: kept.end,
            });
            let copied = self.copy_out(reader_wait, move |progress| {
                let on_stderr = |error| CopyFailed {
                    stream: Stream::Stderr,
                    error,
                };
                let out = OwnStream::on(io::stderr().as_fd()).map_err(on_stderr)?;
                let moved = &progress.moved;
                output
                    .write_to(&mut Counted { out, moved })
                    .map_err(on_stderr)
            })?;
            if !self.said_copy(copied, reporter)? {
                break;
            }
        }
        Ok(())
    }

    fn end_by(&mut self, deadline: Instant) {
        if let Some(at) = deadline.checked_add(self.kill_after) {
            self.events.wait_on_readers_until(at);
        }
    }

    fn stdin_shared(&self) -> bool {
        self.input.shared_stream()
    }

    fn run_hook(
        &mut self,
        hook: &HookSpec<'_>,
        reporter: &mut Reporter,
    ) -> Result<AttemptEnd, Interrupted> {
        let started = Instant::now();
        // Removed when it goes out of scope, once read (or not, when a signal ends the run).
        let values_file = match hook.kind {
            HookKind::Retry => self.values_file(reporter),
            _ => None,
        };
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(hook.command)
            .env("RETRY_ATTEMPT", hook.attempt.to_string())
            .env(
                "RETRY_MAX_ATTEMPTS",
                hook.max_attempts.unwrap_or(0).to_string(),
            )
            .env("RETRY_LAST_EXIT", hook.last_status.to_string())
            // A hook never gets the attempts' input, and its output must not mix into the
            // command's stdout, which may feed a pipeline.
            .stdin(Stdio::null())
            .process_group(0);
        match hook.next_delay {
            Some(delay) => command.env("RETRY_NEXT_DELAY_MS", delay.as_millis().to_string()),
            None => command.env_remove("RETRY_NEXT_DELAY_MS"),
        };
        match &values_file {
            Some(path) => command.env("RETRY_ENV_FILE", path.as_os_str()),
            None => command.env_remove("RETRY_ENV_FILE"),
        };
        start::exactly(&mut command);
        let spawned = io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .and_then(|stderr| command.stdout(stderr).spawn());
        let mut child = match spawned {
            Ok(child) => child,
            Err(error) => return Ok(start::failure(&error, OsStr::new("sh")).0),
        };
        let target = Target::Group(child.id() as libc::pid_t);
        let deadline = hook.deadline.map(|at| (at, Limit::Run));
        // A hook's stdin is /dev/null: only one that opens the terminal itself can be stopped
        // for it, and its deadline (if any) still applies.
        let supervised = self.supervise(
            &mut child,
            target,
            deadline,
            started,
            &mut |_| {},
            Supervisee::Hook,
        );
        reap_orphans(None);
        if let Some(path) = values_file {
            if supervised.interrupted.is_none() {
                self.take_hook_values(&path, reporter);
            }
            // A directory the hook made in its place is the hook's, under a name no one else
            // could know: it goes too (the file itself goes with `path`).
            if std::fs::symlink_metadata(&path).is_ok_and(|found| found.is_dir()) {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
        match supervised.interrupted {
            Some(signal) => Err(Interrupted(signal)),
            None => Ok(supervised.end()),
        }
    }
}

impl Supervised {
    fn end(&self) -> AttemptEnd {
        match self.timed_out {
            Some(limit) => AttemptEnd::TimedOut(limit),
            None => end_of(self.status),
        }
    }
}

impl Runner<'_> {
    fn target(&self, child: &Child) -> Target {
        let pid = child.id() as libc::pid_t;
        if self.foreground {
            Target::Process(pid)
        } else {
            Target::Group(pid)
        }
    }

    /// Waits for `child` to end, terminating it (and its group) at `deadline` or when `retry`
    /// is asked to stop. `notify` hears of each time the child is stopped for using the
    /// terminal from a background process group, and of each signal relayed.
    /// SIGUSR1 and SIGUSR2 sent to `retry` are handed to an attempt (they are meant for the
    /// command, not for a hook).
    fn supervise(
        &self,
        child: &mut Child,
        target: Target,
        deadline: Option<(Instant, Limit)>,
        started: Instant,
        notify: &mut dyn FnMut(Notice),
        supervisee: Supervisee,
    ) -> Supervised {
        let mut phase = Phase::Running;
        let mut timed_out = None;
        let mut interrupted = None;
        // Once `retry` ends the child: what it leaves outside its group.
        let mut stragglers: Option<Stragglers<'_>> = None;
        let attempt = match supervisee {
            Supervisee::Attempt(number) => Some(number),
            Supervisee::Hook => None,
        };
        let earlier = &self.earlier;
        let cgroup = match supervisee {
            Supervisee::Attempt(_) => self.cgroup.as_ref(),
            Supervisee::Hook => None,
        };
        let status = loop {
            let wake_at = match phase {
                Phase::Running => deadline.map(|(at, _)| at),
                Phase::Terminating { kill_at } => Some(kill_at),
                Phase::Killed => None,
            };
            match self.events.next(wake_at) {
                Some(Event::Child) => {
                    for stream in plumbing::new_stalls() {
                        notify(Notice::HoldFull(stream));
                    }
                    if let Some(status) = reap(child) {
                        break status;
                    }
                    reap_orphans(Some(child));
                    if let Some(signal) = terminal_stop(child) {
                        notify(Notice::TerminalStop(signal));
                    }
                }
                Some(Event::Suspend) => target.suspend_with_retry(),
                Some(Event::Resize) => target.pass_resize(),
                Some(Event::Relay(signal)) if matches!(supervisee, Supervisee::Attempt(_)) => {
                    target.relay(signal);
                    notify(Notice::Relayed(signal));
                }
                Some(Event::Relay(_)) => {}
                Some(Event::Shutdown {
                    signal,
                    from_terminal,
                }) => {
                    if interrupted.is_some() {
                        // A second request (Ctrl-C again): no more grace.
                        let stragglers = stragglers.get_or_insert_with(|| {
                            Stragglers::of(
                                child,
                                target,
                                attempt,
                                signal,
                                earlier,
                                cgroup,
                                phase.kill_at(),
                            )
                        });
                        target.send(libc::SIGKILL);
                        phase = Phase::Killed;
                        stragglers.kill(Instant::now() + KILL_ROUNDS);
                    } else {
                        interrupted = Some(signal);
                        if phase == Phase::Running {
                            phase = self.terminating();
                        }
                        let stragglers = stragglers.get_or_insert_with(|| {
                            Stragglers::of(
                                child,
                                target,
                                attempt,
                                signal,
                                earlier,
                                cgroup,
                                phase.kill_at(),
                            )
                        });
                        // The terminal's Ctrl-C reached an attempt in `retry`'s own group
                        // (--foreground) already; a second copy would read as "again, and
                        // harder", which tells terraform or docker compose to quit at once.
                        if !(from_terminal && target.in_retry_group()) {
                            target.terminate(signal);
                        }
                        stragglers.terminate();
                    }
                }
                None => match phase {
                    Phase::Running => {
                        timed_out = deadline.map(|(_, limit)| limit);
                        phase = self.terminating();
                        let signal = self.kill_signal;
                        let stragglers = stragglers.get_or_insert_with(|| {
                            Stragglers::of(
                                child,
                                target,
                                attempt,
                                signal,
                                earlier,
                                cgroup,
                                phase.kill_at(),
                            )
                        });
                        target.terminate(signal);
                        stragglers.terminate();
                    }
                    Phase::Terminating { .. } | Phase::Killed => {
                        target.send(libc::SIGKILL);
                        let kill_at = match phase {
                            Phase::Terminating { kill_at } => kill_at,
                            _ => Instant::now(),
                        };
                        if let Some(stragglers) = &mut stragglers {
                            stragglers.kill(kill_at + KILL_ROUNDS);
                        }
                        phase = Phase::Killed;
                    }
                },
            }
        };
        let ran = started.elapsed();
        match (phase, &mut stragglers) {
            (Phase::Terminating { kill_at }, _) => {
                if let Some(signal) = self.clear_group(target, kill_at, stragglers.as_mut()) {
                    interrupted.get_or_insert(signal);
                }
            }
            // SIGKILL was sent (and goes to those found since), or the grace never ends (they
            // get the terminating signal, once).
            (Phase::Killed, Some(stragglers)) => {
                stragglers.terminate();
            }
            _ => {}
        }
        Supervised {
            status,
            ran,
            timed_out,
            interrupted,
        }
    }

    /// Starts the attempt, with its stdin. An executable file that the kernel cannot run but
    /// that reads as text (a script with no `#!` line) is run by /bin/sh instead, as execvp(3)
    /// does, and with it env(1) and timeout(1); a binary for another machine stays an error,
    /// as in bash.
    fn spawn_attempt(&mut self, spec: &AttemptSpec) -> io::Result<Spawned> {
        // The copies handed over since the last attempt ended hold nothing the attempt needs.
        self.leftovers.retain(|leftover| !leftover.finished());
        match self.spawn_with_stdin(spec, None) {
            Err(error) if error.raw_os_error() == Some(libc::ENOEXEC) => {
                match start::locate(&self.command[0]).filter(|file| start::reads_as_text(file)) {
                    Some(script) => self.spawn_with_stdin(spec, Some(&script)),
                    None => Err(error),
                }
            }
            spawned => spawned,
        }
    }

    /// Starts the command, or /bin/sh on `script`, with the attempt's stdin, and the copies
    /// of the streams that a predicate reads. Everything the attempt needs is had before it
    /// starts: short of a pipe or a thread, it does not start, rather than run with part of its
    /// input or with output that nothing judges.
    fn spawn_with_stdin(
        &mut self,
        spec: &AttemptSpec,
        script: Option<&Path>,
    ) -> io::Result<Spawned> {
        let (stdin, feeder) = self.input.for_attempt(spec.number)?;
        let mut command = self.attempt_command(spec, script);
        command.stdin(stdin);
        let spawned = self
            .watch_outputs(&mut command)
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
    fn watch_outputs(&mut self, command: &mut Command) -> io::Result<Vec<Watch>> {
        let mut watches = Vec::new();
        let holding = self.failed_output != FailedOutput::Pass;
        // One spool for both streams, so that they go out as they were interleaved.
        let held = (self.hold_stdout || holding).then(|| Arc::new(Mutex::new(Held::default())));
        self.held = held.clone();
        if self.stdout_rules.any() || self.hold_stdout || holding {
            let (source, attempt_end) = io::pipe()?;
            let sink = match &held {
                Some(held) => Sink::Hold(Arc::clone(held), Stream::Stdout),
                None => Sink::Stream(OwnStream::on(io::stdout().as_fd())?),
            };
            watches.push(plumbing::watch(
                source,
                sink,
                Stream::Stdout,
                self.stdout_rules,
            )?);
            command.stdout(attempt_end);
        }
        if self.stderr_rules.any() || holding {
            let (source, attempt_end) = io::pipe()?;
            let sink = match &held {
                Some(held) if holding => Sink::Hold(Arc::clone(held), Stream::Stderr),
                _ => Sink::Stream(OwnStream::on(io::stderr().as_fd())?),
            };
            watches.push(plumbing::watch(
                source,
                sink,
                Stream::Stderr,
                self.stderr_rules,
            )?);
            command.stderr(attempt_end);
        }
        Ok(watches)
    }

    fn attempt_command(&self, spec: &AttemptSpec, script: Option<&Path>) -> Command {
        let mut command = match script {
            Some(script) => {
                let mut shell = Command::new("/bin/sh");
                shell.arg(script);
                shell
            }
            None => Command::new(&self.command[0]),
        };
        command
            .args(&self.command[1..])
            .env("RETRY_ATTEMPT", spec.number.to_string())
            .env(
                "RETRY_MAX_ATTEMPTS",
                spec.max_attempts.unwrap_or(0).to_string(),
            );
        match spec.last_status {
            Some(status) => command.env("RETRY_LAST_EXIT", status.to_string()),
            None => command.env_remove("RETRY_LAST_EXIT"),
        };
        // An outer retry's hook values (retry run from an --on-retry hook) speak of another run.
        command
            .env_remove("RETRY_NEXT_DELAY_MS")
            .env_remove("RETRY_ENV_FILE")
            .envs(self.hook_values.pairs());
        if !self.foreground {
            command.process_group(0);
        }
        if let Some(procs) = self.cgroup.as_ref().map(cgroup::Attempt::procs) {
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

    /// Waits for the attempt to end, under its limits, saying what befalls it meanwhile.
    fn supervise_attempt(
        &mut self,
        child: &mut Child,
        spec: &AttemptSpec,
        started: Instant,
        reporter: &mut Reporter,
    ) -> Supervised {
        let target = self.target(child);
        let mut stopped_said = false;
        let mut warned_now = Vec::new();
        let spill_failures = || self.spill_failures();
        let warned = &self.warned;
        let mut notify = |notice| match notice {
            Notice::TerminalStop(signal) => {
                if !std::mem::replace(&mut stopped_said, true) {
                    reporter.emit(&Report::TerminalStop {
                        attempt: spec.number,
                        signal,
                    });
                }
            }
            Notice::Relayed(signal) => reporter.emit(&Report::Relayed {
                attempt: spec.number,
                signal,
            }),
            Notice::HoldFull(stream) => {
                // A stream is read no more because no file could take it: that comes first.
                for (stream, error) in spill_failures() {
                    let key = ("spill", stream);
                    if !warned.contains(&key) && !warned_now.contains(&key) {
                        warned_now.push(key);
                        reporter.emit(&Report::SpillFailed {
                            stream,
                            error: &error,
                        });
                    }
                }
                reporter.emit(&Report::HoldFull { stream });
            }
        };
        let supervised = self.supervise(
            child,
            target,
            spec.deadline,
            started,
            &mut notify,
            Supervisee::Attempt(spec.number),
        );
        self.warned.extend(warned_now);
        supervised
    }

    /// Waits for the ended attempt's output to go by, and says what could not be read, held
    /// or written; a shutdown signal meanwhile is returned instead.
    fn drain(
        &mut self,
        watches: Vec<Watch>,
        feeder: Option<Feeder>,
        reader_wait: ReaderWait,
        reporter: &mut Reporter,
    ) -> Result<Drained, i32> {
        // The run's time limit, with the grace, bounds the wait for the attempt's output: a
        // reader that has stalled must not hold the run past it. An attempt's own `--timeout`
        // does not: it limits how long the command runs, and a reader that takes its time
        // over output the command has finished writing must not lose any of it, nor have the
        // attempt judged before it has all gone by.
        let until = self.events.readers_until().map(|at| {
            Instant::now()
                .checked_add(self.kill_after)
                .map_or(at, |grace| at.max(grace))
        });
        let drained = plumbing::finish(watches, self.events, reader_wait, until);
        // After the drain, whose wait lets the ends of children go by.
        reap_orphans(None);
        if let Some(feeder) = feeder {
            feeder.stop();
        }
        self.say_stream_failures(reporter);
        if let Ok(drained) = &drained {
            for (stream, error) in &drained.write_errors {
                self.say_once(
                    reporter,
                    Report::WriteFailed {
                        stream: *stream,
                        error,
                    },
                );
            }
        }
        // A stall said while the attempt ran is not said again.
        for stream in plumbing::new_stalls() {
            reporter.emit(&Report::HoldFull { stream });
        }
        drained
    }

    /// Says that stdin could not be read for the replay, or that held or replayed data
    /// outgrew memory and stays there for want of a temporary file.
    fn say_stream_failures(&mut self, reporter: &mut Reporter) {
        if let Some(error) = self.input.read_error() {
            self.say_once(reporter, Report::ReadFailed { error: &error });
        }
        for (stream, error) in self.spill_failures() {
            self.say_once(
                reporter,
                Report::SpillFailed {
                    stream,
                    error: &error,
                },
            );
        }
    }

    /// The spools that could not spill, and why: held output (said as stdout's) and
    /// replayed stdin.
    fn spill_failures(&self) -> Vec<(Stream, String)> {
        let held = self.held.as_ref().and_then(|held| {
            let held = held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            held.spill_error().map(str::to_string)
        });
        [
            (Stream::Stdout, held),
            (Stream::Stdin, self.input.spill_error()),
        ]
        .into_iter()
        .filter_map(|(stream, error)| Some((stream, error?)))
        .collect()
    }

    /// Emits a warning about a stream the first time only: it holds for the rest of the run.
    fn say_once(&mut self, reporter: &mut Reporter, warning: Report<'_>) {
        let key = match warning {
            Report::SpillFailed { stream, .. } => ("spill", stream),
            Report::WriteFailed { stream, .. } => ("write", stream),
            Report::ReadFailed { .. } => ("read", Stream::Stdin),
            Report::HookValuesSkipped { line: None, .. } => ("hook values", Stream::Stdin),
            _ => return reporter.emit(&warning),
        };
        if !self.warned.contains(&key) {
            self.warned.push(key);
            reporter.emit(&warning);
        }
    }

    /// Passes the held output on as `output_of` says (see `OutputOf`), waiting for the reader
    /// as `reader_wait` says.
    fn release_held(
        &mut self,
        output_of: OutputOf,
        reader_wait: ReaderWait,
        reporter: &mut Reporter,
    ) -> Result<(), Halt> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        let route = match (self.failed_output, output_of) {
            (_, OutputOf::GaveUp) if self.stdout_once => Route::Stderr,
            (_, OutputOf::FinalAttempt | OutputOf::GaveUp) => Route::Own,
            (FailedOutput::Pass, OutputOf::EarlierAttempt { .. }) => Route::Stderr,
            (FailedOutput::Drop, OutputOf::EarlierAttempt { .. }) => {
                held.lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .discard();
                return Ok(());
            }
            (FailedOutput::OnGiveUp, OutputOf::EarlierAttempt { attempt, end }) => {
                let failed = match self.kept.keep(attempt, end, &held, self.keep_max) {
                    Err(error) => Some(crate::text::plain_error(&error)),
                    // Kept in memory, when no temporary file could take it: said as for the
                    // other spools.
                    Ok(()) => self.kept.spill_error().map(str::to_string),
                };
                if let Some(error) = failed {
                    self.say_once(
                        reporter,
                        Report::SpillFailed {
                            stream: Stream::Stdout,
                            error: &error,
                        },
                    );
                }
                return Ok(());
            }
        };
        let copied = self.copy_out(reader_wait, move |progress| {
            copy_held(&held, route, progress)
        })?;
        self.said_copy(copied, reporter).map(drop)
    }

    /// Runs `copy` (which keeps `Progress`) on a thread of its own while this one waits for
    /// signals, so that a signal still ends `retry` at once when the reader downstream does not
    /// read; the thread is then left behind, as `retry` is about to exit. Without a pipe or a
    /// thread, the copy runs here. Returns how the copy went, or the signal that cut the wait
    /// short.
    fn copy_out(
        &self,
        reader_wait: ReaderWait,
        copy: impl Fn(&Progress) -> Result<(), CopyFailed> + Send + Sync + 'static,
    ) -> Result<Result<(), CopyFailed>, Halt> {
        let progress = Arc::new(Progress::default());
        let copy = Arc::new(copy);
        let on_thread = (Arc::clone(&copy), Arc::clone(&progress));
        let Some((done, copier)) = spawn_copier(move || (on_thread.0)(&on_thread.1)) else {
            return Ok(copy(&progress));
        };
        let ended = match reader_wait {
            ReaderWait::WhileFlowing => {
                plumbing::wait_while_flowing(self.events, done.as_fd(), &progress.moved, None)
            }
            ReaderWait::Whole => self
                .events
                .wait_readable(done.as_fd(), self.events.readers_until()),
        };
        match ended {
            Ok(true) => Ok(copier.join().unwrap_or(Ok(()))),
            Ok(false) if reader_wait == ReaderWait::WhileFlowing => Ok(Ok(())),
            Ok(false) => Ok(Err(CopyFailed {
                stream: progress.writing(),
                error: io::Error::other(plumbing::READER_TOO_SLOW),
            })),
            Err(signal) => Err(Halt::Interrupted(signal)),
        }
    }

    /// Says how a copy went, once per stream; whether it went whole. A reader gone from stdout
    /// ends the run; from stderr, only the copy.
    fn said_copy(
        &mut self,
        copied: Result<(), CopyFailed>,
        reporter: &mut Reporter,
    ) -> Result<bool, Halt> {
        let CopyFailed { stream, error } = match copied {
            Ok(()) => return Ok(true),
            Err(failed) => failed,
        };
        if error.kind() == io::ErrorKind::BrokenPipe {
            return if stream == Stream::Stdout {
                Err(Halt::BrokenPipe)
            } else {
                Ok(false)
            };
        }
        let error = crate::text::plain_error(&error);
        self.say_once(
            reporter,
            Report::WriteFailed {
                stream,
                error: &error,
            },
        );
        Ok(false)
    }

    /// A private empty file for the `--on-retry` hook to write values to (`RETRY_ENV_FILE`):
    /// mode 0600, under a name no one can foresee, in the run's private directory in the
    /// temporary directory (made at the first hook). One that cannot be made is said once, and
    /// the hook runs without it.
    fn values_file(&mut self, reporter: &mut Reporter) -> Option<tempfile::TempPath> {
        use std::os::unix::fs::PermissionsExt;
        let dir = crate::dirs::temp_dir();
        let made = match self.values_dir.take() {
            Some(made) => Ok(made),
            None => tempfile::Builder::new()
                .prefix("retry-env-")
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir_in(&dir),
        };
        let file = made.and_then(|made| {
            let file = tempfile::Builder::new().prefix("env-").tempfile_in(&made);
            self.values_dir = Some(made);
            file
        });
        match file {
            Ok(file) => Some(file.into_temp_path()),
            Err(error) => {
                let error = format!(
                    "cannot make it in {}: {}",
                    crate::text::path(&dir),
                    crate::text::plain_error(&error)
                );
                self.say_once(
                    reporter,
                    Report::HookValuesSkipped {
                        line: None,
                        error: &error,
                        count: 0,
                    },
                );
                None
            }
        }
    }

    /// Reads the values the hook wrote to `path` for the attempts after it, saying once what
    /// was skipped. Only a regular file of the user's is read (the hook may write it in place
    /// or move one over it), and at most 64 KiB of it; a hook that removed the file handed on
    /// nothing.
    fn take_hook_values(&mut self, path: &Path, reporter: &mut Reporter) {
        let mut text = match files::read_bounded(path, hook_values::MOST_READ + 1) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return,
            Err(error) => {
                let error = crate::text::plain_error(&error);
                reporter.emit(&Report::HookValuesSkipped {
                    line: None,
                    error: &error,
                    count: 0,
                });
                return;
            }
        };
        let cut = text.len() as u64 > hook_values::MOST_READ;
        text.truncate(hook_values::MOST_READ as usize);
        if let Some(skipped) = self.hook_values.take(&text, cut) {
            reporter.emit(&Report::HookValuesSkipped {
                line: Some(skipped.line),
                error: skipped.why,
                count: skipped.count,
            });
        }
    }

    fn terminating(&self) -> Phase {
        match Instant::now().checked_add(self.kill_after) {
            Some(kill_at) => Phase::Terminating { kill_at },
            // A grace too long to represent never escalates.
            None => Phase::Killed,
        }
    }

    /// After a terminated attempt has died, gives what is left of its group until `kill_at`,
    /// then SIGKILL. Returns a shutdown signal received meanwhile, which also cuts the grace.
    ///
    /// Members that are not `retry`'s children (those whose parent still lives) send it no
    /// SIGCHLD, so this one rare path checks the group at growing intervals (1ms to 50ms)
    /// instead of waiting for an event.
    fn clear_group(
        &self,
        target: Target,
        kill_at: Instant,
        mut stragglers: Option<&mut Stragglers<'_>>,
    ) -> Option<i32> {
        let mut pause = Duration::from_millis(1);
        let left = |stragglers: &mut Option<&mut Stragglers<'_>>| {
            let group = target.group_alive();
            // Those re-parented to `retry` that have died are its to collect.
            reap_orphans(None);
            match stragglers {
                Some(stragglers) => stragglers.terminate() | group,
                None => group,
            }
        };
        let kill = |stragglers: &mut Option<&mut Stragglers<'_>>| {
            target.send(libc::SIGKILL);
            if let Some(stragglers) = stragglers {
                stragglers.kill(Instant::now().min(kill_at) + KILL_ROUNDS);
            }
        };
        while left(&mut stragglers) {
            let now = Instant::now();
            if now >= kill_at {
                kill(&mut stragglers);
                return None;
            }
            match self.events.next(Some((now + pause).min(kill_at))) {
                Some(Event::Shutdown { signal, .. }) => {
                    kill(&mut stragglers);
                    return Some(signal);
                }
                Some(Event::Suspend) => target.suspend_with_retry(),
                Some(Event::Resize) => target.pass_resize(),
                // The attempt has ended: there is no one left to tell.
                Some(Event::Child | Event::Relay(_)) | None => {}
            }
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        // The last of them may have died since they were last collected.
        reap_orphans(None);
        None
    }
}

/// How long the last rounds of SIGKILL may run past the end of the grace: what forks as it is
/// killed is chased that long, no longer, so that `retry` ends within 100 ms of the grace
/// (the rest is for collecting the attempt and exiting).
const KILL_ROUNDS: Duration = Duration::from_millis(80);

/// What a child that `retry` ends leaves behind outside its process group (see `sweep`): found
/// anew each time it is asked, so one forked since is found too, and first looked for before
/// the child is signalled, while what it started is still below it.
struct Stragglers<'a> {
    root: libc::pid_t,
    /// The attempt's cgroup, where it has one: then it is the cgroup's processes, and the
    /// kernel's `cgroup.kill` ends them.
    cgroup: Option<&'a cgroup::Attempt>,
    /// When the child started, in clock ticks since boot; `None` when that could not be read
    /// (no /proc), or under `--foreground`, where only the child itself is ever signalled:
    /// then none is found.
    since: Option<u64>,
    /// The attempt's number, which tells the processes re-parented to `retry` that are its (see
    /// `sweep::adopted_by`); `None` for a hook, whose re-parented processes cannot be told from
    /// the attempt's before it: then only what is found below it counts.
    attempt: Option<u64>,
    /// What `retry` held before the child started, and what was found below those since:
    /// never signalled.
    earlier: BTreeSet<sweep::Known>,
    /// The signal that ends them: the one the child got.
    signal: i32,
    /// Every living one found so far out of the child's group: once re-parented, one that was
    /// found below the child is still followed.
    living: Vec<sweep::Followed>,
    /// Those sent `signal` already.
    signalled: BTreeSet<sweep::Known>,
    /// The ended ones (not yet collected) the last look found, the child's group and the child
    /// too: their children were re-parented before the next look began.
    ended: BTreeSet<sweep::Known>,
    /// When the grace ends: a look meanwhile is cut short then, so SIGKILL is not late.
    kill_at: Option<Instant>,
    /// SIGKILL was sent, with rounds of it until then: whatever is found from now on gets it
    /// too.
    killed: Option<Instant>,
}

/// The most pidfds the stragglers hold open at once: beyond that, one is opened for each
/// signal, and `retry` keeps descriptors for its own files whatever an attempt forks.
const HELD_PIDFDS: usize = 256;

impl<'a> Stragglers<'a> {
    /// Takes the first look, which must come before the child is signalled.
    fn of(
        child: &Child,
        target: Target,
        attempt: Option<u64>,
        signal: i32,
        earlier: &BTreeSet<sweep::Known>,
        cgroup: Option<&'a cgroup::Attempt>,
        kill_at: Option<Instant>,
    ) -> Stragglers<'a> {
        let root = child.id() as libc::pid_t;
        let mut stragglers = Stragglers {
            root,
            cgroup,
            since: match target {
                Target::Group(_) => sweep::entry_of(root).map(|entry| entry.start),
                Target::Process(_) => None,
            },
            attempt,
            earlier: earlier.clone(),
            signal,
            living: Vec::new(),
            signalled: BTreeSet::new(),
            ended: BTreeSet::new(),
            kill_at,
            killed: None,
        };
        stragglers.look(kill_at, &[]);
        stragglers
    }

    /// Looks for them again (up to `until`: a look cut short settles nothing), sending each
    /// one found alive `send` as soon as it is found (so one killed forks no more while the
    /// walk goes on); whether this look shows that none is left: none alive, the child's
    /// group's included, and none ended since the last look (whose children may have moved to
    /// `retry` after its list was read).
    fn look(&mut self, until: Option<Instant>, send: &[i32]) -> bool {
        let Some(since) = self.since else {
            return true;
        };
        if let Some(cgroup) = self.cgroup {
            return self.look_in(cgroup, until, send);
        }
        let helpers = plumbing::helpers();
        let attempt = self.attempt;
        let lineage = sweep::Lineage {
            root: self.root,
            since,
            // SAFETY: getpid(2) cannot fail.
            own: unsafe { libc::getpid() },
            spared: &helpers,
            adopted: &|pid| attempt.is_some_and(|attempt| sweep::adopted_by(pid, attempt)),
        };
        let mut settled = true;
        let mut ended = BTreeSet::new();
        let (root, living) = (self.root, &mut self.living);
        let whole = sweep::walk(&lineage, &mut self.earlier, until, &mut |entry| {
            let known = (entry.pid, entry.start);
            if entry.zombie {
                ended.insert(known);
            } else if entry.group == root {
                settled = false;
            } else if let Some(followed) = living.iter().find(|followed| followed.known == known) {
                followed.signal(send);
            } else {
                let keep = living.len() < HELD_PIDFDS;
                if let Some(followed) = sweep::Followed::new(known, keep) {
                    followed.signal(send);
                    living.push(followed);
                }
            }
        });
        self.living.retain(|followed| match followed.ended() {
            Some(false) => true,
            Some(true) => {
                ended.insert(followed.known);
                false
            }
            None => false,
        });
        settled &= whole && self.living.is_empty() && ended.is_subset(&self.ended);
        self.ended = ended;
        settled
    }

    /// `look` where the attempt has a cgroup: its processes out of the child's group are
    /// listed there, and none is left once it is empty. A look cut short at `until` settles
    /// nothing.
    fn look_in(&mut self, cgroup: &cgroup::Attempt, until: Option<Instant>, send: &[i32]) -> bool {
        for pid in cgroup.processes() {
            if until.is_some_and(|until| Instant::now() >= until) {
                return false;
            }
            // SAFETY: getpgid(2) takes any pid, and fails for one that has gone.
            let group = unsafe { libc::getpgid(pid) };
            if group == self.root || group < 0 {
                continue;
            }
            let Some(start) = sweep::entry_of(pid).map(|entry| entry.start) else {
                continue;
            };
            if self
                .living
                .iter()
                .any(|followed| followed.known == (pid, start))
            {
                continue;
            }
            let keep = self.living.len() < HELD_PIDFDS;
            // Followed once its pidfd is open: still in the cgroup then, it is the attempt's.
            if let Some(followed) =
                sweep::Followed::new((pid, start), keep).filter(|_| cgroup.holds(pid))
            {
                followed.signal(send);
                self.living.push(followed);
            }
        }
        self.living
            .retain(|followed| followed.ended() == Some(false));
        !cgroup.populated()
    }

    /// Sends the signal (and SIGCONT, so a stopped one can act on it) to those not sent it
    /// yet, or SIGKILL to all once that was sent; whether any may be left.
    fn terminate(&mut self) -> bool {
        if let Some(until) = self.killed {
            return self.kill(until);
        }
        let settled = self.look(self.kill_at, &[]);
        for followed in &self.living {
            if self.signalled.insert(followed.known) {
                followed.signal(&[self.signal, libc::SIGCONT]);
            }
        }
        !settled
    }

    /// SIGKILL to every one, again until none is found (one that forks as it is killed has
    /// children the last look did not see, and a killed one forks no more) or until `until`
    /// (the first time it is asked: later calls keep to it); whether any may still be left.
    fn kill(&mut self, until: Instant) -> bool {
        let until = *self.killed.get_or_insert(until);
        if let Some(cgroup) = self.cgroup {
            return cgroup.kill(until);
        }
        // Those already found first, before a walk for the rest; and one whole walk however
        // late it is: killed, what forked (and loaded the machine) forks no more, so the walk
        // is quick, and it finds what they forked since the last look.
        for followed in &self.living {
            followed.signal(&[libc::SIGKILL]);
        }
        if self.look(None, &[libc::SIGKILL]) {
            return false;
        }
        sweep::rounds_until(
            || !self.look(Some(until), &[libc::SIGKILL]),
            Instant::now,
            until,
        )
    }
}

/// Whether the attempts of a run with `settings` may be ended at a time limit.
fn timed(settings: &Settings) -> bool {
    settings.max_time.is_some()
        || settings
            .timeouts
            .list()
            .iter()
            .any(|limit| !limit.is_zero())
}

/// What `retry` holds below it now, less its helpers (see `sweep::below`).
fn own_below() -> BTreeSet<sweep::Known> {
    // SAFETY: getpid(2) cannot fail.
    sweep::below(unsafe { libc::getpid() }, &plumbing::helpers())
}

/// Starts `copy` on a thread of its own; returns the thread and a pipe that hangs up when it
/// ends. `None` when no pipe or thread can be had.
fn spawn_copier<T: Send + 'static>(
    copy: impl FnOnce() -> T + Send + 'static,
) -> Option<(PipeReader, JoinHandle<T>)> {
    let (done, finished) = io::pipe().ok()?;
    let copier = thread::Builder::new()
        .name("release".into())
        .spawn(move || {
            let copied = copy();
            drop(finished);
            copied
        })
        .ok()?;
    Some((done, copier))
}

/// Where held output goes.
#[derive(Clone, Copy)]
enum Route {
    /// Each stream's bytes to that stream: the final attempt's.
    Own,
    /// All to stderr: an earlier attempt's stdout under `--hold-stdout`.
    Stderr,
}

/// How far a copy has got: the bytes it wrote, and the stream it writes to now.
#[derive(Default)]
struct Progress {
    moved: AtomicU64,
    on_stderr: AtomicBool,
}

impl Progress {
    fn writing(&self) -> Stream {
        if self.on_stderr.load(Ordering::Relaxed) {
            Stream::Stderr
        } else {
            Stream::Stdout
        }
    }
}

/// A copy that could not write to `stream`.
struct CopyFailed {
    stream: Stream,
    error: io::Error,
}

/// Writes held output out, its stretches in the order they came, as `route` says. A stream
/// that fails is written no more, and the copy goes on with the other; a reader gone from
/// stdout ends it, as the run will end.
fn copy_held(held: &Mutex<Held>, route: Route, progress: &Progress) -> Result<(), CopyFailed> {
    let mut held = held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut stdout: Option<OwnStream> = None;
    let mut stderr: Option<OwnStream> = None;
    let mut failed: [Option<io::Error>; 2] = [None, None];
    let written = held.write_out(|stream, bytes| {
        let target = match route {
            Route::Own => stream,
            Route::Stderr => Stream::Stderr,
        };
        let index = usize::from(target == Stream::Stderr);
        if failed[index].is_some() {
            return Ok(());
        }
        progress
            .on_stderr
            .store(target == Stream::Stderr, Ordering::Relaxed);
        let out = if target == Stream::Stderr {
            &mut stderr
        } else {
            &mut stdout
        };
        let written = match out {
            Some(out) => Ok(out),
            None => own_stream(target).map(|opened| out.insert(opened)),
        }
        .and_then(|out| {
            Counted {
                out,
                moved: &progress.moved,
            }
            .write_all(bytes)
        });
        match written {
            // The run ends as a filter's does: quietly, with 141.
            Err(error) if target == Stream::Stdout && error.kind() == io::ErrorKind::BrokenPipe => {
                Err(error)
            }
            Err(error) => {
                failed[index] = Some(error);
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    });
    let [stdout_failed, stderr_failed] = failed;
    match (written, stdout_failed, stderr_failed) {
        (Err(error), _, _) | (Ok(()), Some(error), _) => Err(CopyFailed {
            stream: Stream::Stdout,
            error,
        }),
        (Ok(()), None, Some(error)) => Err(CopyFailed {
            stream: Stream::Stderr,
            error,
        }),
        (Ok(()), None, None) => Ok(()),
    }
}

/// `retry`'s own handle on `stream` (stdout or stderr).
fn own_stream(stream: Stream) -> io::Result<OwnStream> {
    match stream {
        Stream::Stdout => OwnStream::on(io::stdout().as_fd()),
        _ => OwnStream::on(io::stderr().as_fd()),
    }
}

/// A writer that counts what it wrote.
struct Counted<'a, W> {
    out: W,
    moved: &'a AtomicU64,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.out.write(bytes)?;
        self.moved.fetch_add(written as u64, Ordering::Relaxed);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The signal that stopped the child, when it was stopped for using the terminal from a
/// background process group (SIGTTIN, SIGTTOU). Collects the stop report, never an exit.
fn terminal_stop(child: &Child) -> Option<i32> {
    // SAFETY: an all-zero siginfo_t is a valid value; waitid(2) with WSTOPPED | WNOHANG on our
    // own child returns at once and reaps nothing.
    let info = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let found = libc::waitid(
            libc::P_PID,
            child.id(),
            &mut info,
            libc::WSTOPPED | libc::WNOHANG,
        );
        (found == 0 && info.si_pid() != 0).then_some(info)?
    };
    // SAFETY: si_status is set for a CLD_STOPPED report.
    let signal = unsafe { info.si_status() };
    (info.si_code == libc::CLD_STOPPED && [libc::SIGTTIN, libc::SIGTTOU].contains(&signal))
        .then_some(signal)
}

fn end_of(status: ExitStatus) -> AttemptEnd {
    match (status.code(), status.signal()) {
        (Some(code), _) => AttemptEnd::Exited(code as u8),
        (None, Some(signal)) => AttemptEnd::Signaled(signal),
        (None, None) => AttemptEnd::Exited(1),
    }
}
