//! `--failed-output pass|drop|on-give-up`: the output of failed attempts that another follows,
//! let through, dropped, or kept for the give-up, with the final attempt's passed on byte for
//! byte.

use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;

/// An attempt that writes `out N` to stdout and `err N` to stderr, and succeeds from attempt
/// `succeed_from` on (never when 0). It pauses between the two, so that held output, which
/// keeps the order in which `retry` read its two pipes, keeps this one.
fn noisy(succeed_from: u32) -> Vec<String> {
    sh(&format!(
        "echo \"out $RETRY_ATTEMPT\"; sleep 0.05; echo \"err $RETRY_ATTEMPT\" >&2; \
         [ {succeed_from} -gt 0 ] && [ $RETRY_ATTEMPT -ge {succeed_from} ]"
    ))
}

#[test]
fn on_give_up_drops_the_failed_attempts_output_when_a_retry_rescues_the_run() {
    let output = retry()
        .args(["--failed-output", "on-give-up", "--base", "1ms", "--quiet"])
        .args(noisy(3))
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out 3\n");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "err 3\n",
        "cron mails nothing"
    );
}

/// Under `on-give-up`, the earlier attempts' output comes first, in attempt order, each behind
/// its header, and then the final attempt's (fine point 35): a mail reads 1, 2, then 3.
#[test]
fn on_give_up_writes_the_earlier_attempts_in_order_before_the_final_one() {
    let output = retry()
        .args([
            "--failed-output",
            "on-give-up",
            "--base",
            "1ms",
            "--retries",
            "2",
        ])
        .args(noisy(0))
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out 3\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let replay = &stderr[stderr.find("retry: output of attempt 1").expect("a header")..];
    assert!(
        replay.starts_with(
            "retry: output of attempt 1 (exit 1):\nout 1\nerr 1\n\
             retry: output of attempt 2 (exit 1):\nout 2\nerr 2\n\
             err 3\n\
             retry: attempt 3/3 failed (exit 1) after "
        ),
        "{stderr}"
    );
    assert_eq!(stderr.matches("out 1").count(), 1, "once, at the end");
}

/// A `--quiet` cron job (`2>&1` into one mail) that gave up reads attempt 1, attempt 2, each
/// behind its header, then the final attempt: whatever ends the run (the limit, a permanent
/// failure, `--max-time`'s last chance).
#[test]
fn a_quiet_cron_mail_reads_the_attempts_in_order() {
    let script = sh(
        "echo \"out $RETRY_ATTEMPT\"; sleep 0.05; echo \"err $RETRY_ATTEMPT\" >&2; \
         [ $RETRY_ATTEMPT -ge 3 ] && exit 3; exit 1",
    );
    for ending in [
        &["--retries", "2", "--delays", "0"][..],
        &["--forever", "--delays", "0", "--stop-on-exit", "3"],
        &[
            "--forever",
            "--delays",
            "0,0,1h",
            "--max-time",
            "20s",
            "--retry-on-exit",
            "1",
        ],
    ] {
        let r = retry();
        let mail = r.path("mail");
        let r = r
            .args(["--failed-output", "on-give-up", "--quiet"])
            .args(ending)
            .args(&script);
        let file = fs::File::create(&mail).unwrap();
        let mut child = r.spawn_with(file.try_clone().unwrap(), file);
        let status = wait_bounded(&mut child);
        assert_ne!(shell_status(status), 0, "{ending:?}");
        assert_eq!(
            fs::read_to_string(&mail).unwrap(),
            "retry: output of attempt 1 (exit 1):\nout 1\nerr 1\n\
             retry: output of attempt 2 (exit 1):\nout 2\nerr 2\n\
             out 3\nerr 3\n",
            "{ending:?}"
        );
    }
}

/// An attempt whose output does not end its line: the next header, and the final attempt's
/// output, still start lines of their own, so a mail tells the attempts apart.
#[test]
fn each_replay_ends_its_line() {
    let output = retry()
        .args([
            "-q",
            "--failed-output",
            "on-give-up",
            "-a",
            "3",
            "--delays",
            "0",
        ])
        .args(sh("printf \"partial-$RETRY_ATTEMPT\" >&2; exit 1"))
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "retry: output of attempt 1 (exit 1):\npartial-1\n\
         retry: output of attempt 2 (exit 1):\npartial-2\n\
         partial-3"
    );
}

