//! Stdin modes and --hold-stdout.

use std::io::Write;
use std::process::Stdio;

use predicates::prelude::*;

use crate::support::*;

/// Deterministic bytes of every value, `len` long.
fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// Runs three failing attempts that each compare their whole stdin with `expected`, feeding
/// `input` through a pipe, and returns how many attempts saw it intact.
fn attempts_seeing(mode: &str, input: &[u8]) -> usize {
    let r = retry();
    let expected = r.write("expected.bin", "");
    std::fs::write(&expected, input).unwrap();
    let script = format!(
        "cmp -s - '{}' && echo ok >> '{}'; exit 1",
        expected.display(),
        r.path("log").display()
    );
    let r = r.args(["--stdin", mode, "-r", "2", "--base", "0", "-q"]);
    let mut child = r
        .std_command()
        .args(sh(&script))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    assert_eq!(shell_status(wait_bounded(&mut child)), 1);
    writer.join().unwrap();
    std::fs::read_to_string(r.path("log"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn replay_gives_every_attempt_the_same_bytes() {
    for len in [0, 1, 1024 * 1024, 50 * 1024 * 1024] {
        assert_eq!(attempts_seeing("replay", &payload(len)), 3, "{len} bytes");
    }
}

#[test]
fn auto_with_a_pipe_gives_later_attempts_only_what_is_left() {
    assert_eq!(attempts_seeing("auto", &payload(1000)), 1);
}

#[test]
fn auto_rewinds_a_regular_file_to_where_it_was() {
    let r = retry();
    let input = r.write("input.txt", "skip\nline one\nline two\n");
    let script = format!(
        "{{ dd bs=1 count=5 of=/dev/null 2>/dev/null; \"$0\" -r 2 --base 0 -q sh -c 'cat; exit 1'; }} < '{}'",
        input.display()
    );
    // `$0` is the builder's `retry`.
    r.std_command_under(&["sh", "-c", &script])
        .output()
        .map(|output| {
            assert_eq!(
                String::from_utf8(output.stdout).unwrap(),
                "line one\nline two\n".repeat(3)
            );
        })
        .unwrap();
}

#[test]
fn inherit_never_rewinds() {
    let r = retry();
    let input = r.write("input.txt", "once\n");
    let file = std::fs::File::open(&input).unwrap();
    let output = r
        .args(["--stdin", "inherit", "-r", "2", "--base", "0"])
        .args(sh("cat; exit 1"))
        .output_with_stdin(file);
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "once\n");
    assert!(
        !String::from_utf8(output.stderr)
            .unwrap()
            .contains("stdin is a pipe")
    );
}

#[test]
fn null_gives_nothing() {
    retry()
        .args(["--stdin", "null", "-r", "0", "cat"])
        .command()
        .write_stdin("not for the attempt")
        .assert()
        .code(0)
        .stdout("");
}

/// A stream closed when `retry` starts reaches the command as /dev/null (the Rust runtime
/// opens it there), never as a number some file of `retry`'s might have taken.
#[test]
fn a_closed_stream_reaches_the_command_as_dev_null() {
    let r = retry()
        .args(["-r", "0"])
        .args(["python3", "-c", SHOW_STDIN_AND_STDOUT]);
    r.command_under(&["sh", "-c", "exec \"$@\" <&- >&-", "sh"])
        .assert()
        .code(0)
        .stdout("")
        .stderr("/dev/null /dev/null\n");
}

const SHOW_STDIN_AND_STDOUT: &str = "import os, sys
sys.stderr.write(os.readlink('/proc/self/fd/0') + ' ' + os.readlink('/proc/self/fd/1') + '\\n')
print('lost')";

#[test]
fn the_pipe_warning_comes_once_and_names_replay() {
    let warning = "stdin is a pipe";
    retry()
        .args(["-r", "3", "--base", "0", "false"])
        .command()
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(predicate::function(|s: &str| {
            s.matches(warning).count() == 1
        }))
        .stderr(predicate::str::contains("--stdin replay"));
    for args in [
        ["--stdin", "inherit"],
        ["--stdin", "replay"],
        ["-q", "--stdin=auto"],
    ] {
        retry()
            .args(args)
            .args(["-r", "1", "--base", "0", "false"])
            .command()
            .write_stdin("x")
            .assert()
            .stderr(predicate::str::contains(warning).not());
    }
}

#[test]
fn a_while_read_loop_keeps_its_lines() {
    let script =
        "printf 'a\\nb\\nc\\n' | while read line; do echo \"got $line\"; \"$0\" -q -r 0 true; done";
    // `$0` is the builder's `retry`.
    let output = retry()
        .std_command_under(&["sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "got a\ngot b\ngot c\n"
    );
}

/// The producer keeps the pipe open after its first line until `retry` has ended (or 20 s
/// have passed); `retry` must have run the attempt and ended without waiting for it.
#[test]
fn replay_starts_at_once_and_does_not_wait_for_the_producer() {
    let r = retry();
    let (ended, waited) = (r.path("ended"), r.path("waited"));
    let script = format!(
        "(echo first; for i in $(seq 2000); do [ -e '{ended}' ] && exit; sleep 0.01; done; touch '{waited}'; echo late) | {{ \"$0\" --stdin replay -r 0 head -n 1; touch '{ended}'; }}",
        ended = ended.display(),
        waited = waited.display()
    );
    // `$0` is the builder's `retry`.
    let output = r
        .std_command_under(&["sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "first\n");
    assert!(ended.exists());
    assert!(!waited.exists(), "retry waited for the producer to end");
}

/// Replay captures stdin as the attempts read it: an endless producer is held back, as a pipe
/// holds back its writer, instead of `retry` copying it to disk for as long as it runs.
#[test]
fn replay_holds_back_an_endless_producer() {
    let r = retry();
    let written = r.path("written");
    // Writes 64 KiB at a time, and counts it, until its reader has gone.
    let producer = format!(
        "import sys\nchunk = bytes(65536)\ntotal = 0\nwhile True:\n    sys.stdout.buffer.write(chunk); sys.stdout.buffer.flush(); total += len(chunk)\n    open('{}', 'w').write(str(total))",
        written.display()
    );
    let script = "python3 -c \"$PRODUCER\" 2>/dev/null | \"$0\" --stdin replay -r 0 -- sh -c 'head -c 10 >/dev/null; sleep 1'";
    // `$0` is the builder's `retry`.
    let status = r
        .std_command_under(&["sh", "-c", script])
        .env("PRODUCER", producer)
        .status()
        .unwrap();
    assert!(status.success());
    let written: u64 = std::fs::read_to_string(&written).unwrap().parse().unwrap();
    assert!(written < 16 << 20, "the producer wrote {written} bytes");
}

/// A parent may leave stdin non-blocking (the flag belongs to the open pipe, shared): replay
/// waits for input that has not come yet instead of taking it for the end of the input. The
/// second line is written only once the first attempt has printed the first, so `retry` has
/// found the pipe empty (EAGAIN) in between, however fast or slow the machine.
#[test]
fn replay_waits_for_a_non_blocking_stdin() {
    use std::io::{Read, Write};
    let (reader, mut writer) = std::io::pipe().unwrap();
    set_non_blocking(&reader);
    let r = retry()
        .args(["-r", "1", "--base", "0", "--stdin", "replay"])
        .args(sh("cat; exit 1"));
    let mut child = r
        .std_command()
        .stdin(reader)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (first_line, seen) = std::sync::mpsc::channel();
    let copied = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut chunk = [0; 64];
        while let Ok(n @ 1..) = stdout.read(&mut chunk) {
            all.extend_from_slice(&chunk[..n]);
            if all.starts_with(b"hello\n") {
                let _ = first_line.send(());
            }
        }
        all
    });
    writer.write_all(b"hello\n").unwrap();
    seen.recv_timeout(BOUND)
        .expect("the first attempt prints the first line");
    writer.write_all(b"world\n").unwrap();
    drop(writer);
    assert_eq!(shell_status(wait_bounded(&mut child)), 1);
    assert_eq!(
        String::from_utf8_lossy(&copied.join().unwrap()),
        "hello\nworld\nhello\nworld\n"
    );
}

#[test]
fn hold_stdout_sends_one_copy_downstream() {
    let r = retry().args(["--hold-stdout", "--base", "0"]);
    let r = r.args(sh(
        "echo \"output of $RETRY_ATTEMPT\"; [ $RETRY_ATTEMPT = 3 ]",
    ));
    r.assert()
        .code(0)
        .stdout("output of 3\n")
        .stderr(predicate::str::contains("output of 1\n"))
        .stderr(predicate::str::contains("output of 2\n"));
}

#[test]
fn hold_stdout_gives_the_final_failed_attempts_output() {
    retry()
        .args(["--hold-stdout", "--base", "0", "-r", "1"])
        .args(sh("echo \"try $RETRY_ATTEMPT\"; exit 4"))
        .assert()
        .code(4)
        .stdout("try 2\n")
        .stderr(predicate::str::contains("try 1\n"));
}

#[test]
fn hold_stdout_of_a_large_output_is_byte_exact() {
    let r = retry();
    let data = r.write("data.bin", "");
    std::fs::write(&data, payload(20 * 1024 * 1024)).unwrap();
    let script = format!("cat '{}'", data.display());
    let output = r
        .args(["--hold-stdout", "-r", "0"])
        .args(sh(&script))
        .command()
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(
        output.stdout == payload(20 * 1024 * 1024),
        "held output differs"
    );
}

#[test]
fn no_temporary_file_is_left_behind() {
    // The three endings side by side.
    let cases = [None, Some(libc::SIGTERM), Some(libc::SIGKILL)].map(|signal| {
        std::thread::spawn(move || {
            let r = retry();
            let tmp = r.path("tmp");
            std::fs::create_dir_all(&tmp).unwrap();
            let data = r.write("data.bin", "");
            std::fs::write(&data, payload(8 * 1024 * 1024)).unwrap();
            let script = format!("cat '{}'; sleep 30", data.display());
            let r = r
                .args(["--hold-stdout", "-r", "0", "--timeout", "1s"])
                .args(sh(&script));
            let mut child = r
                .std_command()
                .env("TMPDIR", &tmp)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let pid = child.id();
            eventually("the held output spills to a file in TMPDIR", || {
                std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                    fds.flatten().any(|fd| {
                        std::fs::read_link(fd.path()).is_ok_and(|to| to.starts_with(&tmp))
                    })
                })
            });
            assert_eq!(
                std::fs::read_dir(&tmp).unwrap().count(),
                0,
                "nothing visible mid-run"
            );
            if let Some(signal) = signal {
                send(&child, signal);
            }
            wait_bounded(&mut child);
            assert_eq!(
                std::fs::read_dir(&tmp).unwrap().count(),
                0,
                "after {signal:?}"
            );
        })
    });
    for case in cases {
        case.join().unwrap();
    }
}

/// With no temporary file to be had (an unwritable `TMPDIR`), held output and replayed input
/// past the memory bound stay in memory rather than being cut short, and `retry` says so once.
#[test]
fn with_no_temporary_file_replay_and_hold_stay_whole_in_memory() {
    let len = 10 * 1024 * 1024;
    let r = retry();
    let expected = r.write("expected.bin", "");
    std::fs::write(&expected, payload(len)).unwrap();
    let script = format!(
        "cmp -s - '{expected}' && echo ok >> '{log}'; cat '{expected}'; exit 1",
        expected = expected.display(),
        log = r.path("log").display()
    );
    let r = r
        .args([
            "--stdin",
            "replay",
            "--hold-stdout",
            "-r",
            "1",
            "--base",
            "0",
        ])
        .args(sh(&script));
    let output = r
        .command()
        .env("TMPDIR", r.path("no-such-dir"))
        .write_stdin(payload(len))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(r.path("log")).unwrap(), "ok\nok\n");
    assert!(output.stdout == payload(len), "held output differs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for what in ["replayed stdin", "held stdout"] {
        let said = stderr
            .lines()
            .filter(|line| {
                line.contains("cannot create a temporary file in")
                    && line.contains("no-such-dir")
                    && line.ends_with(&format!("keeping {what} in memory instead"))
            })
            .count();
        assert_eq!(said, 1, "{what}");
    }
}

