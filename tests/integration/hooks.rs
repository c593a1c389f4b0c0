//! Hooks: their environment, their order relative to waits, and that they never change the
//! exit status.

use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::support::*;

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

/// Runs `retry -r RETRIES --delays 0 --on-retry HOOK -- sh -c 'echo "$RETRY_ATTEMPT ${KEY-unset}"; exit 1'`
/// with `env`, and returns its stdout lines, its stderr and its status.
fn hand_on(
    r: &Retry,
    hook: &str,
    retries: &str,
    keys: &[&str],
    env: &[(&str, &str)],
) -> (Vec<String>, String, i32) {
    let shown: String = keys
        .iter()
        .map(|key| format!(" {key}=${{{key}-unset}}"))
        .collect();
    let mut command = r.command();
    command
        .args(["-r", retries, "--delays", "0", "--on-retry", hook])
        .args(sh(&format!("echo \"$RETRY_ATTEMPT{shown}\"; exit 1")));
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    (
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect(),
        String::from_utf8(output.stderr).unwrap(),
        output.status.code().unwrap_or(-1),
    )
}

/// `--on-retry` gets a private empty file in `RETRY_ENV_FILE`; the `KEY=VALUE` lines it writes
/// there are in the environment of every later attempt, a later hook's value wins, and the file
/// is gone once read. Neither the attempts nor the other hooks get `RETRY_ENV_FILE`.
#[test]
fn an_on_retry_hook_hands_values_to_later_attempts() {
    let r = retry();
    let seen = r.path("seen");
    let hook = format!(
        "ls -l \"$RETRY_ENV_FILE\" | cut -c1-10 >> '{seen}'; wc -c < \"$RETRY_ENV_FILE\" >> '{seen}'; \
         echo \"$RETRY_ENV_FILE\" >> '{seen}'; \
         echo MIRROR=m$RETRY_ATTEMPT >> \"$RETRY_ENV_FILE\"; \
         [ $RETRY_ATTEMPT = 1 ] && echo 'FIRST=a b=c' >> \"$RETRY_ENV_FILE\"; true",
        seen = seen.display()
    );
    let (lines, stderr, status) = hand_on(
        &r,
        &hook,
        "2",
        &["MIRROR", "FIRST", "RETRY_ENV_FILE"],
        &[("RETRY_ENV_FILE", "/outer/file")],
    );
    assert_eq!(status, 1);
    assert_eq!(
        lines,
        [
            "1 MIRROR=unset FIRST=unset RETRY_ENV_FILE=unset",
            "2 MIRROR=m1 FIRST=a b=c RETRY_ENV_FILE=unset",
            "3 MIRROR=m2 FIRST=a b=c RETRY_ENV_FILE=unset",
        ]
    );
    assert!(!stderr.contains("RETRY_ENV_FILE"), "{stderr}");
    let seen: Vec<String> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(seen.len(), 6, "{seen:?}");
    for hook in seen.chunks(3) {
        assert_eq!(hook[0], "-rw-------", "private: {seen:?}");
        assert_eq!(hook[1].trim(), "0", "empty: {seen:?}");
        assert!(
            !std::path::Path::new(&hook[2]).exists(),
            "removed once read: {seen:?}"
        );
    }
    assert_ne!(seen[2], seen[5], "a file for each hook");
    // Only --on-retry gets one.
    r.command()
        .args([
            "-r",
            "0",
            "--on-failure",
            "echo failure ${RETRY_ENV_FILE-unset}",
        ])
        .args([
            "--on-success",
            "echo success ${RETRY_ENV_FILE-unset}",
            "false",
        ])
        .env("RETRY_ENV_FILE", "/outer/file")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("failure unset"));
}

/// A line that does not parse (not `KEY=VALUE`, a `RETRY_` name, a bad name) is skipped and said
/// once for the hook, naming the first; the others still count, and the status stands.
#[test]
fn lines_that_do_not_parse_are_skipped_and_said_once() {
    let hook =
        "printf 'GOOD=1\\nnot a value\\nRETRY_ATTEMPT=9\\n1X=2\\nALSO=2\\n' > \"$RETRY_ENV_FILE\"";
    let (lines, stderr, status) = hand_on(&retry(), hook, "1", &["GOOD", "ALSO"], &[]);
    assert_eq!(status, 1);
    assert_eq!(lines, ["1 GOOD=unset ALSO=unset", "2 GOOD=1 ALSO=2"]);
    assert_eq!(stderr.matches("RETRY_ENV_FILE").count(), 1, "{stderr}");
    assert!(
        stderr.contains("line 2 of RETRY_ENV_FILE skipped: it is not KEY=VALUE (and 2 lines more)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("RETRY_ATTEMPT=9"),
        "values are never echoed: {stderr}"
    );
    // In JSON: one event.
    let r = retry().args([
        "-r",
        "1",
        "--delays",
        "0",
        "--log-format",
        "json",
        "--on-retry",
        hook,
        "false",
    ]);
    let output = r.command().output().unwrap();
    let events = json_events(&output.stderr);
    let skipped: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "hook-env-skipped")
        .collect();
    assert_eq!(skipped.len(), 1, "{events:?}");
    assert_eq!(
        (skipped[0]["line"].as_u64(), skipped[0]["skipped"].as_u64()),
        (Some(2), Some(3))
    );
}