/// stdout and stderr into one pipe (`2>&1`, as cron and CI take them): held output comes out
/// as the attempt interleaved it, the final attempt's and each kept one's alike. The command
/// pauses between streams, so that its two pipes are read in that order.
#[test]
fn held_output_keeps_the_order_of_its_two_streams() {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let script = sh(
        "echo \"out $RETRY_ATTEMPT\"; sleep 0.05; echo \"err $RETRY_ATTEMPT\" >&2; \
         sleep 0.05; echo \"out $RETRY_ATTEMPT again\"; exit 1",
    );
    let r = retry()
        .args([
            "--failed-output",
            "on-give-up",
            "--quiet",
            "-r",
            "1",
            "--base",
            "1ms",
        ])
        .args(&script);
    let mut child = r.spawn_with(writer.try_clone().unwrap(), writer);
    let mut all = String::new();
    use std::io::Read;
    reader.read_to_string(&mut all).unwrap();
    assert_eq!(shell_status(wait_bounded(&mut child)), 1);
    assert_eq!(
        all,
        "retry: output of attempt 1 (exit 1):\nout 1\nerr 1\nout 1 again\n\
         out 2\nerr 2\nout 2 again\n",
        "the first attempt's, behind its header, then the final one's"
    );
}

/// A stderr that cannot be written (its reader gone) does not cost stdout any of the final
/// attempt's output: each stream is written on while it can be.
#[test]
fn stdout_goes_out_whole_when_stderr_cannot_be_written() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let r = retry()
        .args(["--failed-output", "drop", "-r", "0"])
        .args(sh(
            "echo first >&2; sleep 0.05; echo then; sleep 0.05; echo last >&2; echo end",
        ));
    let mut child = r.spawn_with(Stdio::piped(), writer);
    let stdout = stdout_of(&mut child);
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    assert_eq!(stdout, "then\nend\n");
}

/// Under `--restart`, a success is what the failures before it led to: their kept output is
/// forgotten, and a give-up later replays only the failures after the last success.
#[test]
fn a_success_under_restart_forgets_the_output_kept_before_it() {
    let output = retry()
        .args(["--failed-output", "on-give-up", "--restart", "-r", "1"])
        .args(["--delays", "1ms", "--quiet"])
        .args(sh("echo \"out $RETRY_ATTEMPT\"; [ $RETRY_ATTEMPT = 2 ]"))
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out 2\nout 4\n");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "retry: output of attempt 3 (exit 1):\nout 3\n"
    );
}

/// What a background process of a dropped attempt writes after that attempt ended belongs to
/// no attempt: it goes on to stderr as it comes, not into a spool that nothing writes out.
#[test]
fn a_background_writer_of_a_dropped_attempt_goes_on_to_stderr() {
    let output = retry()
        .args([
            "--failed-output",
            "drop",
            "-r",
            "1",
            "--base",
            "1ms",
            "--quiet",
        ])
        .args(sh(
            "if [ $RETRY_ATTEMPT = 1 ]; then (sleep 0.3; echo late >&2) & echo early >&2; \
             else sleep 1; fi; exit 1",
        ))
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "late\n");
}

#[test]
fn drop_keeps_only_the_final_attempts_output() {
    for succeed_from in [0, 3] {
        let output = retry()
            .args([
                "--failed-output",
                "drop",
                "--base",
                "1ms",
                "--retries",
                "2",
                "--quiet",
            ])
            .args(noisy(succeed_from))
            .command()
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&output.stdout), "out 3\n");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "err 3\n");
    }
}

#[test]
fn pass_lets_everything_through_as_it_comes() {
    let output = retry()
        .args(["--failed-output", "pass", "--base", "1ms", "--quiet"])
        .args(noisy(2))
        .command()
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out 1\nout 2\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "err 1\nerr 2\n");
}

