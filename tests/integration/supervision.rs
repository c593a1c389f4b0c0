//! Keeping a command running: `--restart`, `--reset-after`, and `retry` as the first process of
//! a container (a PID namespace), where it reaps every orphan and ends on `docker stop`.

use std::fs;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::support::*;

/// The lines a script appended to `file` in the test's directory.
fn lines(r: &Retry, file: &str) -> Vec<String> {
    fs::read_to_string(r.path(file))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A script that records `RETRY_ATTEMPT RETRY_MAX_ATTEMPTS` in `seen` and exits with the
/// status `codes[attempt - 1]` (0 past the list).
fn recorder(r: &Retry, codes: &[u8]) -> Vec<String> {
    let seen = r.path("seen");
    let cases: String = codes
        .iter()
        .enumerate()
        .map(|(i, code)| format!("{}) exit {code};; ", i + 1))
        .collect();
    sh(&format!(
        "echo \"$RETRY_ATTEMPT $RETRY_MAX_ATTEMPTS\" >> '{}'; case $RETRY_ATTEMPT in {cases}esac; exit 0",
        seen.display()
    ))
}

#[test]
fn restart_starts_the_command_again_after_each_success_until_failures_in_a_row() {
    let r = retry();
    let script = recorder(&r, &[0, 0, 0, 0, 1, 0, 3, 3]);
    let r = r
        .args([
            "--restart",
            "--delays",
            "0",
            "--retries",
            "1",
            "--log-format",
            "json",
        ])
        .args(&script);
    let output = r.command().output().unwrap();
    assert_eq!(output.status.code(), Some(3), "the last failure's status");
    let seen: Vec<String> = (1..=8).map(|n| format!("{n} 2")).collect();
    assert_eq!(lines(&r, "seen"), seen, "RETRY_ATTEMPT never resets");
    let events = json_events(&output.stderr);
    let outcomes: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "attempt")
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "success", "success", "success", "success", "failure", "success", "failure", "failure"
        ]
    );
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "reset" || e["event"] == "success"),
        "a success under --restart is no reset, and no success ends this run"
    );
    let give_up = events.last().unwrap();
    assert_eq!(give_up["event"], "give-up");
    assert_eq!(give_up["reason"], "exhausted");
}

/// A restart after a success is due after d(1); when that falls past `--max-time`, the run ends
/// there with 0. The wait is an hour and the deadline half a minute, so the deadline falls in
/// the wait however slowly the attempt starts (where a deadline falls within a wait or an
/// attempt, to the millisecond, is the driver's fake-clock unit tests' to hold).
#[test]
fn restart_ended_by_max_time_while_waiting_after_a_success_exits_0() {
    let r = retry();
    let script = recorder(&r, &[]);
    let r = r
        .args(["--restart", "--delays", "1h", "--max-time", "30s"])
        .args(&script);
    r.assert().code(0).stderr(
        predicate::str::contains("succeeded after")
            .and(predicate::str::contains(
                "; not restarting: the next attempt, due in",
            ))
            .and(predicate::str::contains(
                ", would start past --max-time; done in",
            )),
    );
    assert_eq!(lines(&r, "seen"), ["1 6"]);
}

#[test]
fn on_success_runs_after_every_success_under_restart() {
    let r = retry();
    let script = recorder(&r, &[0, 0, 0, 4]);
    let hooks = r.path("hooks");
    let r = r
        .args(["--restart", "--delays", "0", "--retries", "0"])
        .args([format!(
            "--on-success=echo $RETRY_ATTEMPT >> '{}'",
            hooks.display()
        )])
        .args(&script);
    r.assert().code(4);
    assert_eq!(lines(&r, "hooks"), ["1", "2", "3"]);
}