/// The hook owns the file's content, not what `retry` does with it: a FIFO, a symlink (to an
/// endless device) or a directory put in its place is not read and holds nothing up; a file past
/// 64 KiB is read to there. Each is said, and the run goes on.
#[test]
fn a_hook_that_replaces_its_file_hands_on_nothing_and_holds_nothing_up() {
    for (hook, said) in [
        (
            "rm \"$RETRY_ENV_FILE\"; mkfifo \"$RETRY_ENV_FILE\"",
            "not a regular file",
        ),
        ("ln -sf /dev/zero \"$RETRY_ENV_FILE\"", "symlink"),
        (
            "rm \"$RETRY_ENV_FILE\"; mkdir \"$RETRY_ENV_FILE\"",
            "not a regular file",
        ),
    ] {
        let (lines, stderr, status) = hand_on(&retry(), hook, "1", &["A"], &[]);
        assert_eq!(status, 1, "{hook}");
        assert_eq!(lines, ["1 A=unset", "2 A=unset"], "{hook}");
        assert_eq!(
            stderr.matches("its RETRY_ENV_FILE is not read").count(),
            1,
            "{hook}: {stderr}"
        );
        assert!(stderr.contains(said), "{hook}: {stderr}");
    }
    // Removed by the hook: nothing to hand on, nothing to say.
    let (lines, stderr, _) = hand_on(&retry(), "rm \"$RETRY_ENV_FILE\"", "1", &["A"], &[]);
    assert_eq!(lines, ["1 A=unset", "2 A=unset"]);
    assert!(!stderr.contains("RETRY_ENV_FILE"), "{stderr}");
    let big = "{ echo A=1; head -c 200000 /dev/zero | tr '\\0' x; echo; echo B=2; } > \"$RETRY_ENV_FILE\"";
    let (lines, stderr, _) = hand_on(&retry(), big, "1", &["A", "B"], &[]);
    assert_eq!(lines, ["1 A=unset B=unset", "2 A=1 B=unset"]);
    assert!(stderr.contains("longer than the 64 KiB"), "{stderr}");
}

/// With no temporary directory to make the file in, the hook runs without `RETRY_ENV_FILE`,
/// which is said once for the run, and the run goes on.
#[test]
fn no_temporary_directory_no_values_said_once() {
    let hook = "echo \"hook sees ${RETRY_ENV_FILE-unset}\"";
    let (lines, stderr, status) =
        hand_on(&retry(), hook, "2", &["A"], &[("TMPDIR", "/nonexistent")]);
    assert_eq!(status, 1);
    assert_eq!(lines.len(), 3);
    assert_eq!(stderr.matches("hook sees unset").count(), 2, "{stderr}");
    assert_eq!(
        stderr.matches("its RETRY_ENV_FILE is not read").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("/nonexistent"), "{stderr}");
}

/// The hook's file is made in `TMPDIR` (set but empty: `/tmp`, never the current directory),
/// and nothing of it is left there: not the file, nor a directory the hook made in its place.
#[test]
fn the_hooks_file_lives_in_tmpdir_and_leaves_nothing_there() {
    let r = retry();
    let tmp = r.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let hook = "echo \"file $RETRY_ENV_FILE\"; [ $RETRY_ATTEMPT = 2 ] && { rm \"$RETRY_ENV_FILE\"; mkdir \"$RETRY_ENV_FILE\"; touch \"$RETRY_ENV_FILE/x\"; }; true";
    let (_, stderr, _) = hand_on(&r, hook, "2", &[], &[("TMPDIR", tmp.to_str().unwrap())]);
    let files: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("file "))
        .collect();
    assert_eq!(files.len(), 2, "{stderr}");
    assert!(
        files.iter().all(|f| f.starts_with(tmp.to_str().unwrap())),
        "{files:?}"
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "left in TMPDIR"
    );
    // Set but empty: /tmp, whatever the current directory.
    let output = r
        .command()
        .args([
            "-r",
            "1",
            "--delays",
            "0",
            "--on-retry",
            "echo \"file $RETRY_ENV_FILE\"",
            "false",
        ])
        .env("TMPDIR", "")
        .current_dir(&tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("file /tmp/retry-env-"), "{stderr}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// The hooks' files live in one directory made for the run in `TMPDIR`, private to the user
/// (0700), so that no one else can put anything at a name a hook freed; it is gone after the
/// run.
#[test]
fn the_hooks_files_live_in_a_private_directory_of_the_run() {
    let r = retry();
    let tmp = r.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let hook = "dir=$(dirname \"$RETRY_ENV_FILE\"); echo \"dir $dir $(stat -c %a \"$dir\")\"";
    let (_, stderr, status) = hand_on(&r, hook, "2", &[], &[("TMPDIR", tmp.to_str().unwrap())]);
    assert_eq!(status, 1);
    let dirs: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("dir "))
        .collect();
    assert_eq!(dirs.len(), 2, "{stderr}");
    assert_eq!(dirs[0], dirs[1], "one directory for the run: {stderr}");
    let (dir, mode) = dirs[0].rsplit_once(' ').unwrap();
    assert_eq!(mode, "700", "{stderr}");
    let dir = std::path::Path::new(dir);
    assert_eq!(dir.parent(), Some(tmp.as_path()), "{stderr}");
    assert!(!dir.exists(), "gone after the run");
}

