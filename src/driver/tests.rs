//! The loop, end to end over a fake clock and a fake executor: every wait, every attempt's
//! spec, every line told, to the millisecond.

use super::*;
use crate::cli::Cli;
use crate::cli::LogFormat;
use crate::draws::Draws;
use crate::fleet::NoLimits;
use crate::fleet::{Admit, GoOn};
use crate::http::HintSource;
use crate::log::Terminal;
use crate::outcome::Limit;
use crate::predicate::Matches;
use crate::test_support::{SharedBuffer, ms};
use clap::Parser;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A clock that only moves when the fakes move it.
#[derive(Clone)]
struct FakeTime {
    origin: Instant,
    elapsed: Rc<Cell<Duration>>,
}

impl FakeTime {
    fn new() -> Self {
        FakeTime {
            origin: Instant::now(),
            elapsed: Rc::new(Cell::new(Duration::ZERO)),
        }
    }
    /// Time stops a thousand years on, so that waits past what `Instant` can count (which
    /// the driver must handle) still leave the fake clock readable.
    fn advance(&self, d: Duration) {
        const FAR: Duration = Duration::from_secs(1000 * 365 * 86_400);
        self.elapsed
            .set(self.elapsed.get().saturating_add(d).min(FAR));
    }
    fn now(&self) -> Instant {
        self.origin + self.elapsed.get()
    }
}

struct FakeSleep {
    time: FakeTime,
    slept: Vec<Duration>,
    interrupt_at: Option<usize>,
    /// A signal comes once this many sleeps have ended, and waits to be taken.
    signal_after: Option<usize>,
    /// How much later than asked each sleep ends, as a loaded machine's may.
    oversleep: Duration,
}

impl Sleep for FakeSleep {
    fn now(&self) -> Instant {
        self.time.now()
    }
    fn sleep(&mut self, d: Duration) -> Result<(), Interrupted> {
        if self.interrupt_at == Some(self.slept.len()) {
            return Err(Interrupted(libc::SIGTERM));
        }
        self.slept.push(d);
        self.time.advance(d + self.oversleep);
        Ok(())
    }

    fn interrupted(&mut self) -> Result<(), Interrupted> {
        match self.signal_after {
            Some(after) if self.slept.len() >= after => Err(Interrupted(libc::SIGTERM)),
            _ => Ok(()),
        }
    }
}

/// Plays back scripted attempt ends, each taking `ran`; the last one repeats.
struct Script {
    time: FakeTime,
    ends: Vec<(AttemptEnd, Duration)>,
    specs: Vec<AttemptSpec>,
    /// How each attempt ended, and how long it ran.
    ran: Vec<(AttemptEnd, Duration)>,
    hooks: Vec<String>,
    released: Vec<bool>,
    /// What `settle_failed_output` was told, in order.
    settled: Vec<Settle>,
    stdin_shared: bool,
    /// What `end_by` was told, as a time left from when it was told.
    ends_in: Option<Duration>,
    /// What the logger had written, and how much of it when `end_by` was told.
    said: SharedBuffer,
    said_before_end_by: Option<usize>,
    /// The hint each attempt gives, by attempt (none past the end).
    hints: Vec<Option<AskedWait>>,
}

impl Execute for Script {
    fn run(
        &mut self,
        spec: &AttemptSpec,
        _: &mut Logger,
    ) -> Result<AttemptResult, InterruptedAttempt> {
        self.specs.push(*spec);
        let index = (self.specs.len() - 1).min(self.ends.len() - 1);
        let (mut end, mut ran) = self.ends[index];
        // Honour the deadline the way the real runner does.
        if let Some((deadline, limit)) = spec.deadline {
            let left = deadline.saturating_duration_since(self.time.now());
            if ran >= left {
                (end, ran) = (AttemptEnd::TimedOut(limit), left);
            }
        }
        self.time.advance(ran);
        self.ran.push((end, ran));
        Ok(AttemptResult {
            end,
            ran,
            matches: Matches::default(),
            start_error: match end {
                AttemptEnd::SpawnFailed => Some("no processes left".to_string()),
                _ => end.could_not_start().then(|| "not found".to_string()),
            },
            hint: self.hints.get(self.specs.len() - 1).copied().flatten(),
            ignored_hint: None,
        })
    }

    fn release_output(&mut self, output_of: OutputOf, _: &mut Logger) -> Result<(), Halt> {
        self.released
            .push(!matches!(output_of, OutputOf::EarlierAttempt { .. }));
        Ok(())
    }

    fn release_final_output_interrupted(&mut self, _: &mut Logger) {
        self.released.push(true);
    }

    fn settle_failed_output(&mut self, settle: Settle, _: &mut Logger) -> Result<(), Halt> {
        self.settled.push(settle);
        Ok(())
    }

    fn end_by(&mut self, deadline: Instant) {
        self.ends_in = Some(deadline.duration_since(self.time.now()));
        self.said_before_end_by = Some(self.said.len());
    }

    fn stdin_shared(&self) -> bool {
        self.stdin_shared
    }

    fn run_hook(&mut self, hook: &HookSpec<'_>, _: &mut Logger) -> Result<AttemptEnd, Interrupted> {
        self.hooks.push(format!(
            "{:?} attempt={} last={} next={:?} at={:?}",
            hook.kind,
            hook.attempt,
            hook.last_status,
            hook.next_delay,
            self.time.elapsed.get()
        ));
        if hook.command == "slow" {
            self.time.advance(Duration::from_millis(800));
        }
        Ok(if hook.command == "fail" {
            AttemptEnd::Exited(3)
        } else {
            AttemptEnd::Exited(0)
        })
    }
}

/// What the fakes saw of one run of the driver, and what it returned.
struct Observed {
    /// All the run told of itself.
    ran: FinishedRun,
    slept: Vec<Duration>,
    specs: Vec<AttemptSpec>,
    /// How each attempt ended, and how long it ran.
    ends: Vec<(AttemptEnd, Duration)>,
    hooks: Vec<String>,
    released: Vec<bool>,
    settled: Vec<Settle>,
    ends_in: Option<Duration>,
    said_before_end_by: Option<usize>,
    output: String,
}

fn exited(code: u8, ran_ms: u64) -> (AttemptEnd, Duration) {
    (AttemptEnd::Exited(code), ms(ran_ms))
}

fn run_with(
    args: &[&str],
    ends: &[(AttemptEnd, Duration)],
    interrupt_at: Option<usize>,
) -> Observed {
    run_with_hints(args, ends, &[], interrupt_at)
}

/// `run_with`, where attempt n gives the hint `hints[n - 1]`.
fn run_with_hints(
    args: &[&str],
    ends: &[(AttemptEnd, Duration)],
    hints: &[Option<AskedWait>],
    interrupt_at: Option<usize>,
) -> Observed {
    run_through(args, ends, hints, interrupt_at, &mut NoLimits)
}

/// `run`, asking `gate` as the fleet limits.
fn run_gated(args: &[&str], ends: &[(AttemptEnd, Duration)], gate: &mut ScriptedGate) -> Observed {
    run_through(args, ends, &[], None, gate)
}

