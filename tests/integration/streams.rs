//! Output predicates that match while streaming, and byte-exact pass-through.

use std::io::Read;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::support::*;

#[test]
fn until_stdout_accepts_an_exit_1_attempt() {
    let r = retry().args(["--until-stdout", "^ready$", "--base", "0"]);
    let command = r.flaky(1);
    // The flaky script prints nothing; add a line on the second run.
    let script = format!(
        "{}; [ $(cat '{}') -ge 2 ] && echo ready; exit 1",
        command[2],
        r.path("runs").display()
    );
    let r = r.args(sh(&script));
    r.assert().code(0).stdout("ready\n");
    assert_eq!(r.runs(), 2);
}

#[test]
fn until_stdout_rejects_an_exit_0_attempt_without_a_match() {
    retry()
        .args([
            "--until-stdout",
            "^ready$",
            "-r",
            "1",
            "--base",
            "0",
            "echo",
            "not ready",
        ])
        .assert()
        .code(1)
        .stdout("not ready\nnot ready\n")
        .stderr(predicate::str::contains(
            "(exit 0; no --until line matched)",
        ));
}

#[test]
fn retry_if_stdout_retries_an_exit_0_attempt() {
    let r = retry().args(["--retry-if-stdout", "pending", "--base", "0"]);
    let script = format!(
        "n=$(cat '{p}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{p}'; [ $n -ge 3 ] && echo done || echo pending",
        p = r.path("runs").display()
    );
    let r = r.args(sh(&script));
    r.assert().code(0).stdout("pending\npending\ndone\n");
    assert_eq!(r.runs(), 3);
}

#[test]
fn stderr_predicates() {
    retry()
        .args(["--until-stderr", "listening", "-r", "0"])
        .args(sh("echo 'listening on 8080' >&2; exit 7"))
        .assert()
        .code(0)
        .stderr(predicate::str::contains("listening on 8080"));
    retry()
        .args(["--retry-if-stderr", "rate limit", "-r", "1", "--base", "0"])
        .args(sh("echo 'rate limit exceeded' >&2"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "attempt 2/2 failed (exit 0; a --retry-if line matched)",
        ));
}

#[test]
fn either_until_stream_is_enough() {
    let args = [
        "--until-stdout",
        "^out-ok$",
        "--until-stderr",
        "^err-ok$",
        "-r",
        "0",
    ];
    retry()
        .args(args)
        .args(sh("echo err-ok >&2; exit 1"))
        .assert()
        .code(0);
    retry()
        .args(args)
        .args(sh("echo out-ok; exit 1"))
        .assert()
        .code(0);
    retry()
        .args(args)
        .args(sh("echo nothing; exit 0"))
        .assert()
        .code(1);
}

#[test]
fn a_timed_out_attempt_fails_whatever_matched() {
    retry()
        .args(["--until-stdout", "ready", "-r", "0", "--timeout", "1s"])
        .args(sh("echo ready; sleep 5"))
        .assert()
        .code(124)
        .stdout("ready\n");
}

#[test]
fn retry_if_wins_over_until() {
    retry()
        .args([
            "--until-stdout",
            "ok",
            "--retry-if-stdout",
            "bad",
            "-r",
            "0",
        ])
        .args(sh("echo ok; echo bad"))
        .assert()
        .code(1);
}

#[test]
fn output_passes_through_byte_for_byte() {
    // Not UTF-8, CR LF, a lone CR, NUL, and a final line without newline.
    let script = "printf 'caf\\351\\r\\nprogress 1\\rprogress 2\\n\\000\\377\\376\\nlast line'";
    let expected: &[u8] = b"caf\xe9\r\nprogress 1\rprogress 2\n\x00\xff\xfe\nlast line";
    retry()
        .args(["--until-stdout", "^last line$", "-r", "0"])
        .args(sh(script))
        .assert()
        .code(0)
        .stdout(predicate::eq(expected));
    let to_stderr = format!("{script} >&2");
    retry()
        .args(["--until-stderr", "^last line$", "-r", "0"])
        .args(sh(&to_stderr))
        .assert()
        .code(0)
        .stderr(predicate::eq(expected));
}