/// Binary bytes go through untouched: the final attempt's to stdout, and under `--quiet` the
/// earlier attempts' to stderr exactly as they wrote them, in order, each behind its header
/// (`--quiet` silences neither), then the final attempt's stderr. (The pause
/// lets `retry` read all of stdout before stderr: it keeps the order in which it read them.)
#[test]
fn binary_output_is_kept_and_replayed_byte_for_byte() {
    let r = retry();
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    bytes.extend_from_slice(b"\r\n\0\xff no newline at the end");
    let data = r.write_with_mode("data.bin", &bytes, 0o644);
    let script = sh(&format!(
        "cat '{0}'; sleep 0.05; printf 'e%s' $RETRY_ATTEMPT >&2; exit 4",
        data.display()
    ));
    let output = r
        .args([
            "--failed-output",
            "on-give-up",
            "--quiet",
            "--base",
            "1ms",
            "--retries",
            "2",
        ])
        .args(&script)
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4));
    assert!(
        output.stdout == bytes,
        "stdout is the final attempt's, exactly"
    );
    let mut replayed = Vec::new();
    for attempt in [1, 2] {
        replayed.extend_from_slice(
            format!("retry: output of attempt {attempt} (exit 4):\n").as_bytes(),
        );
        replayed.extend_from_slice(&bytes);
        // A replay ends its line, so the next header (or the final output) starts its own.
        replayed.extend_from_slice(format!("e{attempt}\n").as_bytes());
    }
    replayed.extend_from_slice(b"e3");
    assert!(
        output.stderr == replayed,
        "attempts 1 and 2 in order behind their headers, then the final stderr"
    );
}

/// 200 MiB of failed output held for the give-up: memory stays bounded (the spool spills to a
/// private file), and all of it comes out.
#[test]
fn two_hundred_mib_of_failed_output_is_held_in_bounded_memory() {
    let r = retry();
    let written = r.path("stderr");
    let r = r
        .args([
            "--failed-output",
            "on-give-up",
            "--keep-max",
            "0",
            "--quiet",
            "--base",
            "0",
            "--retries",
            "2",
        ])
        .args(sh("head -c 104857600 /dev/zero; exit 1"));
    let mut child = r.spawn_with(Stdio::null(), fs::File::create(&written).unwrap());
    let (status, peak_kib) = wait_with_peak_rss(&mut child);
    assert_eq!(status.code(), Some(1));
    let replayed = fs::metadata(&written).unwrap().len();
    let headers = "retry: output of attempt 1 (exit 1):\n".len() * 2;
    // Each replay ends its line: NUL bytes end none, so one newline follows each.
    assert_eq!(
        replayed,
        2 * (104_857_600 + 1) + headers as u64,
        "both kept attempts behind their headers, and nothing else"
    );
    assert!(peak_kib < 32 * 1024, "peak RSS {peak_kib} KiB");
}

/// Patterns still read the output as it comes, while it is held.
#[test]
fn patterns_read_held_output() {
    let output = retry()
        .args(["--failed-output", "drop", "--base", "1ms", "--quiet"])
        .args(["--until-stdout", "^ready$"])
        .args(sh(
            "[ $RETRY_ATTEMPT -ge 2 ] && echo ready || echo 'not yet'; exit 1",
        ))
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ready\n");
}

/// A signal to `retry` ends the run without success: the running attempt's output is the
/// final one's, and what was kept comes before it.
#[test]
fn a_signal_to_retry_writes_what_was_kept() {
    let r = retry();
    let mark = r.path("second");
    let script = sh(&format!(
        "echo \"out $RETRY_ATTEMPT\"; echo \"err $RETRY_ATTEMPT\" >&2; \
         [ $RETRY_ATTEMPT -ge 2 ] && {{ touch '{}'; sleep 30; }}; exit 1",
        mark.display()
    ));
    let r = r
        .args(["--failed-output", "on-give-up", "--base", "1ms"])
        .args(&script);
    let mut child = r.spawn_with(Stdio::piped(), Stdio::piped());
    eventually("the second attempt runs", || mark.exists());
    let since = Instant::now();
    send(&child, libc::SIGTERM);
    let stdout = stdout_of(&mut child);
    let stderr = stderr_of(&mut child);
    assert_eq!(
        status_within(&mut child, since, Duration::from_secs(5)),
        143
    );
    assert_eq!(stdout, "out 2\n");
    assert!(stderr.contains("out 1\n"), "{stderr}");
    // Within one attempt, its two streams come in the order `retry` read them.
    let (kept, final_attempt) = (
        stderr
            .find("retry: output of attempt 1 (exit 1):\n")
            .expect("the kept output"),
        stderr.find("err 2\n").expect("the final attempt's stderr"),
    );
    assert!(
        kept < final_attempt && stderr[kept..final_attempt].contains("err 1\n"),
        "{stderr}"
    );
}