fn run_through(
    args: &[&str],
    ends: &[(AttemptEnd, Duration)],
    hints: &[Option<AskedWait>],
    interrupt_at: Option<usize>,
    gate: &mut dyn Gate,
) -> Observed {
    let pretend = [
        "--stdin-is-a-pipe",
        "--oversleep-20ms",
        "--signal-after-the-wait",
    ];
    let flags = args.iter().filter(|a| !pretend.contains(a));
    let cli = Cli::try_parse_from(
        [
            "retry", "--jitter", "none", "--base", "100ms", "--max", "10s",
        ]
        .iter()
        .chain(flags)
        .chain(&["cmd"]),
    )
    .unwrap();
    let settings = Settings::resolve(cli).unwrap();
    let time = FakeTime::new();
    let lines = SharedBuffer::default();
    let mut script = Script {
        time: time.clone(),
        ends: ends.to_vec(),
        specs: Vec::new(),
        ran: Vec::new(),
        hooks: Vec::new(),
        released: Vec::new(),
        settled: Vec::new(),
        stdin_shared: args.contains(&"--stdin-is-a-pipe"),
        ends_in: None,
        said: lines.clone(),
        said_before_end_by: None,
        hints: hints.to_vec(),
    };
    let mut clock = FakeSleep {
        time,
        slept: Vec::new(),
        interrupt_at,
        signal_after: args.contains(&"--signal-after-the-wait").then_some(1),
        oversleep: if args.contains(&"--oversleep-20ms") {
            ms(20)
        } else {
            Duration::ZERO
        },
    };
    let mut logger = Logger::new(
        settings.verbosity,
        LogFormat::Text,
        Terminal::default(),
        Box::new(lines.clone()),
    );
    let mut delays = Delays::new(
        settings.schedule.clone(),
        Draws::seeded(settings.seed.unwrap_or(0)),
    );
    let ran = drive(
        &settings,
        settings.seed.unwrap_or(0),
        &mut script,
        &mut clock,
        &mut delays,
        gate,
        &mut logger,
    );
    let output = lines.text();
    Observed {
        ran,
        slept: clock.slept,
        specs: script.specs,
        ends: script.ran,
        hooks: script.hooks,
        released: script.released,
        settled: script.settled,
        ends_in: script.ends_in,
        said_before_end_by: script.said_before_end_by,
        output,
    }
}

fn run(args: &[&str], ends: &[(AttemptEnd, Duration)]) -> Observed {
    run_with(args, ends, None)
}

/// Fleet limits that answer from a script: `admits[i]` for the i-th `admit` and
/// `go_ons[i]` for the i-th `go_on` (past either list, `Go` and `Yes`). It keeps what it
/// was asked and told, in order.
#[derive(Default)]
struct ScriptedGate {
    admits: Vec<Admit>,
    go_ons: Vec<GoOn>,
    asked: Vec<String>,
}

impl Gate for ScriptedGate {
    fn admit(&mut self, attempt: u64) -> Admit {
        let answer = self
            .admits
            .get(self.asked.iter().filter(|a| a.starts_with("admit")).count())
            .copied()
            .unwrap_or(Admit::Go);
        self.asked.push(format!("admit {attempt}"));
        answer
    }
    fn record(&mut self, outcome: crate::fleet::Outcome) {
        self.asked.push(format!("record {outcome:?}"));
    }
    fn go_on(&mut self) -> GoOn {
        let answer = self
            .go_ons
            .get(self.asked.iter().filter(|a| *a == "go_on").count())
            .copied()
            .unwrap_or(GoOn::Yes);
        self.asked.push("go_on".to_string());
        answer
    }
    fn take_notices(&mut self) -> Vec<crate::fleet::Notice> {
        Vec::new()
    }
}

const OPEN: Duration = Duration::from_secs(60);

#[test]
fn a_long_failure_starts_the_schedule_and_the_limit_afresh() {
    let ends = [
        exited(1, 5),
        exited(1, 5),
        exited(1, 60),
        exited(1, 5),
        exited(1, 5),
        exited(1, 5),
    ];
    let out = run(&["--reset-after", "50ms", "--retries", "2"], &ends);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(1)));
    assert_eq!(
        out.specs.len(),
        6,
        "3 attempts, then 3 more after the long one"
    );
    assert_eq!(out.slept, [ms(100), ms(200), ms(100), ms(200), ms(400)]);
    let numbers: Vec<u64> = out.specs.iter().map(|s| s.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6], "attempt numbers never reset");
    assert!(
        out.specs.iter().all(|s| s.max_attempts == Some(3)),
        "the limit per streak"
    );
    let lines: Vec<&str> = out.output.lines().collect();
    assert_eq!(
        lines[2],
        "retry: attempt 3/3 failed (exit 1) after 60ms; next attempt in 100ms (it ran past \
         --reset-after: the schedule starts over)"
    );
    assert_eq!(
        lines[4],
        "retry: attempt 5 (2/3 since attempt 3) failed (exit 1) after 5ms; next attempt in 400ms"
    );
    assert_eq!(
        lines[5],
        "retry: attempt 6 (3/3 since attempt 3) failed (exit 1) after 5ms"
    );
}

#[test]
fn the_limit_counts_only_short_failures_in_a_row() {
    // Every attempt runs long: the limit of 2 never comes, the deadline does.
    let out = run(
        &[
            "--reset-after",
            "50ms",
            "--retries",
            "1",
            "--max-time",
            "1s",
        ],
        &[exited(1, 60)],
    );
    assert!(out.specs.len() > 2, "{} attempts", out.specs.len());
    assert!(out.slept.iter().all(|&wait| wait == ms(100)), "always d(1)");
    // Exactly as long as --reset-after is long enough; a shorter one is not.
    let out = run(
        &["--reset-after", "60ms", "--retries", "1"],
        &[exited(1, 59)],
    );
    assert_eq!(out.specs.len(), 2);
    let out = run(
        &["--reset-after", "60ms", "--retries", "1"],
        &[exited(1, 60), exited(1, 1)],
    );
    assert_eq!(out.specs.len(), 3);
}

#[test]
fn restart_runs_the_command_again_after_each_success() {
    let ends = [exited(0, 5), exited(0, 5), exited(1, 5), exited(1, 5)];
    let out = run(
        &["--restart", "--retries", "1", "--on-success", "ok"],
        &ends,
    );
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(1)));
    assert_eq!(out.specs.len(), 4, "two failures in a row end it");
    assert_eq!(
        out.slept,
        [ms(100), ms(100), ms(200)],
        "d(1) after a success, then on"
    );
    assert_eq!(
        out.hooks,
        [
            "Success attempt=1 last=0 next=None at=5ms",
            "Success attempt=2 last=0 next=None at=110ms"
        ],
        "--on-success after every success, before the wait"
    );
    let lines: Vec<&str> = out.output.lines().collect();
    assert_eq!(
        lines[0],
        "retry: attempt 1 succeeded after 5ms; restarting in 100ms"
    );
    assert_eq!(
        lines[2],
        "retry: attempt 3 (1/2 since attempt 2) failed (exit 1) after 5ms; next attempt in 200ms"
    );
}

#[test]
fn restart_ended_while_waiting_after_a_success_exits_0() {
    let out = run(&["--restart", "--max-time", "250ms"], &[exited(0, 5)]);
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(
        out.specs.len(),
        3,
        "at 0, 105 and 210 ms; the next would start past 250"
    );
    assert!(
        out.output.ends_with(
            "retry: attempt 3 succeeded after 5ms; not restarting: the next attempt, due in \
             100ms, would start past --max-time; done in 215ms\n"
        ),
        "{}",
        out.output
    );
    let mut gate = ScriptedGate {
        go_ons: vec![GoOn::Yes, GoOn::BudgetSpent],
        ..ScriptedGate::default()
    };
    let out = run_gated(&["--restart"], &[exited(0, 5)], &mut gate);
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(out.specs.len(), 2);
    assert!(
        out.output
            .ends_with("not restarting: budget '' is spent; done in 110ms\n")
    );
    let mut gate = ScriptedGate {
        admits: vec![Admit::Go, Admit::BreakerOpen { next_probe: OPEN }],
        ..ScriptedGate::default()
    };
    let out = run_gated(&["--restart"], &[exited(0, 5)], &mut gate);
    assert_eq!(
        out.ran.ending,
        Ending::Success,
        "the breaker opened during the wait"
    );
    assert_eq!(out.specs.len(), 1);
}

