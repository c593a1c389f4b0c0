//! Process groups, termination, and signals sent to `retry` itself.

use std::os::fd::AsRawFd;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;

fn pids(r: &Retry, lines: usize) -> Vec<i32> {
    wait_for_lines(&r.path("pids"), lines)
        .iter()
        .map(|l| l.parse().expect("a pid"))
        .collect()
}

/// A command that records its own pid and a background grandchild's, then waits. The
/// grandchild records its pid itself, after `grandchild_setup` (say, a trap) has run, so a test
/// that waits for both pids knows the setup is in force.
fn family(r: &Retry, grandchild_setup: &str) -> Vec<String> {
    let pids = r.path("pids");
    sh(&format!(
        "echo $$ > '{p}'; ({grandchild_setup} exec sh -c 'echo $$ >> \"$0\"; exec sleep 30' '{p}' </dev/null >/dev/null 2>&1) & wait",
        p = pids.display()
    ))
}

#[test]
fn each_attempt_leads_its_own_process_group() {
    let r = retry().args(["-r", "1", "--base", "0"]);
    let script = format!(
        "echo $$ $(cut -d' ' -f5 /proc/$$/stat) >> '{}'; exit 1",
        r.path("groups").display()
    );
    let r = r.args(sh(&script));
    r.assert().code(1);
    let groups = std::fs::read_to_string(r.path("groups")).unwrap();
    for line in groups.lines() {
        let (pid, pgid) = line.split_once(' ').unwrap();
        assert_eq!(pid, pgid, "the attempt leads its group");
    }
}

#[test]
fn foreground_keeps_the_attempt_in_retrys_group() {
    retry()
        .args(["--foreground", "-r", "0"])
        .args(sh(
            "[ \"$(cut -d' ' -f5 /proc/$$/stat)\" = \"$(cut -d' ' -f5 /proc/$PPID/stat)\" ]",
        ))
        .assert()
        .code(0);
}

#[test]
fn a_timeout_leaves_no_grandchild() {
    let r = retry().args(["-r", "0", "--timeout", "1s"]);
    let command = family(&r, "");
    let r = r.args(command);
    r.assert().code(124);
    for pid in pids(&r, 2) {
        assert!(gone_soon(pid), "process {pid} survived the timeout");
    }
}

#[test]
fn a_grandchild_ignoring_the_signal_is_killed_after_the_grace() {
    let start = Instant::now();
    let r = retry().args(["-r", "0", "--timeout", "1s", "--kill-after", "200ms"]);
    let command = family(&r, "trap '' TERM;");
    let r = r.args(command);
    r.assert().code(124);
    assert!(start.elapsed() >= Duration::from_millis(1200));
    for pid in pids(&r, 2) {
        assert!(gone_soon(pid), "process {pid} survived the timeout");
    }
}

/// What is left of a terminated attempt's group (here a grandchild that ignores the signal) is
/// watched through the grace at growing intervals: a wait, not a spin on the CPU.
#[test]
fn the_grace_for_the_rest_of_the_group_costs_no_cpu() {
    let r = retry().args(["-r", "0", "--timeout", "1s", "--kill-after", "2s"]);
    let command = family(&r, "trap '' TERM;");
    let r = r.args(command);
    let mut child = r.spawn();
    let (status, cpu) = wait_with_cpu_time(&mut child);
    assert_eq!(shell_status(status), 124);
    assert!(cpu < Duration::from_millis(300), "{cpu:?} of CPU in 2s");
    for pid in pids(&r, 2) {
        assert!(gone_soon(pid), "process {pid} survived the grace");
    }
}

/// A stopped attempt cannot act on the terminating signal until it is continued: without the
/// SIGCONT that follows the signal, it would sit out the whole grace and die by SIGKILL
/// without cleaning up.
#[test]
fn a_stopped_attempt_is_continued_to_act_on_the_terminating_signal() {
    let start = Instant::now();
    retry()
        .args(["-r", "0", "--timeout", "1s", "--kill-after", "5s"])
        .args(sh(
            "trap 'echo cleaned up; exit 3' TERM; kill -STOP $$; sleep 30",
        ))
        .assert()
        .code(124)
        .stdout("cleaned up\n");
    let took = start.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(
        took < Duration::from_secs(4),
        "it waited for SIGKILL: {took:?}"
    );
}

/// Under a parent that adopts orphans and never collects them, as PID 1 of many containers does:
/// the attempt's shell dies first, so its background child is re-parented when it dies too.
const CARELESS_REAPER: &str = "import ctypes, subprocess, sys
PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
sys.exit(subprocess.call(sys.argv[1:]))";