/// Attempts 1 and 2 fail at once, 3 fails after running past `--reset-after`, then 4, 5 and 6
/// fail at once: the limit of 3 counts 4, 5 and 6 only, and the waits start over after 3.
#[test]
fn a_failure_that_ran_past_reset_after_starts_the_schedule_and_the_limit_afresh() {
    let r = retry();
    let seen = r.path("seen");
    let script = sh(&format!(
        "echo \"$RETRY_ATTEMPT $RETRY_MAX_ATTEMPTS\" >> '{}'; [ $RETRY_ATTEMPT = 3 ] && sleep 0.2; exit 1",
        seen.display()
    ));
    let r = r
        .args([
            "--reset-after",
            "150ms",
            "--retries",
            "2",
            "--delays",
            "1ms,2ms,3ms",
        ])
        .args(["--log-format", "json"])
        .args(&script);
    let output = r.command().output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let seen: Vec<String> = (1..=6).map(|n| format!("{n} 3")).collect();
    assert_eq!(lines(&r, "seen"), seen);
    let events = json_events(&output.stderr);
    let resets: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "reset").collect();
    assert_eq!(resets.len(), 1, "{events:?}");
    assert_eq!(resets[0]["attempt"], 3);
    assert!(resets[0]["ran_ms"].as_u64().unwrap() >= 200);
    let delays: Vec<f64> = events
        .iter()
        .filter(|e| e["event"] == "retry")
        .map(|e| e["delay_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(delays, [1.0, 2.0, 1.0, 2.0, 3.0]);

    // The text line says why the wait is the first delay again.
    let r = retry();
    r.args([
        "--reset-after",
        "150ms",
        "--retries",
        "1",
        "--delays",
        "1ms,2ms",
    ])
    .args(sh("[ $RETRY_ATTEMPT = 1 ] && sleep 0.2; exit 1"))
    .assert()
    .code(1)
    // (How long after is the machine's: 200 ms of sleep took 386 ms under load.)
    .stderr(predicate::str::contains(
        "retry: attempt 1/2 failed (exit 1) after ",
    ))
    .stderr(predicate::str::contains(
        "next attempt in 1ms (it ran past --reset-after: the schedule starts over)",
    ))
    .stderr(predicate::str::contains(
        "attempt 3 (2/2 since attempt 1) failed",
    ));
}

#[test]
fn restart_and_reset_after_misuse() {
    for args in [
        &["--restart", "--consecutive", "2"][..],
        &["--restart", "--invert"],
        &["--reset-after", "0"],
        &["--reset-after", "-1s"],
        &["--reset-after", "soon"],
    ] {
        retry()
            .args(args)
            .args(["true"])
            .assert()
            .misuse(if args[0] == "--restart" {
                "--restart"
            } else {
                "--reset-after"
            });
    }
}

/// `retry` in the namespace (PID 1 there), found as `unshare`'s one child.
fn retry_under(unshare: u32) -> i32 {
    eventually("unshare starts retry", || {
        children(unshare as i32).len() == 1
    });
    children(unshare as i32)[0]
}

/// A worker under `retry --restart --forever` as a container's first process: every attempt
/// leaves 100 orphans behind that exit over the next moments, 1,000 in all; `retry`, their
/// parent now, reaps every one. Then `docker stop`'s SIGTERM ends the attempt and `retry` with 143.
#[test]
fn as_pid_1_it_reaps_every_orphan_and_ends_on_docker_stop() {
    let Some(namespace) = pid_namespace() else {
        return;
    };
    let _heavy = one_heavy_test_at_a_time();
    let r = retry();
    let orphans = r.path("orphans");
    let done = r.path("done");
    let script = format!(
        "if [ $RETRY_ATTEMPT -gt 10 ]; then touch '{done}'; exec sleep 60; fi
         for i in $(seq 100); do (sleep 0.0$((i % 10)); echo x >> '{orphans}') & done",
        done = done.display(),
        orphans = orphans.display()
    );
    let r = r.args([
        "--restart",
        "--forever",
        "--delays",
        "0",
        "--kill-after",
        "5s",
        "--",
    ]);
    let r = r.args(["sh", "-c", &script]);
    let mut child = Running(r.spawn_under(namespace));
    let retry = retry_under(child.0.id());
    eventually("the eleventh attempt starts", || done.exists());
    eventually("all 1,000 orphans have exited", || {
        fs::read_to_string(&orphans).is_ok_and(|text| text.lines().count() == 1000)
    });
    // An orphan writes its line a moment before it exits; a zombie is still a child, so
    // one child left (the running attempt) means every orphan was reaped.
    eventually(
        "every orphan is reaped: only the running attempt is left",
        || children(retry).len() == 1,
    );
    let left = children(retry);
    assert!(
        left.iter().all(|&pid| state(pid).is_some_and(|s| s != 'Z')),
        "{left:?}"
    );

    let since = Instant::now();
    // SAFETY: kill(2) on a pid this test started.
    assert_eq!(unsafe { libc::kill(retry, libc::SIGTERM) }, 0);
    assert_eq!(
        status_within(&mut child.0, since, Duration::from_secs(4)),
        143
    );
}

/// `docker stop` sends SIGTERM and, 10 s later, SIGKILL. An attempt that ignores SIGTERM gets
/// SIGKILL from `retry` after `--kill-after`, so `retry` ends first, with 143; SIGINT (Ctrl-C
/// on `docker run -it`) likewise, with 130.
#[test]
fn as_pid_1_a_worker_that_ignores_sigterm_is_killed_after_kill_after() {
    let Some(namespace) = pid_namespace() else {
        return;
    };
    for (signal, status) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let r = retry();
        let ready = r.path("ready");
        let script = format!(
            "trap '' TERM INT; touch '{}'; while :; do sleep 1; done",
            ready.display()
        );
        let r = r.args([
            "--restart",
            "--forever",
            "--kill-after",
            "300ms",
            "--",
            "sh",
            "-c",
            &script,
        ]);
        let mut child = Running(r.spawn_under(namespace));
        let retry = retry_under(child.0.id());
        eventually("the worker is up", || ready.exists());
        let since = Instant::now();
        // SAFETY: kill(2) on a pid this test started.
        assert_eq!(unsafe { libc::kill(retry, signal) }, 0);
        assert_eq!(
            status_within(&mut child.0, since, Duration::from_secs(5)),
            status
        );
        assert!(
            since.elapsed() >= Duration::from_millis(300),
            "SIGKILL only after --kill-after"
        );
    }
}