/// A progress bar redraws one line with `\r` for as long as the command runs, then prints its
/// last word on that line: past 64 KiB, the line's end is still matched, and the whole line
/// still passed on.
#[test]
fn the_word_after_a_long_progress_bar_is_matched() {
    let script = "i=0; while [ $i -lt 12000 ]; do printf '\\rprogress %5d' $i >&2; i=$((i+1)); done; \
                  printf '\\rDone\\n' >&2; exit 1";
    let output = retry()
        .args(["--until-stderr", "Done$", "-r", "0"])
        .args(sh(script))
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        output.stderr.len(),
        12000 * 15 + 6,
        "the line passed on whole"
    );
    assert!(output.stderr.ends_with(b"\rprogress 11999\rDone\n"));
}

/// The first 64 KiB of a long line are not taken for the whole line: `$` does not match where
/// the window is cut, nor `\b` inside a word that goes on.
#[test]
fn the_cut_of_a_long_line_is_not_its_end() {
    // The whole line has no match; its first 64 KiB, taken for the whole, would have.
    let script = "head -c 100000 /dev/zero | tr '\\0' x; echo 'y tail'; exit 1";
    for pattern in ["^x+$", "^x+\\b", "x$"] {
        retry()
            .args(["--until-stdout", pattern, "-r", "0"])
            .args(sh(script))
            .assert()
            .code(1)
            .stdout(predicate::function(|out: &[u8]| out.len() == 100_007));
    }
    retry()
        .args(["--until-stdout", "^x+ tail$", "-r", "0"])
        .args(sh(
            "head -c 100 /dev/zero | tr '\\0' x; echo ' tail'; exit 1",
        ))
        .assert()
        .code(0);
}

#[test]
fn non_utf8_output_can_be_matched() {
    retry()
        .args(["--until-stdout", "(?-u)^\\xff+ok$", "-r", "0"])
        .args(sh("printf '\\377\\377ok\\n'; exit 1"))
        .assert()
        .code(0);
}

#[test]
fn a_line_reaches_the_reader_long_before_the_attempt_ends() {
    let r = retry()
        .args(["--until-stdout", "never", "-r", "0"])
        .args(sh("echo first; printf 'prompt> '; sleep 2"));
    let mut child = r.spawn_with(Stdio::piped(), Stdio::null());
    let started = Instant::now();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 64];
    while !seen.ends_with(b"prompt> ") {
        let read = stdout.read(&mut buffer).unwrap();
        assert!(read > 0, "stdout ended early: {seen:?}");
        seen.extend_from_slice(&buffer[..read]);
    }
    let waited = started.elapsed();
    assert_eq!(seen, b"first\nprompt> ");
    assert!(
        waited < Duration::from_millis(1500),
        "the line and the prompt took {waited:?}"
    );
    assert_eq!(shell_status(wait_bounded(&mut child)), 1);
}

#[test]
fn only_the_streams_a_predicate_reads_are_piped() {
    // With a stderr predicate, stdout stays the file retry was given: no copy in between.
    let r = retry();
    let out = r.path("out.txt");
    let file = std::fs::File::create(&out).unwrap();
    let status = r
        .std_command()
        .args(["--until-stderr", "x", "-r", "0"])
        .args(sh(
            "readlink /proc/$$/fd/1; readlink /proc/$$/fd/2 >&2; echo x >&2",
        ))
        .stdout(file)
        .output()
        .unwrap();
    assert!(status.status.success());
    let stdout = std::fs::read_to_string(&out).unwrap();
    assert_eq!(stdout.trim(), out.to_str().unwrap(), "stdout is inherited");
    assert!(
        String::from_utf8_lossy(&status.stderr).starts_with("pipe:"),
        "stderr is piped"
    );
}

#[test]
fn bad_patterns_are_misuse() {
    for flag in [
        "--until-stdout",
        "--until-stderr",
        "--retry-if-stdout",
        "--retry-if-stderr",
    ] {
        retry()
            .args([flag, "(unclosed", "true"])
            .assert()
            .misuse(flag);
    }
}