#[test]
fn restart_ends_at_a_permanent_failure_and_pays_the_budget_for_each_restart() {
    let mut gate = ScriptedGate::default();
    let out = run_gated(
        &["--restart", "--stop-on-exit", "9"],
        &[exited(0, 5), exited(0, 5), exited(9, 5)],
        &mut gate,
    );
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(9)));
    assert_eq!(out.specs.len(), 3);
    assert_eq!(
        gate.asked,
        [
            "admit 1",
            "record Success",
            "go_on",
            "admit 2",
            "record Success",
            "go_on",
            "admit 3",
            "record Nothing"
        ],
        "each restart is a retry the budget pays for"
    );
}

#[test]
fn a_code_whose_retries_are_used_up_ends_the_run_and_resets_do_not_refill_them() {
    let ends = [exited(137, 5), exited(1, 5), exited(137, 5), exited(1, 5)];
    let out = run(&["--retry-on-exit", "1,137@1"], &ends);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(137)));
    assert_eq!(
        out.specs.len(),
        3,
        "137, retried once; 1; 137 again ends it"
    );
    assert!(out.output.ends_with(
        "permanent failure, the retries that --retry-on-exit 137@1 allows are used up \
         (exit status 137)\n"
    ));
    let out = run(
        &["--retry-on-exit", "137@1", "--reset-after", "50ms"],
        &[exited(137, 60), exited(137, 60)],
    );
    assert_eq!(
        out.specs.len(),
        2,
        "a reset does not refill a code's retries"
    );
    let out = run(&["--retry-on-exit", "1@0"], &[exited(1, 5)]);
    assert_eq!(out.specs.len(), 1, "@0 never retries");
}

/// Failed output kept for the give-up is written when the run ends any way but a success
/// (and not for a reader gone), and forgotten at each success.
#[test]
fn kept_failed_output_is_settled_once_as_the_run_ends() {
    use Settle::*;
    assert_eq!(run(&[], &[exited(1, 5), exited(0, 5)]).settled, [Succeeded]);
    assert_eq!(run(&["--retries", "1"], &[exited(1, 5)]).settled, [GaveUp]);
    assert_eq!(
        run(&["--stop-on-exit", "3"], &[exited(3, 5)]).settled,
        [GaveUp]
    );
    let restarted = run(
        &["--restart", "--retries", "0"],
        &[exited(0, 5), exited(1, 5)],
    );
    assert_eq!(restarted.settled, [Succeeded, GaveUp]);
    assert_eq!(
        run_with(&[], &[exited(1, 5)], Some(0)).settled,
        [Interrupted],
        "a signal"
    );
    let pipe = run(&[], &[(AttemptEnd::Signaled(libc::SIGPIPE), ms(5))]);
    assert!(pipe.settled.is_empty(), "no answer, nothing written");
}

#[test]
fn restart_still_gives_124_when_the_deadline_cuts_an_attempt_short() {
    let out = run(
        &["--restart", "--max-time", "300ms"],
        &[exited(0, 5), exited(0, 1000)],
    );
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::TimedOut(Limit::Run)));
    assert_eq!(out.status(), 124);
}

#[test]
fn every_success_under_restart_releases_its_output_as_the_answer() {
    let out = run(
        &["--restart", "--hold-stdout", "--retries", "1"],
        &[
            exited(0, 5),
            exited(1, 5),
            exited(0, 5),
            exited(1, 5),
            exited(1, 5),
        ],
    );
    assert_eq!(out.released, [true, false, true, false, true]);
}

#[test]
fn a_breaker_open_before_the_first_attempt_ends_the_run_with_75_and_runs_nothing() {
    let mut gate = ScriptedGate {
        admits: vec![Admit::BreakerOpen { next_probe: OPEN }],
        ..ScriptedGate::default()
    };
    let out = run_gated(&["--on-failure", "report"], &[exited(0, 5)], &mut gate);
    assert_eq!((out.ran.ending, out.ran.last), (Ending::Breaker, None));
    assert_eq!(out.status(), 75);
    assert!(out.specs.is_empty() && out.slept.is_empty());
    assert_eq!(gate.asked, ["admit 1"]);
    assert_eq!(out.hooks, ["Failure attempt=0 last=75 next=None at=0ns"]);
    assert_eq!(
        out.output,
        "retry: giving up before the first attempt: breaker '' is open; next probe in 1m \
         (exit status 75)\n"
    );
}

#[test]
fn a_breaker_that_opens_during_the_run_ends_it_with_the_last_status_and_no_wait() {
    let mut gate = ScriptedGate {
        go_ons: vec![GoOn::Yes, GoOn::BreakerOpen { next_probe: OPEN }],
        ..ScriptedGate::default()
    };
    let out = run_gated(&[], &[exited(1, 5), exited(2, 5)], &mut gate);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(2)));
    assert_eq!(out.slept, [ms(100)], "no wait after the refusal");
    assert_eq!(out.specs.len(), 2);
    assert_eq!(
        gate.asked,
        [
            "admit 1",
            "record Failure",
            "go_on",
            "admit 2",
            "record Failure",
            "go_on"
        ]
    );
    let lines: Vec<&str> = out.output.lines().collect();
    assert_eq!(lines[1], "retry: attempt 2/6 failed (exit 2) after 5ms");
    assert!(lines[2].contains("breaker '' is open; next probe in 1m (exit status 2)"));
}

#[test]
fn a_spent_budget_ends_the_run_after_a_failure_or_within_a_streak() {
    let mut gate = ScriptedGate {
        go_ons: vec![GoOn::BudgetSpent],
        ..ScriptedGate::default()
    };
    let out = run_gated(&[], &[exited(3, 5)], &mut gate);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(3)));
    assert!(out.slept.is_empty());
    assert!(
        out.output
            .ends_with("budget '' is spent; not retrying (exit status 3)\n")
    );

    let mut gate = ScriptedGate {
        go_ons: vec![GoOn::BudgetSpent],
        ..ScriptedGate::default()
    };
    let out = run_gated(&["--consecutive", "2"], &[exited(0, 5)], &mut gate);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(0)));
    assert_eq!(out.status(), 1, "an unfinished streak exits 1");
    assert_eq!(gate.asked, ["admit 1", "record Success", "go_on"]);
}

/// The limits are asked to pay only for an attempt that would come: not after the last
/// the limit allows, nor after the last chance before the deadline, nor after a permanent
/// failure or a success that ends the run.
#[test]
fn the_budget_is_asked_only_for_an_attempt_that_would_come() {
    let mut gate = ScriptedGate::default();
    run_gated(&["--retries", "1"], &[exited(1, 5)], &mut gate);
    assert_eq!(
        gate.asked,
        [
            "admit 1",
            "record Failure",
            "go_on",
            "admit 2",
            "record Failure"
        ]
    );
    let mut gate = ScriptedGate::default();
    run_gated(&["--max-time", "150ms"], &[exited(1, 60)], &mut gate);
    assert_eq!(
        gate.asked,
        [
            "admit 1",
            "record Failure",
            "go_on",
            "admit 2",
            "record Failure"
        ],
        "60 + 100 > 150: the last chance is a retry as any other, and none follows it"
    );
    let mut gate = ScriptedGate::default();
    run_gated(&["--stop-on-exit", "4"], &[exited(4, 5)], &mut gate);
    assert_eq!(gate.asked, ["admit 1", "record Nothing"]);
    let mut gate = ScriptedGate::default();
    run_gated(&[], &[exited(0, 5)], &mut gate);
    assert_eq!(gate.asked, ["admit 1", "record Success"]);
    let mut gate = ScriptedGate::default();
    run_gated(
        &[],
        &[(AttemptEnd::SpawnFailed, ms(0)), exited(0, 5)],
        &mut gate,
    );
    assert_eq!(
        gate.asked,
        [
            "admit 1",
            "record Nothing",
            "go_on",
            "admit 2",
            "record Success"
        ],
        "a system short of processes says nothing of the service"
    );
}

impl Observed {
    /// The final attempt's end, when the run gave up (by whatever limit or verdict).
    fn gave_up_after(&self) -> Option<AttemptEnd> {
        self.ran.ending.gave_up().then_some(self.ran.last).flatten()
    }