#[test]
fn a_dead_grandchild_does_not_hold_retry_for_the_grace() {
    let r = retry().args(["-r", "0", "--timeout", "1s", "--kill-after", "5s"]);
    let command = family(&r, "");
    let r = r.args(command);
    let start = Instant::now();
    r.command_under(&["python3", "-c", CARELESS_REAPER])
        .assert()
        .code(124);
    let took = start.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(
        took < Duration::from_secs(5),
        "retry waited on a dead grandchild for the grace: {took:?}"
    );
    for pid in pids(&r, 2) {
        assert!(gone_soon(pid), "process {pid} survived the timeout");
    }
}

/// `retry` adopts its attempts' orphans, so it must collect them when they die: while the
/// attempt that orphaned them still runs, and during a wait after it, not just when an attempt
/// ends. A long-running attempt would otherwise pile up zombies.
#[test]
fn orphans_that_die_are_collected_while_the_attempt_runs_and_during_a_wait() {
    let r = retry().args(["-r", "1", "--base", "1h"]);
    // Each orphan is a process whose parent (a subshell) has gone; it records its pid and ends:
    // two at once, one once the attempt has gone. The attempt runs until the test says `go`.
    let script = "(sh -c 'echo $$ >> running' &); (sh -c 'echo $$ >> running' &); \
         (sh -c \"while kill -0 $$ 2>/dev/null; do sleep 0.01; done; echo \\$\\$ >> waiting\" &); \
         echo $$ > pid; until [ -e go ]; do sleep 0.01; done; exit 1";
    let r = r.args(sh(script));
    let mut child = r.spawn();
    for pid in wait_for_lines(&r.path("running"), 2) {
        let pid: i32 = pid.parse().unwrap();
        eventually(
            "an orphan that died while the attempt ran is collected",
            || state(pid).is_none(),
        );
    }
    let attempt = pid_in(&r.path("pid"));
    assert!(alive(attempt), "checked while the attempt ran");
    r.write("go", "");
    wait_for_stderr(&mut child, "next attempt in");
    let pid = pid_in(&r.path("waiting"));
    eventually("an orphan that died during the wait is collected", || {
        state(pid).is_none()
    });
    send(&child, libc::SIGTERM);
    assert_eq!(shell_status(wait_bounded(&mut child)), 143);
}

#[test]
fn foreground_timeout_signals_only_the_attempt() {
    let r = retry().args(["--foreground", "-r", "0", "--timeout", "1s"]);
    let command = family(&r, "");
    let r = r.args(command);
    r.assert().code(124);
    let pids = pids(&r, 2);
    assert!(gone_soon(pids[0]));
    assert!(
        alive(pids[1]),
        "the grandchild is not signalled in --foreground"
    );
    kill_leftover(pids[1]);
}

/// The grandchild of a non-interactive shell ignores SIGINT and SIGQUIT, so for those the
/// escalation to SIGKILL after `--kill-after` is what ends it.
fn signal_during_attempt(signal: i32, status: i32) {
    let r = retry().args(["--base", "0", "--kill-after", "300ms"]);
    let command = family(&r, "");
    let r = r.args(command);
    let mut child = r.spawn();
    let family = pids(&r, 2);
    let sent = Instant::now();
    send(&child, signal);
    assert_eq!(
        status_within(&mut child, sent, Duration::from_secs(5)),
        status
    );
    for pid in family {
        assert!(gone_soon(pid), "process {pid} survived");
    }
    assert_eq!(
        wait_for_lines(&r.path("pids"), 2).len(),
        2,
        "no further attempt"
    );
}

#[test]
fn sigterm_during_an_attempt() {
    signal_during_attempt(libc::SIGTERM, 143);
}

#[test]
fn sigint_during_an_attempt() {
    signal_during_attempt(libc::SIGINT, 130);
}

#[test]
fn sighup_during_an_attempt() {
    signal_during_attempt(libc::SIGHUP, 129);
}

#[test]
fn sigquit_during_an_attempt() {
    signal_during_attempt(libc::SIGQUIT, 131);
}

/// Counts the SIGINTs it gets, and once it has one, waits for any more and ends. Counted at
/// the C level through the wakeup fd, which gets a byte for each delivery: Python's own
/// handler runs once for two that arrive together.
const COUNT_SIGINTS: &str = "
import os, signal, time
wakeups, wakeup_end = os.pipe()
os.set_blocking(wakeups, False)
os.set_blocking(wakeup_end, False)
signal.set_wakeup_fd(wakeup_end)
signal.signal(signal.SIGINT, lambda *_: None)
def read():
    try:
        return os.read(wakeups, 64)
    except BlockingIOError:
        return b''