/// A background process that the attempt leaves holding its stdout open keeps the stream from
/// ending; once the attempt has ended and its output has gone quiet, `retry` stops waiting and
/// ends. (Its stdout stays open, held for the background process as it would be without
/// `retry`: so the test waits for `retry` to end, not for its stdout to close.)
#[test]
fn a_background_process_holding_the_output_does_not_hold_retry() {
    let r = retry().args(["--until-stdout", "^ready$", "--attempts", "1"]);
    let script = format!(
        "sleep 60 2>/dev/null & echo $! > '{}'; echo ready",
        r.path("pid").display()
    );
    let r = r.args(sh(&script));
    let out = std::fs::File::create(r.path("out")).unwrap();
    let started = Instant::now();
    let mut child = r.spawn_with(out, Stdio::null());
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(std::fs::read_to_string(r.path("out")).unwrap(), "ready\n");
    let sleeper = pid_in(&r.path("pid"));
    assert!(alive(sleeper), "the background process was left alone");
    kill_leftover(sleeper);
}

/// Such a background process may write on after `retry` has ended (a server started with `&`,
/// logging): it is not killed by SIGPIPE for it, and its output still arrives, on the stream
/// it writes to, as it would without `retry`.
#[test]
fn a_background_writer_outlives_retry_and_its_output_arrives() {
    for (pattern, redirect) in [("--until-stdout", ""), ("--until-stderr", ">&2")] {
        let r = retry().args([pattern, "^ready$", "--attempts", "1"]);
        let script = format!(
            "(sleep 0.3; echo late {redirect}; echo alive > '{}') & echo ready {redirect}",
            r.path("alive").display()
        );
        let r = r.args(sh(&script));
        // Waits for the end of retry's output: the background process's end.
        let output = r.command().output().unwrap();
        let (ours, other) = if redirect.is_empty() {
            (&output.stdout, &output.stderr)
        } else {
            (&output.stderr, &output.stdout)
        };
        assert_eq!(String::from_utf8_lossy(ours), "ready\nlate\n", "{pattern}");
        assert!(other.is_empty(), "{pattern}: {output:?}");
        assert_eq!(wait_for_lines(&r.path("alive"), 1), ["alive"], "{pattern}");
    }
}

/// A command whose first attempt fails at once, leaving a writer of `seq 200000` that starts
/// once the second attempt has (so after retry has stopped waiting for the first attempt's
/// silent output), and whose second attempt ends the run after `second` seconds, while that
/// output waits for a reader that has not taken it yet.
fn writer_left_behind(second: &str) -> Retry {
    let r = retry().args([
        "--until-stdout",
        "^ready$",
        "--attempts",
        "2",
        "--base",
        "0",
    ]);
    let flag = r.path("second");
    r.args(sh(&format!(
        "[ $RETRY_ATTEMPT = 1 ] && {{ (while [ ! -e '{flag}' ]; do sleep 0.01; done; exec seq 200000) & exit 1; }}; touch '{flag}'; sleep {second}; exit 1",
        flag = flag.display()
    )))
}

/// What `seq 1 n` prints.
fn seq(n: u32) -> String {
    (1..=n).map(|n| format!("{n}\n")).collect()
}

/// Reads `child`'s stdout to its end once `ready` holds: a reader that comes late.
fn read_late(child: &mut Child, ready: impl Fn() -> bool) -> String {
    let mut stdout = child.stdout.take().unwrap();
    eventually("the moment to start reading", ready);
    let mut text = String::new();
    stdout.read_to_string(&mut text).unwrap();
    text
}

fn assert_whole(text: &str, expected: &str) {
    assert!(
        text == expected,
        "{} bytes arrived of {}",
        text.len(),
        expected.len()
    );
}

/// `retry` may end while a background writer's output is on its way to a reader that has not
/// taken it yet: the copy passes on what it has read before the helper takes over, so nothing
/// is lost or reordered, however late the reader comes.
#[test]
fn a_background_writers_output_is_whole_when_the_reader_comes_late() {
    let r = writer_left_behind("0.6");
    let mut child = r.spawn_with(Stdio::piped(), Stdio::piped());
    // The run has ended: what is left waits for this reader.
    wait_for_stderr(&mut child, "giving up");
    let text = read_late(&mut child, || true);
    assert_eq!(shell_status(wait_bounded(&mut child)), 1);
    assert_whole(&text, &seq(200_000));
}