/// The kept output goes to stderr at the give-up; a reader there that never reads does not
/// keep a signal from ending `retry` at once.
#[test]
fn a_signal_ends_retry_while_kept_output_waits_for_a_stalled_reader() {
    let r = retry();
    let script = format!(
        "if [ $RETRY_ATTEMPT = 2 ]; then echo $$ > '{}'; else head -c 1048576 /dev/zero; fi; exit 1",
        r.path("pid").display()
    );
    let r = r
        .args(["--failed-output", "on-give-up", "-r", "1", "--base", "1ms"])
        .args(sh(&script));
    // stderr into a pipe that nothing reads: 1 MiB kept, a pipe of 64 KiB.
    let mut child = r.spawn_with(Stdio::null(), Stdio::piped());
    let stderr = child.stderr.take().expect("piped stderr");
    let attempt = pid_in(&r.path("pid"));
    eventually("the final attempt has ended", || !alive(attempt));
    // The kept output is written out in pieces, each once the pipe has room for it, so the
    // pipe need not fill to its last byte (`pipe_full`) before the write-out waits.
    let retry = child.id() as i32;
    eventually("retry waits to write the rest", || {
        waits_to_write(retry, &stderr)
    });
    sigterm_ends_retry_at_once(child);
}

/// An interrupted run's final attempt goes to a stdout that nobody reads only while it is
/// taken; what is not taken is not an answer and is not said to be lost.
#[test]
fn an_interrupted_run_leaves_a_stalled_stdout_without_a_word() {
    let r = retry();
    let mark = r.path("running");
    let script = format!(
        "head -c 1048576 /dev/zero; touch '{}'; exec sleep 30",
        mark.display()
    );
    let r = r
        .args(["--failed-output", "drop", "-r", "0"])
        .args(sh(&script));
    // stdout into a pipe that nothing reads; stderr read to the end.
    let mut child = r.spawn_with(Stdio::piped(), Stdio::piped());
    eventually("the attempt has written its output", || mark.exists());
    let sent = Instant::now();
    send(&child, libc::SIGTERM);
    let stderr = stderr_of(&mut child);
    assert_eq!(status_within(&mut child, sent, Duration::from_secs(2)), 143);
    assert!(!stderr.contains("did not take it"), "{stderr}");
    assert!(stderr.contains("retry: stopped by SIGTERM"), "{stderr}");
}

/// Kept output waits for a reader that never reads only until the run's `--max-time` and its
/// grace have passed; the run's answer stands.
#[test]
fn kept_output_does_not_hold_the_run_past_max_time_for_a_stalled_reader() {
    let r = retry()
        .args(["--failed-output", "on-give-up", "-r", "1", "--base", "1ms"])
        .args(["--max-time", "1s", "--kill-after", "100ms"])
        .args(sh("head -c 1048576 /dev/zero; exit 3"));
    // Before the spawn: `retry`'s own start, and so its deadline, cannot come earlier.
    let started = Instant::now();
    let mut child = r.spawn_with(Stdio::null(), Stdio::piped());
    assert_eq!(
        status_within(&mut child, started, Duration::from_secs(5)),
        3
    );
    assert!(started.elapsed() >= Duration::from_millis(1100));
}

/// A signal to `retry` makes the running attempt final, and what was kept then goes out only
/// while the reader takes it: one signal is enough to end `retry`.
#[test]
fn an_interrupted_run_does_not_wait_for_a_stalled_reader_of_kept_output() {
    let r = retry();
    let mark = r.path("second");
    let script = format!(
        "[ $RETRY_ATTEMPT -ge 2 ] && {{ touch '{}'; exec sleep 30; }}; head -c 1048576 /dev/zero; exit 1",
        mark.display()
    );
    let r = r
        .args(["--failed-output", "on-give-up", "--base", "1ms"])
        .args(sh(&script));
    let child = r.spawn_with(Stdio::null(), Stdio::piped());
    eventually("the second attempt runs", || mark.exists());
    sigterm_ends_retry_at_once(child);
}