print('ready', flush=True)
got = b''
deadline = time.monotonic() + 10
while not got and time.monotonic() < deadline:
    time.sleep(0.01)
    got += read()
time.sleep(0.3)
got += read()
print(f'SIGINTs: {got.count(signal.SIGINT)}', flush=True)
";

/// Ctrl-C reaches the terminal's whole foreground process group. Under --foreground the
/// attempt is in it with `retry`, so `retry` does not pass on a second copy (a second Ctrl-C
/// means "quit at once, never mind the cleanup" to terraform and docker compose); without it,
/// the attempt hears of it only from `retry`. Either way, once.
#[test]
fn ctrl_c_reaches_the_attempt_once() {
    for foreground in [true, false] {
        let mut argv = vec![BIN, "-r", "0", "--kill-after", "5s"];
        if foreground {
            argv.push("--foreground");
        }
        argv.extend(["python3", "-c", COUNT_SIGINTS]);
        let screen =
            under_pty(&retry(), &argv, &[("ready", "\x03")], &[("NO_COLOR", "1")]).unwrap();
        assert!(screen.contains("SIGINTs: 1"), "{foreground}: {screen}");
        assert!(
            screen.contains("retry: stopped by SIGINT"),
            "{foreground}: {screen}"
        );
        assert!(screen.ends_with("status -2\n"), "{foreground}: {screen}");
    }
}

/// A SIGINT sent to `retry` alone (by `kill`, a supervisor) reached no one else: under
/// --foreground too, `retry` passes it on to the attempt, once. Only the terminal's own Ctrl-C
/// is taken to have reached the attempt already.
#[test]
fn a_sigint_sent_to_retry_alone_reaches_the_attempt_under_foreground() {
    use std::io::BufRead;
    let r = retry()
        .args(["-r", "0", "--kill-after", "5s", "--foreground"])
        .args(["python3", "-c", COUNT_SIGINTS]);
    let mut child = r.spawn_with(Stdio::piped(), Stdio::null());
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    send(&child, libc::SIGINT);
    assert_eq!(lines.next().unwrap().unwrap(), "SIGINTs: 1");
    assert_eq!(shell_status(wait_bounded(&mut child)), 130);
}

fn signal_during_sleep(signal: i32, status: i32) {
    let r = retry().args(["--base", "1h", "false"]);
    let mut child = r.spawn();
    wait_for_stderr(&mut child, "next attempt in");
    let sent = Instant::now();
    send(&child, signal);
    assert_eq!(
        status_within(&mut child, sent, Duration::from_secs(1)),
        status
    );
}

#[test]
fn sigterm_during_a_sleep_ends_retry_at_once() {
    signal_during_sleep(libc::SIGTERM, 143);
}

#[test]
fn sigint_during_a_sleep_ends_retry_at_once() {
    signal_during_sleep(libc::SIGINT, 130);
}

/// One attempt that records its pid, polls for the file `go` (so that, stopped, it cannot see
/// it), then writes the file `ran`.
fn one_attempt_waiting_for_go() -> Retry {
    let r = retry().args(["-r", "0"]);
    let script = format!(
        "echo $$ > '{pid}'; until [ -e '{go}' ]; do sleep 0.01; done; echo ran > '{ran}'",
        pid = r.path("pid").display(),
        go = r.path("go").display(),
        ran = r.path("ran").display(),
    );
    r.args(sh(&script))
}

/// The terminal sends Ctrl-Z's SIGTSTP to `retry`'s process group only; the attempt, in a group
/// of its own, must stop with it and go on when `retry` is continued (`fg`).
#[test]
fn ctrl_z_stops_the_attempt_with_retry_and_continuing_retry_continues_it() {
    let r = one_attempt_waiting_for_go();
    let mut child = r.spawn_as_job();
    let attempt = pid_in(&r.path("pid"));
    let retry_pid = child.id() as i32;
    send(&child, libc::SIGTSTP);
    // A shell caught in vfork(2) waits (state D) on its stopped child instead of stopping.
    let held = |pid| matches!(state(pid), Some('T' | 'D'));
    eventually("retry and its attempt are stopped", || {
        state(retry_pid) == Some('T') && held(attempt)
    });
    std::fs::write(r.path("go"), "").unwrap();
    // Stopped, the attempt cannot see the file; it stays where it was. Not a wait for a state
    // but a window in which a wrongly running attempt would have gone on.
    std::thread::sleep(Duration::from_millis(100));
    assert!(held(attempt), "{:?}", state(attempt));
    assert!(!r.path("ran").exists());
    send(&child, libc::SIGCONT);
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    assert!(r.path("ran").exists());
}