    /// `retry`'s exit status for the run, without `--fail-exit`.
    fn status(&self) -> u8 {
        self.ran.ending.exit_status(self.ran.last, None)
    }
}

#[test]
fn the_executor_hears_of_the_run_deadline_before_anything_runs_or_is_said() {
    let out = run(&["--max-time", "5s", "--verbose"], &[exited(0, 5)]);
    assert_eq!(out.ends_in, Some(ms(5000)));
    assert_eq!(out.said_before_end_by, Some(0));
    assert!(
        out.output
            .starts_with("retry: running cmd (up to 6 attempts, seed 0)\n")
    );
    assert_eq!(run(&[], &[exited(0, 5)]).ends_in, None);
}

#[test]
fn success_at_once_does_not_sleep() {
    let out = run(&[], &[exited(0, 5)]);
    assert_eq!(out.ran.ending, Ending::Success);
    assert!(out.slept.is_empty());
    assert_eq!(out.output, "");
}

#[test]
fn retries_until_success_with_the_schedule() {
    let out = run(&[], &[exited(1, 5), exited(1, 5), exited(0, 5)]);
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(out.slept, vec![ms(100), ms(200)]);
    assert_eq!(out.specs.len(), 3);
    assert_eq!(
        out.output,
        "retry: attempt 1/6 failed (exit 1) after 5ms; next attempt in 100ms\n\
         retry: attempt 2/6 failed (exit 1) after 5ms; next attempt in 200ms\n"
    );
}

#[test]
fn exhausts_retries_with_the_last_status() {
    let out = run(
        &["--retries", "2"],
        &[exited(1, 0), exited(2, 0), exited(3, 0)],
    );
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(3)));
    assert_eq!(out.slept, vec![ms(100), ms(200)]);
    assert_eq!(out.output.lines().count(), 4);
    assert!(
        out.output.ends_with(
            "retry: attempt 3/3 failed (exit 3) after 0s\n\
         retry: giving up after 3 attempts in 300ms: no retries left (exit status 3)\n"
        ),
        "{}",
        out.output
    );
}

#[test]
fn attempts_and_env_facts() {
    let out = run(&["--attempts", "3"], &[exited(7, 0)]);
    let numbers: Vec<_> = out.specs.iter().map(|s| s.number).collect();
    assert_eq!(numbers, [1, 2, 3]);
    let last: Vec<_> = out.specs.iter().map(|s| s.last_status).collect();
    assert_eq!(last, [None, Some(7), Some(7)]);
    assert!(out.specs.iter().all(|s| s.max_attempts == Some(3)));
}

#[test]
fn retries_zero_runs_once() {
    let out = run(&["--retries", "0"], &[exited(1, 0)]);
    assert_eq!(out.specs.len(), 1);
    assert!(out.slept.is_empty());
}

#[test]
fn forever_keeps_going() {
    let mut ends = vec![exited(1, 0); 50];
    ends.push(exited(0, 0));
    let out = run(&["--forever", "--max", "100ms"], &ends);
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(out.specs.len(), 51);
    assert!(out.specs.iter().all(|s| s.max_attempts.is_none()));
}

#[test]
fn stop_on_exit_ends_at_once() {
    let out = run(
        &["--stop-on-exit", "2"],
        &[exited(1, 0), exited(2, 0), exited(0, 0)],
    );
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(2)));
    assert_eq!(out.specs.len(), 2);
    assert!(out.output.contains("permanent failure"));
}

#[test]
fn cannot_start_is_not_retried() {
    let out = run(&[], &[(AttemptEnd::NotFound, Duration::ZERO)]);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::NotFound));
    assert_eq!(out.specs.len(), 1);
    assert_eq!(
        out.output,
        "retry: cannot run 'cmd': not found (command not found)\n"
    );
}

#[test]
fn cannot_start_is_retried_when_listed() {
    let out = run(
        &["--retry-on-exit", "127", "-r", "2"],
        &[(AttemptEnd::NotFound, Duration::ZERO)],
    );
    assert_eq!(out.specs.len(), 3);
    assert_eq!(out.output.matches("cannot run").count(), 1);
}

#[test]
fn an_attempt_the_system_cannot_start_is_retried_and_says_why() {
    let out = run(
        &["-r", "1"],
        &[(AttemptEnd::SpawnFailed, Duration::ZERO), exited(0, 0)],
    );
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(out.specs[1].last_status, Some(126));
    assert_eq!(
        out.output,
        "retry: attempt 1/2 failed (could not start: no processes left) after 0s; next attempt in 100ms\n"
    );
}

#[test]
fn sigpipe_ends_quietly() {
    let out = run(&[], &[(AttemptEnd::Signaled(libc::SIGPIPE), ms(1))]);
    assert_eq!(out.ran.ending, Ending::BrokenPipe);
    assert_eq!(out.output, "");
    assert_eq!(out.specs.len(), 1);
}

#[test]
fn timeout_is_given_to_each_attempt() {
    let out = run(&["--timeout", "50ms", "-r", "1"], &[exited(0, 80)]);
    assert_eq!(
        out.gave_up_after(),
        Some(AttemptEnd::TimedOut(Limit::Attempt))
    );
    assert_eq!(out.specs.len(), 2);
}

#[test]
fn each_attempt_gets_its_own_limit_from_the_list_and_the_deadline_cuts_it() {
    let ends = |out: &Observed| -> Vec<(AttemptEnd, u128)> {
        out.ends
            .iter()
            .map(|(end, ran)| (*end, ran.as_millis()))
            .collect()
    };
    // Attempts that would run 500ms: the first is cut at 100ms, the second has no limit,
    // the third and the ones after it get 300ms.
    let out = run(
        &["--timeouts", "100ms,0,300ms", "-r", "3"],
        &[exited(1, 500)],
    );
    let timed_out = AttemptEnd::TimedOut(Limit::Attempt);
    assert_eq!(
        ends(&out),
        [
            (timed_out, 100),
            (AttemptEnd::Exited(1), 500),
            (timed_out, 300),
            (timed_out, 300)
        ]
    );
    // The third starts at 1200ms: --max-time 1400ms leaves it 200ms of its 1s.
    let out = run(
        &[
            "--timeouts",
            "100ms,0,1s",
            "--max-time",
            "1400ms",
            "--forever",
        ],
        &[exited(1, 800)],
    );
    assert_eq!(
        ends(&out),
        [
            (timed_out, 100),
            (AttemptEnd::Exited(1), 800),
            (AttemptEnd::TimedOut(Limit::Run), 200)
        ]
    );
}

