//! Fleet limits: the budget's exact counts, the breaker's transitions and its single probe, many
//! concurrent runs on one name, show and reset, on every store (`on_every_store!`: a state
//! directory, a Redis server, a Redis Cluster); then what is the state directory's own (its
//! files, their privacy, failing open when it breaks), and misuse.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use predicates::prelude::*;
use serde_json::Value;

use crate::support::*;

/// Where a test keeps its budgets and breakers: a state directory of its own (made 0700 by
/// `retry` itself), a Redis server of its own, stopped by pid when the test is done, or the
/// shared Redis Cluster, the test's alone while it holds it.
pub struct State {
    /// The test's builder: its directory holds the state directory and the test's files.
    r: Retry,
    dir: PathBuf,
    /// What `--state` says.
    location: String,
    _server: Option<crate::redis::Server>,
    _cluster: Option<std::sync::MutexGuard<'static, crate::redis::Cluster>>,
}

fn state() -> State {
    let r = retry();
    let dir = r.path("state");
    State {
        location: dir.display().to_string(),
        r,
        dir,
        _server: None,
        _cluster: None,
    }
}

/// Runs a fleet scenario on every store, each a test of its own: `NAME::directory`,
/// `NAME::redis` and `NAME::cluster`. The scenario takes the `State` it runs on.
macro_rules! on_every_store {
    ($(#[$meta:meta])* fn $name:ident($s:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            use super::*;

            fn scenario($s: &State) $body

            #[test]
            fn directory() {
                scenario(&state());
            }

            #[test]
            fn redis() {
                if let Some(state) = State::redis() {
                    scenario(&state);
                }
            }

            #[test]
            fn cluster() {
                if let Some(state) = State::cluster() {
                    scenario(&state);
                }
            }
        }
    };
}

impl State {
    /// A redis-server of the test's own; `None` (outside CI) without one.
    fn redis() -> Option<State> {
        let server = crate::redis::server(&[], false)?;
        Some(State {
            location: server.url(0),
            _server: Some(server),
            ..state()
        })
    }

    /// The shared Redis Cluster, emptied and the test's alone while it runs; `None` (outside
    /// CI) without one.
    fn cluster() -> Option<State> {
        let cluster = crate::redis::shared_cluster()?;
        Some(State {
            location: cluster.url(),
            _cluster: Some(cluster),
            ..state()
        })
    }

    fn flag(&self) -> String {
        format!("--state={}", self.location)
    }

    /// `retry --state DIR ARGS`, in the test's directory.
    fn retry(&self, args: &[&str]) -> Retry {
        self.r.again().args([self.flag()]).args(args)
    }

    /// One run of `false` under the breaker flags `b`: with a threshold of 1, it opens.
    /// A run whose one attempt fails, recorded: a run that a loaded machine kept waiting past
    /// the state's bound went on without it (it says so), and another is run, for up to
    /// `BOUND`, until one was counted.
    fn fail_once(&self, b: &[String]) {
        poll_until("a failed run the state recorded", Duration::ZERO, || {
            let output = self
                .retry(&["-r", "0"])
                .args(b)
                .args(["false"])
                .command()
                .output()
                .unwrap();
            assert_eq!(output.status.code(), Some(1), "{output:?}");
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            let ended = Ended { status: 1, stderr };
            (!ended.failed_open()).then_some(())
        });
    }

    /// `n` runs at once, each under the breaker flags `b` and `extra`, of a command that counts
    /// itself in `dir` (see `counting`) and sleeps `seconds`; how they ended.
    fn concurrent_runs(
        &self,
        n: usize,
        b: &[String],
        extra: &[&str],
        dir: &Path,
        seconds: &str,
    ) -> Vec<Ended> {
        let runs = self
            .retry(&["-r", "0"])
            .args(b)
            .args(extra)
            .args(["--"])
            .args(sh(&format!(
                "printf x >> '{}'; sleep {seconds}",
                dir.join("count").display()
            )));
        concurrently(n, &runs)
    }

    /// `--show-state` for `names` (`--budget x`, `--breaker y`), as JSON.
    /// A store that a loaded machine keeps waiting past `retry`'s bound is asked again, for up
    /// to `BOUND`: what it holds is what the test reads.
    fn show<S: AsRef<str>>(&self, names: &[S]) -> Value {
        let ask = || {
            self.retry(&["--show-state", "--log-format", "json"])
                .args(names.iter().map(AsRef::as_ref))
                .command()
                .output()
                .unwrap()
        };
        let answered = |output: &std::process::Output| {
            output.status.success()
                || !String::from_utf8_lossy(&output.stderr).contains("state unavailable")
        };
        let output =
            poll(BOUND, Duration::ZERO, || Some(ask()).filter(answered)).unwrap_or_else(ask);
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    }
}

/// A command that counts its runs in the file `count` (one byte each, appended) and exits `code`.
fn counting(dir: &Path, code: u8) -> Vec<String> {
    sh(&format!(
        "printf x >> '{}'; exit {code}",
        dir.join("count").display()
    ))
}

fn count(dir: &Path) -> usize {
    std::fs::read(dir.join("count")).map_or(0, |bytes| bytes.len())
}

on_every_store! {
    fn the_floor_alone_pays_for_exactly_n_retries_and_never_holds_back_a_first_attempt(s) {
        let work = s.r.dir.path();
        let budget = [
            "--budget",
            "api",
            "--budget-floor",
            "2/1m",
            "--budget-ratio",
            "0",
        ];
        let run = || {
            s.retry(&budget)
                .args(["-r", "5", "--base", "1ms", "--"])
                .args(counting(work, 3))
                .assert()
                .code(3)
        };
        run().stderr(predicate::str::contains(
            "budget 'api' is spent; not retrying",
        ));
        assert_eq!(count(work), 3, "the first attempt and two retries");
        run();
        assert_eq!(count(work), 4, "a first attempt is never held back");
        let shown = s.show(&budget);
        assert_eq!(shown["budget"]["first_attempts"], 2);
        assert_eq!(shown["budget"]["retries"], 2);
    }
}