/// A shell loop stops on Ctrl-C: bash carries on after a child that merely exits 130, but not
/// after one that the signal ended, so `retry` ends by re-raising the signal on itself.
#[test]
fn ctrl_c_stops_a_shell_loop_around_retry() {
    let script = format!(
        "for i in 1 2; do '{BIN}' -r 0 -- sh -c 'echo ready; sleep 5'; echo after-$i; done; echo loop-done"
    );
    let screen = under_pty(
        &retry(),
        &["bash", "-c", &script],
        &[("ready", "\x03")],
        &[("NO_COLOR", "1")],
    )
    .unwrap();
    assert!(screen.contains("retry: stopped by SIGINT"), "{screen}");
    assert!(!screen.contains("after-1"), "the loop went on: {screen}");
    assert!(!screen.contains("loop-done"), "{screen}");
    assert!(screen.ends_with("status -2\n"), "{screen}");
}

/// Ctrl-Z and `fg` under a real job-control shell and terminal, with and without
/// --foreground: the job stops, attempt included (it finishes only after `fg`), and ends well.
#[test]
fn ctrl_z_then_fg_under_an_interactive_shell() {
    for foreground in ["", "--foreground"] {
        // The quotes keep the echo of the typing from matching what the attempt prints.
        let command = format!(
            "'{BIN}' {foreground} -r 0 -- sh -c 'echo st\"\"arted; sleep 0.5; echo fin\"\"ished'\n"
        );
        let screen = under_pty(
            &retry(),
            &["bash", "--norc", "--noprofile", "-i"],
            &[
                ("", &command),
                ("started", "\x1a"),
                ("Stopped", "fg\n"),
                ("finished", "echo sta\"\"tus=$?\n"),
                ("status=", "exit\n"),
            ],
            &[("TERM", "dumb")],
        )
        .unwrap();
        let stopped = screen.find("Stopped").unwrap_or_else(|| panic!("{screen}"));
        let finished = screen
            .find("finished")
            .unwrap_or_else(|| panic!("{screen}"));
        assert!(
            stopped < finished,
            "the attempt ran on while stopped: {screen}"
        );
        assert!(screen.contains("status=0"), "{screen}");
    }
}

/// As a session leader (`setsid`), `retry`'s process group is orphaned: no shell could continue
/// it, so the kernel would drop a terminal stop, and `retry` drops SIGTSTP too.
#[test]
fn ctrl_z_is_dropped_when_no_shell_could_continue_retry() {
    let r = one_attempt_waiting_for_go();
    let mut child = r.spawn_under(&["setsid"]);
    let attempt = pid_in(&r.path("pid"));
    send(&child, libc::SIGTSTP);
    // A window in which a stop, were it taken, would show: nothing is to happen.
    std::thread::sleep(Duration::from_millis(100));
    assert_ne!(
        state(child.id() as i32),
        Some('T'),
        "retry stopped for good"
    );
    assert_ne!(state(attempt), Some('T'), "the attempt stopped for good");
    std::fs::write(r.path("go"), "").unwrap();
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
}

#[test]
fn ctrl_z_during_a_wait_stops_retry_and_the_wait_goes_on_after() {
    let r = retry().args(["-r", "1", "--base", "300ms", "--jitter", "none", "false"]);
    let mut child = r.spawn_as_job();
    wait_for_stderr(&mut child, "next attempt in");
    send(&child, libc::SIGTSTP);
    eventually("retry is stopped", || state(child.id() as i32) == Some('T'));
    send(&child, libc::SIGCONT);
    // Not 128 + SIGTSTP: the wait went on, the second attempt ran, and the run gave up.
    assert_eq!(shell_status(wait_bounded(&mut child)), 1);
}

/// With `--hold-stdout`, the final attempt's output is copied out after it ends; a reader that
/// never reads blocks that copy, but not `retry`'s answer to a signal.
#[test]
fn a_signal_ends_retry_while_held_output_waits_for_a_stalled_reader() {
    let r = retry().args(["--hold-stdout", "-r", "0"]);
    let script = format!("echo $$ > '{}'; seq 1000000", r.path("pid").display());
    let r = r.args(sh(&script));
    // stdout into a pipe that nothing reads (its reading end stays open in `stdout`).
    let mut child = r.spawn_with(Stdio::piped(), Stdio::null());
    let stdout = child.stdout.take().expect("piped stdout");
    // 6.9 MB held, a pipe of 64 KiB: once the attempt has ended, the copy is stuck.
    sigterm_once_the_attempt_ended_and_retry_waits_to_write(&r, child, &stdout);
}

