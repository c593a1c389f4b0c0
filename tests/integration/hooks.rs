//! Hooks: their environment, their order relative to waits, and that they never change the
//! exit status.

use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::util::*;

fn log_hook(r: &Retry, name: &str) -> String {
    format!(
        "echo {name} $RETRY_ATTEMPT/$RETRY_MAX_ATTEMPTS ${{RETRY_LAST_EXIT-unset}} ${{RETRY_NEXT_DELAY_MS-unset}} >> '{}'",
        r.path("log").display()
    )
}

fn log(r: &Retry) -> Vec<String> {
    std::fs::read_to_string(r.path("log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn environment_of_each_hook() {
    let r = retry();
    let (on_retry, on_failure) = (log_hook(&r, "retry"), log_hook(&r, "failure"));
    let r = r.args([
        "-r",
        "2",
        "--base",
        "10ms",
        "--jitter",
        "none",
        "--on-retry",
        &on_retry,
        "--on-failure",
        &on_failure,
    ]);
    let r = r.args(sh("exit 3"));
    r.assert().code(3);
    assert_eq!(
        log(&r),
        ["retry 1/3 3 10", "retry 2/3 3 20", "failure 3/3 3 unset"]
    );
}

#[test]
fn on_success_sees_the_attempts_own_status() {
    let r = retry();
    let on_success = log_hook(&r, "success");
    let r = r.args(["--base", "0", "--invert", "--on-success", &on_success]);
    let r = r.args(sh("exit 5"));
    r.assert().code(0);
    assert_eq!(log(&r), ["success 1/6 5 unset"]);
}

#[test]
fn on_retry_runs_before_the_wait() {
    let r = retry();
    let stamp = format!("date +%s%N >> '{}'", r.path("stamps").display());
    let r = r.args([
        "-r",
        "1",
        "--base",
        "300ms",
        "--jitter",
        "none",
        "--on-retry",
        &stamp,
    ]);
    let attempt = format!("date +%s%N >> '{}'; exit 1", r.path("stamps").display());
    let r = r.args(sh(&attempt));
    r.assert().code(1);
    let stamps: Vec<u128> = std::fs::read_to_string(r.path("stamps"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(stamps.len(), 3, "attempt, hook, attempt");
    let hook_after_first = (stamps[1] - stamps[0]) / 1_000_000;
    let second_after_hook = (stamps[2] - stamps[1]) / 1_000_000;
    assert!(
        second_after_hook >= 300,
        "the wait follows the hook: {second_after_hook}ms"
    );
    assert!(
        hook_after_first < 300,
        "the hook runs before the wait: {hook_after_first}ms"
    );
}

#[test]
fn a_failing_hook_is_reported_and_never_changes_the_status() {
    retry()
        .args(["-r", "0", "--on-failure", "exit 9", "sh", "-c", "exit 4"])
        .assert()
        .code(4)
        .stderr(predicate::str::contains(
            "--on-failure hook failed (exit 9)",
        ));
    retry()
        .args(["--on-success", "exit 9", "true"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "--on-success hook failed (exit 9)",
        ));
    retry()
        .args(["-q", "--on-success", "exit 9", "true"])
        .assert()
        .code(0)
        .stderr("");
}

#[test]
fn a_hanging_hook_is_bounded_by_max_time() {
    let start = Instant::now();
    retry()
        .args([
            "--max-time",
            "300ms",
            "--kill-after",
            "100ms",
            "--on-success",
            "sleep 30",
            "true",
        ])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "--on-success hook failed (stopped at --max-time)",
        ));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn hooks_never_get_the_commands_stdin_nor_write_to_stdout() {
    let r = retry();
    let hook = format!("cat > '{}'; echo from-hook", r.path("hook-stdin").display());
    let r = r.args(["--on-success", &hook, "true"]);
    r.command()
        .write_stdin("secret input\n")
        .assert()
        .code(0)
        .stdout("")
        .stderr(predicate::str::contains("from-hook"));
    assert_eq!(std::fs::read_to_string(r.path("hook-stdin")).unwrap(), "");
}