/// A supervisor holds a flat number of descriptors over any number of restarts, whatever
/// background processes they leave: each attempt here leaves one that outlives the wait for
/// its output (so the copy of its held stdout goes on), then writes and ends; the next attempt
/// waits for it to have ended before it counts what `retry` holds. Under a limit of 24
/// descriptors, one held for ever per attempt would stop the run within a few restarts; the
/// counts do not grow. A count may catch a copy that has not yet closed its pipe, or an ended copy not yet
/// forgotten (that happens as the next attempt starts), the more so on a loaded machine: so the
/// fewest of the last four counts is held to the most of four early ones, as for the
/// long-lived writers below. One descriptor kept for good per attempt raises every count after
/// it (with the ended copies never forgotten: 13, 14, 15, 16, ... 22).
#[test]
fn restarts_that_leave_background_writers_hold_a_flat_number_of_descriptors() {
    const ATTEMPTS: usize = 14;
    let r = retry();
    let (counts, done) = (r.path("counts"), r.path("done"));
    let script = format!(
        "[ $RETRY_ATTEMPT -gt {ATTEMPTS} ] && exit 3
         while [ $RETRY_ATTEMPT -gt 1 ] && [ ! -e '{done}.'$((RETRY_ATTEMPT - 1)) ]; do sleep 0.01; done
         until grep -q poll /proc/$PPID/wchan; do n=$((${{n:-0}}+1)); [ $n -lt 2000 ] || break; sleep 0.01; done
         ls /proc/$PPID/fd | wc -l >> '{counts}'
         (sleep 0.15; echo late; exec >/dev/null 2>&1; touch '{done}.'$RETRY_ATTEMPT) &
         echo tick",
        counts = counts.display(),
        done = done.display(),
    );
    let r = r
        .args(["--restart", "--retries", "0", "--delays", "0"])
        .args(["--failed-output", "drop"])
        .args(sh(&script));
    let output = r.command_with_open_files(24).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let counts = descriptor_counts(&r, ATTEMPTS, &output);
    let early = counts[2..6].iter().max().unwrap();
    let late = counts[ATTEMPTS - 4..].iter().min().unwrap();
    assert!(late <= early, "{counts:?}");
}