/// An interrupted attempt's held output goes to stderr, but only while the reader takes it: a
/// reader that never reads does not keep `retry` from ending by the signal.
#[test]
fn an_interrupted_attempts_held_output_does_not_wait_for_a_stalled_reader() {
    let r = retry().args(["--hold-stdout", "-r", "0"]);
    let script = format!(
        "seq 1000000; echo $$ > '{}'; exec sleep 60",
        r.path("held").display()
    );
    let r = r.args(sh(&script));
    // stderr into a pipe that nothing reads (its reading end stays open in `child`).
    let child = r.spawn_with(Stdio::null(), Stdio::piped());
    let attempt = pid_in(&r.path("held"));
    // 6.9 MB held, a pipe of 64 KiB: the copy to stderr is stuck after the first 64 KiB.
    sigterm_ends_retry_at_once(child);
    assert!(gone_soon(attempt), "the attempt survived");
}

/// The attempt fills the pipe that both its output and `retry`'s messages go to, and nothing
/// reads it: `retry`'s next line cannot be written, but a signal still ends `retry` at once.
#[test]
fn a_signal_ends_retry_while_its_message_waits_for_a_stalled_reader() {
    let (reader, writer) = std::io::pipe().unwrap();
    // SAFETY: fcntl(2) F_GETPIPE_SZ on a pipe this test owns.
    let capacity = unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_GETPIPE_SZ) };
    assert!(capacity > 0);
    let r = retry().args(["-r", "1", "--base", "0"]);
    let script = format!(
        "echo $$ > '{}'; head -c {capacity} /dev/zero; exit 1",
        r.path("pid").display()
    );
    let r = r.args(sh(&script));
    let child = r.spawn_with(writer.try_clone().unwrap(), writer);
    // The pipe is full: once the attempt has ended, "attempt 1/2 failed" cannot be written.
    sigterm_once_the_attempt_ended_and_retry_waits_to_write(&r, child, &reader);
    drop(reader);
}

/// The same full pipe without a signal: `retry`'s lines wait for the reader only until the
/// run's `--max-time` and its grace have passed, then are dropped, and the run ends with its
/// answer.
#[test]
fn its_messages_do_not_hold_the_run_past_max_time_for_a_stalled_reader() {
    let (reader, writer) = std::io::pipe().unwrap();
    // SAFETY: fcntl(2) F_GETPIPE_SZ on a pipe this test owns.
    let capacity = unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_GETPIPE_SZ) };
    assert!(capacity > 0);
    let r = retry().args(["--max-time", "300ms", "--kill-after", "100ms"]);
    let r = r.args(["-r", "1", "--base", "0"]);
    let r = r.args(sh(&format!("head -c {capacity} /dev/zero; exit 3")));
    // Before the spawn: `retry`'s own start, and so its deadline, cannot come earlier.
    let started = Instant::now();
    let mut child = r.spawn_with(writer.try_clone().unwrap(), writer);
    assert_eq!(
        status_within(&mut child, started, Duration::from_secs(5)),
        3
    );
    assert!(started.elapsed() >= Duration::from_millis(400));
    drop(reader);
}

/// The attempt succeeds and ends, but a background process it left keeps writing to the
/// output that `retry` matches: `retry` waits for that output to drain, yet a signal meanwhile
/// still ends it at once, and by that signal (the run was interrupted before its answer).
#[test]
fn a_signal_ends_retry_while_the_output_of_an_ended_attempt_drains() {
    let r = retry().args(["--until-stdout", "ready", "--attempts", "1"]);
    let script = format!(
        "echo $$ > '{}'; yes tick & echo ready",
        r.path("pid").display()
    );
    let r = r.args(sh(&script));
    let child = r.spawn();
    // `yes` runs until it is killed, whether or not the test passes.
    let attempt = pid_in(&r.path("pid"));
    let _yes = KillOnDrop(-attempt);
    // Collected: `retry` is past the attempt's end, reading what `yes` still writes.
    eventually("retry has collected the attempt", || reaped(attempt));
    sigterm_ends_retry_at_once(child);
}

/// Waits for the attempt (its pid in the file `pid`) to end and `retry` to reach the write to
/// the pipe that `reader` reads (and nothing does), then sends SIGTERM: `retry` must end by it
/// at once.
fn sigterm_once_the_attempt_ended_and_retry_waits_to_write(
    r: &Retry,
    child: std::process::Child,
    reader: &impl AsRawFd,
) {
    let attempt = pid_in(&r.path("pid"));
    eventually("the attempt has ended", || !alive(attempt));
    let retry = child.id() as i32;
    eventually("retry waits to write to the stalled pipe", || {
        waits_to_write(retry, reader)
    });
    sigterm_ends_retry_at_once(child);
}