/// While `retry` waits for a late reader to take what a copy was passing on at the end, a
/// SIGTERM ends it at once, by that signal.
#[test]
fn sigterm_ends_the_wait_for_a_late_reader_at_the_end() {
    let r = writer_left_behind("0.8");
    let mut child = r.spawn_with(Stdio::piped(), Stdio::piped());
    wait_for_stderr(&mut child, "giving up");
    assert!(
        child.try_wait().unwrap().is_none(),
        "retry waits for the reader"
    );
    let sent = Instant::now();
    send(&child, libc::SIGTERM);
    assert_eq!(status_within(&mut child, sent, Duration::from_secs(5)), 143);
}

/// Under --hold-stdout, what a background writer prints once `retry` has ended belongs to no
/// attempt: it goes to stderr, and stdout carries the final attempt's output alone.
#[test]
fn held_output_of_a_background_writer_goes_to_stderr_after_the_end() {
    let r = retry().args(["--hold-stdout", "--attempts", "1"]);
    let r = r.args(sh("(sleep 0.3; echo late) & echo final"));
    let output = r.command().output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "final\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "late\n");
}

/// What a background writer of an earlier attempt prints once that attempt's held output has
/// gone out belongs to no attempt: it goes on to stderr at once, rather than into a spool that
/// nothing will write out.
#[test]
fn held_output_of_an_earlier_attempts_background_writer_goes_to_stderr() {
    let r = retry().args(["-q", "--hold-stdout", "--attempts", "2", "--base", "0"]);
    let r = r.args(sh(
        "[ $RETRY_ATTEMPT = 1 ] && { (sleep 0.3; echo late) & echo first; exit 1; }; sleep 0.6; echo final",
    ));
    let output = r.command().output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "final\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "first\nlate\n");
    assert_eq!(output.status.code(), Some(0));
}

/// What takes over a background writer's stderr holds only that: retry's stdout closes when
/// retry ends, so a pipeline reading it is not kept waiting for the background process.
#[test]
fn only_the_copied_stream_stays_open_for_a_background_writer() {
    let r = retry().args(["--until-stderr", "^ready$", "--attempts", "1"]);
    // The writer goes on until the test has read stdout to its end (or 20 s have passed, which
    // it notes): stdout held open for it would keep that end from coming.
    let script = format!(
        "(i=0; while [ ! -e '{go}' ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; [ -e '{go}' ] || touch '{waited}'; echo late >&2) >/dev/null & echo ready >&2",
        go = r.path("go").display(),
        waited = r.path("waited").display()
    );
    let r = r.args(sh(&script));
    let mut child = r.spawn_with(Stdio::piped(), Stdio::null());
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    std::fs::write(r.path("go"), "").unwrap();
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    assert!(
        !r.path("waited").exists(),
        "stdout was held open for the writer"
    );
}

/// Once the reader downstream has gone, a background writer learns it as it would have: the
/// pipe it writes to closes, and SIGPIPE ends it (here `yes`, which would write for ever).
/// The writer starts once `retry` has ended and been reaped (its parent `$PPID` gone): a
/// writer that never stops while nothing reads would keep `retry` waiting on the reader, as
/// it should.
#[test]
fn a_background_writer_without_a_reader_ends() {
    let r = retry().args(["--until-stdout", "^ready$", "--attempts", "1"]);
    let script = format!(
        "(while kill -0 $PPID 2>/dev/null; do sleep 0.01; done; exec sh -c \"echo \\$\\$ > '{}'; exec yes\") & echo ready",
        r.path("pid").display()
    );
    let r = r.args(sh(&script));
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = r.spawn_with(writer, Stdio::null());
    let mut first = [0u8; 6];
    (&reader).read_exact(&mut first).unwrap();
    assert_eq!(&first, b"ready\n");
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    drop(reader);
    let writer = pid_in(&r.path("pid"));
    assert!(gone_soon(writer), "yes ({writer}) writes on with no reader");
}

