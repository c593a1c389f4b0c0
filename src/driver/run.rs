//! The run's state in one type (`Run`): the loop's collaborators, where the run stands against
//! its limits, the custody of held output, the attempts for `--report`; and the ends every
//! stage of the loop may come to: giving up, a `--restart` run's success, hooks, and what the
//! fleet limits say.
//!
//! The loop itself is `attempts.rs`, and what follows an attempt `between.rs`: both add to
//! `Run`, and this file names neither.

use std::time::{Duration, Instant};

use crate::backoff::Delays;
use crate::cli::FailedOutput;
use crate::ending::Ending;
use crate::fleet::{Gate, GoOn};
use crate::http::StatusClass;
use crate::log::{Count, Event, GiveUp, HintUse, Logger, Visibility, Why};
use crate::outcome::AttemptEnd;
use crate::predicate::CodeLimits;
use crate::report::History;
use crate::settings::{HookKind, Settings};

use super::held::{Custody, HeldBack};
use super::limits::{MaxTime, Tally};
use super::traits::{AttemptResult, Execute, Halt, HookSpec, Sleep};

/// One run of the loop: what it works with, and where it stands.
pub(super) struct Run<'a, E, S, G: ?Sized> {
    pub(super) settings: &'a Settings,
    /// When the run started, on the clock the run was given.
    pub(super) start: Instant,
    pub(super) executor: &'a mut E,
    pub(super) clock: &'a mut S,
    pub(super) delays: &'a mut Delays,
    pub(super) gate: &'a mut G,
    pub(super) logger: &'a mut Logger,
    /// The attempts, as the attempt limit counts them.
    pub(super) tally: Tally,
    /// The `--max-time` deadline, and its last chance.
    pub(super) max_time: MaxTime,
    /// Whose held output waits, and what becomes of it.
    pub(super) held: HeldBack,
    /// The attempts, for `--report`.
    pub(super) history: History,
    /// The wait after the latest attempt, and whether a hint set it: the report tells it once
    /// the next attempt starts after it.
    pub(super) wait_after_latest: Option<(Duration, bool)>,
    /// A command that cannot start is said once, however many attempts find it so.
    pub(super) said_cannot_start: bool,
    /// That later attempts see only what earlier ones left of stdin is said once.
    pub(super) warned_stdin: bool,
}

impl<'a, E: Execute, S: Sleep, G: Gate + ?Sized> Run<'a, E, S, G> {
    /// A run that has not started, its time counted from now.
    pub(super) fn new(
        settings: &'a Settings,
        executor: &'a mut E,
        clock: &'a mut S,
        delays: &'a mut Delays,
        gate: &'a mut G,
        logger: &'a mut Logger,
    ) -> Self {
        let start = clock.now();
        let holding = settings.failed_output != FailedOutput::Pass || settings.hold_stdout;
        Run {
            settings,
            start,
            executor,
            clock,
            delays,
            gate,
            logger,
            tally: Tally::new(
                settings.max_attempts,
                CodeLimits::new(settings.code_limits.clone()),
            ),
            max_time: MaxTime::new(start, settings.max_time),
            held: HeldBack::new(holding),
            history: History::default(),
            wait_after_latest: None,
            said_cannot_start: false,
            warned_stdin: false,
        }
    }

    /// What a run that has ended leaves: the attempts it started, and their history.
    pub(super) fn into_record(self) -> (u64, History) {
        (self.tally.attempts(), self.history)
    }