/// What a report tells: every attempt with the wait after it (none after the last), the
/// retries (attempts after a failure) and why the run ended.
#[test]
fn the_run_records_its_attempts_and_its_ending_for_the_report() {
    let waits = |ran: &FinishedRun| -> Vec<(u64, Option<Duration>, bool)> {
        ran.history
            .records()
            .map(|r| (r.attempt, r.wait, r.hinted))
            .collect()
    };
    let out = run(&["-r", "2"], &[exited(1, 5), exited(1, 5), exited(0, 5)]);
    assert_eq!((out.ran.ending, out.ran.attempts), (Ending::Success, 3));
    assert_eq!(
        waits(&out.ran),
        [
            (1, Some(ms(100)), false),
            (2, Some(ms(200)), false),
            (3, None, false)
        ]
    );
    assert_eq!(out.ran.last, Some(AttemptEnd::Exited(0)));
    let out = run(&["-r", "1"], &[exited(1, 5)]);
    assert_eq!((out.ran.ending, out.ran.attempts), (Ending::Exhausted, 2));
    let out = run(&["--stop-on-exit", "2"], &[exited(2, 5)]);
    assert_eq!(out.ran.ending, Ending::Permanent);
    let out = run(&["--max-time", "250ms", "--forever"], &[exited(1, 100)]);
    assert_eq!(out.ran.ending, Ending::MaxTime);
    let out = run(&["--consecutive", "2"], &[exited(0, 5)]);
    assert_eq!((out.ran.ending, out.ran.attempts), (Ending::Success, 2));
    // A signal during the wait: the wait it cut is not told.
    let out = run_with(&["-r", "3"], &[exited(1, 5)], Some(0));
    assert_eq!(
        (out.ran.ending, out.ran.attempts),
        (Ending::Signal(libc::SIGTERM), 1)
    );
    assert_eq!(waits(&out.ran), [(1, None, false)]);
    // A hint that lengthened the wait is marked.
    let hint = Some(AskedWait {
        wait: Duration::from_secs(3),
        source: crate::http::HintSource::RetryAfter,
    });
    let out = run_with_hints(&["-r", "1"], &[exited(1, 5)], &[hint], None);
    let first = out.ran.history.records().next().copied().unwrap();
    assert!(
        first.hinted && first.wait.unwrap() >= Duration::from_secs(3),
        "{first:?}"
    );
    let mut gate = ScriptedGate {
        go_ons: vec![GoOn::BudgetSpent],
        ..ScriptedGate::default()
    };
    let out = run_gated(&["-r", "3"], &[exited(1, 5)], &mut gate);
    assert_eq!((out.ran.ending, out.ran.attempts), (Ending::Budget, 1));
    let mut gate = ScriptedGate {
        admits: vec![Admit::BreakerOpen { next_probe: OPEN }],
        ..ScriptedGate::default()
    };
    let out = run_gated(&[], &[exited(0, 5)], &mut gate);
    assert_eq!(
        (out.ran.ending, out.ran.attempts, out.ran.last),
        (Ending::Breaker, 0, None)
    );
}

#[test]
fn max_time_shortens_the_wait_that_would_cross_it_into_a_last_chance() {
    // Waits of 100, 200, then 400ms, which would end at 700ms > 500ms: the attempts take no
    // time, so the last one starts 100ms before the deadline, and no wait follows it.
    let out = run(&["--max-time", "500ms", "--forever"], &[exited(1, 0)]);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(1)));
    assert_eq!(out.slept, vec![ms(100), ms(200), ms(100)]);
    assert!(
        out.output.contains(
            "attempt 3 failed (exit 1) after 0s; next attempt in 100ms, the last before \
             --max-time\n"
        ),
        "{}",
        out.output
    );
    assert!(
        out.output.contains(
            "giving up after 4 attempts in 400ms: that was the last attempt --max-time left \
             time for (exit status 1)"
        ),
        "{}",
        out.output
    );
    assert_eq!(out.ran.ending, Ending::MaxTime);
}

/// The last chance leaves twice the longest attempt so far before the deadline: attempts
/// of 200ms, waits of 100, 200, 400, then 800ms, which would end at 2.3s > 2s; the last
/// attempt starts at 1.6s.
#[test]
fn the_last_chance_leaves_twice_the_longest_attempt() {
    let out = run(&["--max-time", "2s", "--forever"], &[exited(1, 200)]);
    assert_eq!(out.slept, vec![ms(100), ms(200), ms(400), ms(100)]);
    assert_eq!(out.ends.len(), 5);
    // A timed-out attempt counts as its limit (here the 300ms it was given, not the
    // 1.5s it would have taken), and a next attempt's own, shorter limit is what it needs.
    let out = run(
        &["--max-time", "3s", "--forever", "--timeouts", "300ms,50ms"],
        &[(AttemptEnd::Exited(1), ms(1500)), exited(1, 10)],
    );
    // The first attempt times out at 300ms; the next ones take 10ms: waits of 100, 200,
    // 400 and 800ms bring the fifth to an end at 1.84s, and 1.6s more would cross 3s.
    // Twice the longest attempt would start the last at 2.4s, but its own limit is 50ms:
    // it starts 100ms before the deadline, at 2.9s.
    assert_eq!(
        out.slept,
        vec![ms(100), ms(200), ms(400), ms(800), ms(1060)]
    );
    // Attempts longer than the time left: the last chance comes at once.
    let out = run(&["--max-time", "1s", "--forever"], &[exited(1, 400)]);
    assert_eq!(out.slept, vec![ms(100), ms(0)]);
    assert_eq!(out.ends.len(), 3, "{:?}", out.ends);
    assert_eq!(out.ends[2].0, AttemptEnd::TimedOut(Limit::Run));
}

/// A server's wait is never shortened into a last chance, nor a wait after a success.
#[test]
fn hinted_waits_and_waits_after_a_success_are_not_shortened() {
    let hint = Some(AskedWait {
        wait: Duration::from_secs(3),
        source: HintSource::RetryAfter,
    });
    let out = run_with_hints(
        &["--max-time", "2s", "--forever"],
        &[exited(1, 5)],
        &[hint],
        None,
    );
    assert_eq!(out.ends.len(), 1);
    assert!(out.slept.is_empty(), "{:?}", out.slept);
    assert!(
        out.output.contains("would start past --max-time"),
        "{}",
        out.output
    );
    let out = run(
        &["--max-time", "250ms", "--consecutive", "5", "--forever"],
        &[exited(0, 5)],
    );
    // Successes at 0 and 105ms; the next wait (after a success, d(1) = 100ms) ends at
    // 210ms: then 315ms would cross, and a streak's wait is not shortened.
    assert_eq!(out.ends.len(), 3, "{}", out.output);
    assert_eq!(out.slept, vec![ms(100), ms(100)]);
}

/// A hint the schedule's longer wait outgrew still holds the last chance back to what the
/// server asked: attempts of 500ms, a 2s hint, a 10s list wait and 3s in all: the last
/// chance would start at 1.5s after the first attempt, but the hint asks 2s.
#[test]
fn the_last_chance_never_comes_sooner_than_a_hint_asked() {
    let hint = Some(AskedWait {
        wait: Duration::from_secs(2),
        source: HintSource::RetryAfter,
    });
    let out = run_with_hints(
        &[
            "--max-time",
            "3s",
            "--forever",
            "--base",
            "10s",
            "--backoff",
            "constant",
        ],
        &[exited(1, 500), exited(1, 10)],
        &[hint],
        None,
    );
    assert_eq!(out.slept, vec![ms(2000)]);
    assert_eq!(out.ends.len(), 2, "{}", out.output);
    // A hint past the deadline: no last chance at all.
    let late = Some(AskedWait {
        wait: Duration::from_millis(2600),
        source: HintSource::RetryAfter,
    });
    let out = run_with_hints(
        &[
            "--max-time",
            "3s",
            "--forever",
            "--base",
            "10s",
            "--backoff",
            "constant",
        ],
        &[exited(1, 500)],
        &[late],
        None,
    );
    assert!(out.slept.is_empty(), "{:?}", out.slept);
    assert_eq!(out.ends.len(), 1);
}

/// No wait follows the last chance, whatever its end: a success that leaves a
/// `--consecutive` streak unfinished ends the run (exit 1), one under `--restart` ends it
/// as a success; "the last before --max-time" is never said twice.
#[test]
fn nothing_follows_the_last_chance_even_a_success() {
    // Waits of 10, 20, 40, ... 320ms bring the seventh attempt to 630ms; 640ms more would
    // cross 1s: the eighth is the last chance, at 900ms, and d(1) after it would still fit.
    let failures = [exited(1, 0); 7];
    let args = ["--max-time", "1s", "--forever", "--base", "10ms"];
    let streak = [&args[..], &["--consecutive", "2"]].concat();
    let out = run(&streak, &[&failures[..], &[exited(0, 0); 2]].concat());
    assert_eq!(out.ends.len(), 8, "{}", out.output);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(0)));
    assert_eq!(out.output.matches("the last before --max-time").count(), 1);
    let restart = [&args[..], &["--restart"]].concat();
    let out = run(
        &restart,
        &[&failures[..], &[exited(0, 0), exited(1, 0)]].concat(),
    );
    assert_eq!(out.ends.len(), 8, "{}", out.output);
    assert_eq!(out.ran.ending, Ending::Success);
}

