//! Attempts and time limits, seen through the attempts' own environment.

use std::fs;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::support::*;

/// Prints the attempt's environment as one line per attempt and fails.
fn env_line(code: u8) -> Vec<String> {
    sh(&format!(
        "echo \"$RETRY_ATTEMPT/$RETRY_MAX_ATTEMPTS/${{RETRY_LAST_EXIT-unset}}\"; exit {code}"
    ))
}

fn stdout_lines(r: &Retry) -> Vec<String> {
    let output = r.command().output().expect("run");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn retries_n_makes_n_plus_1_attempts_with_their_environment() {
    let r = retry()
        .args(["--retries", "2", "--base", "0"])
        .args(env_line(3));
    assert_eq!(stdout_lines(&r), ["1/3/unset", "2/3/3", "3/3/3"]);
}

#[test]
fn default_is_5_retries() {
    let r = retry().args(["--base", "0"]).args(env_line(1));
    assert_eq!(stdout_lines(&r).len(), 6);
}

#[test]
fn retries_0_runs_once() {
    let r = retry().args(["--retries", "0"]).args(env_line(1));
    assert_eq!(stdout_lines(&r), ["1/1/unset"]);
}

/// A retry inside another's attempt or hook sees only its own run's values.
#[test]
fn values_inherited_from_an_outer_retry_are_replaced_or_removed() {
    let r = retry()
        .args(["--attempts", "2", "--base", "0"])
        .args(sh(
            "echo \"$RETRY_ATTEMPT/$RETRY_MAX_ATTEMPTS/${RETRY_LAST_EXIT-unset}/${RETRY_NEXT_DELAY_MS-unset}\"; exit 4",
        ));
    let output = r
        .command()
        .env("RETRY_ATTEMPT", "7")
        .env("RETRY_MAX_ATTEMPTS", "9")
        .env("RETRY_LAST_EXIT", "3")
        .env("RETRY_NEXT_DELAY_MS", "1500")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "1/2/unset/unset\n2/2/4/unset\n"
    );
}

#[test]
fn attempts_counts_all_runs() {
    let r = retry()
        .args(["--attempts", "2", "--base", "0"])
        .args(env_line(4));
    assert_eq!(stdout_lines(&r), ["1/2/unset", "2/2/4"]);
}

#[test]
fn last_exit_reports_timeouts_and_signals_as_retry_sees_them() {
    let r = retry()
        .args(["--attempts", "3", "--base", "0", "--timeout", "1s"])
        .args(sh(
            "echo \"${RETRY_LAST_EXIT-unset}\"; case $RETRY_ATTEMPT in 1) exec sleep 5;; 2) kill -KILL $$;; esac",
        ));
    assert_eq!(stdout_lines(&r), ["unset", "124", "137"]);
}

#[test]
fn forever_has_no_limit_and_says_0() {
    let r = retry().args(["--forever", "--base", "0"]);
    let script = format!(
        "echo $RETRY_MAX_ATTEMPTS >> '{}'; [ $RETRY_ATTEMPT -ge 20 ]",
        r.path("max").display()
    );
    let r = r.args(sh(&script));
    r.assert().code(0);
    let max = std::fs::read_to_string(r.path("max")).unwrap();
    assert_eq!(max.lines().count(), 20);
    assert!(max.lines().all(|l| l == "0"));
}

#[test]
fn ethernet_without_a_limit_makes_16_attempts() {
    let r = retry()
        .args(["--backoff", "ethernet", "--base", "0"])
        .args(env_line(1));
    let lines = stdout_lines(&r);
    assert_eq!(lines.len(), 16);
    assert_eq!(lines[15], "16/16/1");
}

/// A deadline is a promise to keep trying until then (fine point 41): a wait that would cross
/// `--max-time` is cut short so that one last attempt starts before it, and no wait follows
/// that one. Here the wait of an hour after the third attempt becomes the last chance, which
/// starts 100ms before the deadline or twice the longest attempt before it (a loaded machine's
/// slow `sh` only brings it sooner); the run ends with that attempt's status (fine point 21).
#[test]
fn max_time_cuts_a_wait_that_would_cross_it_into_a_last_chance() {
    let r = retry();
    let attempts = r.path("attempts");
    let r = r
        .args(["--forever", "--max-time", "1s", "--max", "2h"])
        .args(["--delays", "0,0,1h"])
        .args(sh(&format!(
            "echo $RETRY_ATTEMPT >> '{}'; exit 3",
            attempts.display()
        )));
    r.assert()
        .code(3)
        .stderr(predicate::str::contains("attempt 3 failed (exit 3) after"))
        .stderr(predicate::str::contains(", the last before --max-time\n"))
        .stderr(predicate::str::contains("giving up after 4 attempts in"))
        .stderr(predicate::str::contains(
            "that was the last attempt --max-time left time for (exit status 3)",
        ));
    assert_eq!(fs::read_to_string(&attempts).unwrap(), "1\n2\n3\n4\n");
}