on_every_store! {
    fn each_first_attempt_earns_the_ratio(s) {
        let work = s.r.dir.path();
        let budget = [
            "--budget",
            "api",
            "--budget-floor",
            "1/1m",
            "--budget-ratio",
            "0.5",
        ];
        for _ in 0..4 {
            s.retry(&budget).args(["--", "true"]).assert().code(0);
        }
        // 1 + 0.5 x 5 first attempts (this run's own too) = 3.5: three retries.
        s.retry(&budget)
            .args(["-r", "9", "--base", "1ms", "--"])
            .args(counting(work, 1))
            .assert()
            .code(1);
        assert_eq!(count(work), 4);
    }
}

on_every_store! {
    fn a_spent_budget_is_whole_again_after_its_window(s) {
        let work = s.r.dir.path();
        let budget = [
            "--budget",
            "api",
            "--budget-floor",
            "2/1s",
            "--budget-ratio",
            "0",
        ];
        let run = || {
            s.retry(&budget)
                .args(["-r", "9", "--base", "1ms", "--"])
                .args(counting(work, 1))
                .assert()
                .code(1);
        };
        run();
        assert_eq!(count(work), 3);
        run();
        assert_eq!(count(work), 4, "spent within the window");
        // The window is kept in ten slices and the one the clock is in: at most 1.1 s.
        std::thread::sleep(Duration::from_millis(1150));
        run();
        assert_eq!(count(work), 7, "two retries again");
    }
}

on_every_store! {
    /// The JSON log has an event for each budget decision, and the give-up says why.
    fn budget_decisions_are_logged(s) {
        let output = s
            .retry(&[
                "--budget",
                "api",
                "--budget-floor",
                "1/1m",
                "--budget-ratio",
                "0",
            ])
            .args(["--log-format", "json", "-r", "5", "--base", "1ms", "false"])
            .command()
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        let events = json_events(&output.stderr);
        let decisions: Vec<&str> = events
            .iter()
            .filter(|e| e["event"] == "budget")
            .map(|e| e["decision"].as_str().unwrap())
            .collect();
        assert_eq!(decisions, ["spent", "refused"]);
        let give_up = events.iter().find(|e| e["event"] == "give-up").unwrap();
        assert_eq!(give_up["reason"], "budget");
        assert_eq!(give_up["attempts"], 2);
    }
}

on_every_store! {
    /// A hundred runs at once on one budget: no update is lost (the state's counts are exactly the
    /// attempts made), the retries never exceed the floor plus the ratio times the first attempts,
    /// and the budget is spent, not starved. A run that waited past the state's bound goes on
    /// without it, as it should (its attempts from then on are neither paid nor counted): each
    /// run's JSON log tells which decisions it took with the state.
    fn a_hundred_concurrent_runs_share_one_budget(s) {
        let work = s.r.dir.path();
        let budget = [
            "--budget",
            "herd",
            "--budget-floor",
            "20/1m",
            "--budget-ratio",
            "0.1",
        ];
        let herd = s
            .retry(&budget)
            .args(["--log-format", "json", "-r", "3", "--base", "1ms", "--"])
            .args(counting(work, 1));
        let runs = concurrently(100, &herd);
        assert!(runs.iter().all(|run| run.status == 1));
        let (mut attempts, mut spent, mut refused, mut uncounted_first) = (0, 0, 0, 0);
        for run in &runs {
            let events = json_events(run.stderr.as_bytes());
            let kind = |event: &Value| event["event"].as_str().unwrap_or("").to_string();
            let first_attempt = events.iter().position(|e| kind(e) == "attempt");
            let failed_open = events.iter().position(|e| kind(e) == "state-unavailable");
            if failed_open.is_some_and(|at| first_attempt.is_none_or(|first| at < first)) {
                uncounted_first += 1;
            }
            attempts += events.iter().filter(|e| kind(e) == "attempt").count();
            for event in events.iter().filter(|e| kind(e) == "budget") {
                match event["decision"].as_str() {
                    Some("spent") => spent += 1,
                    _ => refused += 1,
                }
            }
        }
        assert_eq!(count(work), attempts, "every attempt logged");
        let failed_open = runs.iter().filter(|run| run.failed_open()).count();
        let said = format!("{spent} paid retries, {refused} refused, {failed_open} runs failed open");
        let shown = s.show(&budget);
        let first_attempts = shown["budget"]["first_attempts"].as_u64().unwrap();
        let retries = shown["budget"]["retries"].as_u64().unwrap();
        // A run that stopped waiting for a reply went on without the state, yet the store may
        // have made its decision: the counts lie between what the runs that used the state
        // were told and that plus what the others asked.
        assert!(
            (100 - uncounted_first..=100).contains(&first_attempts),
            "no first attempt lost: {first_attempts}; {said}"
        );
        assert!(
            (spent..=spent + failed_open).contains(&(retries as usize)),
            "no retry lost: {retries}; {said}"
        );
        // What the store counted, it granted: within the floor and the ratio.
        assert!(
            retries as f64 <= 20.0 + 0.1 * first_attempts as f64,
            "{retries} retries, more than 20 + 0.1 x {first_attempts}: {said}"
        );
        assert!(failed_open < 100, "no run used the state: {said}");
        if failed_open <= 50 {
            assert!(refused > 0 && spent >= 20, "the floor alone pays for 20: {said}");
        }
    }
}

on_every_store! {
    /// A hundred runs at once on one breaker: every failure is counted (but those of runs that
    /// went on without the state, having waited past its bound).
    fn a_hundred_concurrent_runs_share_one_breaker_count(s) {
        let names = ["--breaker", "herd", "--breaker-threshold", "1000"];
        let herd = s.retry(&names).args(["-r", "0", "false"]);
        // On a loaded machine every run of a hundred may wait past the state's bound and go
        // on without it: then another hundred go, up to five times, until one used it.
        let (mut ran, mut failed_open) = (0, 0);
        for _ in 0..5 {
            let runs = concurrently(100, &herd);
            assert!(runs.iter().all(|run| run.status == 1));
            ran += runs.len();
            let now = runs.iter().filter(|run| run.failed_open()).count();
            failed_open += now;
            if now < runs.len() {
                break;
            }
        }
        assert!(failed_open < ran, "no run of {ran} used the state");
        // A run that stopped waiting for a reply may yet have been counted.
        let failures = s.show(&names)["breaker"]["failures"].as_u64().unwrap() as usize;
        assert!(
            (ran - failed_open..=ran).contains(&failures),
            "{failures} failures counted of {ran} runs, {failed_open} runs failed open"
        );
    }
}