/// Whatever `retry` copies to its stdout (a watched stream, held output) arrives whole when the
/// reader is slow, even once the attempt has ended: the wait for the rest of its output waits
/// for the reader too. And O_NONBLOCK belongs to the open pipe, so a parent (Node.js, for one)
/// may leave that stdout non-blocking: a full pipe is waited on then too, not an error.
#[test]
fn a_slow_reader_loses_nothing_blocking_or_not() {
    const SIZE: usize = 1_000_000;
    for (flag, non_blocking) in [
        ("--retry-if-stdout", false),
        ("--retry-if-stdout", true),
        ("--hold-stdout", true),
    ] {
        let mut args = vec!["-r", "0", flag];
        if flag == "--retry-if-stdout" {
            args.push("never");
        }
        let r = retry()
            .args(args)
            .args(sh(&format!("head -c {SIZE} /dev/zero")));
        let (mut reader, writer) = std::io::pipe().unwrap();
        if non_blocking {
            set_non_blocking(&writer);
        }
        let mut child = r.spawn_with(writer, Stdio::null());
        eventually("the pipe fills while nothing reads", || pipe_full(&reader));
        let mut received = Vec::new();
        reader.read_to_end(&mut received).unwrap();
        assert_eq!(received.len(), SIZE, "{flag}, non-blocking {non_blocking}");
        assert_eq!(shell_status(wait_bounded(&mut child)), 0, "{flag}");
    }
}

