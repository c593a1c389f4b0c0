//! The only code that spawns, waits for and signals attempts.
//!
//! Each attempt runs in a process group of its own (unless `--foreground`), so a timeout or a
//! shutdown reaches the whole tree. Termination follows `timeout(1)`: the terminating signal,
//! SIGCONT so a stopped process can act on it, the `--kill-after` grace, then SIGKILL. Once the
//! attempt itself has died, whatever is left of its group gets the rest of the grace and then
//! SIGKILL too, so no grandchild outlives a terminated attempt.
//!
//! This file is the wiring: the `Runner` the driver runs attempts and hooks through, and the
//! end of an attempt (its output drained, what it said handed back). Below it, one concern a
//! file: `spawn` starts the attempts and hooks (and sets their `RETRY_*` environment),
//! `supervise` waits for one to end under its limits, `stragglers` finds and ends what it left
//! outside its group, `release` writes held output out, `hooks` runs a hook and reads the
//! values it hands on, `warnings` says each warning once, and `target` signals a child.

mod hooks;
mod release;
mod spawn;
mod stragglers;
mod supervise;
mod target;
mod warnings;

use std::ffi::OsStr;
use std::io;
use std::time::{Duration, Instant, SystemTime};

use self::hooks::HookValueStore;
use self::release::HeldOutput;
use self::spawn::{Spawned, Spawner};
use self::stragglers::{Supervisee, Sweeper};
use self::supervise::{Supervised, Supervisor};
use self::warnings::Warnings;
use crate::driver::{
    AskedWait, AttemptResult, AttemptSpec, Execute, Halt, HookSpec, Interrupted,
    InterruptedAttempt, OutputOf, Settle,
};
use crate::http::HttpFindings;
use crate::input::Feeder;
use crate::log::{Event, Logger};
use crate::outcome::AttemptEnd;
use crate::plumbing::{self, Drained, Leftover, ReaderWait, Watch};
use crate::predicate::Matches;
use crate::reaper::reap_orphans;
use crate::settings::Settings;
use crate::signals::SignalQueue;
use crate::start;
use crate::stdio::Stream;

pub(crate) struct Runner<'a> {
    events: &'a SignalQueue,
    /// How each attempt starts: its command, its stdin, which of its streams are watched.
    spawner: Spawner<'a>,
    /// How the attempts and hooks are waited for and ended.
    supervisor: Supervisor<'a>,
    /// How what they leave behind is told apart, attempt after attempt.
    sweeper: Sweeper,
    /// The held output, until it is released.
    output: HeldOutput,
    warnings: Warnings,
    /// Copies of earlier attempts' output still running (see `plumbing::Leftover`).
    leftovers: Vec<Leftover>,
    hooks: HookValueStore,
}

impl<'a> Runner<'a> {
    /// A runner for the attempts and hooks of a run with `settings`, whose shutdown signals
    /// arrive through `events`.
    pub(crate) fn new(settings: &'a Settings, events: &'a SignalQueue) -> Runner<'a> {
        Runner {
            events,
            spawner: Spawner::new(settings),
            supervisor: Supervisor {
                events,
                foreground: settings.foreground,
                kill_signal: settings.kill_signal,
                kill_after: settings.kill_after,
            },
            sweeper: Sweeper::new(settings),
            output: HeldOutput::new(settings),
            warnings: Warnings::default(),
            leftovers: Vec::new(),
            hooks: HookValueStore::default(),
        }
    }

    /// Once the run has ended: gives the copies of output that outlived their attempts to a
    /// process of their own (see `plumbing::hand_over`). `Err` holds a shutdown signal
    /// received meanwhile.
    pub(crate) fn hand_over(self) -> Result<(), i32> {
        plumbing::hand_over(self.leftovers, self.events)
    }
}