fn breaker(threshold: &str, cooldown: &str) -> Vec<String> {
    [
        "--breaker",
        "api",
        "--breaker-threshold",
        threshold,
        "--breaker-cooldown",
        cooldown,
    ]
    .map(String::from)
    .to_vec()
}

on_every_store! {
    fn an_open_breaker_ends_a_run_with_75_before_any_attempt(s) {
        let work = s.r.dir.path();
        let b = breaker("2", "1m");
        s.retry(&[])
            .args(&b)
            .args(["-r", "5", "--base", "1ms", "--"])
            .args(counting(work, 1))
            .assert()
            .code(1)
            .stderr(predicate::str::contains("breaker 'api' opened"));
        assert_eq!(
            count(work),
            2,
            "open at the threshold: no third attempt"
        );
        let hook = work.join("hook");
        s.retry(&[])
            .args(&b)
            .args([
                "--on-failure",
                &format!(
                    "echo $RETRY_ATTEMPT $RETRY_LAST_EXIT > '{}'",
                    hook.display()
                ),
                "--",
            ])
            .args(counting(work, 0))
            .assert()
            .code(75)
            .stderr(predicate::str::contains(
                "giving up before the first attempt: breaker 'api' is open; next probe in",
            ));
        assert_eq!(count(work), 2, "no attempt ran");
        assert_eq!(std::fs::read_to_string(&hook).unwrap(), "0 75\n");
        s.retry(&["--fail-exit", "1"])
            .args(&b)
            .args(["--", "true"])
            .assert()
            .code(1);
        let shown = s.show(&b);
        assert_eq!(shown["breaker"]["state"], "open");
    }
}

on_every_store! {
    /// Once the cooldown is over, a probe that fails opens the breaker for twice as long, and one
    /// that succeeds closes it.
    fn the_probe_decides_and_a_failed_probe_doubles_the_cooldown(s) {
        let b = breaker("1", "300ms");
        s.fail_once(&b);
        std::thread::sleep(Duration::from_millis(320));
        s.retry(&["-r", "0", "-v"])
            .args(&b)
            .args(["false"])
            .assert()
            .code(1)
            .stderr(
                predicate::str::contains("this attempt is breaker 'api''s probe").and(
                    predicate::str::contains("the probe failed, open again; next probe in 600ms"),
                ),
            );
        // The next probe, as the record holds it: whatever time has passed since, no later than
        // twice the cooldown from now.
        let next = s.show(&b)["breaker"]["next_probe_ms"].as_f64().unwrap();
        assert!(next <= 600.0, "{next}");
        std::thread::sleep(Duration::from_millis(next as u64 + 20));
        s.retry(&[])
            .args(&b)
            .args(["true"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains("breaker 'api' closed"));
        let shown = s.show(&b);
        assert_eq!(shown["breaker"]["state"], "closed");
        assert_eq!(shown["breaker"]["failures"], 0);
    }
}

/// The probe's first attempt earns its share of the budget the run names, whether the budget
/// has the breaker's name (one decision for both) or another.
#[test]
fn a_probe_earns_for_the_budget_it_names() {
    for budget in ["api", "quota"] {
        let s = state();
        let b = breaker("1", "100ms");
        s.fail_once(&b);
        std::thread::sleep(Duration::from_millis(120));
        s.retry(&["-r", "0", "-v", "--budget", budget])
            .args(&b)
            .args(["true"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains(
                "this attempt is breaker 'api''s probe",
            ));
        let shown = s.show(&["--budget", budget]);
        assert_eq!(shown["budget"]["first_attempts"], 1, "{budget}: {shown}");
        if budget != "api" {
            // The breaker's record earned nothing for a budget of another name.
            assert_eq!(s.show(&["--budget", "api"])["budget"]["first_attempts"], 0);
        }
    }
}

on_every_store! {
    /// Among runs that ask at once when the cooldown is over, one probes; the others end as if the
    /// breaker were open.
    fn only_one_probe_runs_among_concurrent_runs(s) {
        let work = s.r.dir.path();
        let b = breaker("1", "200ms");
        s.fail_once(&b);
        std::thread::sleep(Duration::from_millis(220));
        // A --timeout makes the probe's lease outlast its sleep: --timeout and the grace.
        let runs = s.concurrent_runs(10, &b, &["--timeout", "5s"], work, "0.5");
        // A run that waited past the state's bound runs its command without the breaker.
        let failed_open = runs.iter().filter(|run| run.failed_open()).count();
        assert!(failed_open < 10, "no run used the state");
        assert_eq!(count(work), 1 + failed_open, "{failed_open} failed open");
        let with = |code| runs.iter().filter(|run| run.status == code).count();
        assert_eq!(with(0), 1 + failed_open);
        assert_eq!(with(75), 9 - failed_open);
    }
}

on_every_store! {
    /// A run whose attempt fails while another run's probe runs is answered as if the breaker were
    /// open: it ends at once with its status, without waiting for a retry it would be refused.
    fn a_retrying_run_ends_at_once_while_another_run_probes(s) {
        let work = s.r.dir.path();
        let at = |name: &str| work.join(name).display().to_string();
        let (started, go) = (at("started"), at("go"));
        // Its first attempt starts while the breaker is closed, and fails once the probe runs.
        let mut waiting = s
            .retry(&["--breaker", "api", "--breaker-threshold", "100"])
            .args(["-r", "3", "--base", "5s"])
            .args(sh(&format!(
                "touch '{started}'; for i in $(seq 1000); do [ -e '{go}' ] && break; sleep 0.01; done; exit 1"
            )))
            .spawn();
        eventually("the first attempt runs", || Path::new(&started).exists());
        s.fail_once(&breaker("1", "100ms"));
        std::thread::sleep(Duration::from_millis(120));
        s.retry(&["-v", "-r", "0", "--timeout", "5s"])
            .args(breaker("1", "100ms"))
            .args(sh(&format!("touch '{go}'; sleep 1; exit 1")))
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                "this attempt is breaker 'api''s probe",
            ));
        assert_eq!(wait_bounded(&mut waiting).code(), Some(1));
        let mut said = String::new();
        std::io::Read::read_to_string(&mut waiting.stderr.take().unwrap(), &mut said).unwrap();
        assert!(
            said.contains("breaker 'api' is open") && !said.contains("next attempt"),
            "{said}"
        );
    }
}