/// A parent may leave SIGCHLD blocked, and the mask survives exec: `retry` still hears each
/// attempt end, instead of waiting forever for the first.
#[test]
fn a_blocked_sigchld_inherited_from_the_parent_does_not_hang_retry() {
    let r = retry().args(["-r", "1", "--base", "10ms", "false"]);
    let mut child = r.spawn_with_blocked(libc::SIGCHLD);
    assert_eq!(shell_status(wait_bounded(&mut child)), 1);
}

/// `nohup retry ...`: a hangup the parent ignores is ignored by `retry` and by its attempts, as
/// it would be by the command run without `retry`.
#[test]
fn a_hangup_the_parent_ignores_stays_ignored() {
    let r = retry().args(["-r", "0"]);
    let r = r.args(sh(
        "echo $$ > pid; kill -HUP $$; sleep 0.2; echo alive > alive",
    ));
    let mut child = r.spawn_with_ignored(&[libc::SIGHUP]);
    wait_for_lines(&r.path("pid"), 1);
    send(&child, libc::SIGHUP);
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    assert!(r.path("alive").exists());
}

/// Each attempt and each hook starts with the signal dispositions and mask `retry` was started
/// with: nothing `retry` ignores, handles or unblocks for itself (SIGPIPE, SIGINT, SIGCHLD),
/// nor glibc's signals 32 and 33, which its posix_spawn leaves ignored, reaches the command;
/// what the parent ignored (SIGHUP under nohup, SIGINT for a script's `cmd &`, SIGPIPE) or
/// blocked stays so, glibc's own 32 and 33 included.
#[test]
fn attempts_and_hooks_start_with_the_signals_retry_was_started_with() {
    const IGNORED: [i32; 4] = [libc::SIGHUP, libc::SIGINT, libc::SIGPIPE, 34];
    const BLOCKED: [i32; 3] = [libc::SIGTERM, libc::SIGUSR1, libc::SIGCHLD];
    let bits = |signals: &[i32]| signals.iter().fold(0u64, |bits, s| bits | 1 << (s - 1));
    // glibc's own two, which its calls refuse to touch.
    const GLIBC_OWN: [i32; 2] = [32, 33];
    for (ignored, blocked) in [
        (&[][..], &[][..]),
        (&[libc::SIGHUP][..], &[][..]),
        (&IGNORED[..], &BLOCKED[..]),
        (&GLIBC_OWN[..], &GLIBC_OWN[..]),
        (&[32][..], &[33][..]),
    ] {
        // The command itself, as exec'd by the shell (which clears the mask of what it forks),
        // failing (no such file) to have a retry and its hook.
        let show = "exec grep -hs -E '^Sig(Blk|Ign)' /proc/self/status /nonexistent";
        let output = retry()
            .args(["-r", "1", "--delays", "0", "--on-retry", show])
            .args(sh(show))
            .command_with_signals(ignored, blocked)
            .output()
            .unwrap();
        let expected = format!(
            "SigBlk:\t{:016x}\nSigIgn:\t{:016x}\n",
            bits(blocked),
            bits(ignored)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            stdout,
            expected.repeat(2),
            "attempts, {ignored:?} {blocked:?}"
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        let hook: String = stderr
            .lines()
            .filter(|line| line.starts_with("Sig"))
            .map(|line| format!("{line}\n"))
            .collect();
        assert_eq!(
            hook, expected,
            "the hook, {ignored:?} {blocked:?}: {stderr}"
        );
    }
}

/// `retry ... &` in a script runs with SIGINT and SIGQUIT ignored, as every background job
/// there does; as under `timeout(1)`, `kill -INT` still ends the run. The attempt ignores them
/// too, as it would without `retry`: SIGKILL ends it after `--kill-after`.
#[test]
fn an_interrupt_the_parent_ignores_still_ends_the_run() {
    for (signal, status) in [(libc::SIGINT, 130), (libc::SIGQUIT, 131)] {
        let r = retry().args(["-r", "0", "--kill-after", "100ms"]);
        let r = r.args(sh("echo $$ > pid; sleep 5"));
        let mut child = r.spawn_with_ignored(&[libc::SIGINT, libc::SIGQUIT]);
        wait_for_lines(&r.path("pid"), 1);
        send(&child, signal);
        assert_eq!(shell_status(wait_bounded(&mut child)), status);
    }
}

/// SIGUSR1 and SIGUSR2 are for the command itself (reopen a log, dump state): `retry` hands
/// them to the attempt, and to no other process of its group, instead of dying of them.
#[test]
fn user_signals_go_to_the_attempt_itself() {
    let r = retry().args(["-r", "0"]);
    let r = r.args(sh("sleep 5 & echo $! > background; \
         trap 'echo USR1 >> got' USR1; trap 'echo USR2 >> got; exit 0' USR2; \
         echo $$ > pid; while :; do sleep 0.01; done"));
    let mut child = r.spawn();
    wait_for_lines(&r.path("pid"), 1);
    send(&child, libc::SIGUSR1);
    wait_for_lines(&r.path("got"), 1);
    send(&child, libc::SIGUSR2);
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    assert_eq!(wait_for_lines(&r.path("got"), 2), ["USR1", "USR2"]);
    let background = pid_in(&r.path("background"));
    assert!(alive(background), "the signal reached the attempt's group");
    kill_leftover(background);
}

/// `--verbose` says when a user signal was handed to the attempt, and JSON logs carry a
/// `relay` event for it; without either, nothing is said.
#[test]
fn a_relayed_signal_is_said_with_verbose_and_in_json() {
    let relayed = |flag: &str| {
        let r = retry().args(["-r", "0", flag]);
        let r = r.args(sh(
            "trap 'exit 0' USR1; echo $$ > pid; while :; do sleep 0.01; done",
        ));
        let mut child = r.spawn();
        wait_for_lines(&r.path("pid"), 1);
        send(&child, libc::SIGUSR1);
        assert_eq!(shell_status(wait_bounded(&mut child)), 0);
        stderr_of(&mut child)
    };
    let text = relayed("--verbose");
    assert!(
        text.contains("retry: passed SIGUSR1 on to attempt 1\n"),
        "{text}"
    );
    let json = relayed("--log-format=json");
    let event: serde_json::Value = json
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .find(|event: &serde_json::Value| event["event"] == "relay")
        .unwrap_or_else(|| panic!("no relay event: {json}"));
    assert_eq!(event["attempt"], 1);
    assert_eq!(event["signal"], "SIGUSR1");
    assert!(event["time"].is_string());
    let quiet = relayed("--retries=0");
    assert!(!quiet.contains("SIGUSR1"), "{quiet}");
}

/// Between attempts there is no one to hand a user signal to: it is dropped, and the run goes
/// on.
#[test]
fn a_user_signal_during_a_wait_changes_nothing() {
    let r = retry().args(["-r", "1", "--base", "300ms", "--jitter", "none"]);
    let r = r.args(sh("echo run >> runs; exit 3"));
    let mut child = r.spawn();
    wait_for_stderr(&mut child, "next attempt in");
    send(&child, libc::SIGUSR1);
    assert_eq!(shell_status(wait_bounded(&mut child)), 3);
    assert_eq!(wait_for_lines(&r.path("runs"), 2).len(), 2);
}

/// Nor is a hook the command: it does not get a user signal either.
#[test]
fn a_user_signal_during_a_hook_is_not_for_it() {
    let r = retry().args(["-r", "1", "--base", "1ms", "--on-retry"]);
    let r = r.args(["echo $$ > hook; sleep 0.3", "sh", "-c", "exit 3"]);
    let mut child = r.spawn();
    wait_for_lines(&r.path("hook"), 1);
    send(&child, libc::SIGUSR1);
    assert_eq!(shell_status(wait_bounded(&mut child)), 3);
    let stderr = stderr_of(&mut child);
    assert!(!stderr.contains("hook failed"), "{stderr}");
}

/// The terminal tells only its foreground process group, `retry`'s, that its size changed:
/// `retry` passes SIGWINCH on to the attempt's group.
#[test]
fn a_terminal_resize_reaches_the_attempt() {
    let r = retry().args(["-r", "0"]);
    let r = r.args(sh(
        "trap 'echo resized > resized; exit 0' WINCH; echo $$ > pid; while :; do sleep 0.01; done",
    ));
    let mut child = r.spawn();
    wait_for_lines(&r.path("pid"), 1);
    send(&child, libc::SIGWINCH);
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    assert!(r.path("resized").exists());
}

#[test]
fn an_attempt_ignoring_the_signal_is_killed_after_the_grace() {
    let r = retry().args(["--kill-after", "200ms"]);
    let command = family(&r, "trap '' TERM;");
    let r = r.args(command);
    let mut child = r.spawn();
    let family = pids(&r, 2);
    let sent = Instant::now();
    send(&child, libc::SIGTERM);
    let exit = wait_bounded(&mut child);
    assert_eq!(shell_status(exit), 143);
    assert!(
        sent.elapsed() >= Duration::from_millis(200),
        "{:?}",
        sent.elapsed()
    );
    for pid in family {
        assert!(gone_soon(pid), "process {pid} survived");
    }
}

/// A second request to stop, once the first was passed on, skips the rest of the grace: the
/// attempt, which ignores the signal, is killed at once, not after its ten minutes.
#[test]
fn a_second_signal_skips_the_rest_of_the_grace() {
    let r = retry();
    let (got, ready) = (r.path("got"), r.path("ready"));
    let script = format!(
        "trap 'echo TERM >> {}' TERM; touch '{}'; while :; do sleep 0.01; done",
        got.display(),
        ready.display()
    );
    let r = r.args(["--kill-after", "10m", "-r", "0"]).args(sh(&script));
    let mut child = Running(r.spawn());
    eventually("the attempt is ready", || ready.exists());
    send(&child.0, libc::SIGTERM);
    wait_for_lines(&got, 1);
    send(&child.0, libc::SIGTERM);
    assert_eq!(shell_status(wait_bounded(&mut child.0)), 143);
}

#[test]
fn fail_exit_does_not_replace_an_interruption() {
    let r = retry().args(["--fail-exit", "1", "--base", "1h", "false"]);
    let mut child = r.spawn();
    wait_for_stderr(&mut child, "next attempt in");
    send(&child, libc::SIGTERM);
    assert_eq!(shell_status(wait_bounded(&mut child)), 143);
}

#[test]
fn a_closed_stdout_ends_retry_quietly() {
    assert_quiet_141_with_closed_stdout(&["--dry-run", "--forever"]);
}

#[test]
fn stdin_reaches_the_attempt() {
    retry()
        .args(["-r", "0", "cat"])
        .command()
        .write_stdin("hello\n")
        .assert()
        .code(0)
        .stdout("hello\n");
}

#[test]
fn closed_standard_descriptors_are_reopened_on_dev_null() {
    // `retry` started with stdin and stderr closed: its own files (the signal pipe, say) must
    // not take descriptors 0 and 2, or the attempt would read and write them.
    let output = retry()
        .args(["-r", "0", "--"])
        .args(sh("readlink /proc/self/fd/0 /proc/self/fd/2"))
        .std_command_under(&["sh", "-c", "exec 0<&- 2>&-; exec \"$0\" \"$@\""])
        .output()
        .expect("run retry");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "/dev/null\n/dev/null\n"
    );
}

