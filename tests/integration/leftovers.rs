//! Nothing a timed-out attempt started survives it: processes that left its process group
//! (`setsid`, a daemon that double-forked) are ended with it; background processes of an
//! attempt that ended on its own are left alone, and collected when they end.

use std::fs;
use std::path::Path;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use crate::support::*;

/// Kills, when the test ends however it ends, the processes whose pids were written to the
/// given files: a failing test leaves no `sleep 600` behind. While one lives, no test of this
/// module churns through pids (see `churning`): a pid read back from a file after its process
/// died is another's only once the numbers wrap around. Declared after the last binding of the
/// builder whose directory holds the files, so that it is dropped first and finds them there
/// (dropped after, it found none, and left a shell's job looping for ever).
struct Reap(
    Vec<std::path::PathBuf>,
    #[allow(dead_code)] RwLockReadGuard<'static, ()>,
);

impl Reap {
    fn new(files: Vec<std::path::PathBuf>) -> Reap {
        Reap(
            files,
            CHURN
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }
}

static CHURN: RwLock<()> = RwLock::new(());

/// Held by a test that forks thousands of processes, during which no test of this module kills
/// a process by a pid it read back (`Reap`).
fn churning() -> RwLockWriteGuard<'static, ()> {
    CHURN
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Drop for Reap {
    fn drop(&mut self) {
        for path in &self.0 {
            if let Some(pid) = fs::read_to_string(path)
                .ok()
                .and_then(|text| text.trim().parse::<i32>().ok())
            {
                let cgroup = cgroup_of(pid);
                kill_leftover(pid);
                if let Some(cgroup) = cgroup.filter(|_| gone_soon(pid)) {
                    // The cgroup an attempt that ended on its own left with this process
                    // in it stays after `retry` exits: it is the test's to remove.
                    let _ = fs::remove_dir(cgroup);
                }
            }
        }
    }
}

/// The cgroup `retry` made for the attempt that started `pid`, if it has one.
fn cgroup_of(pid: i32) -> Option<std::path::PathBuf> {
    let own = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = own.lines().find_map(|line| line.strip_prefix("0::"))?;
    if !path.rsplit('/').next()?.starts_with("retry-") {
        return None;
    }
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|line| {
        let (fields, fs) = line.split_once(" - ")?;
        let fields: Vec<&str> = fields.split(' ').collect();
        (fs.starts_with("cgroup2 ") && fields.get(3) == Some(&"/")).then(|| fields[4].to_string())
    })?;
    Some(Path::new(&mount).join(path.trim_start_matches('/')))
}

/// The living processes whose environment holds `STRAGGLER_OF=marker`: every process of a
/// test that runs with that marker.
fn marked_with(marker: &str) -> Vec<i32> {
    let mark = format!("STRAGGLER_OF={marker}");
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| alive(pid))
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|&b| b == 0).any(|v| v == mark.as_bytes()))
        })
        .collect()
}

/// Kills, when the test ends however it ends, every process marked with its marker (see
/// `marked_with`), again and again, as those that fork may have forked meanwhile.
struct KillMarked(String);

impl Drop for KillMarked {
    fn drop(&mut self) {
        for _ in 0..50 {
            for pid in marked_with(&self.0) {
                kill_leftover(pid);
            }
        }
    }
}

/// `sh -c` that starts `sleep 600` out of its group in `how` (`setsid` child, or a daemon that
/// double-forks), writing its pid to `pid_file`, with `then` after.
fn straggler(how: &str, pid_file: &Path, then: &str) -> String {
    // Its streams are not the test's pipes, which it would hold open for ten minutes.
    let start = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 600' </dev/null >/dev/null 2>&1",
        pid_file.display()
    );
    match how {
        "setsid" => format!("{start} & {then}"),
        _ => format!("({start} &); {then}"),
    }
}

/// `--timeout` ends the attempt, and with it a child that called `setsid` (still the attempt's
/// child when the time is up) and a daemon that double-forked (re-parented to `retry`): both are
/// gone by the time `retry` exits.
#[test]
fn a_timeout_ends_what_left_the_group_too() {
    for how in ["setsid", "daemon"] {
        let r = retry();
        let pid_file = r.path("pid");
        let script = straggler(
            how,
            &pid_file,
            &format!(
                "while [ ! -s '{}' ]; do sleep 0.01; done; exec sleep 600",
                pid_file.display()
            ),
        );
        // A limit that the attempt's shell, and the straggler's, beat by far on a loaded
        // machine: it waits for the straggler's pid before it hangs.
        let r = r.args(["--timeout", "3s", "-r", "0"]).args(sh(&script));
        let _reap = Reap::new(vec![pid_file.clone()]);
        let mut child = r.spawn();
        let pid = pid_in(&pid_file);
        assert_eq!(shell_status(wait_bounded(&mut child)), 124, "{how}");
        // retry waits until what it signalled has died before it exits.
        assert!(!alive(pid), "{how}: the straggler outlived retry");
    }
}

/// One that ignores the terminating signal gets SIGKILL within the same `--kill-after` grace.
#[test]
fn a_straggler_that_ignores_sigterm_is_killed_after_the_grace() {
    let r = retry();
    let pid_file = r.path("pid");
    let script = format!(
        "setsid sh -c 'trap \"\" TERM; echo $$ > {pid}; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 & \
         while [ ! -s '{pid}' ]; do sleep 0.01; done; exec sleep 600",
        pid = pid_file.display()
    );
    let r = r
        .args(["--timeout", "2s", "--kill-after", "300ms", "-r", "0"])
        .args(sh(&script));
    let _reap = Reap::new(vec![pid_file.clone()]);
    let mut child = r.spawn();
    let pid = pid_in(&pid_file);
    assert_eq!(shell_status(wait_bounded(&mut child)), 124);
    assert!(gone_soon(pid), "SIGKILL ends it");
}