/// A hook that uses up a wait that was told as any other: what it became is said, in the
/// line and as a `retry` event with `last_chance`.
#[test]
fn a_wait_the_hook_used_up_is_said_to_be_the_last_chance() {
    let out = run(
        &[
            "--max-time",
            "1s",
            "--forever",
            "--base",
            "500ms",
            "--backoff",
            "constant",
            "--on-retry",
            "slow",
        ],
        &[exited(1, 0)],
    );
    assert!(
        out.output.contains(
            "the --on-retry hook used up the wait: next attempt in 100ms, the last before \
             --max-time"
        ),
        "{}",
        out.output
    );
}

/// `--on-retry` that uses up time: the last chance is fitted again to what is left, and
/// the hook is told the wait as it will be.
#[test]
fn a_hook_before_the_last_chance_is_told_the_shortened_wait() {
    let out = run(
        &["--max-time", "500ms", "--forever", "--on-retry", "r"],
        &[exited(1, 0)],
    );
    assert_eq!(out.slept, vec![ms(100), ms(200), ms(100)]);
    assert!(out.hooks[2].contains("next=Some(100ms)"), "{:?}", out.hooks);
}

#[test]
fn max_time_terminates_a_running_attempt() {
    let out = run(&["--max-time", "250ms", "--forever"], &[exited(1, 100)]);
    // 100 run + 100 wait, then the second attempt is cut at 250ms.
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::TimedOut(Limit::Run)));
    assert_eq!(out.specs.len(), 2);
    assert_eq!(out.specs[1].deadline.map(|d| d.1), Some(Limit::Run));
    assert!(out.output.contains("--max-time reached"), "{}", out.output);
}

#[test]
fn attempt_deadline_is_the_earlier_limit() {
    let out = run(&["--max-time", "10s", "--timeout", "1s"], &[exited(0, 0)]);
    assert_eq!(out.specs[0].deadline.map(|d| d.1), Some(Limit::Attempt));
    let out = run(&["--max-time", "1s", "--timeout", "10s"], &[exited(0, 0)]);
    assert_eq!(out.specs[0].deadline.map(|d| d.1), Some(Limit::Run));
}

#[test]
fn splay_that_leaves_no_time_gives_124() {
    let out = run(
        &["--splay", "1s", "--max-time", "1ns", "--seed", "1"],
        &[exited(0, 0)],
    );
    assert_eq!((out.ran.ending, out.ran.last), (Ending::MaxTime, None));
    assert_eq!(out.status(), 124);
    assert!(out.specs.is_empty());
    assert!(
        out.output.contains(
            "giving up before the first attempt: the splay of 566.5ms would end past \
             --max-time (exit status 124)"
        ),
        "{}",
        out.output
    );
}

#[test]
fn splay_comes_first_and_counts() {
    let out = run(
        &["--splay", "50ms", "--seed", "3"],
        &[exited(1, 0), exited(0, 0)],
    );
    assert_eq!(out.slept.len(), 2);
    assert!(out.slept[0] <= ms(50));
    assert_eq!(out.slept[1], ms(100));
}

#[test]
fn invert_retries_until_failure() {
    let out = run(&["--invert"], &[exited(0, 0), exited(0, 0), exited(3, 0)]);
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(out.specs.len(), 3);
}

#[test]
fn failed_run_with_exit_0_last_exits_1() {
    let out = run(&["--invert", "-r", "1"], &[exited(0, 0)]);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(0)));
    assert_eq!(out.status(), 1);
}

#[test]
fn consecutive_needs_a_streak_and_restarts_the_schedule() {
    let ends = [
        exited(0, 0),
        exited(1, 0),
        exited(1, 0),
        exited(0, 0),
        exited(0, 0),
        exited(0, 0),
    ];
    let out = run(&["--consecutive", "3", "-r", "10"], &ends);
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(out.specs.len(), 6);
    // success -> d(1); failures -> d(2), d(3); successes -> d(1), d(1).
    assert_eq!(out.slept, vec![ms(100), ms(200), ms(400), ms(100), ms(100)]);
}

#[test]
fn consecutive_exhausted_on_a_success_exits_1() {
    let out = run(&["--consecutive", "3", "-r", "1"], &[exited(0, 0)]);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(0)));
    assert_eq!(out.status(), 1);
    assert_eq!(out.specs.len(), 2);
}

#[test]
fn signal_during_sleep_ends_the_run() {
    let out = run_with(&[], &[exited(1, 0)], Some(1));
    assert_eq!(out.ran.ending, Ending::Signal(libc::SIGTERM));
    assert_eq!(out.specs.len(), 2);
    assert!(out.output.ends_with("retry: stopped by SIGTERM\n"));
}

#[test]
fn ethernet_stops_after_16_attempts() {
    let out = run(&["--backoff", "ethernet", "--seed", "1"], &[exited(1, 0)]);
    assert_eq!(out.specs.len(), 16);
}

#[test]
fn hooks_run_at_their_points_with_their_facts() {
    let out = run(
        &[
            "--on-retry",
            "r",
            "--on-failure",
            "f",
            "--on-success",
            "s",
            "-r",
            "2",
        ],
        &[exited(4, 10), exited(5, 10), exited(0, 10)],
    );
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(
        out.hooks,
        [
            "Retry attempt=1 last=4 next=Some(100ms) at=10ms",
            "Retry attempt=2 last=5 next=Some(200ms) at=120ms",
            "Success attempt=3 last=0 next=None at=330ms",
        ]
    );
    let out = run(
        &["--on-retry", "r", "--on-failure", "f", "-r", "1"],
        &[exited(6, 0)],
    );
    assert_eq!(
        out.hooks,
        [
            "Retry attempt=1 last=6 next=Some(100ms) at=0ns",
            "Failure attempt=2 last=6 next=None at=100ms"
        ]
    );
}

#[test]
fn a_failing_hook_is_logged_and_changes_nothing() {
    let out = run(&["--on-retry", "fail", "-r", "1"], &[exited(6, 0)]);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(6)));
    assert!(
        out.output
            .contains("retry: --on-retry hook failed (exit 3)\n"),
        "{}",
        out.output
    );
}

#[test]
fn on_failure_runs_when_a_command_cannot_start_and_when_stopped() {
    let out = run(
        &["--on-failure", "f"],
        &[(AttemptEnd::NotFound, Duration::ZERO)],
    );
    assert_eq!(out.hooks, ["Failure attempt=1 last=127 next=None at=0ns"]);
    let out = run(
        &["--on-failure", "f", "--stop-on-exit", "3"],
        &[exited(3, 0)],
    );
    assert_eq!(out.hooks, ["Failure attempt=1 last=3 next=None at=0ns"]);
}

#[test]
fn no_hook_after_sigpipe_or_a_signal() {
    let out = run(
        &["--on-failure", "f"],
        &[(AttemptEnd::Signaled(libc::SIGPIPE), ms(1))],
    );
    assert!(out.hooks.is_empty());
    let out = run_with(&["--on-failure", "f"], &[exited(1, 0)], Some(0));
    assert_eq!(out.ran.ending, Ending::Signal(libc::SIGTERM));
    assert_eq!(out.hooks.len(), 0);
}

#[test]
fn on_retry_only_follows_failures_under_consecutive() {
    let out = run(&["--on-retry", "r", "--consecutive", "2"], &[exited(0, 0)]);
    assert_eq!(out.ran.ending, Ending::Success);
    assert!(out.hooks.is_empty(), "{:?}", out.hooks);
}

