//! `retry`: run a command until it succeeds, with backoff and jitter between attempts.
//!
//! `run` wires the pieces: argv -> `Cli` -> `Settings` -> driver (with the real runner and
//! clock) -> `Ending` -> exit status. Each module's own doc says what it owns.

pub mod backoff;
mod cgroup;
pub mod cli;
pub mod clock;
pub mod config;
mod config_file;
mod deadline;
pub mod debian;
mod dirs;
pub mod draws;
pub mod driver;
pub mod dryrun;
mod ending;
mod files;
mod fleet;
#[doc(hidden)]
pub mod fuzzing;
mod hook_values;
mod http;
mod input;
pub mod interpreter;
mod lines;
mod located;
mod log;
mod metrics;
mod outcome;
mod ownership;
pub mod parse;
mod plumbing;
mod poll;
mod predicate;
mod process;
mod reaper;
mod report;
mod runner;
pub mod settings;
pub mod signals;
mod spool;
mod start;
mod stdio;
mod sweep;
#[cfg(test)]
mod test_support;
mod text;

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::rc::Rc;
use std::time::{Instant, SystemTime};

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches};

use crate::backoff::Delays;
use crate::cli::Cli;
use crate::clock::RealClock;
use crate::draws::Draws;
use crate::driver::FinishedRun;
use crate::ending::Ending;
use crate::fleet::file::FileStore;
use crate::fleet::{Fleet, Gate, NoLimits, StateStore};
use crate::log::{Logger, OwnFile, Terminal};
use crate::outcome::{AttemptEnd, MISUSE};
use crate::plumbing::OwnStream;
use crate::report::Summary;
use crate::runner::Runner;
use crate::settings::StateAction;
use crate::settings::{MetricsTarget, Settings};
use crate::signals::SignalQueue;

/// How `retry` ends: with a status, or by re-raising a signal it received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Status(u8),
    Signal(i32),
}

impl Exit {
    pub fn exit(self) -> ! {
        match self {
            Exit::Status(status) => std::process::exit(i32::from(status)),
            Exit::Signal(signal) => signals::exit_by(signal),
        }
    }
}

/// `retry`'s whole life: the command line read, then a dry run, a state action or the run,
/// and the files written at its end.
pub fn run(args: impl IntoIterator<Item = OsString>) -> Exit {
    process::prepare();
    #[cfg(debug_assertions)]
    process::inject_panic();
    let args: Vec<OsString> = args.into_iter().collect();
    let settings = match read_command_line(&args) {
        Ok(settings) => settings,
        Err(exit) => return exit,
    };
    if settings.dry_run {
        let plan = dryrun::plan(&settings) + &start::note(&settings);
        return print_stdout(&text::without_secrets(&plan));
    }
    // Before `retry` opens anything it keeps (the state, its signal pipe).
    let inherited = files::InheritedFds::hold(
        settings
            .report
            .iter()
            .map(|(path, _)| path.as_path())
            .chain(settings.metrics.iter().map(|target| target.path.as_path())),
    );
    let store = match fleet::open(&settings.fleet, settings.state.as_ref()) {
        Ok(store) => store,
        Err(line) => return misuse(&line),
    };
    if let Some(action) = settings.state_action {
        return act_on_state(&settings, store, action);
    }
    let events = match SignalQueue::listen() {
        Ok(events) => Rc::new(events),
        Err(error) => return misuse(&format!("{error:#}")),
    };
    // Never dropped: taking the handlers back off costs as much as putting them on, and the
    // process ends with the run (its last signal is raised with the default action anyway).
    std::mem::forget(Rc::clone(&events));
    // A report through a pipe whose reader does not read waits for room together with the
    // signals, as `retry`'s own lines do: it never keeps a signal or the deadline from ending
    // `retry`.
    let inherited = inherited.waiting_for_room({
        let events = Rc::clone(&events);
        Rc::new(move |fd| events.wait_written(fd))
    });
    let seed = settings.seed.unwrap_or_else(process::seed);
    let mut logger = logger(&settings, &events);
    let mut machinery = Machinery::new(&settings, seed, store, &events);
    let started = (SystemTime::now(), Instant::now());
    let finished = machinery.drive(&settings, seed, &mut logger);
    let exit = match finished.ending {
        Ending::Signal(signal) => Exit::Signal(signal),
        ending => match machinery.runner.hand_over() {
            Ok(()) => Exit::Status(settings.exit_status(ending, finished.last, settings.fail_exit)),
            Err(signal) => Exit::Signal(signal),
        },
    };
    let ended = Ended {
        finished,
        exit,
        seed,
        started,
    };
    write_files(&settings, &ended, &inherited, &mut logger);
    // A signal that came while the files were written ends `retry` by it, as at any other time.
    match events.shutdown_arrived() {
        Some(signal) => Exit::Signal(signal),
        None => ended.exit,
    }
}