/// A probe whose run dies without a word (SIGKILL) holds the breaker only until its lease ends:
/// its `--timeout` and grace since it started.
#[test]
fn a_dead_probe_is_forgotten_after_its_lease() {
    let s = state();
    let b = breaker("1", "100ms");
    s.fail_once(&b);
    std::thread::sleep(Duration::from_millis(120));
    // The second run must start within the lease on a loaded machine: fifteen seconds, ten
    // times the one and a half that a loaded machine took more than once to start it.
    let lease = ["--timeout", "15s", "--kill-after", "0"];
    let mut probe = s
        .retry(&["-r", "0"])
        .args(lease)
        .args(&b)
        .args(["sleep", "30"])
        .spawn();
    eventually("the probe holds the breaker", || {
        s.dir.join("api.state").exists()
            && std::fs::read_to_string(s.dir.join("api.state"))
                .is_ok_and(|text| !text.trim_end().ends_with(" -"))
    });
    send(&probe, libc::SIGKILL);
    wait_bounded(&mut probe);
    // Within the lease, another run is turned away.
    s.retry(&["-r", "0"])
        .args(lease)
        .args(&b)
        .args(["true"])
        .assert()
        .code(75);
    // Once the lease the record holds has ended (on the wall clock), another run probes.
    let record = std::fs::read_to_string(s.dir.join("api.state")).unwrap();
    let probe_until: u64 = record
        .lines()
        .find_map(|line| line.strip_prefix("breaker "))
        .and_then(|fields| fields.split(' ').nth(3))
        .and_then(|probe| probe.split(':').nth(1))
        .and_then(|until| until.parse().ok())
        .expect("a probe's lease in the record");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        probe_until >= now && probe_until - now <= 15_000,
        "the lease is the --timeout and grace: {}",
        probe_until.saturating_sub(now)
    );
    std::thread::sleep(Duration::from_millis(probe_until - now + 30));
    s.retry(&["-r", "0"])
        .args(lease)
        .args(&b)
        .args(["true"])
        .assert()
        .code(0);
}

on_every_store! {
    /// A cooldown of 0 holds no run back: once open, every run's attempt is a probe, and without a
    /// `--timeout` a probe's lease is that cooldown, so concurrent runs all go. The breaker still
    /// counts, and still closes on a success.
    fn a_breaker_with_no_cooldown_holds_no_run_back(s) {
        let work = s.r.dir.path();
        let b = breaker("1", "0s");
        s.fail_once(&b);
        assert_eq!(s.show(&b)["breaker"]["state"], "half-open");
        // On a loaded machine all five may wait past the state's bound and go on without it:
        // then five more go, up to five times, until one used it.
        let mut rounds = 0;
        for _ in 0..5 {
            rounds += 1;
            let runs = s.concurrent_runs(5, &b, &[], work, "0.3");
            assert!(runs.iter().all(|run| run.status == 0));
            if runs.iter().any(|run| !run.failed_open()) {
                break;
            }
        }
        assert_eq!(count(work), 5 * rounds);
        assert_eq!(s.show(&b)["breaker"]["state"], "closed", "after {rounds} rounds");
    }
}

on_every_store! {
    /// Permanent failures and commands that cannot start say nothing of the service.
    fn permanent_failures_and_missing_commands_record_nothing(s) {
        let b = breaker("1", "1m");
        s.retry(&["--stop-on-exit", "3"])
            .args(&b)
            .args(sh("exit 3"))
            .assert()
            .code(3);
        s.retry(&[])
            .args(&b)
            .args(["no-such-command-for-retry"])
            .assert()
            .code(127);
        let shown = s.show(&b);
        assert_eq!(shown["breaker"]["state"], "closed");
        assert_eq!(shown["breaker"]["failures"], 0);
    }
}

on_every_store! {
    fn reset_state_gives_a_full_budget_and_a_closed_breaker(s) {
        let names = [
            "--budget",
            "api",
            "--budget-floor",
            "1/1m",
            "--breaker",
            "api",
            "--breaker-threshold",
            "1",
        ];
        s.retry(&names)
            .args(["-r", "3", "--base", "1ms", "false"])
            .assert()
            .code(1);
        assert_eq!(s.show(&names)["breaker"]["state"], "open");
        s.retry(&["--reset-state"])
            .args(names)
            .assert()
            .code(0)
            .stdout(predicate::str::contains("breaker 'api' reset: closed"));
        let shown = s.show(&names);
        assert_eq!(shown["breaker"]["state"], "closed");
        assert_eq!(shown["budget"]["retries"], 0);
        s.retry(&["--show-state"])
            .args(names)
            .assert()
            .code(0)
            .stdout(predicate::str::contains("budget 'api': balance"));
    }
}