/// The last chance in JSON: the `retry` event says `last_chance`, its delay is the cut one,
/// and the run gives up for `max-time`.
#[test]
fn the_last_chance_is_marked_in_json() {
    let output = retry()
        .args(["--forever", "--max-time", "1s", "--delays", "1h"])
        .args(["--log-format", "json", "false"])
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let events = json_events(&output.stderr);
    let retries: Vec<_> = events.iter().filter(|e| e["event"] == "retry").collect();
    assert_eq!(retries.len(), 1, "{events:?}");
    assert_eq!(retries[0]["last_chance"], true);
    assert!(retries[0]["delay_ms"].as_f64().unwrap() < 1000.0);
    let give_up = events.iter().find(|e| e["event"] == "give-up").unwrap();
    assert_eq!(give_up["reason"], "max-time");
    assert_eq!(give_up["attempts"], 2);
}

/// A server's wait is never shortened into a last chance: a `Retry-After` past the deadline
/// ends the run at once. Nor is a wait after a success (`--consecutive`, `--restart`).
#[test]
fn hinted_waits_and_waits_after_a_success_are_not_cut_into_a_last_chance() {
    retry()
        .args(["--forever", "--max-time", "20s", "--http"])
        .args(sh(
            "printf 'HTTP/1.1 503 Busy\\r\\nRetry-After: 3600\\r\\n'; exit 22",
        ))
        .assert()
        .code(22)
        .stderr(predicate::str::contains("last before --max-time").not())
        .stderr(predicate::str::contains("would start past --max-time"));
    retry()
        .args([
            "--consecutive",
            "2",
            "--delays",
            "1h",
            "--max-time",
            "20s",
            "true",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("giving up after 1 attempt"));
    retry()
        .args(["--restart", "--delays", "1h", "--max-time", "20s", "true"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("attempt 1 succeeded"));
}

/// A wait that ends past what the system clock can count (about 292 billion years) still
/// crosses any --max-time, and is cut into the last chance.
#[test]
fn a_wait_past_the_clocks_range_crosses_max_time() {
    retry()
        .args(["-r", "1", "--max-time", "1s", "--jitter", "none"])
        .args(["--base", "500000000000y", "--max", "500000000000y", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the last before --max-time"))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn max_time_terminates_a_running_attempt() {
    let start = Instant::now();
    retry()
        .args(["--forever", "--max-time", "200ms", "sleep", "10"])
        .assert()
        .code(124);
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn max_time_0_is_no_limit() {
    retry()
        .args(["--max-time", "0", "-r", "0", "sleep", "0.2"])
        .assert()
        .code(0);
}

#[test]
fn timeout_limits_each_attempt_and_is_retried() {
    let start = Instant::now();
    let r = retry().args(["--retries", "2", "--base", "0", "--timeout", "100ms"]);
    let r = r.args(["sleep", "10"]);
    let output = r.command().output().unwrap();
    assert_eq!(output.status.code(), Some(124));
    let said = String::from_utf8_lossy(&output.stderr);
    for attempt in 1..=3 {
        assert!(
            said.contains(&format!("attempt {attempt}/3 failed (timed out)")),
            "{said}"
        );
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[test]
fn timeout_0_is_no_limit() {
    retry()
        .args(["--timeout", "0", "-r", "0", "sleep", "0.2"])
        .assert()
        .code(0);
}

#[test]
fn kill_signal_is_what_the_attempt_receives() {
    // A second gives the shell the time to set its trap, however loaded the machine (it
    // takes milliseconds); the trap ends the background sleep too, so that nothing of the
    // group is left to wait for. The two runs wait side by side.
    let runs = [("INT", "INT"), ("SIGUSR1", "USR1")].map(|(flag, trap)| {
        std::thread::spawn(move || {
            retry()
                .args(["-r", "0", "--timeout", "1s", "--kill-signal", flag])
                .args(sh(&format!(
                    "trap 'echo got-{trap}; kill $!; exit 9' {trap}; sleep 10 & wait"
                )))
                .assert()
                .code(124)
                .stdout(predicate::str::contains(format!("got-{trap}")));
        })
    });
    for run in runs {
        run.join().unwrap();
    }
}

#[test]
fn kill_after_escalates_to_sigkill() {
    let start = Instant::now();
    retry()
        .args(["-r", "0", "--timeout", "1s", "--kill-after", "300ms"])
        .args(sh("trap '' TERM; echo ready; while :; do sleep 0.05; done"))
        .assert()
        .code(124)
        .stdout(predicate::str::contains("ready"));
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(1300), "{took:?}");
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[test]
fn kill_after_0_kills_at_once() {
    let start = Instant::now();
    retry()
        .args(["-r", "0", "--timeout", "100ms", "--kill-after", "0"])
        .args(sh("trap '' TERM; while :; do sleep 0.05; done"))
        .assert()
        .code(124);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn splay_delays_the_first_attempt_and_counts_toward_max_time() {
    // A splay drawn up to 10s with a 50ms max-time: with this seed the draw exceeds it.
    let r = retry().args(["--splay", "10s", "--max-time", "50ms", "--seed", "1"]);
    let marker = r.path("ran");
    let script = format!("touch '{}'", marker.display());
    let r = r.args(sh(&script));
    r.assert().code(124);
    assert!(!marker.exists(), "no attempt may start");
}

#[test]
fn splay_waits_before_the_first_attempt() {
    let start = Instant::now();
    // seed 3 draws a splay in [0, 400ms]; --dry-run shows the same draw.
    let plan = retry()
        .args(["--dry-run", "--splay", "400ms", "--seed", "3"])
        .command()
        .output()
        .unwrap();
    let plan = String::from_utf8(plan.stdout).unwrap();
    let splay_line = plan
        .lines()
        .find(|l| l.trim_start().starts_with("splay"))
        .expect("splay row");
    let drawn = splay_line
        .split_whitespace()
        .nth(4)
        .expect("drawn column")
        .to_string();
    retry()
        .args(["--splay", "400ms", "--seed", "3", "-v", "true"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(format!(
            "splay: first attempt in {drawn}"
        )));
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// `--timeouts`: attempt n gets entry n, `0` is none, and the last entry repeats. Attempts 1, 3
/// and 4 hang and are cut; attempt 2, which has no limit, runs to its own end, twice the
/// others' limit. What the attempts were is read from the report, not from what they print: a
/// shell that starts late on a loaded machine is cut before it says anything, and is still an
/// attempt cut at its limit.
#[test]
fn each_attempt_gets_its_entry_of_the_timeouts_list() {
    let r = retry();
    let report = r.path("report.json");
    let r = r
        .args(["--timeouts", "300ms,0,300ms", "--retries", "3", "--delays", "0"])
        .args(["--report", report.to_str().unwrap()])
        .args(sh(
            "echo \"$RETRY_ATTEMPT:${RETRY_LAST_EXIT-unset}\"; case $RETRY_ATTEMPT in 2) sleep 0.6; exit 3;; *) exec sleep 60;; esac",
        ));
    let output = r.command().output().unwrap();
    assert_eq!(output.status.code(), Some(124));
    // Attempt 2 has no limit: it always says that attempt 1 was cut.
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.lines().any(|line| line == "2:124"), "{stdout}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.matches("timed out").count(), 3, "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let ends: Vec<(bool, Option<u64>)> = report["attempts_detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|attempt| (attempt["timed_out"] == true, attempt["exit"].as_u64()))
        .collect();
    assert_eq!(ends.len(), 4, "{report}");
    assert!(ends[0].0 && ends[2].0 && ends[3].0, "{report}");
    assert_eq!(ends[1], (false, Some(3)), "{report}");
}

/// A list given in the config file (an array) works as the flag does, and the flag replaces it.
#[test]
fn a_timeouts_list_from_the_config_file() {
    let r = retry();
    let file = r.write("cfg.toml", "[defaults]\ntimeouts = [\"300ms\", \"0\"]\n");
    let config = ["--config", file.to_str().unwrap()];
    let script = sh("case $RETRY_ATTEMPT in 1) exec sleep 60;; *) sleep 0.6; echo done;; esac");
    let output = r
        .command()
        .args(config)
        .args(["--retries", "1", "--delays", "0"])
        .args(&script)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "done\n");
    // The command line's one limit replaces the file's list.
    r.command()
        .args(config)
        .args(["--timeout", "300ms", "--retries", "1", "--delays", "0"])
        .args(&script)
        .assert()
        .code(124)
        .stdout("");
}