    /// The custody of held output, at work on this run's executor and logger.
    pub(super) fn custody(&mut self) -> Custody<'_, E> {
        Custody {
            held: &mut self.held,
            executor: self.executor,
            logger: self.logger,
        }
    }

    /// The time since the run started.
    pub(super) fn total(&self) -> Duration {
        self.clock.now() - self.start
    }

    pub(super) fn breaker_name(&self) -> &'a str {
        let settings: &'a Settings = self.settings;
        settings.fleet.breaker.as_ref().map_or("", |(name, _)| name)
    }

    fn budget_name(&self) -> &'a str {
        let settings: &'a Settings = self.settings;
        settings.fleet.budget.as_ref().map_or("", |(name, _)| name)
    }

    /// Asks the fleet limits whether the run, which would go on, may: the reason it may not, if
    /// so. What they say is said after the attempt's own line.
    pub(super) fn may_go_on(&mut self) -> Option<GiveUp<'a>> {
        match self.gate.go_on() {
            GoOn::Yes => None,
            GoOn::BreakerOpen { next_probe } => Some(GiveUp::Breaker {
                name: self.breaker_name(),
                next_probe,
            }),
            GoOn::BudgetSpent => Some(GiveUp::Budget(self.budget_name())),
        }
    }

    /// Says what the fleet limits have to say.
    pub(super) fn say_notices(&mut self) {
        for notice in self.gate.take_notices() {
            self.logger.emit(&Event::Fleet(&notice));
        }
    }

    /// Ends a run that gives up for `reason` after `attempts` attempts: the give-up event, then
    /// `--on-failure`, with the last attempt's status (or the run's own when none ran).
    pub(super) fn give_up(
        &mut self,
        reason: GiveUp<'_>,
        attempts: u64,
        visibility: Visibility,
    ) -> Result<Ending, Halt> {
        let ending = reason.ending();
        self.custody().gave_up()?;
        self.say_notices();
        let last = self.history.latest().map(|latest| latest.end);
        let status = self.settings.exit_status(ending, last, None);
        let event = Event::GiveUp {
            reason,
            attempts,
            total: self.total(),
            status,
        };
        self.logger.tell(&event, visibility);
        let last_status = last.map_or(status, AttemptEnd::status);
        self.hook(HookKind::Failure, attempts, last_status, None)?;
        Ok(ending)
    }

    /// Ends a `--restart` run that waited after a success (`end`, after running `ran`) and may
    /// not start the command again: it succeeded, and says why it stops.
    pub(super) fn end_restarts(
        &mut self,
        attempts: u64,
        (end, ran): (AttemptEnd, Duration),
        reason: GiveUp<'_>,
    ) -> Result<Ending, Halt> {
        self.logger.emit(&Event::Success {
            count: Count {
                attempt: attempts,
                max_attempts: self.settings.max_attempts,
                limit_from: 0,
            },
            end,
            ran,
            total: self.total(),
            not_restarting: Some(reason),
        });
        self.say_notices();
        Ok(Ending::Success)
    }

    /// Runs the hook of `kind`, if one is set, and logs its failure.
    pub(super) fn hook(
        &mut self,
        kind: HookKind,
        attempt: u64,
        last_status: u8,
        next_delay: Option<Duration>,
    ) -> Result<(), Halt> {
        let settings = self.settings;
        let Some(command) = settings.hooks.command(kind) else {
            return Ok(());
        };
        let spec = HookSpec {
            kind,
            command,
            attempt,
            max_attempts: settings.max_attempts,
            last_status,
            next_delay,
            deadline: self.max_time.deadline(),
        };
        let end = self.executor.run_hook(&spec, self.logger)?;
        if end != AttemptEnd::Exited(0) {
            self.logger.emit(&Event::HookFailed { kind, end });
        }
        Ok(())
    }

    /// The event of a failed attempt, with the wait that follows it, if one does, the hint
    /// that wait heeded, and whether it is the last chance before `--max-time`.
    pub(super) fn failure<'r>(
        &self,
        count: Count,
        result: &'r AttemptResult,
        next: Option<Duration>,
        hint: Option<HintUse>,
        reset: bool,
        last_chance: bool,
    ) -> Event<'r> {
        let judge = &self.settings.judge;
        let matches = &result.matches;
        let status = matches.status.filter(|_| judge.http);
        let why = if let Some(error) = &result.start_error {
            Some(Why::CannotStart(error))
        } else if matches.stop_if {
            Some(Why::StopIf)
        } else if let Some(status) = status.filter(|&s| StatusClass::of(s) != StatusClass::Neutral)
        {
            Some(Why::HttpStatus(status))
        } else if matches.retry_if {
            Some(Why::RetryIf)
        } else if judge.has_until && !matches.until {
            Some(Why::NoUntil)
        } else {
            None
        };
        Event::AttemptFailed {
            count,
            end: result.end,
            why,
            ran: result.ran,
            next,
            hint,
            reset,
            last_chance,
        }
    }
}