/// `--show-state` reads as a sentence for any count, right after a breaker opened too (no
/// count of failures in a row, which an open breaker does not keep; a probe due in whole
/// seconds), and its JSON gives whole milliseconds.
#[test]
fn show_state_reads_naturally_and_gives_whole_milliseconds() {
    let s = state();
    let names = [
        "--budget",
        "api",
        "--breaker",
        "db",
        "--breaker-threshold",
        "3",
    ];
    let text = || {
        let output = s
            .retry(&["--show-state"])
            .args(names)
            .command()
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(
        text(),
        "budget 'api': balance 10.00; in the last 1m: 0 first attempts, 0 retries\n\
         breaker 'db': closed, no failures in a row\n"
    );
    s.retry(&names).args(["-r", "0", "false"]).assert().code(1);
    assert_eq!(
        text(),
        "budget 'api': balance 10.10; in the last 1m: 1 first attempt, 0 retries\n\
         breaker 'db': closed, 1 failure in a row\n"
    );
    s.retry(&names)
        .args(["-r", "1", "--base", "0", "false"])
        .assert()
        .code(1);
    let shown = text();
    let (budget, breaker) = shown.split_once('\n').unwrap();
    assert_eq!(
        budget,
        "budget 'api': balance 9.20; in the last 1m: 2 first attempts, 1 retry"
    );
    // The cooldown of 1m began as the third failure ended: the probe is due in 1m, less the
    // time since, in whole seconds (never 59.992s).
    let due = breaker
        .strip_prefix("breaker 'db': open; next probe in ")
        .and_then(|due| due.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        due == "1m"
            || due
                .strip_suffix('s')
                .is_some_and(|n| n.parse::<u8>().is_ok()),
        "{shown}"
    );
    let json = s.show(&names);
    for field in [
        &json["budget"]["window_ms"],
        &json["breaker"]["next_probe_ms"],
    ] {
        assert!(field.is_u64(), "{json}");
    }
}

/// A run that names no budget and no breaker leaves the state alone: no directory is made.
#[test]
fn a_run_that_names_neither_makes_no_state() {
    let s = state();
    s.retry(&["-r", "1", "--base", "1ms", "false"])
        .assert()
        .code(1);
    assert!(!s.dir.exists());
}

on_every_store! {
    /// Under `--log-format json`, `--show-state` is one `state` object on stdout, and
    /// `--reset-state` one `reset` object; a name not given is null.
    fn show_and_reset_state_in_json_are_one_object_each(s) {
        let names = [
            "--budget",
            "api",
            "--breaker",
            "db",
            "--breaker-threshold",
            "1",
        ];
        s.retry(&names).args(["-r", "0", "false"]).assert().code(1);
        let shown = s.show(&names);
        assert_eq!(shown["event"], "state");
        let budget = &shown["budget"];
        assert_eq!(budget["name"], "api");
        assert_eq!(budget["balance"].as_f64(), Some(10.1));
        assert_eq!(
            (
                budget["first_attempts"].as_u64(),
                budget["retries"].as_u64()
            ),
            (Some(1), Some(0))
        );
        assert_eq!(budget["window_ms"].as_f64(), Some(60_000.0));
        let breaker = &shown["breaker"];
        assert_eq!(
            (breaker["name"].as_str(), breaker["state"].as_str()),
            (Some("db"), Some("open"))
        );
        assert_eq!(breaker["failures"].as_u64(), Some(0));
        let next_probe = breaker["next_probe_ms"].as_f64().unwrap();
        assert!(
            next_probe > 50_000.0 && next_probe <= 60_000.0,
            "{next_probe}"
        );
        assert!(s.show(&["--budget", "api"])["breaker"].is_null());
        let reset = s
            .retry(&["--reset-state", "--log-format", "json", "--breaker", "db"])
            .command()
            .output()
            .unwrap();
        assert!(reset.status.success(), "{reset:?}");
        let reset: Value = serde_json::from_slice(&reset.stdout).unwrap();
        assert_eq!(
            reset,
            serde_json::json!({"event": "reset", "budget": null, "breaker": "db"})
        );
        assert_eq!(s.show(&names)["breaker"]["state"], "closed");
    }
}

#[test]
fn the_state_directory_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let s = state();
    s.retry(&["--budget", "api", "true"]).assert().code(0);
    let mode = |path: PathBuf| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(s.dir.clone()), 0o700);
    assert_eq!(mode(s.dir.join("api.state")), 0o600);
    assert_eq!(mode(s.dir.join("api.lock")), 0o600);
}

/// The default state directory: `$XDG_STATE_HOME/retry` when that is absolute, else
/// `~/.local/state/retry`; `RETRY_STATE` before either.
#[test]
fn the_state_directory_defaults_as_xdg_says() {
    let r = retry().args(["--budget", "api", "true"]);
    let home = r.path("home");
    r.command().env("HOME", &home).assert().code(0);
    assert!(home.join(".local/state/retry/api.state").exists());
    let xdg = r.path("xdg");
    r.command()
        .env("HOME", &home)
        .env("XDG_STATE_HOME", &xdg)
        .assert()
        .code(0);
    assert!(xdg.join("retry/api.state").exists());
    r.command()
        .env("HOME", &home)
        .env("XDG_STATE_HOME", "relative")
        .assert()
        .code(0);
    assert!(
        !r.dir.path().join("relative").exists(),
        "a relative XDG_STATE_HOME is ignored"
    );
    let chosen = r.path("chosen");
    r.command()
        .env("RETRY_STATE", &chosen)
        .env("XDG_STATE_HOME", &xdg)
        .assert()
        .code(0);
    assert!(chosen.join("api.state").exists());
}

/// What cannot be read or written never keeps the command from running: one line, and little
/// delay.
#[test]
fn a_broken_state_fails_open() {
    let names = ["--budget", "api", "--breaker", "api"];
    // A file where the directory should be; a directory that cannot be made.
    let r = retry();
    let file = r.write("not-a-dir", "");
    for (dir, why) in [
        (file.clone(), "is not a directory"),
        (file.join("below"), "cannot read"),
        (PathBuf::from("/proc/no-such/retry"), "cannot make"),
    ] {
        let started = Instant::now();
        let output = r
            .command()
            .args([format!("--state={}", dir.display())])
            .args(names)
            .args(["-r", "1", "--base", "1ms", "sh", "-c", "echo ran; exit 1"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(String::from_utf8_lossy(&output.stdout), "ran\nran\n");
        let stderr = String::from_utf8(output.stderr).unwrap();
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("state unavailable"))
            .collect();
        assert_eq!(said.len(), 1, "{stderr}");
        assert!(
            said[0].ends_with("going on without budget and breaker") && said[0].contains(why),
            "{stderr}"
        );
        assert!(started.elapsed() < Duration::from_secs(1), "{dir:?}");
    }
}

/// A record that cannot be read (a directory, a link that loops) and a lock file that is a
/// link (which `retry` never follows) make the run fail open, saying why, within a second; the
/// link's target is left alone.
#[test]
fn an_unreadable_record_or_a_linked_lock_fails_open() {
    use std::os::unix::fs::{DirBuilderExt, symlink};
    let names = ["--budget", "api", "--breaker", "api"];
    // What is wrong, how it is planted in the state directory, and what the line says.
    type Case = (&'static str, fn(&Path), &'static str);
    let cases: [Case; 3] = [
        (
            "a directory as the record",
            |dir| std::fs::create_dir(dir.join("api.state")).unwrap(),
            "is not a regular file",
        ),
        (
            "a link that loops as the record",
            |dir| symlink("api.state", dir.join("api.state")).unwrap(),
            "cannot read",
        ),
        (
            "a link as the lock file",
            |dir| symlink("../elsewhere", dir.join("api.lock")).unwrap(),
            "cannot open",
        ),
    ];
    for (case, plant, why) in cases {
        let s = state();
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&s.dir)
            .unwrap();
        plant(&s.dir);
        let started = Instant::now();
        let output = s
            .retry(&names)
            .args(["-r", "1", "--base", "1ms", "sh", "-c", "echo ran; exit 1"])
            .command()
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{case}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "ran\nran\n",
            "{case}"
        );
        let stderr = String::from_utf8(output.stderr).unwrap();
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("state unavailable"))
            .collect();
        assert!(said.len() == 1 && said[0].contains(why), "{case}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(1), "{case}");
        assert!(!s.dir.join("../elsewhere").exists(), "{case}");
    }
}