#[test]
fn the_header_is_an_event_in_a_json_log() {
    let output = retry()
        .args([
            "--failed-output",
            "on-give-up",
            "--base",
            "1ms",
            "--retries",
            "1",
        ])
        .args(["--log-format", "json"])
        .args(noisy(0))
        .command()
        .output()
        .unwrap();
    // The command's own stderr shares the stream: keep the lines that are objects.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let header = events
        .iter()
        .find(|e| e["event"] == "failed-output")
        .unwrap();
    assert_eq!(header["attempt"], 1);
    assert_eq!(header["exit_code"], 1);
}

#[test]
fn failed_output_misuse() {
    for args in [
        &["--failed-output", "drop", "--hold-stdout"][..],
        &["--failed-output", "on-give-up", "--hold-stdout"],
        &["--failed-output", "later"],
    ] {
        retry()
            .args(args)
            .args(["true"])
            .assert()
            .misuse("--failed-output");
    }
}

/// Kept output that no temporary file can take (TMPDIR missing) stays in memory, and that is
/// said once, as for the other spools: a line, and one `spill-failed` event.
#[test]
fn kept_output_without_a_temporary_file_is_said_once() {
    let run = |format: &str| {
        retry()
            .args(["--failed-output", "on-give-up", "-r", "3", "--delays", "0"])
            .args(["--log-format", format])
            .args(sh("echo out; echo err >&2; exit 1"))
            .command()
            .env("TMPDIR", "/nonexistent/retry-test")
            .output()
            .unwrap()
    };
    let plain = run("text");
    assert_eq!(plain.status.code(), Some(1));
    let said = String::from_utf8_lossy(&plain.stderr);
    assert_eq!(
        said.matches("cannot create a temporary file in /nonexistent/retry-test")
            .count(),
        1,
        "{said}"
    );
    assert!(said.contains("in memory instead"), "{said}");
    let json = run("json");
    let events: Vec<_> = String::from_utf8_lossy(&json.stderr)
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["event"] == "spill-failed")
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
}

/// Kept output that no temporary file can take counts toward the 64 MiB that all spools may
/// hold in memory: 30 attempts of 3.9 MB each (under the 4 MiB a spool holds before it tries
/// a file), kept whole, stay within it (the attempts past it wait, as for a slow reader, until
/// their --timeout), where they once took 120 MB. And what `retry` holds is what the spools
/// count: with each attempt's copy threads ending late, as on a loaded machine, so that every
/// attempt copies on threads (and glibc arenas) of its own, freed spools once stayed resident
/// (119 MiB; 190 MiB seen in the suite). `retry`'s own peak (VmHWM), not wait4's `ru_maxrss`,
/// which counts the image of the process that spawned it. Nothing was said of a spill for a run
/// that had nothing to keep.
#[test]
fn kept_output_without_a_temporary_file_stays_within_the_memory_bound() {
    let r = retry()
        .args(["--failed-output", "on-give-up", "--keep-max", "0"])
        .args(["-r", "30", "--delays", "0", "--timeout", "100ms"])
        .args(sh("head -c 3900000 /dev/zero; exit 1"));
    let mut child = r
        .std_command()
        .env("TMPDIR", "/nonexistent/retry-test")
        .env("RETRY_INJECT_LATE_THREAD_END", "2000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (_, peak_kib) = wait_with_peak_rss(&mut child);
    // 64 MiB held, and 32 MiB for the rest of `retry` (a debug build: under 16 MiB in practice).
    assert!(peak_kib < 96 * 1024, "peak RSS {peak_kib} KiB");
    let quiet = retry()
        .args(["--failed-output", "on-give-up", "-r", "1", "--delays", "0"])
        .args(["false"])
        .command()
        .env("TMPDIR", "/nonexistent/retry-test")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&quiet.stderr)
            .matches("temporary file")
            .count(),
        0
    );
}