/// The command line read into settings: clap's parse, the config file, then what they
/// resolve to. Help, the version, and misuse (said in one line) come back as the exit.
fn read_command_line(args: &[OsString]) -> Result<Settings, Exit> {
    // Before anything can be refused: a password given in any shape is never echoed.
    for word in args
        .iter()
        .chain(std::env::var_os(crate::fleet::STATE_VARIABLE).as_ref())
    {
        text::note_secrets(&word.to_string_lossy());
    }
    // One parse of the command line serves the settings and, with a config file, which keys
    // the command line sets.
    let mut command = Cli::command();
    let parsed = command
        .try_get_matches_from_mut(args)
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    // Never freed: its few hundred allocations cost a tenth of a short run's start-up to free,
    // and the process ends with the run.
    std::mem::forget(command);
    let (cli, matches) = parsed.map_err(|error| clap_exit(&error, args))?;
    let cli = config_file::with_config_file(cli, args, &matches)
        .map_err(|error| misuse(&format!("{error:#}")))?;
    Settings::resolve(cli).map_err(|error| misuse(&format!("{error:#}")))
}

/// The logger of the run: stderr, written as the settings say, waiting for room together with
/// the signals.
fn logger(settings: &Settings, events: &Rc<SignalQueue>) -> Logger {
    Logger::new(
        settings.verbosity,
        settings.log_format,
        Terminal::detect(),
        Box::new(signals::Stderr::new(Rc::clone(events))),
    )
    .labelled(settings.label.clone())
    .exiting_with_last_status(settings.judge.criteria.is_some())
}

/// What runs the attempts for real: the fleet limits, the clock, the runner and the schedule.
/// Held until `run` returns, after the files are written, but for the runner of a run that no
/// signal ended, which `hand_over` takes: dropped, a runner removes the attempts' cgroups that
/// are empty and closes what it still holds.
struct Machinery<'a> {
    gate: Box<dyn Gate>,
    clock: RealClock<'a>,
    runner: Runner<'a>,
    delays: Delays,
}

impl<'a> Machinery<'a> {
    fn new(
        settings: &'a Settings,
        seed: u64,
        store: Option<StateStore>,
        events: &'a SignalQueue,
    ) -> Machinery<'a> {
        let delays = Delays::new(settings.schedule.clone(), Draws::seeded(seed));
        reaper::adopt_orphans();
        let runner = Runner::new(settings, events);
        let clock = RealClock::new(events);
        let gate: Box<dyn Gate> = match store {
            None => Box::new(NoLimits),
            Some(store) => Box::new(Fleet::new(
                settings.fleet.clone(),
                store,
                process::entropy(),
            )),
        };
        Machinery {
            gate,
            clock,
            runner,
            delays,
        }
    }

    /// The run itself: the attempts driven to their end.
    fn drive(&mut self, settings: &Settings, seed: u64, logger: &mut Logger) -> FinishedRun {
        driver::drive(
            settings,
            seed,
            &mut self.runner,
            &mut self.clock,
            &mut self.delays,
            self.gate.as_mut(),
            logger,
        )
    }
}

/// A run at its end, as the files written then tell it.
struct Ended {
    finished: FinishedRun,
    exit: Exit,
    seed: u64,
    /// When the attempts started: the wall clock's time, and the monotonic instant.
    started: (SystemTime, Instant),
}

/// The files written when the run has ended: `--metrics-file` and `--report`. One that
/// cannot be written is said, and the status stands.
fn write_files(
    settings: &Settings,
    ended: &Ended,
    inherited: &files::InheritedFds,
    logger: &mut Logger,
) {
    // A file size limit (`ulimit -f`) that these files pass is a write that fails, said as
    // such, not a SIGXFSZ that ends `retry` with the run's status lost. Every attempt and hook
    // has ended: none inherits this.
    signals::ignore(libc::SIGXFSZ);
    if let Some(target) = &settings.metrics {
        write_metrics(target, ended, inherited, logger);
    }
    if let Some((path, format)) = &settings.report {
        let summary = Summary {
            attempts: ended.finished.attempts,
            exit_status: exit_status(ended.exit),
            last_exit: ended.finished.last.map(AttemptEnd::status),
            ending: ended.finished.ending,
            elapsed: ended.started.1.elapsed(),
            seed: ended.seed,
            history: &ended.finished.history,
        };
        if let Err(error) = report::write(path, *format, &summary, inherited) {
            unwritten(OwnFile::Report, path, &error, logger);
        }
    }
}

/// Says that `file` at `path` could not be written; the run's status stands. A reader gone
/// from the pipe a descriptor named (`--report /dev/stdout | head -c 0`) is not said, as no
/// write of `retry`'s to a pipe whose reader has gone is.
fn unwritten(file: OwnFile, path: &std::path::Path, error: &io::Error, logger: &mut Logger) {
    if error.kind() == io::ErrorKind::BrokenPipe {
        return;
    }
    logger.emit(&log::Event::Unwritten {
        file,
        path,
        error: &text::plain_error(error),
    });
}