/// Runs `retry --state DIR --budget api --breaker api -r 1 ...` under `wrapper`, with a command
/// that says it ran, and checks that the run failed open: both attempts ran, one line said the
/// state is unavailable and why, and the run was not held up for as much as a second.
fn fails_open_under(s: &State, wrapper: &[String], why: &str) {
    let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
    let started = Instant::now();
    let output = s
        .retry(&["--budget", "api", "--breaker", "api"])
        .args(["-r", "1", "--base", "1ms", "sh", "-c", "echo ran; exit 1"])
        .command_under(&wrapper)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ran\nran\n");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("state unavailable"))
        .collect();
    assert!(said.len() == 1 && said[0].contains(why), "{stderr}");
    assert!(took < Duration::from_secs(1), "{took:?}");
}

/// A state directory that can be read but not written (its record made by an earlier run):
/// the run fails open and the record is left as it was. Mode 0500 makes it read-only for a
/// user; root writes through modes, so for root it is a read-only bind mount.
#[test]
fn a_read_only_state_directory_fails_open() {
    use std::os::unix::fs::PermissionsExt;
    let s = state();
    s.retry(&["--budget", "api", "--breaker", "api", "-r", "0", "false"])
        .assert()
        .code(1);
    let record = std::fs::read(s.dir.join("api.state")).unwrap();
    std::fs::set_permissions(&s.dir, std::fs::Permissions::from_mode(0o500)).unwrap();
    if std::fs::write(s.dir.join("probe"), "").is_err() {
        fails_open_under(&s, &[], "Permission denied");
    } else {
        std::fs::remove_file(s.dir.join("probe")).unwrap();
        let dir = s.dir.display();
        let Some(wrapper) = mount_namespace(
            &format!("mount --bind -o ro '{dir}' '{dir}'"),
            "a state on a broken disk",
        ) else {
            return;
        };
        fails_open_under(&s, &wrapper, "Read-only file system");
    }
    assert_eq!(std::fs::read(s.dir.join("api.state")).unwrap(), record);
    std::fs::set_permissions(&s.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// A full disk: the state directory on a file system of 8 KiB, filled after a first run made
/// its files, so that the lock opens and the record reads but the new record cannot be written.
#[test]
fn a_full_disk_fails_open() {
    let s = state();
    std::fs::create_dir(&s.dir).unwrap();
    let dir = s.dir.display();
    // `$0` is the builder's `retry` (see `mount_namespace`).
    let first_run = format!("\"$0\" --state='{dir}' --budget api -r 0 true");
    let Some(wrapper) = mount_namespace(
        &format!(
            "mount -t tmpfs -o size=8k,mode=0700 none '{dir}' && {first_run} && \
             {{ cat /dev/zero > '{dir}/filler' 2>/dev/null; test -s '{dir}/filler'; }}"
        ),
        "a state on a broken disk",
    ) else {
        return;
    };
    fails_open_under(&s, &wrapper, "No space left on device");
}

on_every_store! {
    /// The command inherits no descriptor of the state: a daemon it starts holds no lock file open.
    fn the_command_inherits_no_descriptor_of_the_state(s) {
        let output = s
            .retry(&["--budget", "api", "--breaker", "api", "-r", "0"])
            .args(sh("ls -l /proc/$$/fd"))
            .command()
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let listing = String::from_utf8_lossy(&output.stdout);
        assert!(listing.contains("/proc/") || listing.contains("pipe") || listing.contains("/dev/"));
        assert!(
            !listing.contains("api.lock") && !listing.contains("api.state"),
            "{listing}"
        );
    }
}

#[test]
fn a_corrupt_state_is_replaced_said_once_and_used() {
    let s = state();
    std::fs::create_dir_all(&s.dir).unwrap();
    std::fs::write(s.dir.join("api.state"), "not a record\n").unwrap();
    let b = ["--breaker", "api", "--breaker-threshold", "1"];
    let output = s
        .retry(&b)
        .args(["--log-format", "json", "-r", "3", "--base", "1ms", "false"])
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let unavailable: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("\"state-unavailable\""))
        .collect();
    assert_eq!(unavailable.len(), 1, "{stderr}");
    assert!(unavailable[0].contains("replaced by a fresh one"));
    // The fresh state was used: the failure opened the breaker.
    assert_eq!(s.show(&b)["breaker"]["state"], "open");
}

/// A state directory or file that an ACL lets another user write is misuse, as one whose mode
/// lets others write is: the mode bits say nothing of a named user (`setfacl -m u:nobody:rw`).
#[test]
fn a_state_another_user_may_write_by_its_acl_is_misuse() {
    let set_acl = |path: &Path| set_acl_with_a_writer(path, 65534);
    let s = state();
    std::fs::create_dir(&s.dir).unwrap();
    if !set_acl(&s.dir) {
        missing(
            "a file system with POSIX ACLs",
            "a state writable by its ACL",
        );
        return;
    }
    s.retry(&["--breaker", "api", "-r", "0", "true"])
        .assert()
        .misuse("writable by another user (uid 65534, by its ACL)");
    // Named through a symlink of the user's own: the ACL read is the directory's, not the
    // link's.
    let s = state();
    std::fs::create_dir(&s.dir).unwrap();
    assert!(set_acl(&s.dir));
    let link = s.dir.with_file_name("link");
    std::os::unix::fs::symlink(&s.dir, &link).unwrap();
    breaker_run_on(&s.r, &link).misuse("writable by another user (uid 65534, by its ACL)");
    let s = state();
    std::fs::create_dir(&s.dir).unwrap();
    let file = s.dir.join("api.state");
    std::fs::write(&file, "").unwrap();
    assert!(set_acl(&file));
    s.retry(&["--budget", "api", "-r", "0", "true"])
        .assert()
        .misuse(&format!(
            "state file {} is writable by another user",
            file.display()
        ));
}

/// `--show-state` of a record that does not parse says so (exit 1), rather than show the fresh
/// state a run would make of it, and leaves the record as it is: a look changes nothing.
#[test]
fn show_state_says_a_corrupt_record_and_leaves_it() {
    let s = state();
    std::fs::create_dir_all(&s.dir).unwrap();
    std::fs::write(s.dir.join("api.state"), "not a record\n").unwrap();
    s.retry(&["--breaker", "api", "--budget", "api", "--show-state"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "the record of 'api' does not parse",
        ));
    assert_eq!(
        std::fs::read_to_string(s.dir.join("api.state")).unwrap(),
        "not a record\n"
    );
}

/// A lock that another process holds and never lets go costs a run one bounded wait (under the
/// second a broken state may cost in all), and then the run goes on without the state.
#[test]
fn a_lock_held_for_ever_fails_open_within_a_second() {
    let s = state();
    std::fs::create_dir_all(&s.dir).unwrap();
    let lock = s.dir.join("api.lock");
    let holder_script = format!(
        "import fcntl, sys, time\nf = open('{}', 'w')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(30)\n",
        lock.display()
    );
    let mut holder = Command::new("python3")
        .args(["-c", &holder_script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "held\n");
    let started = Instant::now();
    s.retry(&[
        "--budget",
        "api",
        "--breaker",
        "api",
        "-r",
        "2",
        "--base",
        "1ms",
    ])
    .args(["sh", "-c", "echo ran; exit 1"])
    .assert()
    .code(1)
    .stdout("ran\nran\nran\n")
    .stderr(predicate::str::contains("held by other processes").count(1));
    // One bounded wait (800 ms), then none: the run goes on without the state.
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(800), "{took:?}");
    assert!(took < 10 * Duration::from_millis(800), "{took:?}");
    let _ = holder.kill();
    let _ = holder.wait();
}

#[test]
fn misuse_of_the_fleet_flags_is_one_line_naming_it() {
    let others_can_write = {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        dir
    };
    let open_state = format!("--state={}", others_can_write.path().display());
    let rows: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--budget", "a b"], "--budget"),
        (vec!["--budget", ""], "--budget"),
        (vec!["--breaker", "x/y"], "--breaker"),
        (
            vec!["--budget", "a", "--budget-ratio", "1.5"],
            "--budget-ratio",
        ),
        (
            vec!["--budget", "a", "--budget-ratio", "-0.1"],
            "--budget-ratio",
        ),
        (
            vec!["--budget", "a", "--budget-floor", "0/1m"],
            "--budget-floor",
        ),
        (
            vec!["--budget", "a", "--budget-floor", "10"],
            "--budget-floor",
        ),
        (
            vec!["--budget", "a", "--budget-floor", "10/0s"],
            "--budget-floor",
        ),
        (
            vec!["--breaker", "a", "--breaker-threshold", "0"],
            "--breaker-threshold",
        ),
        (
            vec!["--budget", "a", "--state", "http://x"],
            "scheme 'http'",
        ),
        (vec!["--budget", "a", &open_state], "writable by others"),
        (
            vec!["--show-state"],
            "--show-state needs --budget or --breaker",
        ),
        (
            vec!["--reset-state"],
            "--reset-state needs --budget or --breaker",
        ),
    ];
    for (args, named) in rows {
        retry()
            .args(&args)
            .args(["--", "true"])
            .assert()
            .misuse(named);
    }
}