impl Execute for Runner<'_> {
    fn run(
        &mut self,
        spec: &AttemptSpec,
        logger: &mut Logger,
    ) -> Result<AttemptResult, InterruptedAttempt> {
        self.sweeper.before_attempt(spec.number, logger);
        let started = Instant::now();
        // The copies handed over since the last attempt ended hold nothing the attempt needs.
        self.leftovers.retain(|leftover| !leftover.finished());
        let spawned = self.spawner.spawn_attempt(
            spec,
            &self.hooks.values,
            self.sweeper.cgroup(),
            &mut self.output.held,
        );
        let Spawned {
            mut child,
            feeder,
            watches,
        } = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                self.sweeper.finished();
                return Ok(not_started(
                    &error,
                    self.spawner.program(),
                    started.elapsed(),
                ));
            }
        };
        self.sweeper.started(&child);
        let (output, input, warnings) = (&self.output, &self.spawner.input, &mut self.warnings);
        let supervised = self.supervisor.supervise_attempt(
            &mut child,
            spec,
            started,
            self.sweeper.lookout(Supervisee::Attempt(spec.number)),
            logger,
            &mut |logger| warnings.say_spill_failures(logger, spill_failures(output, input)),
        );
        self.sweeper.finished();
        let reader_wait = match supervised.interrupted {
            Some(_) => ReaderWait::WhileFlowing,
            None => ReaderWait::Whole,
        };
        let drained = self.drain(watches, feeder, reader_wait, logger);
        let drained = match (supervised.interrupted, drained) {
            (None, Ok(drained)) => drained,
            (Some(signal), _) | (None, Err(signal)) => {
                return Err(self.cut_short(signal, spec, &supervised, logger));
            }
        };
        // A supervisor runs for ever: the copies that earlier attempts left go to processes of
        // their own, and those that have ended are forgotten, so that `retry` holds the copies
        // of two attempts at most.
        for leftover in &mut self.leftovers {
            leftover.hand_over();
        }
        self.leftovers.retain(|leftover| !leftover.finished());
        let Drained {
            matches,
            http_findings,
            leftovers,
            ..
        } = drained;
        self.leftovers.extend(leftovers);
        Ok(result_of(&supervised, matches, http_findings))
    }

    fn release_output(&mut self, output_of: OutputOf, logger: &mut Logger) -> Result<(), Halt> {
        self.release_held(output_of, ReaderWait::Whole, logger)
    }

    fn release_final_output_interrupted(&mut self, logger: &mut Logger) {
        // An interrupted run has no answer.
        let _ = self.release_held(OutputOf::GaveUp, ReaderWait::WhileFlowing, logger);
    }

    fn settle_failed_output(&mut self, settle: Settle, logger: &mut Logger) -> Result<(), Halt> {
        self.output
            .settle(settle, self.events, &mut self.warnings, logger)
    }

    fn end_by(&mut self, deadline: Instant) {
        if let Some(at) = deadline.checked_add(self.supervisor.kill_after) {
            self.events.wait_on_readers_until(at);
        }
    }

    fn stdin_shared(&self) -> bool {
        self.spawner.input.shared_stream()
    }

    fn run_hook(
        &mut self,
        hook: &HookSpec<'_>,
        logger: &mut Logger,
    ) -> Result<AttemptEnd, Interrupted> {
        self.hooks.run(
            hook,
            &self.supervisor,
            self.sweeper.lookout(Supervisee::Hook),
            &mut self.warnings,
            logger,
        )
    }
}

