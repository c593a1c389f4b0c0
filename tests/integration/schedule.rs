//! The delay schedule as the real binary applies it.

use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::support::*;

/// The "next attempt in X" values a run reports.
fn waits(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.split("next attempt in ").nth(1))
        .map(str::to_string)
        .collect()
}

fn run_waits(args: &[&str]) -> Vec<String> {
    let output = retry().args(args).command().output().unwrap();
    waits(&String::from_utf8(output.stderr).unwrap())
}

#[test]
fn exact_delays_for_every_backoff_kind_without_jitter() {
    let base = [
        "--jitter", "none", "--base", "1ms", "--max", "20ms", "-r", "7", "false",
    ];
    let cases = [
        (
            "exponential",
            vec!["1ms", "2ms", "4ms", "8ms", "16ms", "20ms", "20ms"],
        ),
        ("constant", vec!["1ms"; 7]),
        (
            "linear",
            vec!["1ms", "2ms", "3ms", "4ms", "5ms", "6ms", "7ms"],
        ),
        (
            "fibonacci",
            vec!["1ms", "1ms", "2ms", "3ms", "5ms", "8ms", "13ms"],
        ),
    ];
    for (kind, expected) in cases {
        let mut args = vec!["--backoff", kind];
        args.extend(base);
        assert_eq!(run_waits(&args), expected, "{kind}");
    }
}

#[test]
fn multiplier_sets_the_growth() {
    let waits = run_waits(&[
        "--jitter",
        "none",
        "--base",
        "1ms",
        "--multiplier",
        "3",
        "-r",
        "3",
        "false",
    ]);
    assert_eq!(waits, ["1ms", "3ms", "9ms"]);
}

#[test]
fn the_same_seed_gives_the_same_delays() {
    let args = ["--seed", "99", "--base", "2ms", "-r", "4", "false"];
    let first = run_waits(&args);
    assert_eq!(first.len(), 4);
    assert_eq!(first, run_waits(&args));
}

#[test]
fn without_a_seed_runs_differ() {
    let args = ["--base", "10ms", "--jitter", "full", "-r", "3", "false"];
    let runs: Vec<_> = (0..4).map(|_| run_waits(&args)).collect();
    assert!(runs.iter().any(|r| r != &runs[0]), "{runs:?}");
}

#[test]
fn dry_run_with_a_seed_predicts_the_real_run() {
    for jitter in ["equal", "full", "decorrelated", "0.3", "+5ms"] {
        let args = [
            "--seed", "7", "--base", "2ms", "--max", "30ms", "-r", "5", "--jitter", jitter,
        ];
        let plan = retry()
            .args(["--dry-run"])
            .args(args)
            .command()
            .output()
            .unwrap();
        let plan = String::from_utf8(plan.stdout).unwrap();
        let drawn: Vec<String> = plan
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("retry"))
            .skip(1)
            .map(|l| {
                l.split_whitespace()
                    .nth(4)
                    .expect("drawn column")
                    .to_string()
            })
            .collect();
        let real = run_waits(&[&args[..], &["false"]].concat());
        assert_eq!(drawn, real, "jitter {jitter}\n{plan}");
    }
}