#[test]
fn a_closed_stderr_does_not_stop_the_run() {
    // `retry` ignores SIGPIPE: its messages to a stderr nobody reads are lost, but the attempts
    // still run and the status is still the last attempt's.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let output = retry()
        .args(["-r", "2", "--base", "0", "--"])
        .args(sh("echo out; exit 3"))
        .std_command()
        .stderr(writer)
        .output()
        .expect("run retry");
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out\nout\nout\n");
}

/// As PID 1 of a container, where the kernel drops a signal that has no handler, `docker stop`
/// (SIGTERM) still ends `retry` at once with 143: during a wait and during an attempt. Needs a
/// PID namespace (`unshare --pid`: root, or user namespaces); skipped outside CI where there is
/// none.
#[test]
fn as_pid_1_of_a_container_docker_stop_ends_it_at_once() {
    let Some(namespace) = pid_namespace() else {
        return;
    };
    for (script, started) in [
        ("exit 1", "next attempt in"),
        ("sleep 30", "attempt 1/4 starting"),
    ] {
        let r = retry()
            .args(["-v", "-r", "3", "--base", "1h"])
            .args(sh(&format!("echo $$ > pid; {script}")));
        let mut child = r.spawn_under(namespace);
        wait_for_stderr(&mut child, started);
        assert_eq!(
            wait_for_lines(&r.path("pid"), 1),
            ["2"],
            "the attempt is PID 2, so retry is PID 1"
        );
        let unshare = child.id();
        let retry: i32 =
            std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"))
                .unwrap()
                .trim()
                .parse()
                .expect("unshare's one child, retry");
        let since = Instant::now();
        // SAFETY: kill(2) on a pid this test started.
        assert_eq!(unsafe { libc::kill(retry, libc::SIGTERM) }, 0);
        assert_eq!(
            status_within(&mut child, since, Duration::from_secs(5)),
            143,
            "{script}"
        );
    }
}