/// The final attempt is the one after which the run ends, whatever ends it: its stdout goes to
/// stdout and its stderr to stderr, byte for byte, under `drop` and `on-give-up` alike, when
/// the budget refuses the retry.
#[test]
fn the_attempt_the_budget_ends_the_run_after_is_final() {
    for mode in ["drop", "on-give-up"] {
        let state = tempfile::tempdir().unwrap();
        let output = retry()
            .args([format!("--state={}", state.path().join("s").display())])
            .args([
                "--budget",
                "b",
                "--budget-floor",
                "1/1m",
                "--budget-ratio",
                "0",
            ])
            .args(["--failed-output", mode, "--delays", "0", "--quiet"])
            .args(noisy(0))
            .command()
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{mode}");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "out 2\n", "{mode}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        if mode == "drop" {
            assert_eq!(stderr, "err 2\n");
        } else {
            assert_eq!(
                stderr, "retry: output of attempt 1 (exit 1):\nout 1\nerr 1\nerr 2\n",
                "kept, then the final attempt's"
            );
        }
    }
}

/// ... when the breaker opens at that attempt's failure ...
#[test]
fn the_attempt_the_breaker_ends_the_run_after_is_final() {
    let state = tempfile::tempdir().unwrap();
    let output = retry()
        .args([format!("--state={}", state.path().join("s").display())])
        .args(["--breaker", "b", "--breaker-threshold", "1"])
        .args(["--failed-output", "drop", "--delays", "0", "--quiet"])
        .args(noisy(0))
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out 1\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "err 1\n");
}

/// ... and when a signal to `retry` ends the wait after it.
#[test]
fn the_attempt_before_a_signal_in_the_wait_is_final() {
    for mode in ["drop", "on-give-up"] {
        let r = retry();
        let said = r.path("said");
        let r = r
            .args(["--failed-output", mode, "--delays", "1h"])
            .args(noisy(0));
        let mut child = r.spawn_with(Stdio::piped(), fs::File::create(&said).unwrap());
        eventually("the wait begins", || {
            fs::read_to_string(&said).is_ok_and(|text| text.contains("next attempt in"))
        });
        let since = Instant::now();
        send(&child, libc::SIGTERM);
        assert_eq!(
            status_within(&mut child, since, Duration::from_secs(5)),
            143,
            "{mode}"
        );
        assert_eq!(stdout_of(&mut child), "out 1\n", "{mode}");
        let stderr = fs::read_to_string(&said).unwrap();
        assert!(
            stderr.contains("\nerr 1\nretry: stopped by SIGTERM"),
            "{mode}: {stderr}"
        );
        assert!(!stderr.contains("output of attempt"), "{mode}: {stderr}");
    }
}

/// `--keep-max SIZE` bounds each earlier attempt's kept output: its first and last SIZE/2
/// bytes, with one line between them saying how many were left out; 0 keeps it whole, and the
/// final attempt's output is never cut. The default is 1 MiB.
#[test]
fn keep_max_keeps_the_first_and_last_halves_of_each_earlier_attempt() {
    let script =
        sh("head -c 3000000 /dev/zero | tr '\\0' x; echo; echo \"end $RETRY_ATTEMPT\"; exit 1");
    let run = |keep_max: Option<&str>| {
        let mut r = retry().args(["--failed-output", "on-give-up", "--quiet", "-r", "1"]);
        r = r.args(["--delays", "0"]);
        if let Some(size) = keep_max {
            r = r.args(["--keep-max", size]);
        }
        r.args(&script).command().output().unwrap()
    };
    let whole = 3_000_000 + 1 + "end 1\n".len();
    let output = run(Some("1K"));
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let left_out = whole - 1024;
    let expected = format!(
        "retry: output of attempt 1 (exit 1):\n{}\nretry: [{left_out} bytes of attempt 1 left out]\n{}\nend 1\n",
        "x".repeat(512),
        "x".repeat(512 - "\nend 1\n".len())
    );
    assert_eq!(stderr, expected);
    assert_eq!(
        output.stdout.len(),
        whole - 1 + 1,
        "the final attempt whole"
    );
    let output = run(Some("0"));
    assert_eq!(
        output.stderr.len(),
        "retry: output of attempt 1 (exit 1):\n".len() + whole,
        "0 keeps it whole"
    );
    let output = run(None);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "retry: [{} bytes of attempt 1 left out]",
            whole - (1 << 20)
        )),
        "1M by default"
    );
    retry()
        .args(["--keep-max", "1.5M", "true"])
        .assert()
        .misuse("--keep-max");
}