#[test]
fn dry_run_shows_the_names_and_records_nothing() {
    let s = state();
    s.retry(&["--dry-run", "--budget", "api", "--breaker", "api"])
        .assert()
        .code(0)
        .stdout(
            predicate::str::contains("budget: 'api', 10 retries per 1m")
                .and(predicate::str::contains("breaker: 'api', opens after 5")),
        );
    assert!(!s.dir.exists(), "a dry run made the state directory");
}

on_every_store! {
    /// The JSON log has an event for each change of the breaker and for its probe, and a give-up
    /// with reason "breaker".
    fn breaker_decisions_are_logged(s) {
        let b = breaker("1", "600ms");
        let events = |args: &[&str]| -> Vec<Value> {
            let output = s
                .retry(&["--log-format", "json", "-r", "0"])
                .args(&b)
                .args(args)
                .command()
                .output()
                .unwrap();
            json_events(&output.stderr)
        };
        let breaker_events = |events: &[Value]| -> Vec<String> {
            events
                .iter()
                .filter(|e| e["event"] == "breaker")
                .map(|e| e["transition"].as_str().unwrap().to_string())
                .collect()
        };
        let opened = events(&["false"]);
        assert_eq!(breaker_events(&opened), ["opened"]);
        let opening = opened.iter().find(|e| e["event"] == "breaker").unwrap();
        assert!(opening["next_probe_ms"].as_f64().unwrap() > 0.0);
        let refused = events(&["true"]);
        let give_up = refused.iter().find(|e| e["event"] == "give-up").unwrap();
        assert_eq!(give_up["reason"], "breaker");
        assert_eq!(give_up["attempts"], 0);
        assert_eq!(give_up["exit_code"], 75);
        std::thread::sleep(Duration::from_millis(620));
        assert_eq!(breaker_events(&events(&["true"])), ["probe", "closed"]);
    }
}

/// The state directory may come from the config file (`state`), like any setting; a state file
/// that others can write is refused like the directory.
#[test]
fn the_state_key_of_the_config_file_and_a_file_others_can_write() {
    use std::os::unix::fs::PermissionsExt;
    let r = retry();
    let dir = r.path("from-config");
    let config = r.write(
        "config.toml",
        &format!(
            "[defaults]\nstate = \"{}\"\nbudget = \"api\"\n",
            dir.display()
        ),
    );
    let config_flag = format!("--config={}", config.display());
    r.command()
        .args([config_flag.as_str(), "true"])
        .assert()
        .code(0);
    assert!(dir.join("api.state").exists());
    let file = dir.join("api.state");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    r.command()
        .args([config_flag.as_str(), "true"])
        .assert()
        .misuse("api.state is writable by others");
}

