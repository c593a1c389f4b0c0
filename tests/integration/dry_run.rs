//! `--dry-run`: the schedule on stdout, nothing run.

use crate::support::*;

#[test]
fn runs_nothing() {
    let r = retry().args(["--dry-run", "--"]);
    let marker = r.path("ran");
    let script = format!("touch '{}'", marker.display());
    let r = r.args(sh(&script));
    r.assert().code(0).stderr("");
    assert!(!marker.exists());
}

/// The command reads back as the same words when pasted into a shell.
#[test]
fn shows_the_command_as_a_shell_would_take_it() {
    let r = retry().args(["--dry-run", "--", "sh", "-c", "echo 'a b'", "x\ny"]);
    r.assert().code(0).stdout(predicates::str::starts_with(
        "dry run: sh -c 'echo '\\''a b'\\''' $'x\\ny'\n",
    ));
}

/// Each jitter kind is named in the schedule line, a factor as a round percentage however it
/// is written.
#[test]
fn names_the_jitter() {
    for (jitter, named) in [
        ("none", "no jitter"),
        ("full", "full jitter"),
        ("equal", "equal jitter"),
        ("decorrelated", "decorrelated jitter"),
        ("0.07", "jitter ±7%"),
        ("0.29", "jitter ±29%"),
        (".2", "jitter ±20%"),
        ("-0", "jitter ±0%"),
        ("0.12345", "jitter ±12.35%"),
        ("+1.5s", "jitter +0..1.5s"),
    ] {
        retry()
            .args(["--dry-run", "--jitter", jitter, "true"])
            .assert()
            .code(0)
            .stdout(predicates::str::contains(format!(
                "schedule: exponential backoff, base 1s, max 30s, multiplier 2, {named}\n"
            )));
    }
}

#[test]
fn fixed_seed_output() {
    retry()
        .args(["--dry-run", "--seed", "7", "--retries", "3", "--base", "1s", "--max-time", "5s", "curl", "-f", "url"])
        .assert()
        .code(0)
        .stdout(
            "dry run: curl -f url\n\
             schedule: exponential backoff, base 1s, max 30s, multiplier 2, equal jitter\n\
             limits: 4 attempts, max-time 5s, timeout none\n\
             seed: 7\n\
             elapsed counts waits only: each attempt adds its own running time\n\
             \n\
             \x20retry    nominal                 wait                elapsed      drawn  delays\n\
             \x20    1         1s            500ms..1s              500ms..1s    694.9ms  ██████░░░░░░\n\
             \x20    2         2s               1s..2s               1.5s..3s     1.016s  ████████████░░░░░░░░░░░░\n\
             \x20    3         4s           1.9s..3.4s             3.5s..4.9s     3.188s  ██████████████████████░░░░░░░░░░░░░░░░░░  <- the last chance: cut short so the last attempt starts before --max-time\n\
             --max-time 5s allows at most 4 attempts: the last starts by 4.9s, 100ms before it (or twice the longest attempt, when attempts take longer)\n",
        );
}

/// A COMMAND that cannot be started is seen to be, without running it: the line a run would
/// print, and what would follow. A command that can be started gets no note.
#[test]
fn foresees_a_command_that_cannot_start() {
    let r = retry();
    let text = r.write_with_mode("not-executable", "echo hi\n", 0o644);
    let text = text.to_str().unwrap();
    let dir = r.path("").display().to_string();
    for (args, notes) in [
        (
            vec!["no-such-command-for-retry"],
            "note: cannot run 'no-such-command-for-retry': No such file or directory (command \
             not found)\nnote: a run would end at once with status 127\n",
        ),
        (
            vec!["--retry-on-exit", "127", "no-such-command-for-retry"],
            "note: cannot run 'no-such-command-for-retry': No such file or directory (command \
             not found)\nnote: every attempt would fail so, with status 127\n",
        ),
        (
            vec![text],
            &*format!(
                "note: cannot run '{text}': Permission denied (command not executable)\nnote: a \
                 run would end at once with status 126\n"
            ),
        ),
        (
            vec!["--fail-exit", "1", &dir],
            &*format!(
                "note: cannot run '{dir}': it is a directory (command not executable)\nnote: a \
                 run would end at once with status 1\n"
            ),
        ),
    ] {
        let output = r
            .command()
            .args(["--dry-run", "-r", "1"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(stdout.ends_with(notes), "{args:?}: {stdout}");
    }
    let output = r
        .command()
        .args(["--dry-run", "-r", "1", "true"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&output.stdout).contains("note:"));
}

/// With both limits, a last line says how many attempts `--max-time` leaves time for when each
/// runs its full `--timeout`: the table counts waits only.
#[test]
fn says_how_many_full_timeouts_max_time_leaves_time_for() {
    retry()
        .args(["--dry-run", "--timeout", "10s", "--max-time", "50s", "--retries", "4"])
        .assert()
        .code(0)
        .stdout(predicates::str::ends_with(
            "--max-time 50s leaves time for at least 4 attempts, even if each runs its full --timeout 10s\n",
        ));
}

/// With `--timeouts`, the limits line gives the list and attempt 1's limit, and each retry's row
/// shows the limit of the attempt after its wait; the last line counts with each attempt's own.
#[test]
fn shows_each_attempts_limit_beside_its_wait() {
    let output = retry()
        .args([
            "--dry-run",
            "--seed",
            "1",
            "--jitter",
            "none",
            "--base",
            "1s",
        ])
        .args([
            "--timeouts",
            "2s,0,10s",
            "--retries",
            "3",
            "--max-time",
            "1m",
        ])
        .args(["--", "true"])
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("limits: 4 attempts, max-time 1m, timeouts 2s, none, 10s (the last repeats; attempt 1 gets 2s,"),
        "{text}"
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("retry "))
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0][..6],
        ["retry", "nominal", "wait", "elapsed", "timeout", "drawn"]
    );
    let limits: Vec<&str> = rows[1..].iter().map(|row| row[4]).collect();
    assert_eq!(limits, ["none", "10s", "10s"], "{text}");
    // One limit for all: no column.
    retry()
        .args(["--dry-run", "--timeout", "5s", "--", "true"])
        .assert()
        .code(0)
        .stdout(predicates::str::contains("timeout 5s\n"))
        .stdout(predicates::str::contains("elapsed  delays\n"));
    // Every attempt's own full limit counts: attempt 4 would start at the latest at
    // 2s + 1s + 10s + 2s + 10s + 4s = 29s, past 25s.
    retry()
        .args(["--dry-run", "--jitter", "none", "--base", "1s", "--timeouts", "2s,10s"])
        .args(["--retries", "3", "--max-time", "25s", "--", "true"])
        .assert()
        .code(0)
        .stdout(predicates::str::ends_with(
            "--max-time 25s leaves time for at least 3 attempts, even if each runs its full limit\n",
        ));
}