impl Runner<'_> {
    /// Passes the held output on as `output_of` says (see `OutputOf`), waiting for the reader
    /// as `reader_wait` says.
    fn release_held(
        &mut self,
        output_of: OutputOf,
        reader_wait: ReaderWait,
        logger: &mut Logger,
    ) -> Result<(), Halt> {
        self.output.release_held(
            output_of,
            reader_wait,
            self.events,
            &mut self.warnings,
            logger,
        )
    }

    /// A signal to `retry` cut the attempt short: its output, and what was kept of earlier
    /// ones, goes out while the reader takes it, and the run ends.
    fn cut_short(
        &mut self,
        signal: i32,
        spec: &AttemptSpec,
        supervised: &Supervised,
        logger: &mut Logger,
    ) -> InterruptedAttempt {
        let output_of = self.output.of_interrupted(spec.number, supervised.end());
        // What was kept of earlier attempts comes first, in attempt order.
        let _ = self.settle_failed_output(Settle::Interrupted, logger);
        let _ = self.release_held(output_of, ReaderWait::WhileFlowing, logger);
        InterruptedAttempt {
            signal,
            end: supervised.end(),
            ran: supervised.ran,
        }
    }

    /// Waits for the ended attempt's output to go by, and says what could not be read, held
    /// or written; a shutdown signal meanwhile is returned instead.
    fn drain(
        &mut self,
        watches: Vec<Watch>,
        feeder: Option<Feeder>,
        reader_wait: ReaderWait,
        logger: &mut Logger,
    ) -> Result<Drained, i32> {
        // The run's time limit, with the grace, bounds the wait for the attempt's output: a
        // reader that has stalled must not hold the run past it. An attempt's own `--timeout`
        // does not: it limits how long the command runs, and a reader that takes its time
        // over output the command has finished writing must not lose any of it, nor have the
        // attempt judged before it has all gone by.
        let until = self.events.readers_until().map(|at| {
            Instant::now()
                .checked_add(self.supervisor.kill_after)
                .map_or(at, |grace| at.max(grace))
        });
        let drained = plumbing::finish(watches, self.events, reader_wait, until);
        // After the drain, whose wait lets the ends of children go by.
        reap_orphans(None);
        if let Some(feeder) = feeder {
            feeder.stop();
        }
        self.say_stream_failures(logger);
        if let Ok(drained) = &drained {
            for (stream, error) in &drained.write_errors {
                self.warnings.say_once(
                    logger,
                    Event::WriteFailed {
                        stream: *stream,
                        error,
                    },
                );
            }
        }
        // A stall said while the attempt ran is not said again.
        for stream in plumbing::new_stalls() {
            logger.emit(&Event::HoldFull { stream });
        }
        drained
    }

    /// Says that stdin could not be read for the replay, or that held or replayed data
    /// outgrew memory and stays there for want of a temporary file.
    fn say_stream_failures(&mut self, logger: &mut Logger) {
        if let Some(error) = self.spawner.input.read_error() {
            self.warnings
                .say_once(logger, Event::ReadFailed { error: &error });
        }
        let failures = spill_failures(&self.output, &self.spawner.input);
        self.warnings.say_spill_failures(logger, failures);
    }
}

/// The spools that could not spill, and why: held output (said as stdout's) and
/// replayed stdin.
fn spill_failures(output: &HeldOutput, input: &crate::input::Input) -> Vec<(Stream, String)> {
    [
        (Stream::Stdout, output.spill_error()),
        (Stream::Stdin, input.spill_error()),
    ]
    .into_iter()
    .filter_map(|(stream, error)| Some((stream, error?)))
    .collect()
}

/// What the driver hears of an attempt that ran to its end: how it ended, what its output
/// matched, and what it said in HTTP terms.
fn result_of(
    supervised: &Supervised,
    matches: Matches,
    http_findings: HttpFindings,
) -> AttemptResult {
    let now = SystemTime::now();
    AttemptResult {
        end: supervised.end(),
        ran: supervised.ran,
        matches: Matches {
            status: http_findings.status.map(|(_, status)| status),
            ..matches
        },
        start_error: None,
        hint: http_findings.hint.map(|(_, hint)| AskedWait {
            wait: hint.value.wait(now),
            source: hint.source,
        }),
        ignored_hint: http_findings.ignored.map(|(_, value)| value),
    }
}

/// What the driver hears of an attempt whose `program` could not be started, for `error`,
/// after trying for `ran`.
fn not_started(error: &io::Error, program: &OsStr, ran: Duration) -> AttemptResult {
    let (end, why) = start::failure(error, program);
    AttemptResult {
        end,
        ran,
        matches: Matches::default(),
        start_error: Some(why),
        hint: None,
        ignored_hint: None,
    }
}