/// A state directory or file that belongs to another user (not root) is misuse, as one that
/// others can write is: the run ends with 125, naming it, and the file is left as it was.
/// (Needs root, to give a file away.)
#[test]
fn a_state_of_another_user_is_misuse() {
    use std::os::unix::fs::PermissionsExt;
    if !root("a state that belongs to another user") {
        return;
    }
    let nobody = 65534;
    let s = state();
    std::fs::create_dir(&s.dir).unwrap();
    std::fs::set_permissions(&s.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&s.dir, Some(nobody), None).unwrap();
    s.retry(&["--budget", "api", "true"])
        .assert()
        .misuse("belongs to another user")
        .stderr(predicate::str::contains(s.dir.display().to_string()));
    std::os::unix::fs::chown(&s.dir, Some(0), None).unwrap();
    let file = s.dir.join("api.state");
    std::fs::write(&file, "theirs").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&file, Some(nobody), None).unwrap();
    for names in [["--budget", "api"], ["--breaker", "api"]] {
        s.retry(&names).args(["true"]).assert().misuse(&format!(
            "state file {} belongs to another user",
            file.display()
        ));
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "theirs");
    // A directory of this user's, reached through a symlink of theirs: they chose it.
    let mine = s.dir.with_file_name("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = s.dir.with_file_name("link");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(nobody), None).unwrap();
    retry()
        .args([format!("--state={}", link.display())])
        .args(["--breaker", "api", "-r", "0", "false"])
        .assert()
        .misuse("a symlink of another user");
    assert_eq!(
        std::fs::read_dir(&mine).unwrap().count(),
        0,
        "nothing written"
    );
}

/// A state directory reached through a directory anyone may rearrange (writable by others,
/// without the sticky bit) is misuse: whoever can rename what is in it can move the state away
/// (a breaker closed, a budget renewed) or put their own in its place. A sticky one such as
/// /tmp is fine.
#[test]
fn a_state_under_a_directory_anyone_may_rearrange_is_misuse() {
    use std::os::unix::fs::PermissionsExt;
    let r = retry();
    let open = r.path("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let state = open.join("jobs/api");
    breaker_run_on(&r, &state).misuse(&format!(
        "state directory {} is reached through {}, which others may rearrange (mode 0777",
        state.display(),
        open.display()
    ));
    assert!(!open.join("jobs").exists(), "nothing made there");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    breaker_run_on(&r, &state).code(0).stderr("");
    assert!(state.join("api.state").exists());
}

/// A state directory named through a symlink of the user's own that leads to nothing is not
/// made where the link points (an unmounted disk would take it on the wrong file system): the
/// run fails open, saying so, as `mkdir -p` would refuse.
#[test]
fn a_state_through_a_link_to_nothing_is_not_made() {
    let r = retry();
    let mount = r.path("mnt");
    std::fs::create_dir(&mount).unwrap();
    for (link, target) in [("to-missing", "mnt/usb/state"), ("to-last", "mnt/state")] {
        let link = r.path(link);
        std::os::unix::fs::symlink(target, &link).unwrap();
        r.again()
            .args(["--state", link.to_str().unwrap(), "--breaker", "api"])
            .args(["-r", "0", "echo", "ran"])
            .assert()
            .code(0)
            .stdout("ran\n")
            .stderr(predicate::str::contains("state unavailable").and(
                predicate::str::contains("symlink").and(predicate::str::contains("to nothing")),
            ));
        assert_eq!(std::fs::read_dir(&mount).unwrap().count(), 0, "{link:?}");
    }
}

/// A state directory named by a relative path is looked at from the root: a directory above
/// the current one that anyone may rearrange counts as one below it does. So does a directory
/// whose ACL lets another user write it.
#[test]
fn every_directory_above_the_state_counts() {
    use std::os::unix::fs::PermissionsExt;
    let r = retry();
    let open = r.path("open");
    std::fs::create_dir_all(open.join("mine")).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut relative = r.command();
    relative.args(["--state", "st", "--breaker", "api", "-r", "0", "true"]);
    relative.current_dir(open.join("mine"));
    relative.assert().misuse(&format!(
        "is reached through {}, which others may rearrange (mode 0777",
        open.display()
    ));
    assert!(!open.join("mine/st").exists());
    let shared = r.path("shared");
    std::fs::create_dir(&shared).unwrap();
    if !set_acl_with_a_writer(&shared, 65534) {
        missing(
            "a file system with POSIX ACLs",
            "a directory writable by its ACL",
        );
        return;
    }
    let state = shared.join("st");
    breaker_run_on(&r, &state).misuse(&format!(
        "is reached through {}, which others may rearrange (uid 65534 may write it, by its ACL)",
        shared.display()
    ));
    assert!(!state.exists());
    // The sticky bit keeps them from renaming what is not theirs, whatever the ACL says.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1775)).unwrap();
    breaker_run_on(&r, &state).code(0).stderr("");
}

/// Gives `path` a POSIX ACL that lets user `writer` write it (USER_OBJ rwx, USER writer rwx,
/// GROUP_OBJ r-x, MASK rwx, OTHER ---, as the kernel keeps it): whether the file system took it.
fn set_acl_with_a_writer(path: &Path, writer: u32) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 7u16, u32::MAX),
        (0x02, 7, writer),
        (0x04, 5, u32::MAX),
        (0x10, 7, u32::MAX),
        (0x20, 0, u32::MAX),
    ] {
        acl.extend(tag.to_le_bytes());
        acl.extend(perm.to_le_bytes());
        acl.extend(id.to_le_bytes());
    }
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: setxattr(2) with NUL-terminated names and a buffer of the length given.
    unsafe {
        libc::setxattr(
            path.as_ptr(),
            c"system.posix_acl_access".as_ptr(),
            acl.as_ptr().cast(),
            acl.len(),
            0,
        ) == 0
    }
}

/// `retry --state STATE --breaker api -r 0 true`, asserted on.
fn breaker_run_on(r: &Retry, state: &Path) -> assert_cmd::assert::Assert {
    r.again()
        .args(["--state", state.to_str().unwrap(), "--breaker", "api"])
        .args(["-r", "0", "true"])
        .assert()
}