/// The next attempt starts only once what the timed-out one left is gone: it finds no trace of
/// it running.
#[test]
fn the_next_attempt_starts_after_the_stragglers_are_gone() {
    let r = retry();
    let pid_file = r.path("pid");
    let _reap = Reap::new(vec![pid_file.clone()]);
    let first = straggler(
        "setsid",
        &pid_file,
        &format!(
            "while [ ! -s '{}' ]; do sleep 0.01; done; exec sleep 600",
            pid_file.display()
        ),
    );
    let script = format!(
        "if [ $RETRY_ATTEMPT = 1 ]; then {first}; fi
         p=$(cat '{pid}')
         if [ -e /proc/$p ] && ! grep -q ') Z' /proc/$p/stat; then echo \"$p still runs\"; exit 1; fi
         echo gone",
        pid = pid_file.display()
    );
    r.command()
        .args(["--timeouts", "3s,0", "-r", "1", "--delays", "0"])
        .args(sh(&script))
        .assert()
        .code(0)
        .stdout("gone\n");
}

/// A signal to `retry` ends the attempt and what it left the group with.
#[test]
fn a_signal_to_retry_ends_the_stragglers_too() {
    let r = retry();
    let pid_file = r.path("pid");
    let script = straggler("daemon", &pid_file, "exec sleep 600");
    let r = r.args(["-r", "0"]).args(sh(&script));
    let _reap = Reap::new(vec![pid_file.clone()]);
    let mut child = r.spawn();
    let pid = pid_in(&pid_file);
    let since = Instant::now();
    send(&child, libc::SIGTERM);
    assert_eq!(
        status_within(&mut child, since, Duration::from_secs(10)),
        143
    );
    assert!(!alive(pid), "the daemon outlived retry");
}

/// An attempt that ended on its own keeps its background processes, in its group or out of it,
/// as under `timeout(1)`: `retry` does not reach for them.
#[test]
fn background_processes_of_an_attempt_that_ended_on_its_own_are_left_alone() {
    let r = retry();
    let (setsid, daemon) = (r.path("setsid"), r.path("daemon"));
    let _reap = Reap::new(vec![setsid.clone(), daemon.clone()]);
    let wait = format!(
        "while [ ! -s '{}' ] || [ ! -s '{}' ]; do sleep 0.01; done",
        setsid.display(),
        daemon.display()
    );
    let script = format!(
        "{}; {}; exit 3",
        straggler("setsid", &setsid, "true"),
        straggler("daemon", &daemon, &wait)
    );
    r.command()
        .args(["-r", "0", "--timeout", "1h"])
        .args(sh(&script))
        .assert()
        .code(3);
    assert!(alive(pid_in(&setsid)) && alive(pid_in(&daemon)));
}