/// `retry`'s exit status as a number, also when it ends by re-raising a signal.
fn exit_status(exit: Exit) -> u8 {
    match exit {
        Exit::Status(status) => status,
        Exit::Signal(signal) => Ending::Signal(signal).exit_status(None, None),
    }
}

/// Writes the run's figures for `--metrics-file`: for every run that made an attempt or that the
/// breaker stopped, also one ended by a signal. A file that cannot be written is said, and the
/// status stands.
fn write_metrics(
    target: &MetricsTarget,
    ended: &Ended,
    inherited: &files::InheritedFds,
    logger: &mut Logger,
) {
    let finished = &ended.finished;
    if finished.attempts == 0 && finished.ending != Ending::Breaker {
        return;
    }
    let (start, started) = ended.started;
    let figures = metrics::Figures {
        start,
        end: SystemTime::now(),
        duration: started.elapsed(),
        succeeded: finished.ending == Ending::Success,
        attempts: finished.attempts,
        exit_status: exit_status(ended.exit),
    };
    let nonce = process::entropy();
    if let Err(error) = metrics::write(&target.path, &target.job, &figures, nonce, inherited) {
        unwritten(OwnFile::Metrics, &target.path, &error, logger);
    }
}

/// For the contention benchmark (`examples/state_contention.rs`) only: runs `count`
/// transactions on the budget `name` in the state directory `dir`, each as a run's first attempt
/// does it (open the store, lock, load, count one, store), and returns the first attempts the
/// record then holds. Each transaction opens the store afresh, as each run does.
#[doc(hidden)]
pub fn bench_state_transactions(
    dir: &std::path::Path,
    name: &str,
    count: u64,
) -> Result<u64, String> {
    use crate::fleet::BudgetPolicy;
    let policy = BudgetPolicy {
        ratio: 0.1,
        floor: 10,
        window: std::time::Duration::from_secs(3600),
    };
    let mut firsts = 0;
    for _ in 0..count {
        let mut store = FileStore::open(dir, &[name]).map_err(|error| format!("{error:?}"))?;
        (firsts, _) = store
            .transact(name, &mut |record, now| {
                record.budget.first_attempt(now, &policy);
                record.budget.view(now, &policy).firsts
            })
            .map_err(|error| error.0)?;
    }
    Ok(firsts)
}

/// `--show-state` or `--reset-state`: prints the state (or that it was reset) on stdout and
/// exits 0; a state that cannot be read exits 1 with one line.
fn act_on_state(settings: &Settings, store: Option<StateStore>, action: StateAction) -> Exit {
    let Some(mut store) = store else {
        unreachable!("a state action needs a name")
    };
    let result = match action {
        StateAction::Show => fleet::show(&settings.fleet, &mut store).map(|(budget, breaker)| {
            log::fleet_state(settings.log_format, budget.as_ref(), breaker.as_ref())
        }),
        StateAction::Reset => fleet::reset(&settings.fleet, &mut store)
            .map(|()| log::fleet_reset(settings.log_format, &settings.fleet)),
    };
    match result {
        Ok(text) => print_stdout(&text::without_secrets(&text)),
        Err(fleet::StoreError(reason)) => {
            let _ = writeln!(
                io::stderr(),
                "retry: state unavailable ({})",
                text::one_line(&text::without_secrets(&reason))
            );
            Exit::Status(1)
        }
    }
}

/// Help and version go to stdout with status 0; every other clap error is misuse, said in one
/// line.
fn clap_exit(error: &clap::Error, args: &[OsString]) -> Exit {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            print_stdout(&error.render().to_string())
        }
        ErrorKind::InvalidUtf8 => {
            let flag = cli::option_with_non_utf8_value(args).unwrap_or_else(|| "an option".into());
            let hint = if flag.contains("stdout") || flag.contains("stderr") {
                "; a pattern matches any byte written as (?-u:\\xFF)"
            } else {
                ""
            };
            misuse(&format!(
                "invalid value for '{flag}': it is not valid UTF-8{hint}"
            ))
        }
        _ => misuse(&config::clap_reason(error)),
    }
}

fn misuse(message: &str) -> Exit {
    let message = text::redact_urls(message);
    let message = text::without_secrets(&message);
    let _ = writeln!(io::stderr(), "retry: {}", text::one_line(&message));
    Exit::Status(MISUSE)
}

/// Writes to stdout; a reader that has gone away ends `retry` quietly, like other filters.
fn print_stdout(text: &str) -> Exit {
    match OwnStream::on(io::stdout().as_fd())
        .and_then(|mut stdout| stdout.write_all(text.as_bytes()))
    {
        Ok(()) => Exit::Status(0),
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
            Exit::Status(Ending::BrokenPipe.exit_status(None, None))
        }
        Err(error) => misuse(&format!(
            "cannot write to stdout: {}",
            text::plain_error(&error)
        )),
    }
}