/// `retry`'s own lines, on a stderr pipe left non-blocking and shared with another writer that
/// keeps it full: a write that finds the room taken (EAGAIN after the pipe polled writable) waits
/// again; no line is lost. The other writer's bytes (`Z`) are taken out before the check.
#[test]
fn own_lines_on_a_crowded_non_blocking_stderr_are_all_written() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let (mut reader, writer) = std::io::pipe().unwrap();
    set_non_blocking(&writer);
    let mut filler = writer.try_clone().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let filling = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut poll = libc::pollfd {
                    fd: filler.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd, a 10 ms bound.
                unsafe { libc::poll(&mut poll, 1, 10) };
                let _ = filler.write(&[b'Z'; 4096]);
            }
        })
    };
    eventually("the other writer fills the pipe", || pipe_full(&reader));
    let reading = std::thread::spawn(move || {
        let mut received = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match reader.read(&mut chunk) {
                Ok(0) => return received,
                Ok(n) => received.extend_from_slice(&chunk[..n]),
                Err(error) => panic!("{error}"),
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let r = retry().args(["-r", "40", "--base", "1ms", "--max", "1ms", "false"]);
    let mut child = r.spawn_with(Stdio::null(), writer);
    let status = wait_bounded(&mut child);
    stop.store(true, Ordering::Relaxed);
    filling.join().unwrap();
    let received = reading.join().unwrap();
    let said: String = String::from_utf8(received)
        .unwrap()
        .chars()
        .filter(|&c| c != 'Z')
        .collect();
    assert_eq!(shell_status(status), 1);
    for attempt in 1..=41 {
        assert!(
            said.contains(&format!("attempt {attempt}/41 failed (exit 1)")),
            "attempt {attempt}: {said}"
        );
    }
    assert!(said.contains("giving up after 41 attempts"), "{said}");
}

/// `--timeout` limits how long the command runs, not how long a slow reader may take over what
/// it has written: all of it arrives, and the attempt is judged on all of it (here its last
/// line, which a reader slower than the timeout has not taken when the command ends).
#[test]
fn a_reader_slower_than_the_timeout_gets_all_and_the_verdict_sees_all() {
    let r = retry().args([
        "-q",
        "--timeout",
        "200ms",
        "--kill-after",
        "100ms",
        "--attempts",
        "1",
        "--retry-if-stdout",
        "^100000$",
        "seq",
        "100000",
    ]);
    let mut child = r.spawn_with(Stdio::piped(), Stdio::null());
    let retry_pid = child.id() as i32;
    // The reader comes once the timeout has ended the command.
    let text = read_late(&mut child, || children(retry_pid).is_empty());
    assert_whole(&text, &seq(100_000));
    assert_eq!(
        shell_status(wait_bounded(&mut child)),
        1,
        "the last line was seen"
    );
}

/// The wait for a slow reader has a bound: the run's time limit (with its grace), past which
/// a reader that never reads must not hold the run.
#[test]
fn a_stalled_reader_does_not_hold_the_run_past_max_time() {
    let r = retry()
        .args(["--max-time", "300ms", "--kill-after", "100ms", "-r", "0"])
        .args([
            "--until-stdout",
            "never",
            "head",
            "-c",
            "1000000",
            "/dev/zero",
        ]);
    // stdout into a pipe that nothing reads (its reading end stays open in `child`).
    // Before the spawn: `retry`'s own start, and so its deadline, cannot come earlier.
    let started = Instant::now();
    let mut child = r.spawn_with(Stdio::piped(), Stdio::piped());
    assert_eq!(
        status_within(&mut child, started, Duration::from_secs(5)),
        1
    );
    assert!(
        stderr_of(&mut child).contains(
            "cannot write to stdout: the reader downstream did not take it in time; \
             the command's output to it is lost"
        ),
        "the loss is not said"
    );
}

/// Held output is written out after the attempt: to a reader that never reads, only until the
/// run's `--max-time` and its grace have passed. The attempt's own answer stands.
#[test]
fn held_output_does_not_hold_the_run_past_max_time_for_a_stalled_reader() {
    let r = retry()
        .args(["--max-time", "300ms", "--kill-after", "100ms", "-r", "0"])
        .args(["--hold-stdout", "head", "-c", "1000000", "/dev/zero"]);
    // Before the spawn: `retry`'s own start, and so its deadline, cannot come earlier.
    let started = Instant::now();
    let mut child = r.spawn_with(Stdio::piped(), Stdio::piped());
    assert_eq!(
        status_within(&mut child, started, Duration::from_secs(5)),
        0
    );
    let took = started.elapsed();
    let said = stderr_of(&mut child);
    // (Seen once in ten runs under load: an end before 400 ms; the line says what retry did.)
    assert!(took >= Duration::from_millis(400), "{took:?}: {said}");
    assert!(
        said.contains("cannot write to stdout: the reader downstream did not take it in time"),
        "the loss is not said, or not of stdout: {said}"
    );
}

/// Without a stalled reader, `--max-time` does not cut held output short: a slow reader that
/// starts after the deadline still gets all of it.
#[test]
fn held_output_reaches_a_slow_reader_whole_within_the_grace() {
    const SIZE: usize = 1_000_000;
    let r = retry()
        .args(["--max-time", "100ms", "--kill-after", "5s", "-r", "0"])
        .args([
            "--hold-stdout",
            "head",
            "-c",
            &SIZE.to_string(),
            "/dev/zero",
        ]);
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut child = r.spawn_with(writer, Stdio::null());
    eventually("the pipe fills while nothing reads", || pipe_full(&reader));
    // The reader starts once the deadline has passed: `retry` started before the pipe filled,
    // so its 100 ms are over 150 ms after that (a time that must have passed is slept past;
    // lateness only passes it further).
    std::thread::sleep(Duration::from_millis(150));
    let mut received = Vec::new();
    reader.read_to_end(&mut received).unwrap();
    assert_eq!(received.len(), SIZE);
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
}

#[test]
fn a_closed_stdout_ends_the_attempt_with_sigpipe_quietly() {
    assert_quiet_141_with_closed_stdout(&["--until-stdout", "never", "--base", "0", "yes"]);
}

/// Under `--hold-stdout` the attempt writes into `retry`, which meets the closed pipe only
/// when it lets the held output go: it ends as the attempt would have, quietly with 141, and
/// a failed run's `--fail-exit` does not replace that.
#[test]
fn held_output_meeting_a_closed_stdout_ends_retry_quietly() {
    assert_quiet_141_with_closed_stdout(&["--hold-stdout", "-r", "0", "echo", "held"]);
    assert_quiet_141_with_closed_stdout(&[
        "--hold-stdout",
        "-r",
        "0",
        "--fail-exit",
        "1",
        "sh",
        "-c",
        "echo held; exit 3",
    ]);
}

/// Runs `retry ARGS` with stdout on /dev/full (every write fails with ENOSPC) and returns its
/// status and stderr.
fn with_stdout_on_a_full_disk(args: &[&str]) -> (i32, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let r = retry().args(args);
    let mut child = r.spawn_with(full, Stdio::piped());
    let status = shell_status(wait_bounded(&mut child));
    (status, stderr_of(&mut child))
}

/// Output that cannot be passed on for a reason other than a reader gone (a full disk) is
/// still judged: the line was printed. `retry` says once that the output is lost.
#[test]
fn output_that_cannot_be_written_is_still_matched_and_the_loss_is_said() {
    let (status, stderr) =
        with_stdout_on_a_full_disk(&["--base", "0", "--until-stdout", "ready", "echo", "ready"]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        stderr,
        "retry: cannot write to stdout: No space left on device; the command's output to it is lost\n"
    );
    // Three attempts, reported in JSON: under --hold-stdout only the last writes to stdout.
    let three_in_json = ["-r", "2", "--base", "0", "--log-format", "json"];
    let (status, stderr) = with_stdout_on_a_full_disk(
        &[
            &three_in_json[..],
            &["--hold-stdout", "sh", "-c", "echo out; exit 1"],
        ]
        .concat(),
    );
    assert_eq!(status, 1, "{stderr}");
    let lost: Vec<serde_json::Value> = json_events_among(&stderr)
        .into_iter()
        .filter(|event| event["event"] == "write-failed")
        .collect();
    assert_eq!(lost.len(), 1, "{stderr}");
    assert_eq!(lost[0]["stream"], "stdout");
    assert_eq!(lost[0]["error"], "No space left on device");
    // Said once for the run, however many attempts lose their output.
    let (status, stderr) = with_stdout_on_a_full_disk(
        &[
            &three_in_json[..],
            &["--until-stdout", "never", "echo", "out"],
        ]
        .concat(),
    );
    assert_eq!(status, 1, "{stderr}");
    let events = json_events_among(&stderr);
    let count = |kind: &str| events.iter().filter(|event| event["event"] == kind).count();
    assert_eq!(
        (count("attempt"), count("write-failed")),
        (3, 1),
        "{stderr}"
    );
}

/// When the final attempt's held stdout cannot be written (a full disk), its held stderr still
/// goes out whole, in its order, under each mode that holds both.
#[test]
fn the_final_attempts_stderr_goes_out_when_its_stdout_cannot() {
    let script = "echo first >&2; head -c 300000 /dev/zero; echo 'final stderr line' >&2; exit 1";
    for mode in ["drop", "on-give-up"] {
        let (status, stderr) =
            with_stdout_on_a_full_disk(&["--failed-output", mode, "-r", "0", "sh", "-c", script]);
        assert_eq!(status, 1, "{mode}: {stderr}");
        let first = stderr.find("first\n");
        let last = stderr.find("final stderr line\n");
        assert!(first.is_some() && first < last, "{mode}: {stderr}");
        assert!(
            stderr.contains("cannot write to stdout: No space left on device"),
            "{mode}: {stderr}"
        );
    }
}

/// `retry`'s own output (`--dry-run`, `--help`) that cannot be written is an error of its
/// own: one line, 125.
#[test]
fn a_plan_that_cannot_be_written_is_an_error() {
    for args in [&["--dry-run", "true"][..], &["--help"]] {
        let (status, stderr) = with_stdout_on_a_full_disk(args);
        assert_eq!(status, 125, "{args:?}");
        assert_eq!(
            stderr,
            "retry: cannot write to stdout: No space left on device\n"
        );
    }
}

/// `--hold-stdout` holds stdout only: stderr, read for a pattern, still goes on as it comes,
/// before the attempt has ended.
#[test]
fn hold_stdout_passes_stderr_on_as_it_comes() {
    let r = retry()
        .args([
            "--hold-stdout",
            "--retry-if-stderr",
            "never-seen",
            "-r",
            "0",
        ])
        .args(sh("echo held; echo live >&2; exec sleep 30"));
    let mut child = r.spawn();
    let seen = wait_for_stderr(&mut child, "live");
    assert!(!seen.contains("held"), "{seen}");
    send(&child, libc::SIGTERM);
    assert_eq!(shell_status(wait_bounded(&mut child)), 143);
}