/// A supervisor whose attempts each leave a short-lived process that called `setsid` collects
/// every one of them as it ends: after 100 attempts, no zombie under `retry`, and the same count
/// of descriptors as after the first.
#[test]
fn a_hundred_attempts_leave_no_zombie_and_no_descriptor() {
    let r = retry();
    let counts = r.path("counts");
    // Counted once retry waits for the attempt (in poll): while it starts one, it holds what
    // the start takes (std's pipe for an exec's error, its copy of the attempt's stdin), and
    // the attempt may already run.
    let script = format!(
        "count() {{
           n=0
           until grep -q poll /proc/$PPID/wchan; do
             n=$((n+1)); [ $n -lt 2000 ] || break
             sleep 0.01
           done
           ls /proc/$PPID/fd | wc -l >> '{counts}'
         }}
         setsid sh -c 'sleep 0.01' </dev/null >/dev/null 2>&1 &
         [ $RETRY_ATTEMPT = 1 ] && count
         [ $RETRY_ATTEMPT = 100 ] || exit 1
         wait
         # Until retry has collected every straggler: no child of retry but this one.
         n=0
         while [ \"$(cat /proc/$PPID/task/*/children | wc -w)\" != 1 ]; do
           n=$((n+1)); [ $n -lt 2000 ] || {{ echo 'children left:'; cat /proc/$PPID/task/*/children; exit 1; }}
           sleep 0.01
         done
         count",
        counts = counts.display()
    );
    r.command()
        .args(["-r", "99", "--delays", "0"])
        .args(sh(&script))
        .assert()
        .code(0);
    let counts: Vec<String> = fs::read_to_string(&counts)
        .unwrap()
        .lines()
        .map(|line| line.trim().to_string())
        .collect();
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert_eq!(counts[0], counts[1], "descriptors after 1 and 100 attempts");
}

/// A process an earlier attempt left (it ended on its own) is not the later attempt's, however
/// late it is re-parented to `retry`: here that earlier attempt's background job starts a daemon
/// while attempt 2 runs, and the daemon's parent exits, so it is re-parented to `retry` after
/// attempt 2 started. A signal to `retry` ends attempt 2 and its own daemon; the earlier one's
/// lives on.
#[test]
fn what_an_earlier_attempt_left_is_left_alone_when_a_later_one_is_ended() {
    let r = retry();
    let (go, earlier, own, ready) = (
        r.path("go"),
        r.path("earlier"),
        r.path("own"),
        r.path("ready"),
    );
    // The earlier attempt's background job is left alone too: the test ends it.
    let job = r.path("job");
    let daemon = |pid_file: &Path| {
        format!(
            "sh -c \"setsid sh -c 'echo \\$\\$ > {}; exec sleep 600' </dev/null >/dev/null 2>&1 &\"",
            pid_file.display()
        )
    };
    let script = format!(
        "if [ $RETRY_ATTEMPT = 1 ]; then
           (while [ ! -e '{go}' ]; do sleep 0.01; done; {earlier_daemon}; exec sleep 600) </dev/null >/dev/null 2>&1 &
           echo $! > '{job}'
           exit 1
         fi
         {own_daemon}
         touch '{go}'
         # Both daemons up, and re-parented to retry.
         for f in '{earlier}' '{own}'; do
           while [ ! -s \"$f\" ] || [ \"$(cut -d' ' -f4 /proc/$(cat \"$f\")/stat)\" != $PPID ]; do sleep 0.01; done
         done
         touch '{ready}'
         exec sleep 600",
        go = go.display(),
        job = job.display(),
        earlier = earlier.display(),
        own = own.display(),
        ready = ready.display(),
        earlier_daemon = daemon(&earlier),
        own_daemon = daemon(&own),
    );
    let r = r.args(["-r", "1", "--delays", "0"]).args(sh(&script));
    let _reap = Reap::new(vec![earlier.clone(), own.clone(), job.clone()]);
    let mut child = r.spawn();
    eventually("both daemons re-parented to retry", || ready.exists());
    let since = Instant::now();
    send(&child, libc::SIGTERM);
    assert_eq!(
        status_within(&mut child, since, Duration::from_secs(10)),
        143
    );
    assert!(!alive(pid_in(&own)), "attempt 2's daemon outlived retry");
    assert!(
        alive(pid_in(&earlier)),
        "attempt 1's daemon was ended with attempt 2"
    );
}

/// Processes that fork as they are killed (they ignore SIGTERM, and each loop forks a child out
/// of its group) leave nothing behind once the grace is over: SIGKILL goes round again until
/// none is found. (A child forked between one look and the SIGKILL that follows it is a race
/// this test wins only now and then against a single round; it holds the rounds to leaving
/// nothing, whatever the timing.)
#[test]
fn processes_that_fork_as_they_are_killed_leave_nothing() {
    let _churning = churning();
    let r = retry();
    let marker = r.dir.path().display().to_string();
    let spawner = "trap '' TERM; while :; do setsid sleep 1001 </dev/null >/dev/null 2>&1 & p=$!; kill -9 $p; wait $p; done";
    let script = format!(
        "for i in $(seq 8); do setsid sh -c \"{spawner}\" </dev/null >/dev/null 2>&1 & done; touch '{ready}'; exec sleep 600",
        ready = r.path("ready").display()
    );
    let marked = || marked_with(&marker);
    let _cleanup = KillMarked(marker.clone());
    let output = r
        .command()
        .args(["--timeout", "1s", "--kill-after", "500ms", "-r", "0"])
        .args(sh(&script))
        .env("STRAGGLER_OF", r.dir.path())
        .output()
        .unwrap();
    assert_eq!(shell_status(output.status), 124);
    eventually("no process of the attempt's left", || marked().is_empty());
}

/// What a hook or an attempt started out of its group is looked for before the hook or the
/// attempt is signalled: once it has died, its `setsid` child is re-parented to `retry`, and a
/// hook's leftovers (or an attempt's that cleared its environment) could no longer be told
/// apart.
#[test]
fn what_a_signalled_hook_started_is_ended_with_it() {
    let r = retry();
    let pid_file = r.path("pid");
    let hook = format!(
        "setsid sh -c 'echo $$ > {pid}; exec sleep 600' </dev/null >/dev/null 2>&1 & exec sleep 600",
        pid = pid_file.display()
    );
    let r = r.args(["-r", "1", "--delays", "0", "--on-retry", &hook, "false"]);
    let _reap = Reap::new(vec![pid_file.clone()]);
    let mut child = r.spawn();
    let pid = pid_in(&pid_file);
    let since = Instant::now();
    send(&child, libc::SIGTERM);
    assert_eq!(
        status_within(&mut child, since, Duration::from_secs(10)),
        143
    );
    assert!(!alive(pid), "the hook's setsid child outlived retry");
}

/// A daemon that wrote over its environment (a process title: redis, postgres, perl's `$0`),
/// cleared it or replaced it whole (`env -i PATH=...`, a `subprocess` given `env=`), once
/// re-parented to `retry`, carries no `RETRY_ATTEMPT`: started since the attempt, it is the
/// attempt's, and ended with it, whichever way the sweep takes.
#[test]
fn a_daemon_without_its_environment_is_ended_with_the_attempt() {
    for (way, env) in WAYS {
        for replaced in [
            "env -i",
            "env -i PATH=/usr/bin:/bin",
            "env -u RETRY_ATTEMPT",
        ] {
            let r = retry();
            let pid_file = r.path("pid");
            let script = format!(
                "(setsid {replaced} sh -c 'echo $$ > {pid}; exec sleep 600' </dev/null >/dev/null 2>&1 &)
                 while [ ! -s '{pid}' ] || [ \"$(cut -d' ' -f4 /proc/$(cat '{pid}')/stat)\" != $PPID ]; do sleep 0.01; done
                 exec sleep 600",
                pid = pid_file.display()
            );
            let r = r.args(["--timeout", "1s", "-r", "0"]).args(sh(&script));
            let _reap = Reap::new(vec![pid_file.clone()]);
            let pid = timed_out_leaving(&r, env, &pid_file, &format!("{way}, {replaced}"));
            assert!(!alive(pid), "{way}, {replaced}: the daemon outlived retry");
        }
    }
}

/// A daemon whose main thread has ended (pthread_exit) while another runs on shows as a zombie
/// in /proc and is passed over by the kernel's `cgroup.kill`: it is ended with the attempt all
/// the same, whichever way the sweep takes, also when it ignores SIGTERM.
#[test]
fn a_daemon_whose_main_thread_has_ended_is_ended_with_the_attempt() {
    const HEADLESS: &str = "import ctypes, os, signal, sys, threading, time
if os.fork(): sys.exit(0)
os.setsid()
if sys.argv[2] == 'deaf': signal.signal(signal.SIGTERM, signal.SIG_IGN)
threading.Thread(target=lambda: time.sleep(600)).start()
open(sys.argv[1], 'w').write(str(os.getpid()))
ctypes.CDLL(None).pthread_exit(None)";
    for (way, env) in WAYS {
        for hearing in ["hears", "deaf"] {
            let r = retry();
            r.write("headless.py", HEADLESS);
            let pid_file = r.path("pid");
            let script = format!(
                "python3 headless.py '{pid}' {hearing} </dev/null >/dev/null 2>&1
                 while [ \"$(cut -d' ' -f3 /proc/$(cat '{pid}')/stat 2>/dev/null)\" != Z ]; do sleep 0.01; done
                 kill -TERM $PPID
                 exec sleep 600",
                pid = pid_file.display()
            );
            // Ended by a signal once the daemon is headless, which takes Python's start-up: a
            // time-out could come before it on a loaded machine (1 of 5 stress runs).
            let r = r
                .args(["--timeout", "60s", "--kill-after", "0.5s", "-r", "0"])
                .args(sh(&script));
            let _reap = Reap::new(vec![pid_file.clone()]);
            let what = format!("{way}, {hearing}");
            let pid = ended_leaving(&r, env, &pid_file, 143, &what);
            assert!(
                gone_soon(pid),
                "{way}, {hearing}: the daemon without its main thread outlived retry"
            );
        }
    }
}

/// Runs `r` with the sweep's way `env` to its time-out (124, else fails as `what`), and gives
/// the pid its attempt left in `pid_file`.
fn timed_out_leaving(r: &Retry, env: &[(&str, &str)], pid_file: &Path, what: &str) -> i32 {
    ended_leaving(r, env, pid_file, 124, what)
}

/// Runs `r` with the sweep's way `env` until it ends with `status` (else fails as `what`), and
/// gives the pid its attempt left in `pid_file`.
fn ended_leaving(r: &Retry, env: &[(&str, &str)], pid_file: &Path, status: i32, what: &str) -> i32 {
    let mut command = r.std_command();
    command.envs(env.iter().copied());
    let mut child = command.spawn().unwrap();
    let pid = pid_in(pid_file);
    assert_eq!(shell_status(wait_bounded(&mut child)), status, "{what}");
    pid
}

/// Whether this machine has cgroup v2, where the default way is a cgroup of each attempt's.
fn cgroup_v2() -> bool {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .iter()
        .any(|dir| Path::new(dir).join("cgroup.controllers").exists())
}

/// The two ways of the sweep: the environment that picks each. A cgroup of
/// each attempt's own where `retry` may create one, and the walk through /proc, which
/// `RETRY_TEST_NO_CGROUP` (for tests only) makes it take anywhere.
const WAYS: [(&str, &[(&str, &str)]); 2] = [
    ("the run's default way", &[]),
    ("the /proc way", &[("RETRY_TEST_NO_CGROUP", "1")]),
];

/// What `retry` holds before its first attempt is no attempt's: a job of the shell it was
/// exec'd from (a container entrypoint's sidecar, started in the same clock tick as the
/// attempt more often than not) is never signalled by the attempt's sweep, whichever way it
/// takes. A daemon that job starts while the attempt runs, re-parented to `retry`, is left
/// alone by the cgroup way; the /proc way cannot tell it from the attempt's own (it carries no
/// `RETRY_ATTEMPT`, as a daemon of the attempt's may not), and ends it.
#[test]
fn the_jobs_of_the_shell_retry_was_execd_from_are_no_attempts() {
    for (way, env) in WAYS {
        let r = retry();
        let (job, daemon, got, go, ready) = (
            r.path("job"),
            r.path("daemon"),
            r.path("got"),
            r.path("go"),
            r.path("ready"),
        );
        let job_script = format!(
            "echo $$ > '{job}'; trap 'echo TERM >> {got}' TERM
             while [ ! -e '{go}' ]; do sleep 0.01; done
             (setsid sh -c 'echo $$ > {daemon}; exec sleep 600' </dev/null >/dev/null 2>&1 &)
             while :; do sleep 0.05; done",
            job = job.display(),
            got = got.display(),
            go = go.display(),
            daemon = daemon.display(),
        );
        let attempt = format!(
            "touch '{go}'
             while [ ! -s '{daemon}' ] || [ \"$(cut -d' ' -f4 /proc/$(cat '{daemon}')/stat)\" != $PPID ]; do sleep 0.01; done
             touch '{ready}'; exec sleep 600",
            go = go.display(),
            daemon = daemon.display(),
            ready = ready.display(),
        );
        r.write("job.sh", &job_script);
        let wrapper = "sh job.sh </dev/null >/dev/null 2>&1 & exec \"$0\" \"$@\"";
        let r = r.args(["--timeout", "60s", "-r", "0"]).args(sh(&attempt));
        let _reap = Reap::new(vec![daemon.clone(), job.clone()]);
        let mut command = r.std_command_under(&["sh", "-c", wrapper]);
        command.envs(env.iter().copied());
        let mut child = command.spawn().unwrap();
        eventually("the job's daemon re-parented to retry", || ready.exists());
        let since = Instant::now();
        send(&child, libc::SIGTERM);
        assert_eq!(
            status_within(&mut child, since, Duration::from_secs(10)),
            143,
            "{way}"
        );
        assert!(alive(pid_in(&job)), "{way}: the shell's job was ended");
        assert!(!got.exists(), "{way}: the shell's job was sent SIGTERM");
        if env.is_empty() && cgroup_v2() {
            assert!(alive(pid_in(&daemon)), "{way}: the job's daemon was ended");
        }
    }
}

/// In a PID namespace whose /proc is its parent's (`unshare --pid --fork` without a /proc of
/// its own), no number read in /proc is `retry`'s to signal: the reader of its stdout, which
/// /proc shows where `retry` would look, is never signalled. Where the attempt has a cgroup,
/// what it left is ended all the same; the /proc way looks for nothing there.
#[test]
fn a_sweep_in_a_namespace_with_its_parents_proc_signals_no_stranger() {
    let Some(namespace) = pid_namespace() else {
        return;
    };
    for (way, env) in WAYS {
        let r = retry();
        let (got, alive_file, termed, ready) = (
            r.path("got"),
            r.path("alive"),
            r.path("termed"),
            r.path("ready"),
        );
        let outer = format!(
            "unshare --pid --fork sh -c '\"$0\" \"$@\" | (trap \"echo TERM > {got}\" TERM; cat >/dev/null)' \"$0\" \"$@\"
             pgrep -f '^sleep 6011$' >/dev/null && touch {alive}
             exit 0",
            got = got.display(),
            alive = alive_file.display(),
        );
        let r = r
            // Timed, for a cgroup; ended by a signal to `retry` once the leftover is ready for
            // it (its trap set), however slow the machine.
            .args(["--timeout", "60s", "--kill-after", "1s", "-r", "0", "--"])
            .args(sh(&format!(
                "setsid sh -c 'trap \": > {termed}; exit\" TERM; touch {ready}; sleep 6011 & wait' </dev/null >/dev/null 2>&1 &
                 while [ ! -e {ready} ]; do sleep 0.01; done
                 kill -TERM $PPID; sleep 30",
                termed = termed.display(),
                ready = ready.display(),
            )));
        let mut wrapper: Vec<&str> = namespace.to_vec();
        wrapper.extend(["sh", "-c", &outer]);
        let output = r
            .command_under(&wrapper)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{way}: {output:?}");
        assert!(
            !got.exists(),
            "{way}: the reader of retry's stdout was sent SIGTERM"
        );
        if env.is_empty() && cgroup_v2() {
            assert!(
                !alive_file.exists(),
                "{way}: the attempt's leftover outlived retry"
            );
            assert!(
                termed.exists(),
                "{way}: the leftover got no SIGTERM, only the SIGKILL"
            );
        }
    }
}

/// A daemon an earlier attempt left (it ended on its own) is never signalled by
/// a later attempt's sweep, though it started in the same clock tick as the later attempt
/// (10 ms: half the time, with no delay between) and carries no `RETRY_ATTEMPT` (it cleared its
/// environment, as a process title wipes it). Six pairs of attempts: an odd one leaves such a
/// daemon and fails at once, the even one after it times out.
#[test]
fn a_sweep_never_ends_what_an_earlier_attempt_left_in_the_same_tick() {
    for (way, env) in WAYS {
        let r = retry();
        let daemons: Vec<_> = (1..=6)
            .map(|pair| r.path(&format!("daemon{pair}")))
            .collect();
        let _reap = Reap::new(daemons.clone());
        let script = format!(
            "if [ $((RETRY_ATTEMPT % 2)) = 1 ]; then
               (setsid env -i sh -c \"echo \\$\\$ > '{dir}/daemon$(((RETRY_ATTEMPT + 1) / 2))'; exec sleep 600\" </dev/null >/dev/null 2>&1 &)
               sleep 0.002
               exit 1
             fi
             exec sleep 600",
            dir = r.dir.path().display()
        );
        let output = r
            .command()
            // The odd attempts have no limit, so however late they run, a daemon of theirs
            // is never their own attempt's to end; the even ones are cut.
            .args(["--timeouts", &["0", "500ms"].repeat(6).join(",")])
            .args(["--attempts", "12", "--delays", "0"])
            .args(sh(&script))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert_eq!(shell_status(output.status), 124, "{way}");
        for (pair, daemon) in daemons.iter().enumerate() {
            let pid = pid_in(daemon);
            assert!(
                alive(pid),
                "{way}: attempt {}'s daemon was ended by a later attempt's sweep",
                2 * pair + 1
            );
        }
    }
}

/// A descendant that keeps forking anew (it forks, the parent exits, the child calls `setsid`,
/// and again) and ignores SIGTERM is ended within the grace: a look that catches it between a
/// parent's exit and the re-parenting of its child sees nothing, and is not taken for "none
/// left".
#[test]
fn a_process_that_keeps_forking_anew_is_ended() {
    // A shell forks too slowly to slip through often: perl forks in a tenth of the time.
    if std::process::Command::new("perl")
        .arg("-e1")
        .status()
        .is_err()
    {
        return missing("perl", "a process that keeps forking anew");
    }
    let _churning = churning();
    for (way, env) in WAYS {
        let r = retry();
        let marker = r.dir.path().display().to_string();
        let _cleanup = KillMarked(marker.clone());
        let stop = r.path("stop");
        // However the test ends, what is left of the process stops forking.
        let _stop = Touch(stop.clone());
        // Each generation forks the next and exits, as fast as perl can; it stops at the file
        // `stop`, or after a million generations should everything else fail.
        let reforker = r.path("reforker.pl");
        fs::write(
            &reforker,
            format!(
                "use POSIX; $SIG{{TERM}} = 'IGNORE'; open(my $f, '>', '{started}'); close($f);
                 my $n = 0; while (!-e '{stop}' && $n++ < 1_000_000) {{ exit if fork; POSIX::setsid() }}",
                stop = stop.display(),
                started = r.path("started").display(),
            ),
        )
        .unwrap();
        let script = format!(
            "perl '{}' </dev/null >/dev/null 2>&1 &
             while [ ! -e '{}' ]; do sleep 0.01; done
             exec sleep 600",
            reforker.display(),
            r.path("started").display()
        );
        // Where it can, `retry` runs under a PID 1 of its own (a shell that waits for the test
        // to look before it ends, and with it whatever is left in its namespace): there a
        // re-forking process slips through a single look most often.
        let (status, checked) = (r.path("status"), r.path("checked"));
        let _checked = Touch(checked.clone());
        // Only `retry` and what it starts carry the marker, not the shell that waits.
        let assignments: String = [("STRAGGLER_OF", marker.as_str())]
            .iter()
            .chain(env)
            .map(|(k, v)| format!("'{k}={v}' "))
            .collect();
        let waiter = format!(
            "env {assignments}\"$@\"; echo $? > '{}'; while [ ! -e '{}' ]; do sleep 0.01; done",
            status.display(),
            checked.display()
        );
        let mut wrapper: Vec<&str> = pid_namespace().map(<[&str]>::to_vec).unwrap_or_default();
        wrapper.extend(["sh", "-c", &waiter, "sh"]);
        let r = r
            .args(["--timeout", "1s", "--kill-after", "1s", "-r", "0"])
            .args(sh(&script));
        let mut child = Running(r.spawn_under(&wrapper));
        assert_eq!(wait_for_lines(&status, 1), ["124"], "{way}");
        // A process sent SIGKILL may take a moment to be gone; one that was missed forks on.
        let left = || marked_with(&marker);
        eventually(
            &format!("{way}: nothing of the re-forking process left"),
            || left().is_empty(),
        );
        fs::write(&checked, "").unwrap();
        wait_bounded(&mut child.0);
    }
}

/// Makes a file when dropped.
struct Touch(std::path::PathBuf);

impl Drop for Touch {
    fn drop(&mut self) {
        let _ = fs::write(&self.0, "");
    }
}

/// The sweep's bound (100 ms past the grace), loosely (the exact one is `sweep`'s unit test over a fake clock): a
/// tree of 300 processes, 20 of which fork as they are killed, holds `retry` no more than
/// 100 ms past `--max-time` plus `--kill-after`; here it is given two seconds more, 20 times
/// that, where rounds of SIGKILL with no bound took 2.3 to 4.5 s more.
#[test]
fn a_tree_that_forks_as_it_is_killed_holds_retry_no_longer_than_the_grace() {
    let _churning = churning();
    let _heavy = one_heavy_test_at_a_time();
    for (way, env) in WAYS {
        let r = retry();
        let marker = r.dir.path().display().to_string();
        let _cleanup = KillMarked(marker.clone());
        let spawner = "trap '' TERM; while :; do setsid sleep 1001 </dev/null >/dev/null 2>&1 & p=$!; kill -9 $p; wait $p; done";
        let script = format!(
            "for i in $(seq 20); do setsid sh -c \"{spawner}\" </dev/null >/dev/null 2>&1 & done
             for i in $(seq 280); do setsid sh -c \"trap '' TERM; exec sleep 1002\" </dev/null >/dev/null 2>&1 & done
             exec sleep 600"
        );
        let since = Instant::now();
        let output = r
            .command()
            .args(["--max-time", "1s", "--kill-after", "500ms", "-r", "0"])
            .args(sh(&script))
            .env("STRAGGLER_OF", &marker)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let took = since.elapsed();
        assert_eq!(shell_status(output.status), 124, "{way}");
        assert!(
            took < Duration::from_millis(3500),
            "{way}: retry ended {took:?} after it started"
        );
        eventually(&format!("{way}: nothing of the tree left"), || {
            marked_with(&marker).is_empty()
        });
    }
}

/// `--verbose` says which way the run's sweep takes, in one line: each attempt in a cgroup of
/// its own (where `retry` may make one and the attempts are timed), or a walk of /proc.
#[test]
fn verbose_says_which_way_the_sweep_takes() {
    let output = retry()
        .args(["--verbose", "true"])
        .command()
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("looked for in /proc"), "untimed: {stderr}");
    // Under --foreground only the attempt itself is signalled: no way is claimed.
    let output = retry()
        .args(["--verbose", "--foreground", "--timeout", "1h", "true"])
        .command()
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("cgroup") && !stderr.contains("/proc"),
        "{stderr}"
    );
    for (way, env) in WAYS {
        let output = retry()
            .args(["--verbose", "--timeout", "1h", "true"])
            .command()
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let said: Vec<&str> = stderr
            .lines()
            .filter(|line| line.contains("cgroup.kill") || line.contains("in /proc"))
            .collect();
        assert_eq!(said.len(), 1, "{way}: {stderr}");
        if !env.is_empty() {
            assert!(said[0].contains("looked for in /proc"), "{way}: {stderr}");
        }
    }
}

/// A command (`command.py HEARD READY SIGNAL`) that says each time it hears SIGNAL (its name
/// without `SIG`) in file HEARD, once READY is made; the first time, it cleans up for half a
/// second (time enough for a second signal to come, and to cut it), then exits 0.
const HEARS_A_SIGNAL: &str = "import os, signal, sys, time
heard = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
name = sys.argv[3]
begun = []
def on_signal(*_):
    os.write(heard, name.encode() + b'\\n')
    if not begun:
        begun.append(True)
        time.sleep(0.5)
        os.write(heard, b'cleanup done\\n')
        os._exit(0)
signal.signal(getattr(signal, 'SIG' + name), on_signal)
open(sys.argv[2], 'w').close()
while True:
    signal.pause()
";

/// A daemon (`daemon.py [COMMAND...]`, by default `sleep 1000`) that forks twice and leads a
/// group of its own in the session it was started in (setpgid, not setsid); its parent exits,
/// so it is re-parented to the nearest subreaper.
const DAEMON_IN_ITS_OWN_GROUP: &str = "import os, sys
if os.fork() == 0:
    if os.fork() == 0:
        os.setpgid(0, 0)
        command = sys.argv[1:] or ['sleep', '1000']
        os.execvp(command[0], command)
    os._exit(0)
os.wait()
";

/// Whether python3 runs here.
fn has_python() -> bool {
    std::process::Command::new("python3")
        .arg("-c1")
        .status()
        .is_ok()
}

/// A `retry` nested in an attempt passes the terminating signal on to its own attempt, which
/// hears it once, as from the outer one alone, and keeps its whole grace: the outer `retry`
/// sends it to nothing a nested one signals itself (its attempt's group, what that attempt
/// started out of the group, what is left of the group once its shell has died of the signal):
/// the nested one would take a copy from both for a second request, "no more grace", and its
/// command would hear it twice; and a nested `retry` takes a copy from one above it for no
/// second request. What a nested `retry` does not pass it on to (a process that left its
/// `--foreground` attempt's group, a job of the shell that exec'd it) hears it from the outer
/// one. Whichever way the sweep takes.
#[test]
fn a_nested_retry_passes_the_signal_on_and_its_command_hears_it_once() {
    if !has_python() {
        return missing("python3", "a nested retry's command hearing a signal once");
    }
    // `$0` is retry; timed, for a cgroup of each attempt's where there are cgroups.
    let timed = "--timeout 60s --kill-after 20s -r 0 --";
    let untimed = "--kill-after 20s -r 0 --";
    let command_line = "python3 command.py heard ready TERM";
    let until_done = "until grep -qs 'cleanup done' heard; do sleep 0.01; done";
    let shapes = [
        (
            "three retries, each timed",
            format!("exec \"$0\" {timed} \"$0\" {timed} {command_line}"),
        ),
        (
            "three retries, the inner ones untimed",
            format!("exec \"$0\" {untimed} \"$0\" {untimed} {command_line}"),
        ),
        (
            "a retry a shell runs",
            format!("\"$0\" {timed} {command_line}; exit $?"),
        ),
        (
            "a --foreground retry between",
            format!("exec \"$0\" --foreground {timed} \"$0\" {timed} {command_line}"),
        ),
        (
            "a command that left a --foreground retry's attempt group",
            format!(
                "exec \"$0\" --foreground {untimed} sh -c 'setsid {command_line} & trap \"\" TERM; wait'"
            ),
        ),
        (
            "a command a nested retry's attempt started out of its group",
            format!("exec \"$0\" {untimed} sh -c 'setsid {command_line} & trap \"\" TERM; wait'"),
        ),
        (
            "a nested retry's attempt whose shell the signal ends",
            format!("exec \"$0\" {untimed} sh -c '{command_line} & wait'"),
        ),
        (
            "a nested retry's attempt that double-forked a daemon into a group of its own",
            format!("exec \"$0\" {untimed} sh -c 'python3 daemon.py; exec {command_line}'"),
        ),
        (
            "a job of the shell that exec'd a retry",
            format!(
                "setsid {command_line} & exec \"$0\" {untimed} sh -c \"trap '' TERM; {}\"",
                until_done.replace('\'', "\\\"")
            ),
        ),
    ];
    for (shape, script) in &shapes {
        each_hears_it_once(
            shape,
            script,
            &Made("ready"),
            (libc::SIGTERM, "TERM"),
            &["heard"],
        );
    }
}

/// A nested `retry` that is ending its attempt already (asked by a signal of its own, or for
/// its own time-out) when the outer one is signalled: its command, which has heard the nested
/// one's signal, hears none again, from either, and its cleanup runs; also once the attempt's
/// shell has died of that signal and is gone, when what is left of the attempt is still the
/// nested one's to end. A command that did not hear the nested one's signal (it ignores it)
/// hears the outer one's, once. Whichever way the sweep takes.
#[test]
fn a_command_a_nested_retry_is_ending_already_hears_no_second_signal() {
    if !has_python() {
        return missing("python3", "a nested retry ending its attempt");
    }
    let command_line = "python3 command.py heard ready TERM";
    // The attempt signals its nested retry itself (a kill from no retry) once the command is
    // ready; the time-out is long enough for python to be ready, tens of times over.
    let signalled = format!(
        "exec \"$0\" --kill-after 20s -r 0 -- sh -c '{command_line} & until [ -e ready ]; do sleep 0.01; done; kill -TERM $PPID; wait'"
    );
    let timed_out = "exec \"$0\" --timeout 3s --kill-after 20s -r 0 --";
    // The command, a job of the attempt's shell, ignores SIGINT (as a non-interactive shell
    // starts its jobs): it hears only the outer one's SIGTERM, which the nested retry passes on.
    let by_sigint = format!(
        "exec \"$0\" --timeout 3s --kill-signal INT --kill-after 20s -r 0 -- sh -c 'trap \"touch ending; exit 130\" INT; {command_line} & wait'"
    );
    let shapes = [
        (
            "signalled, its attempt's shell dies of it",
            signalled,
            Heard("heard"),
        ),
        (
            "timed out, its attempt's shell dies of it",
            format!("{timed_out} sh -c '{command_line} & wait'"),
            Heard("heard"),
        ),
        (
            "timed out",
            format!("{timed_out} {command_line}"),
            Heard("heard"),
        ),
        (
            "timed out with SIGINT, its command hearing none",
            by_sigint,
            Made("ending"),
        ),
    ];
    for (shape, script, ready) in &shapes {
        each_hears_it_once(shape, script, ready, (libc::SIGTERM, "TERM"), &["heard"]);
    }
}

/// A nested `retry` that keeps SIGHUP ignored (started under `nohup`) passes none on: the
/// outer one's SIGHUP reaches its command, once, and its cleanup runs. Whichever way the sweep
/// takes.
#[test]
fn a_nested_retry_under_nohup_leaves_sighup_to_the_outer_one() {
    if !has_python() {
        return missing("python3", "a nested retry under nohup");
    }
    let script = "exec nohup \"$0\" --kill-after 20s -r 0 -- python3 command.py heard ready HUP";
    each_hears_it_once(
        "nohup",
        script,
        &Made("ready"),
        (libc::SIGHUP, "HUP"),
        &["heard"],
    );
}

/// A worker that a nested `retry`'s earlier attempt's leftover starts while its next attempt
/// runs, in a group of its own, re-parented to the nested `retry`, is no attempt of that one's
/// (it never signals it): the outer one sends it the signal, at once, and the running
/// attempt's command hears it once. Whichever way the sweep takes.
#[test]
fn a_worker_an_earlier_nested_attempt_left_hears_the_signal_from_the_outer_retry() {
    if !has_python() {
        return missing("python3", "an earlier nested attempt's worker");
    }
    // Attempt 1 leaves a process in its group that, once attempt 2's command is ready,
    // starts the worker (with attempt 1's RETRY_ATTEMPT); attempt 2 is the command.
    let attempts = "if [ \"$RETRY_ATTEMPT\" = 1 ]; then
           (until [ -e ready ]; do sleep 0.01; done
            exec python3 daemon.py python3 command.py worker worker-ready TERM) &
           exit 1
         fi
         exec python3 command.py heard ready TERM";
    let script = format!("exec \"$0\" -r 1 --delays 0 --kill-after 20s -- sh -c '{attempts}'");
    // Sent no SIGTERM, the worker would hold retry until the grace's end, past the bound.
    each_hears_it_once(
        "a worker",
        &script,
        &Made("worker-ready"),
        (libc::SIGTERM, "TERM"),
        &["heard", "worker"],
    );
}

/// A daemon that a nested `retry`'s hook starts, in a group of its own, re-parented to the
/// nested `retry`, is no hook's to that one (a hook is swept by parentage only): the outer one
/// sends it the signal, at once. Whichever way the sweep takes.
#[test]
fn a_daemon_a_nested_retrys_hook_started_hears_the_signal_from_the_outer_retry() {
    if !has_python() {
        return missing("python3", "a nested retry's hook's daemon");
    }
    let hook = "python3 daemon.py python3 command.py daemon ready TERM; exec sleep 1000";
    let script =
        format!("exec \"$0\" -r 1 --delays 0 --kill-after 20s --on-retry '{hook}' -- false");
    // Sent no SIGTERM, the daemon would hold retry until the grace's end, past the bound.
    each_hears_it_once(
        "a hook",
        &script,
        &Made("ready"),
        (libc::SIGTERM, "TERM"),
        &["daemon"],
    );
}

/// When the signal is sent to `retry` in `each_hears_it_once`.
enum Ready<'a> {
    /// Once the file is made.
    Made(&'a str),
    /// Once the command whose file this is (see `HEARS_A_SIGNAL`) has heard the signal, from a
    /// nested `retry`.
    Heard(&'a str),
}
use Ready::{Heard, Made};

/// Runs `retry --timeout 60s --kill-after 20s -r 0 -- sh -c SCRIPT retry` (timed, for a cgroup
/// of each attempt's where there are cgroups) beside `command.py` and `daemon.py`, each way of
/// the sweep; once `ready`, sends it `signal` (with its name, as `command.py` takes it): `retry`
/// ends by it, and the command of each of `heard` heard it once and cleaned up. `shape` names
/// the case in what a failure says.
fn each_hears_it_once(
    shape: &str,
    script: &str,
    ready: &Ready<'_>,
    signal: (i32, &str),
    heard: &[&str],
) {
    let (signal, name) = signal;
    for (way, env) in WAYS {
        let r = retry();
        r.write("command.py", HEARS_A_SIGNAL);
        r.write("daemon.py", DAEMON_IN_ITS_OWN_GROUP);
        let (file, condition) = match *ready {
            Made(file) => (r.path(file), "is made"),
            Heard(file) => (r.path(file), "says the signal was heard"),
        };
        let is_ready = || match ready {
            Made(_) => file.exists(),
            Heard(_) => {
                fs::read_to_string(&file).is_ok_and(|text| text.lines().any(|line| line == name))
            }
        };
        let heard: Vec<_> = heard.iter().map(|file| (*file, r.path(file))).collect();
        let r = r
            .args(["--timeout", "60s", "--kill-after", "20s", "-r", "0", "--"])
            .args(["sh", "-c", script, BIN]);
        let mut child = Running(r.std_command().envs(env.iter().copied()).spawn().unwrap());
        eventually(&format!("{way}: {} {condition}", file.display()), is_ready);
        send(&child.0, signal);
        assert_eq!(
            shell_status(wait_bounded(&mut child.0)),
            128 + signal,
            "{way}"
        );
        for (file, path) in heard {
            assert_eq!(
                fs::read_to_string(path)
                    .unwrap()
                    .lines()
                    .collect::<Vec<_>>(),
                [name, "cleanup done"],
                "{way}, {shape}: {file}"
            );
        }
    }
}

/// Two thousand descendants that each left the attempt's group (`setsid`) are all ended with
/// it when a signal ends `retry`, whichever way the sweep takes: none is missed, and `retry`
/// waits for them.
#[test]
fn two_thousand_descendants_out_of_the_group_are_ended_with_the_attempt() {
    let _churning = churning();
    let _heavy = one_heavy_test_at_a_time();
    for (way, env) in WAYS {
        let r = retry();
        let marker = r.dir.path().display().to_string();
        let _cleanup = KillMarked(marker.clone());
        let ready = r.path("ready");
        let script = format!(
            "i=0
             while [ $i -lt 2000 ]; do setsid sleep 1004 </dev/null >/dev/null 2>&1 & i=$((i+1)); done
             touch '{}'
             exec sleep 600",
            ready.display()
        );
        // Timed, for a cgroup where there are cgroups; ended by a signal once all are started.
        let r = r
            .args(["--timeout", "10m", "--kill-after", "10s", "-r", "0"])
            .args(sh(&script));
        let mut child = Running(
            r.std_command()
                .env("STRAGGLER_OF", &marker)
                .envs(env.iter().copied())
                .spawn()
                .unwrap(),
        );
        // Two thousand starts take seconds here, many more on a loaded machine: the bound of
        // each wait is ten times the test's usual one.
        let bound = BOUND * 10;
        let started = poll(bound, Duration::from_millis(20), || {
            ready.exists().then_some(())
        });
        assert!(started.is_some(), "{way}: the two thousand never started");
        // retry, the attempt, and the two thousand: each as its environment shows it, which a
        // process in the middle of its exec (the last `sleep`s started) does not for a moment.
        let all_seen = poll(bound, Duration::from_millis(20), || {
            (marked_with(&marker).len() >= 2002).then_some(())
        });
        assert!(all_seen.is_some(), "{way}: {}", marked_with(&marker).len());
        send(&child.0, libc::SIGTERM);
        let ended = poll(bound, Duration::from_millis(20), || {
            child.0.try_wait().unwrap()
        });
        assert_eq!(ended.map(shell_status), Some(143), "{way}");
        // Ended means sent SIGKILL at the latest: one may take a moment to be gone.
        let gone = poll(bound, Duration::from_millis(20), || {
            marked_with(&marker).is_empty().then_some(())
        });
        assert!(
            gone.is_some(),
            "{way}: some of the two thousand outlived retry"
        );
    }
}