#[test]
fn held_output_is_released_as_final_only_for_the_last_attempt() {
    let out = run(&["-r", "2"], &[exited(1, 0), exited(1, 0), exited(0, 0)]);
    assert_eq!(out.released, [false, false, true]);
    let out = run(&["-r", "1"], &[exited(1, 0)]);
    assert_eq!(out.released, [false, true]);
    let out = run(&["--stop-on-exit", "1"], &[exited(1, 0)]);
    assert_eq!(out.released, [true]);
    let out = run(&["--max-time", "150ms", "--forever"], &[exited(1, 0)]);
    assert_eq!(
        out.released,
        [false, false, true],
        "the third attempt is the last chance before max-time"
    );
    let out = run(&["--consecutive", "2", "-r", "3"], &[exited(0, 0)]);
    assert_eq!(out.released, [false, true]);
}

/// Under `--failed-output drop` (and `on-give-up`), the final attempt is the one after which
/// the run ends, whatever ends it: the budget that refuses the retry, the breaker found open
/// before the next attempt, a signal during the wait. An attempt's output is an earlier
/// one's only once the next attempt is certain to start.
#[test]
fn under_failed_output_the_attempt_the_run_ends_after_is_final_whatever_ends_it() {
    for mode in ["drop", "on-give-up"] {
        let args = ["--failed-output", mode, "-r", "5"];
        let out = run(&args, &[exited(1, 0), exited(1, 0), exited(0, 0)]);
        assert_eq!(out.released, [false, false, true], "{mode}");

        let mut gate = ScriptedGate {
            go_ons: vec![GoOn::Yes, GoOn::BudgetSpent],
            ..ScriptedGate::default()
        };
        let out = run_gated(&args, &[exited(1, 0)], &mut gate);
        assert_eq!(out.released, [false, true], "{mode}: the budget refused");

        let mut gate = ScriptedGate {
            admits: vec![Admit::Go, Admit::BreakerOpen { next_probe: OPEN }],
            ..ScriptedGate::default()
        };
        let out = run_gated(&args, &[exited(1, 0)], &mut gate);
        assert_eq!(out.released, [true], "{mode}: the breaker found open");

        let out = run_with(&args, &[exited(1, 0)], Some(1));
        assert_eq!(out.ran.ending, Ending::Signal(libc::SIGTERM));
        assert_eq!(out.released, [false, true], "{mode}: a signal in the wait");

        // One that came once the wait was over, while the fleet limits were asked: the
        // next attempt does not start, and the one before is final.
        let late = [&args[..], &["--signal-after-the-wait"]].concat();
        let out = run(&late, &[exited(1, 0)]);
        assert_eq!(out.ran.ending, Ending::Signal(libc::SIGTERM));
        assert_eq!(out.specs.len(), 1, "{mode}: no attempt after the signal");
        assert_eq!(out.released, [true], "{mode}: a signal after the wait");
    }
    // --hold-stdout likewise: the attempt before a signal in the wait, or before the breaker
    // found open, is the final one, and its stdout goes to stdout.
    let args = ["--hold-stdout", "-r", "5"];
    let out = run_with(&args, &[exited(1, 0)], Some(0));
    assert_eq!(out.released, [true], "a signal in the wait");
    let mut gate = ScriptedGate {
        admits: vec![Admit::Go, Admit::BreakerOpen { next_probe: OPEN }],
        ..ScriptedGate::default()
    };
    let out = run_gated(&args, &[exited(1, 0)], &mut gate);
    assert_eq!(out.released, [true], "the breaker found open");
    let out = run(&args, &[exited(1, 0), exited(1, 0), exited(0, 0)]);
    assert_eq!(out.released, [false, false, true]);
}

#[test]
fn a_shared_stdin_is_warned_about_once_before_the_first_retry() {
    let out = run(&["-r", "3", "--stdin-is-a-pipe"], &[exited(1, 0)]);
    assert_eq!(out.output.matches("stdin is a pipe").count(), 1);
    let first_retry_line = out.output.lines().next().unwrap();
    assert!(first_retry_line.contains("attempt 1/4 failed"));
    assert!(
        out.output
            .lines()
            .nth(1)
            .unwrap()
            .contains("stdin is a pipe")
    );
    let out = run(&["-r", "0", "--stdin-is-a-pipe"], &[exited(1, 0)]);
    assert!(
        !out.output.contains("stdin is a pipe"),
        "no retry, no warning"
    );
}

/// A wait that ends before `--max-time` but a sleep that overshoots it: no attempt starts
/// past the deadline, and the run ends with the attempts that did run.
#[test]
fn a_sleep_that_overshoots_max_time_starts_no_attempt() {
    let out = run(
        &["--oversleep-20ms", "--max-time", "110ms"],
        &[exited(1, 0)],
    );
    assert_eq!(out.specs.len(), 1);
    assert_eq!(out.slept, [ms(100)]);
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(1)));
    assert!(
        out.output
            .contains("giving up after 1 attempt in 120ms: --max-time reached (exit status 1)"),
        "{}",
        out.output
    );
}

proptest::proptest! {
    /// Whatever the schedule and however long attempts take, no attempt starts and no wait
    /// ends past --max-time, the run is over by the deadline (an attempt running at it is
    /// cut there), a run that ends with time left ends after its last chance, and that
    /// chance leaves twice the longest attempt before the deadline (100ms at least).
    #[test]
    fn nothing_sleeps_past_max_time(
        max_time_ms in 1u64..5_000,
        base_ms in 0u64..2_000,
        max_ms in 0u64..3_000,
        ran_ms in proptest::collection::vec(0u64..1_500, 1..8),
        jitter in proptest::sample::select(vec!["none", "full", "equal", "decorrelated", "0.5", "+300ms"]),
        backoff in proptest::sample::select(vec!["exponential", "constant", "linear", "fibonacci", "ethernet"]),
        splay_ms in 0u64..2_000,
        seed in 0u64..1000,
    ) {
        let args = [
            "--forever".to_string(),
            format!("--max-time={max_time_ms}ms"),
            format!("--base={base_ms}ms"),
            format!("--max={max_ms}ms"),
            format!("--jitter={jitter}"),
            format!("--backoff={backoff}"),
            format!("--splay={splay_ms}ms"),
            format!("--seed={seed}"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ends: Vec<_> = ran_ms.iter().map(|&ms| exited(1, ms)).collect();
        let out = run(&args, &ends);
        let deadline = ms(max_time_ms);
        let mut elapsed = Duration::ZERO;
        let mut attempts = out.specs.iter();
        // Replay the timeline: splay, then attempt, wait, attempt, ...
        let mut sleeps = out.slept.iter();
        if splay_ms > 0
            && let Some(&splay) = sleeps.next()
        {
            elapsed += splay;
            proptest::prop_assert!(elapsed < deadline, "the splay crosses the deadline");
        }
        // The longest attempt before the latest one, and when the latest started.
        let (mut longest, mut longest_before_last, mut last_start) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let mut last_wait = None;
        for (index, _) in attempts.by_ref().enumerate() {
            (longest_before_last, last_start) = (longest, elapsed);
            proptest::prop_assert!(elapsed < deadline, "an attempt starts at or past the deadline");
            let ran = ms(ran_ms[index.min(ran_ms.len() - 1)]);
            let ran = ran.min(deadline.saturating_sub(elapsed));
            longest = longest.max(ran);
            elapsed += ran;
            proptest::prop_assert!(elapsed <= deadline);
            if let Some(&wait) = sleeps.next() {
                elapsed += wait;
                last_wait = Some(wait);
                proptest::prop_assert!(elapsed < deadline, "a wait ends at or past the deadline");
            }
        }
        proptest::prop_assert!(
            out.ran.ending.gave_up(),
            "a run of failures under --forever ends by --max-time"
        );
        let last_chances = out.output.matches(", the last before --max-time").count();
        proptest::prop_assert!(last_chances <= 1, "{}", out.output);
        if !out.specs.is_empty() && elapsed < deadline {
            // Time was left when the run ended: the attempt it ended after was the last
            // chance.
            proptest::prop_assert_eq!(last_chances, 1, "{}", out.output);
        }
        if last_chances == 1 {
            let announced = format!("attempt {} failed (exit 1) after", out.specs.len() - 1);
            let line = out.output.lines().find(|line| line.contains(&announced));
            proptest::prop_assert!(
                line.is_some_and(|line| line.contains("the last before --max-time")),
                "the last chance is the attempt before the run's last\n{}",
                out.output
            );
            // Twice the longest attempt before the deadline, and 100ms at least, unless
            // that moment had passed: then at once.
            let needed = (longest_before_last * 2).max(ms(100));
            proptest::prop_assert!(
                deadline - last_start >= needed || last_wait == Some(Duration::ZERO),
                "the last chance starts at {last_start:?}, {needed:?} are needed\n{}",
                out.output
            );
        }
    }
}

/// A duration a user can type: milliseconds, or anything up to what `Duration` holds.
fn any_duration_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        (0u64..5_000).prop_map(|ms| format!("{ms}ms")),
        any::<u64>().prop_map(|secs| secs.to_string()),
    ]
}