/// A stdin that fails to read (here a directory) gives the replayed attempts what was read
/// before, and `retry` says so once, rather than passing the failure off as the end of the input.
#[test]
fn a_replayed_stdin_that_fails_to_read_is_said() {
    let output = retry()
        .args(["--stdin", "replay", "-r", "2", "--base", "0"])
        .args(sh("cat; exit 1"))
        .output_with_stdin(std::fs::File::open("/").unwrap());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr
            .matches("retry: cannot read stdin: Is a directory; the attempts get only what was read before\n")
            .count(),
        1,
        "{stderr}"
    );
}

/// Short of descriptors, an attempt under `--stdin replay` does not start rather than read less
/// than the whole input: at every limit of open descriptors, the run either cannot start, or
/// its attempts could not start (126, retried), or the attempt reads the payload whole.
#[test]
fn replay_never_gives_an_attempt_less_than_the_whole_input() {
    let r = retry().args(["--stdin", "replay", "-r", "1", "--base", "0", "cat"]);
    let runs = r.runs_under_open_file_limits("payload");
    for output in runs.ran {
        assert_eq!(output.stdout, b"payload");
    }
    for output in runs.could_not_start {
        assert_eq!(output.stdout, b"");
    }
}

/// Held stdout and replayed stdin that no temporary file can take (no TMPDIR) stay in memory up
/// to 64 MiB in all, said once; past that `retry` reads them no more, and the writer waits as
/// for a slow reader (here until SIGTERM), said once too: memory stays bounded however much
/// comes, and nothing read is lost.
#[test]
fn what_no_file_takes_is_held_in_bounded_memory() {
    for replay in [false, true] {
        let r = retry();
        let said = r.path("said");
        let out = r.path("out");
        let r = if replay {
            r.args(["--stdin", "replay", "-r", "0", "--"])
                .args(sh("head -c 300000000 > /dev/null"))
        } else {
            r.args(["--hold-stdout", "-r", "0", "--"])
                .args(sh("head -c 300000000 /dev/zero"))
        };
        let mut producer = std::process::Command::new("yes")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = r
            .std_command()
            .env("TMPDIR", r.path("nonexistent"))
            .stdin(producer.stdout.take().unwrap())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&said).unwrap())
            .spawn()
            .unwrap();
        let stream = if replay {
            "replayed stdin"
        } else {
            "held stdout"
        };
        eventually("retry says it reads no more", || {
            std::fs::read_to_string(&said)
                .is_ok_and(|text| text.contains(&format!("cannot keep more of the {stream}")))
        });
        let peak = peak_rss_kib(child.id());
        send(&child, libc::SIGTERM);
        assert_eq!(shell_status(wait_bounded(&mut child)), 143, "{stream}");
        let _ = producer.kill();
        let _ = producer.wait();
        // Under --hold-stdout, a run a signal ended writes what it held to stderr too.
        let said = std::fs::read(&said).unwrap();
        let lines: Vec<String> = String::from_utf8_lossy(&said)
            .lines()
            .filter_map(|line| line.find("retry: ").map(|at| line[at..].to_string()))
            .collect();
        let count = |text: &str| lines.iter().filter(|line| line.contains(text)).count();
        assert_eq!(count("cannot keep more"), 1, "{lines:?}");
        assert_eq!(count("in memory instead"), 1, "{lines:?}");
        // Why no file takes it comes before what follows from that.
        let at = |text: &str| lines.iter().position(|line| line.contains(text));
        assert!(
            at("in memory instead") < at("cannot keep more"),
            "{lines:?}"
        );
        assert!(peak < 128 * 1024, "{stream}: peak RSS {peak} KiB");
    }
}