/// The descriptor counts each attempt wrote to the file `counts`, one per attempt.
fn descriptor_counts(r: &Retry, attempts: usize, output: &std::process::Output) -> Vec<usize> {
    let counts: Vec<usize> = lines(r, "counts")
        .iter()
        .map(|count| count.trim().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), attempts, "{output:?}");
    counts
}

/// The same, with background writers that live as long as the run: each attempt leaves one
/// that writes only once the last attempt has begun (or `retry` has gone, should the test
/// fail). Their copies go to processes of their own, so `retry`'s count stays flat under a
/// limit of 32 descriptors (room for two attempts' copies, and a third's being handed over;
/// one attempt's held for ever would pass it by the sixth), and every line they write at the
/// end still comes through, once.
#[test]
fn restarts_that_leave_long_lived_background_writers_hold_a_flat_number_of_descriptors() {
    const ATTEMPTS: usize = 14;
    let r = retry();
    let (counts, last) = (r.path("counts"), r.path("last"));
    let script = format!(
        "if [ $RETRY_ATTEMPT -gt {ATTEMPTS} ]; then touch '{last}'; exit 3; fi
         until grep -q poll /proc/$PPID/wchan; do n=$((${{n:-0}}+1)); [ $n -lt 2000 ] || break; sleep 0.01; done
         ls /proc/$PPID/fd | wc -l >> '{counts}'
         (while [ ! -e '{last}' ] && kill -0 $PPID 2>/dev/null; do sleep 0.02; done; echo late $RETRY_ATTEMPT) &
         echo tick",
        counts = counts.display(),
        last = last.display(),
    );
    // Held output: its streams are copied (under the default, `pass`, nothing is).
    let r = r
        .args(["--restart", "--retries", "0", "--delays", "0"])
        .args(["--failed-output", "drop"])
        .args(sh(&script));
    let output = r.command_with_open_files(32).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let counts = descriptor_counts(&r, ATTEMPTS, &output);
    // A count may catch the copies of the attempt before last still handing over (one more
    // attempt's descriptors); one held for ever raises every count after it.
    let early = counts[2..6].iter().max().unwrap();
    let late = counts[ATTEMPTS - 4..].iter().min().unwrap();
    assert!(late <= early, "{counts:?}");
    // Held output that no attempt owns any more goes to stderr.
    let said = String::from_utf8_lossy(&output.stderr);
    for attempt in 1..=ATTEMPTS {
        let line = format!("late {attempt}\n");
        assert_eq!(said.matches(&line).count(), 1, "{said}");
    }
}

/// Under `--stdin replay`, an attempt that leaves a background process holding its stdin
/// unread leaves no feeder behind: the feeder waiting on that full pipe is woken and ends when
/// the attempt does, so `retry`'s descriptors stay flat over the restarts (under a limit of
/// 32, one held for ever per attempt would stop the run by the 20th).
#[test]
fn replayed_stdin_held_unread_by_background_processes_holds_a_flat_number_of_descriptors() {
    const ATTEMPTS: usize = 24;
    let r = retry();
    let (counts, last) = (r.path("counts"), r.path("last"));
    let input = r.write("input", &"x".repeat(1024 * 1024));
    let script = format!(
        "if [ $RETRY_ATTEMPT -gt {ATTEMPTS} ]; then touch '{last}'; exit 3; fi
         until grep -q poll /proc/$PPID/wchan; do n=$((${{n:-0}}+1)); [ $n -lt 2000 ] || break; sleep 0.01; done
         ls /proc/$PPID/fd | wc -l >> '{counts}'
         exec 3<&0
         (while [ ! -e '{last}' ] && kill -0 $PPID 2>/dev/null; do sleep 0.02; done) <&3 >/dev/null 2>&1 &
         exit 0",
        counts = counts.display(),
        last = last.display(),
    );
    let r = r
        .args([
            "--stdin",
            "replay",
            "--restart",
            "--retries",
            "0",
            "--delays",
            "0",
        ])
        .args(sh(&script));
    let output = r
        .command_with_open_files(32)
        .pipe_stdin(&input)
        .unwrap()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let counts = descriptor_counts(&r, ATTEMPTS, &output);
    let early = counts[2..6].iter().max().unwrap();
    let late = counts[ATTEMPTS - 4..].iter().max().unwrap();
    assert!(late <= &(early + 4), "{counts:?}");
}