proptest::proptest! {
    /// No panic and an end, whatever the durations and the multiplier.
    #[test]
    fn extreme_values_end_without_panic(
        base in any_duration_text(),
        max in any_duration_text(),
        max_time in any_duration_text(),
        timeout in any_duration_text(),
        splay in any_duration_text(),
        multiplier in proptest::sample::select(vec!["1", "1.5", "2", "1000000"]),
        jitter in proptest::sample::select(vec!["none", "full", "equal", "decorrelated", "1", "+18446744073709551615"]),
        backoff in proptest::sample::select(vec!["exponential", "constant", "linear", "fibonacci", "ethernet"]),
        retries in 0u64..12,
        ran_ms in 0u64..1_000,
    ) {
        let args = [
            format!("--base={base}"),
            format!("--max={max}"),
            format!("--max-time={max_time}"),
            format!("--timeout={timeout}"),
            format!("--splay={splay}"),
            format!("--multiplier={multiplier}"),
            format!("--jitter={jitter}"),
            format!("--backoff={backoff}"),
            format!("--retries={retries}"),
            "--seed=1".to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args, &[exited(1, ran_ms)]);
        proptest::prop_assert!(out.ran.ending.gave_up(), "{:?}", out.ran.ending);
        proptest::prop_assert!(out.specs.len() as u64 <= retries + 1);
    }
}

#[test]
fn huge_limits_do_not_overflow() {
    let out = run(
        &[
            "--max-time",
            "18446744073709551615",
            "--timeout",
            "18446744073709551615",
            "-r",
            "1",
        ],
        &[exited(1, 0)],
    );
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(1)));
}

fn retry_after(secs: u64) -> Option<AskedWait> {
    Some(AskedWait {
        wait: Duration::from_secs(secs),
        source: HintSource::RetryAfter,
    })
}

/// A hint lengthens the wait to at least the hint, spread by up to a tenth of it (at least
/// up to a second); `--max` does not cut it.
#[test]
fn a_hint_lengthens_the_wait_past_max() {
    let fail = [exited(1, 0)];
    let out = run_with_hints(&["-r", "1", "--max", "1s"], &fail, &[retry_after(5)], None);
    assert_eq!(out.slept.len(), 1);
    assert!(
        out.slept[0] >= ms(5000) && out.slept[0] <= ms(6000),
        "{:?}",
        out.slept
    );
    assert!(
        out.output.contains(", as Retry-After asked"),
        "{}",
        out.output
    );
}

/// A hint shorter than the schedule's delay changes nothing, and the line says nothing of it.
#[test]
fn a_hint_never_shortens_the_wait() {
    let fail = [exited(1, 0)];
    let hint = Some(AskedWait {
        wait: ms(10),
        source: HintSource::Command,
    });
    let args = ["-r", "1", "--base", "5s", "--max", "5s"];
    let out = run_with_hints(&args, &fail, &[hint], None);
    assert!(out.slept[0] >= ms(5000), "{:?}", out.slept);
    assert!(out.slept[0] <= ms(5000) + ms(1010), "{:?}", out.slept);
    let plain = run_with(&args, &fail, None);
    assert_eq!(plain.slept, [ms(5000)]);
}

#[test]
fn retry_after_max_cuts_the_hint_before_the_spread() {
    let fail = [exited(1, 0)];
    let args = ["-r", "1", "--retry-after-max", "2s"];
    let out = run_with_hints(&args, &fail, &[retry_after(3600)], None);
    assert!(
        out.slept[0] >= ms(2000) && out.slept[0] <= ms(3000),
        "{:?}",
        out.slept
    );
}

/// Only the attempt that just failed is read: an earlier attempt's hint does not carry
/// over, and a successful attempt's hint is no reason to wait.
#[test]
fn only_the_attempt_that_just_failed_is_heard() {
    let ends = [exited(1, 0), exited(1, 0), exited(0, 0)];
    let out = run_with_hints(
        &["-r", "5"],
        &ends,
        &[retry_after(60), None, retry_after(60)],
        None,
    );
    assert_eq!(out.ran.ending, Ending::Success);
    assert_eq!(out.slept.len(), 2);
    assert!(out.slept[0] >= ms(60_000), "{:?}", out.slept);
    assert_eq!(out.slept[1], ms(200), "the schedule's own second delay");
}

/// With `--max-time`, a hinted wait that would end past the deadline ends the run at once.
#[test]
fn a_hint_past_max_time_ends_the_run_at_once() {
    let fail = [exited(7, 0)];
    let out = run_with_hints(
        &["-r", "3", "--max-time", "10s"],
        &fail,
        &[retry_after(30)],
        None,
    );
    assert_eq!(out.gave_up_after(), Some(AttemptEnd::Exited(7)));
    assert!(out.slept.is_empty(), "{:?}", out.slept);
    assert!(
        out.output.contains("would start past --max-time"),
        "{}",
        out.output
    );
}

/// A hint that ends before `--max-time` keeps the run going whatever the spread draws: the
/// spread stays within the time left, 100 ms kept for the attempt; the hint is waited whole.
#[test]
fn the_spread_never_carries_a_hint_that_fits_past_max_time() {
    let fail = [exited(1, 0)];
    for seed in 0..64 {
        let seed = seed.to_string();
        let out = run_with_hints(
            &["-r", "1", "--max-time", "1500ms", "--seed", &seed],
            &fail,
            &[retry_after(1)],
            None,
        );
        assert_eq!(out.slept.len(), 1, "seed {seed}: {}", out.output);
        assert!(
            out.slept[0] >= ms(1000) && out.slept[0] <= ms(1400),
            "seed {seed}: {:?}",
            out.slept
        );
    }
}

/// The spread is drawn from the seeded generator: the same seed, the same wait.
#[test]
fn the_spread_is_reproducible_with_a_seed() {
    let fail = [exited(1, 0)];
    let run = |seed: &str| {
        run_with_hints(
            &["-r", "1", "--seed", seed],
            &fail,
            &[retry_after(30)],
            None,
        )
        .slept
    };
    assert_eq!(run("7"), run("7"));
    let waits: std::collections::BTreeSet<Vec<Duration>> =
        (0..8).map(|seed| run(&seed.to_string())).collect();
    assert!(waits.len() > 1, "the spread varies with the seed");
}

/// `--on-retry` hears of the wait as it will be, hint included.
#[test]
fn the_on_retry_hook_gets_the_hinted_wait() {
    let fail = [exited(1, 0)];
    let out = run_with_hints(
        &["-r", "1", "--on-retry", "true"],
        &fail,
        &[retry_after(5)],
        None,
    );
    assert_eq!(out.hooks.len(), 1);
    let said = &out.hooks[0];
    assert!(out.slept[0] >= ms(5000));
    let next = format!("next={:?}", Some(out.slept[0]));
    assert!(said.contains(&next), "{said} vs {next}");
}