/// A hook may write its file in place or move a file of its own over it.
#[test]
fn a_file_the_hook_moves_over_its_file_is_read() {
    let hook = "printf 'A=moved\\n' > \"$RETRY_ENV_FILE.new\"; mv \"$RETRY_ENV_FILE.new\" \"$RETRY_ENV_FILE\"";
    let (lines, stderr, _) = hand_on(&retry(), hook, "1", &["A"], &[]);
    assert_eq!(lines, ["1 A=unset", "2 A=moved"], "{stderr}");
    assert!(!stderr.contains("RETRY_ENV_FILE"), "{stderr}");
}

/// Only a file of the user's is read: one that belongs to another user hands on nothing and
/// is said once. (Needs root, to give a file away.)
#[test]
fn a_file_of_another_user_hands_on_nothing() {
    if !root("a hook's file of another user") {
        return;
    }
    let hook = "echo A=1 > \"$RETRY_ENV_FILE\"; chown 65534 \"$RETRY_ENV_FILE\"";
    let (lines, stderr, status) = hand_on(&retry(), hook, "1", &["A"], &[]);
    assert_eq!(status, 1);
    assert_eq!(lines, ["1 A=unset", "2 A=unset"], "{stderr}");
    assert_eq!(
        stderr.matches("its RETRY_ENV_FILE is not read").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("another user (uid 65534)"), "{stderr}");
}

/// In a `TMPDIR` every user may write (`/tmp`), another user cannot put a file at the name a
/// hook freed for the next attempts to run with (`LD_PRELOAD=` in it). (Needs root and
/// setpriv, to be another user.)
#[test]
fn another_user_cannot_put_a_file_at_a_name_the_hook_freed() {
    use std::os::unix::fs::PermissionsExt;
    if !root("a neighbour at the hook's file") {
        return;
    }
    if std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_err()
    {
        missing("setpriv", "a neighbour at the hook's file");
        return;
    }
    let r = retry();
    let tmp = r.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(r.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let hook = "rm \"$RETRY_ENV_FILE\"; \
         setpriv --reuid=65534 --regid=65534 --clear-groups \
           sh -c 'echo PLANTED=1 > \"$RETRY_ENV_FILE\"' 2>/dev/null; echo \"neighbour $?\"";
    let (lines, stderr, _) = hand_on(
        &r,
        hook,
        "1",
        &["PLANTED"],
        &[("TMPDIR", tmp.to_str().unwrap())],
    );
    assert_eq!(lines, ["1 PLANTED=unset", "2 PLANTED=unset"], "{stderr}");
    assert!(
        stderr.contains("neighbour ") && !stderr.contains("neighbour 0"),
        "the neighbour made the file: {stderr}"
    );
}

/// A file written on Windows ends its lines with `\r\n`: the `\r` is not the value's.
#[test]
fn a_crlf_line_end_is_not_part_of_the_value() {
    let hook = "printf 'URL=https://mirror\\r\\n' > \"$RETRY_ENV_FILE\"";
    let (lines, _, _) = hand_on(&retry(), hook, "1", &["URL"], &[]);
    assert_eq!(lines, ["1 URL=unset", "2 URL=https://mirror"]);
}

/// A signal that ends the run during the hook, or during a later attempt, leaves nothing of
/// its file in TMPDIR either, not even a directory the hook made in its place.
#[test]
fn a_signal_during_the_hook_leaves_nothing_in_tmpdir() {
    let r = retry();
    let tmp = r.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let hook =
        "rm \"$RETRY_ENV_FILE\"; mkdir -p \"$RETRY_ENV_FILE/sub\"; kill -INT $PPID; exec sleep 5";
    // Also a signal during the next attempt, the run's directory of hook files still there
    // with what the hook left in it.
    let after = "touch \"$(dirname \"$RETRY_ENV_FILE\")/left\"";
    let attempt = "[ $RETRY_ATTEMPT = 2 ] && kill -INT $PPID && exec sleep 5; exit 1";
    for (hook, attempt) in [(hook, "false"), (after, attempt)] {
        let output = r
            .command()
            .args(["-r", "1", "--delays", "0", "--on-retry", hook])
            .args(sh(attempt))
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        assert_eq!(shell_status(output.status), 130, "{hook}");
        assert_eq!(
            std::fs::read_dir(&tmp).unwrap().count(),
            0,
            "left in TMPDIR: {hook}"
        );
    }
}