#[test]
fn equal_jitter_waits_at_least_half() {
    // Four retries of base 40ms: at least 20 + 40 + 80 + 160 = 300ms of waiting.
    let start = Instant::now();
    retry()
        .args(["--base", "40ms", "-r", "4", "false"])
        .assert()
        .code(1);
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn delays_never_exceed_max() {
    let start = Instant::now();
    retry()
        .args(["--base", "1h", "--max", "20ms", "-r", "3", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("next attempt in 1h").not());
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn consecutive_needs_successes_in_a_row() {
    let r = retry().args(["--consecutive", "3", "--base", "0", "-r", "10"]);
    let command = r.flaky(1);
    let r = r.args(command);
    r.assert()
        .code(0)
        .stderr(predicate::str::contains("succeeded (2 of 3 in a row)"));
    assert_eq!(r.runs(), 4);
}

#[test]
fn consecutive_counts_against_the_attempt_limit() {
    retry()
        .args(["--consecutive", "3", "--base", "0", "-r", "1", "true"])
        .assert()
        .code(1);
}

#[test]
fn invert_retries_until_the_command_fails() {
    let r = retry().args(["--invert", "--base", "0"]);
    let script = format!(
        "n=$(cat '{p}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{p}'; [ $n -lt 3 ]",
        p = r.path("runs").display()
    );
    let r = r.args(sh(&script));
    r.assert().code(0);
    assert_eq!(r.runs(), 3);
}

#[test]
fn retry_on_exit_retries_only_listed_codes() {
    let r = retry().args(["--retry-on-exit", "1,75-78", "--base", "0"]);
    let command = r.flaky_with(2, 76);
    let r = r.args(command);
    r.assert().code(0);
    assert_eq!(r.runs(), 3);
    let r = retry().args(["--retry-on-exit", "1,75-78", "--base", "0"]);
    let command = r.flaky_with(2, 79);
    let r = r.args(command);
    r.assert().code(79);
    assert_eq!(r.runs(), 1);
}

#[test]
fn retry_on_exit_124_retries_timeouts_and_1_does_not() {
    let r = retry().args([
        "--retry-on-exit",
        "1",
        "--timeout",
        "50ms",
        "--base",
        "0",
        "sleep",
        "5",
    ]);
    r.assert()
        .code(124)
        .stderr(predicate::str::contains("attempt 1/6 failed (timed out)"))
        .stderr(predicate::str::contains("attempt 2/6").not());
    retry()
        .args([
            "--retry-on-exit",
            "124",
            "--timeout",
            "50ms",
            "--base",
            "0",
            "-r",
            "1",
            "sleep",
            "5",
        ])
        .assert()
        .code(124)
        .stderr(predicate::str::contains("attempt 2/2 failed (timed out)"));
}

#[test]
fn stop_on_exit_wins_over_retry_on_exit() {
    let r = retry().args(["--retry-on-exit", "3", "--stop-on-exit", "3", "--base", "0"]);
    let command = r.flaky_with(2, 3);
    let r = r.args(command);
    r.assert().code(3);
    assert_eq!(r.runs(), 1);
}

/// The `delay_ms` of each `retry` event of a run under `--log-format json`.
fn json_delays(args: &[&str]) -> Vec<f64> {
    let output = retry()
        .args(["--log-format", "json"])
        .args(args)
        .command()
        .output()
        .unwrap();
    json_events(&output.stderr)
        .iter()
        .filter(|event| event["event"] == "retry")
        .map(|event| event["delay_ms"].as_f64().unwrap())
        .collect()
}

#[test]
fn a_list_of_delays_is_waited_entry_by_entry_and_its_last_entry_repeats() {
    assert_eq!(
        json_delays(&["--delays", "0, 2ms,5ms", "--retries", "5", "false"]),
        [0.0, 2.0, 5.0, 5.0, 5.0],
        "no jitter unless asked for"
    );
    assert_eq!(
        json_delays(&[
            "--delays",
            "1ms,1h",
            "--max",
            "3ms",
            "--retries",
            "3",
            "false"
        ]),
        [1.0, 3.0, 3.0],
        "--max caps each entry"
    );
    let started = Instant::now();
    retry()
        .args(["--delays", "40ms,80ms", "--retries", "2", "false"])
        .assert()
        .code(1);
    assert!(started.elapsed() >= Duration::from_millis(120));
}

/// A jitter given with a list applies to each entry as to a nominal delay, and `--dry-run
/// --seed` predicts the waits exactly.
#[test]
fn a_given_jitter_applies_to_each_entry_as_dry_run_predicts() {
    let flags = [
        "--delays",
        "10ms,20ms",
        "--jitter",
        "equal",
        "--seed",
        "3",
        "--retries",
        "2",
    ];
    let waits = json_delays(&[&flags[..], &["false"]].concat());
    assert_eq!(waits.len(), 2);
    assert!(
        (5.0..=10.0).contains(&waits[0]) && (10.0..=20.0).contains(&waits[1]),
        "{waits:?}"
    );
    let plan = retry()
        .args(flags)
        .args(["--dry-run"])
        .command()
        .output()
        .unwrap();
    let plan = String::from_utf8(plan.stdout).unwrap();
    assert!(
        plan.contains("schedule: delays 10ms, 20ms (the last repeats), no cap, equal jitter"),
        "{plan}"
    );
    // The rows' "drawn" column: `  1  10ms  5ms..10ms  5ms..10ms  6.7ms  ███`.
    let drawn: Vec<f64> = plan
        .lines()
        .filter(|line| line.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|line| {
            let column = line.split_whitespace().nth(4).unwrap();
            column.strip_suffix("ms").unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(drawn.len(), waits.len(), "{plan}");
    for (drawn, waited) in drawn.iter().zip(&waits) {
        assert!((drawn - waited).abs() < 0.1, "{drawn} against {waited}");
    }
}

#[test]
fn a_config_file_gives_the_list_in_any_of_its_forms() {
    for value in [r#"["0", 0.002, "5ms"]"#, r#""0,2ms,5ms""#] {
        let r = retry();
        let config = r.write("retry.toml", &format!("[defaults]\ndelays = {value}\n"));
        let config = config.to_str().unwrap().to_string();
        assert_eq!(
            json_delays(&["--config", &config, "--retries", "3", "false"]),
            [0.0, 2.0, 5.0],
            "{value}"
        );
    }
}

/// `CODE@N`: an OOM kill (137) gets one retry, a code in a limited range shares its count, and
/// once a code's retries are used up it ends the run as a permanent failure.
#[test]
fn retry_limits_per_exit_code_end_the_run_when_used_up() {
    let r = retry();
    let runs = r.path("runs");
    // Attempts exit 137, 1, 137, 1, ...: the second 137 finds its one retry used.
    let script = sh(&format!(
        "n=$(cat '{runs}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{runs}'; \
         [ $((n % 2)) = 1 ] && exit 137; exit 1",
        runs = runs.display()
    ));
    let r = r
        .args(["--retry-on-exit", "1,137@1", "--base", "1ms"])
        .args(&script);
    r.assert().code(137).stderr(predicate::str::contains(
        "permanent failure, the retries that --retry-on-exit 137@1 allows are used up \
         (exit status 137)",
    ));
    assert_eq!(r.runs(), 3);

    let r = retry();
    let flaky = r.flaky_with(10, 76);
    let r = r
        .args(["--retry-on-exit", "75-78@2", "--base", "1ms"])
        .args(["--log-format", "json"])
        .args(flaky);
    let output = r.command().output().unwrap();
    assert_eq!(output.status.code(), Some(76));
    assert_eq!(r.runs(), 3, "two retries for the range in all");
    let last = json_events(&output.stderr).pop().unwrap();
    assert_eq!(last["event"], "give-up");
    assert_eq!(last["reason"], "permanent");
}

#[test]
fn retry_limits_come_from_the_config_file_and_dry_run_lists_them() {
    let r = retry();
    let config = r.write(
        "retry.toml",
        "[defaults]\nretry-on-exit = [1, \"137@1\", \"75-78@3\"]\n",
    );
    r.command()
        .args(["--config", config.to_str().unwrap(), "--dry-run"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "retry limits (over the whole run, then a permanent failure): exit 137: at most 1 \
             retry; exits 75-78 together: at most 3 retries\n",
        ));
}

#[test]
fn dry_run_says_how_overlapping_retry_limits_combine() {
    retry()
        .args(["--retry-on-exit", "1@2,1-3@1", "--dry-run", "false"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "exit 1: at most 2 retries; exits 1-3 together: at most 1 retry (a code under two \
             rules is retried while both allow it)\n",
        ));
}

/// The first `retry` event's `delay_ms` of a run whose waits are too long to sit through:
/// `retry` is ended by SIGTERM once it has said it.
fn first_delay_ms(args: &[&str]) -> f64 {
    let mut child = retry().args(["--log-format", "json"]).args(args).spawn();
    let said = wait_for_stderr(&mut child, r#""event":"retry""#);
    send(&child, libc::SIGTERM);
    assert_eq!(shell_status(wait_bounded(&mut child)), 143);
    let retry = json_events(said.as_bytes())
        .into_iter()
        .find(|event| event["event"] == "retry")
        .unwrap();
    retry["delay_ms"].as_f64().unwrap()
}

/// Delays as written: the default cap (30s) never shortens a `--delays` entry; only a `--max`
/// that is given, on the command line or in the config file, caps them. And a `--base` above
/// 30s is the default cap, not cut by it.
#[test]
fn the_default_cap_never_shortens_a_delay_written_down() {
    assert_eq!(first_delay_ms(&["--delays", "1m", "false"]), 60_000.0);
    assert_eq!(
        first_delay_ms(&["--base", "2m", "--jitter", "none", "false"]),
        120_000.0
    );
    let plan = |r: Retry| {
        let output = r.args(["--dry-run"]).command().output().unwrap();
        String::from_utf8(output.stdout).unwrap()
    };
    // A row's retry, nominal delay, wait and elapsed time.
    let row = |plan: &str, n: &str| -> Vec<String> {
        let line = plan
            .lines()
            .find(|line| line.split_whitespace().next() == Some(n))
            .unwrap_or_else(|| panic!("no row {n}: {plan}"));
        line.split_whitespace().take(4).map(String::from).collect()
    };
    let listed = plan(retry().args(["--delays", "10s,1m,5m"]));
    assert!(
        listed.contains("schedule: delays 10s, 1m, 5m (the last repeats), no cap, no jitter"),
        "{listed}"
    );
    assert_eq!(row(&listed, "3"), ["3", "5m", "5m", "6m10s"]);
    let based = plan(retry().args(["--base", "1m"]));
    assert!(
        based.contains("base 1m, max 1m,") && based.contains("30s..1m"),
        "{based}"
    );
    let capped = plan(retry().args(["--delays", "10s,1m", "--max", "20s"]));
    assert_eq!(row(&capped, "2"), ["2", "20s", "20s", "30s"]);
    // A --max in the config file is given too.
    let r = retry();
    let config = r.write("config.toml", "[defaults]\nmax = \"20s\"\n");
    let from_file = plan(r.args(["--config", config.to_str().unwrap(), "--delays", "10s,1m"]));
    assert_eq!(row(&from_file, "2"), ["2", "20s", "20s", "30s"]);
}
