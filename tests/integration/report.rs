//! `--report FILE`: the run's summary for a CI step, under every outcome, in both formats, and
//! never through what is not a regular file.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use predicates::prelude::*;
use serde_json::Value;

use crate::support::*;

fn report_of(path: &Path) -> Value {
    let text = fs::read_to_string(path).expect("the report");
    assert_eq!(text.lines().count(), 1, "one object, one line: {text}");
    serde_json::from_str(&text).expect("JSON")
}

/// Runs `retry --report FILE ARGS`, expecting `status`, and returns the report it wrote.
fn reported(r: &Retry, args: &[&str], status: i32) -> Value {
    let file = r.path("report.json");
    let _ = fs::remove_file(&file);
    let output = retry()
        .args(["--report", file.to_str().unwrap()])
        .args(args)
        .command()
        .output()
        .unwrap();
    assert_eq!(shell_status(output.status), status, "{args:?}: {output:?}");
    report_of(&file)
}

/// Each attempt's `exit` (or `signal`), `timed_out` and `wait_ms` (null when absent).
fn detail(report: &Value) -> Vec<(Value, Value, Value)> {
    report["attempts_detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|attempt| {
            let end = attempt.get("exit").or(attempt.get("signal")).cloned();
            assert!(
                attempt.get("exit").is_none() || attempt.get("signal").is_none(),
                "exit or signal: {attempt}"
            );
            (
                end.unwrap_or(Value::Null),
                attempt["timed_out"].clone(),
                attempt.get("wait_ms").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn figures(report: &Value) -> (u64, u64, u64, Option<u64>, String) {
    (
        report["attempts"].as_u64().unwrap(),
        report["retries"].as_u64().unwrap(),
        report["exit_status"].as_u64().unwrap(),
        report.get("last_exit").map(|code| code.as_u64().unwrap()),
        report["outcome"].as_str().unwrap().to_string(),
    )
}

#[test]
fn success_exhausted_deadline_and_permanent_runs_are_reported() {
    let r = retry();
    let success = reported(&r, &["--seed", "9", "true"], 0);
    assert_eq!(figures(&success), (1, 0, 0, Some(0), "success".into()));
    assert_eq!(success["seed"], 9);
    assert!(success["elapsed_ms"].is_u64());
    assert_eq!(detail(&success), [(0.into(), false.into(), Value::Null)]);
    assert!(success["attempts_detail"][0]["duration_ms"].is_u64());
    assert_eq!(success["attempts_detail"][0]["hint"], false);
    assert_eq!(success["attempts_detail"][0]["attempt"], 1);

    let exhausted = reported(
        &r,
        &["-r", "2", "--delays", "0,20ms", "--", "sh", "-c", "exit 3"],
        3,
    );
    assert_eq!(figures(&exhausted), (3, 2, 3, Some(3), "exhausted".into()));
    assert_eq!(
        detail(&exhausted),
        [
            (3.into(), false.into(), 0.into()),
            (3.into(), false.into(), 20.into()),
            (3.into(), false.into(), Value::Null)
        ]
    );

    let deadline = reported(&r, &["--max-time", "300ms", "--", "sleep", "30"], 124);
    assert_eq!(
        figures(&deadline),
        (1, 0, 124, Some(124), "max-time".into())
    );
    assert_eq!(detail(&deadline), [(124.into(), true.into(), Value::Null)]);

    let timed_out = reported(
        &r,
        &[
            "--timeouts",
            "200ms",
            "-r",
            "1",
            "--delays",
            "0",
            "--",
            "sleep",
            "30",
        ],
        124,
    );
    assert_eq!(
        figures(&timed_out),
        (2, 1, 124, Some(124), "exhausted".into())
    );

    let permanent = reported(&r, &["--stop-on-exit", "4", "--", "sh", "-c", "exit 4"], 4);
    assert_eq!(figures(&permanent), (1, 0, 4, Some(4), "permanent".into()));
    let not_found = reported(&r, &["no-such-command-for-the-report"], 127);
    assert_eq!(
        figures(&not_found),
        (1, 0, 127, Some(127), "permanent".into())
    );

    // Under --fail-exit, retry's own status and the last attempt's differ.
    let failed = reported(
        &r,
        &["-r", "0", "--fail-exit", "9", "--", "sh", "-c", "exit 3"],
        9,
    );
    assert_eq!(figures(&failed), (1, 0, 9, Some(3), "exhausted".into()));
}

/// Retries are the attempts after the run's first (the contract's `attempts - 1`, as the budget
/// counts them): the successes of a `--consecutive` streak too.
#[test]
fn retries_are_the_attempts_after_the_first() {
    let r = retry();
    let streak = reported(&r, &["--consecutive", "3", "--delays", "0", "true"], 0);
    assert_eq!(figures(&streak), (3, 2, 0, Some(0), "success".into()));
    let flaky = r.flaky(1);
    let args: Vec<&str> = ["--consecutive", "2", "--delays", "0"]
        .into_iter()
        .chain(flaky.iter().map(String::as_str))
        .collect();
    let report = reported(&r, &args, 0);
    assert_eq!(figures(&report), (3, 2, 0, Some(0), "success".into()));
}

#[test]
fn budget_and_breaker_endings_are_reported() {
    let r = retry();
    let state = r.path("state");
    let state = state.to_str().unwrap();
    let budget = [
        "--state",
        state,
        "--budget",
        "b",
        "--budget-floor",
        "1/1m",
        "--budget-ratio",
        "0",
        "--delays",
        "0",
        "-r",
        "5",
        "false",
    ];
    let report = reported(&r, &budget, 1);
    assert_eq!(figures(&report), (2, 1, 1, Some(1), "budget".into()));
    assert_eq!(
        detail(&report)[1].2,
        Value::Null,
        "no wait after the last attempt"
    );

    let breaker = [
        "--state",
        state,
        "--breaker",
        "k",
        "--breaker-threshold",
        "1",
        "-r",
        "0",
    ];
    r.command().args(breaker).args(["false"]).assert().code(1);
    let report = reported(&r, &[&breaker[..], &["true"]].concat(), 75);
    assert_eq!(figures(&report), (0, 0, 75, None, "breaker".into()));
    assert_eq!(report["attempts_detail"], serde_json::json!([]));
}

/// Runs `retry --report FILE ARGS`, sends it `signal` once its stderr says `when`, and returns
/// the report, holding `retry` to exiting with 128 + `signal`.
fn report_when_signalled(r: &Retry, args: &[&str], when: &str, signal: i32) -> Value {
    let file = r.path("report.json");
    let mut child = retry()
        .args(["--report", file.to_str().unwrap()])
        .args(args)
        .spawn();
    wait_for_stderr(&mut child, when);
    let since = Instant::now();
    send(&child, signal);
    assert_eq!(
        status_within(&mut child, since, Duration::from_secs(10)),
        128 + signal
    );
    report_of(&file)
}

/// A signal to `retry` ends the run, and the report is still written, with the attempt it cut.
#[test]
fn a_run_ended_by_a_signal_is_reported() {
    let r = retry();
    let args = ["-v", "--", "sleep", "30"];
    let report = report_when_signalled(&r, &args, "attempt 1/6 starting", libc::SIGTERM);
    assert_eq!(figures(&report), (1, 0, 143, Some(143), "signal".into()));
    assert_eq!(
        detail(&report),
        [("SIGTERM".into(), false.into(), Value::Null)]
    );
    // Signalled during a wait: the attempt before it is the last, with no wait after it.
    let args = ["--delays", "1h", "--max", "1h", "--", "false"];
    let report = report_when_signalled(&r, &args, "next attempt in 1h", libc::SIGINT);
    assert_eq!(figures(&report), (1, 0, 130, Some(1), "signal".into()));
    assert_eq!(detail(&report), [(1.into(), false.into(), Value::Null)]);
}

#[test]
fn a_reader_gone_from_stdout_is_a_broken_pipe() {
    let r = retry();
    let file = r.path("report.json");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = r
        .std_command()
        .args(["--report", file.to_str().unwrap(), "--", "yes"])
        .stdout(Stdio::from(writer))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(shell_status(status), 141);
    let report = report_of(&file);
    assert_eq!(
        figures(&report),
        (1, 0, 141, Some(141), "broken-pipe".into())
    );
    assert_eq!(
        detail(&report),
        [("SIGPIPE".into(), false.into(), Value::Null)]
    );
}

/// A wait that a hint the command printed set is marked; one the schedule set is not.
#[test]
fn a_wait_set_by_a_hint_is_marked() {
    let r = retry();
    let flaky = r.flaky(1);
    let args: Vec<&str> = [
        "--delays",
        "0",
        "--retry-after-stdout",
        "again in ([0-9.]+)s",
        "--",
    ]
    .into_iter()
    .chain(["sh", "-c", "echo again in 0.2s; exit 1"])
    .collect();
    let hinted = reported(&r, &[&["-r", "1"][..], &args].concat(), 1);
    let first = &hinted["attempts_detail"][0];
    assert_eq!(first["hint"], true, "{hinted}");
    assert!(first["wait_ms"].as_u64().unwrap() >= 200, "{hinted}");
    let plain = reported(
        &r,
        &[
            &["-r", "1", "--delays", "0", "--"][..],
            &flaky.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
        0,
    );
    assert_eq!(plain["attempts_detail"][0]["hint"], false);
}

/// `github` appends the step outputs, keeping what earlier steps wrote, once per run.
#[test]
fn github_lines_are_appended_to_what_earlier_steps_wrote() {
    let r = retry();
    let file = r.write("github_output", "earlier=kept\n");
    let report = [
        "--report",
        file.to_str().unwrap(),
        "--report-format",
        "github",
    ];
    r.command()
        .args(report)
        .args(["true"])
        .assert()
        .code(0)
        .stderr("");
    r.command()
        .args(report)
        .args(["-r", "1", "--delays", "0", "--", "sh", "-c", "exit 2"])
        .assert()
        .code(2);
    let text = fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "earlier=kept");
    assert_eq!(
        lines[1..6],
        [
            "attempts=1",
            "retries=0",
            "exit_status=0",
            "last_exit=0",
            "outcome=success"
        ]
    );
    assert!(lines[6].starts_with("elapsed_ms="), "{text}");
    assert_eq!(
        lines[7..12],
        [
            "attempts=2",
            "retries=1",
            "exit_status=2",
            "last_exit=2",
            "outcome=exhausted"
        ]
    );
    assert_eq!(lines.len(), 13, "{text}");
    // A new file is made when there is none; a run that made no attempt has no last_exit.
    let state = r.path("state");
    let breaker = [
        "--state",
        state.to_str().unwrap(),
        "--breaker",
        "k",
        "--breaker-threshold",
        "1",
        "-r",
        "0",
    ];
    r.command().args(breaker).args(["false"]).assert().code(1);
    let fresh = r.path("fresh");
    r.command()
        .args([
            "--report",
            fresh.to_str().unwrap(),
            "--report-format",
            "github",
        ])
        .args(breaker)
        .args(["true"])
        .assert()
        .code(75);
    let text = fs::read_to_string(&fresh).unwrap();
    assert!(
        text.starts_with("attempts=0\nretries=0\nexit_status=75\noutcome=breaker\n"),
        "{text}"
    );
}

/// `retry` reports only runs it made: misuse, `--dry-run` and the state actions write nothing.
#[test]
fn misuse_dry_run_and_state_actions_write_no_report() {
    let r = retry();
    let file = r.path("report.json");
    let report = format!("--report={}", file.display());
    r.command()
        .args([&report, "--dry-run", "true"])
        .assert()
        .code(0);
    r.command()
        .args([&report, "--retries", "x", "true"])
        .assert()
        .misuse("--retries");
    let state = r.path("state");
    r.command()
        .args([
            &report,
            "--state",
            state.to_str().unwrap(),
            "--budget",
            "b",
            "--show-state",
        ])
        .assert()
        .code(0);
    assert!(!file.exists());
    r.command()
        .args(["--report", "/no/such/directory/report.json", "true"])
        .assert()
        .misuse("--report")
        .stderr(predicate::str::contains("there is no directory"));
    r.command()
        .args([
            "--report",
            file.to_str().unwrap(),
            "--report-format",
            "yaml",
            "true",
        ])
        .assert()
        .misuse("--report-format");
}

/// Runs `true` with `--report PATH` in `format`: the run ends with 0 and says once that the
/// report cannot be written because it is not a regular file, also under `--log-format json`.
fn refused(path: &Path, format: &str) {
    retry()
        .args([
            "--report",
            path.to_str().unwrap(),
            "--report-format",
            format,
            "true",
        ])
        .assert()
        .code(0)
        .stderr(
            predicate::str::contains("cannot write the report")
                .count(1)
                .and(predicate::str::contains("not a regular file")),
        );
    let output = retry()
        .args([
            "--report",
            path.to_str().unwrap(),
            "--report-format",
            format,
        ])
        .args(["--log-format", "json", "true"])
        .command()
        .output()
        .unwrap();
    let events = json_events(&output.stderr);
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "report-failed")
        .collect();
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_eq!(failed[0]["path"], path.to_str().unwrap());
}

/// Neither format writes through a FIFO (nor blocks on one), a socket, a directory, or a
/// symlink to one of them; a symlink to a regular file is followed.
#[test]
fn only_a_regular_file_takes_a_report() {
    use std::os::unix::fs::symlink;
    let r = retry();
    let fifo = r.path("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let socket = r.path("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let directory = r.path("directory");
    fs::create_dir(&directory).unwrap();
    for path in [&fifo, &socket, &directory] {
        let link = r.path(&format!("link-to-{}", path.file_name().unwrap().display()));
        symlink(path, &link).unwrap();
        for format in ["json", "github"] {
            refused(path, format);
            refused(&link, format);
        }
    }
    let real = r.write("real", "earlier=kept\n");
    let link = r.path("link");
    symlink(&real, &link).unwrap();
    r.command()
        .args([
            "--report",
            link.to_str().unwrap(),
            "--report-format",
            "github",
            "true",
        ])
        .assert()
        .code(0)
        .stderr("");
    assert!(
        fs::read_to_string(&real)
            .unwrap()
            .starts_with("earlier=kept\nattempts=1\n")
    );
    r.command()
        .args(["--report", link.to_str().unwrap(), "true"])
        .assert()
        .code(0)
        .stderr("");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(report_of(&real)["outcome"], "success");
}

/// A device at FILE (a null device made in a private mount namespace, never the real `/dev`),
/// or a symlink to one, takes no report in either format, and stays a device.
#[test]
fn a_device_takes_no_report() {
    let r = retry();
    let at = r.dir.path().display();
    let script = format!(
        "mount -t tmpfs tmpfs '{at}' && mknod '{at}/null' c 1 3 && ln -s null '{at}/link' || exit 99
         for path in '{at}/null' '{at}/link'; do
           for format in json github; do
             '{BIN}' --report \"$path\" --report-format $format true 2>> '{at}/said' || echo \"status $?\"
           done
         done
         [ -c '{at}/null' ] && [ -L '{at}/link' ] && echo still a device
         grep -c 'not a regular file' '{at}/said'
         exit 0"
    );
    let Some(output) = in_mount_namespace(&r, &script, &[], "a device at the report") else {
        return;
    };
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "still a device\n4\n"
    );
}

/// A directory on the way to FILE that is another user's symlink (in a shared directory such
/// as /tmp, a neighbour's link into a directory of the victim's) is not followed, for the report
/// as for the metrics file and the state directory. (Needs root, to make a link another user's.)
#[test]
fn a_directory_symlink_of_another_user_is_not_followed() {
    use std::os::unix::fs::symlink;
    if !root("a symlink of another user") {
        return;
    }
    let r = retry();
    let victim = r.path("victim");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("out.json"), "precious").unwrap();
    let theirs = r.path("theirs");
    symlink(&victim, &theirs).unwrap();
    std::os::unix::fs::lchown(&theirs, Some(65534), None).unwrap();
    for format in ["json", "github"] {
        r.command()
            .args([
                "--report",
                theirs.join("out.json").to_str().unwrap(),
                "--report-format",
                format,
            ])
            .args(["true"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains(
                "a symlink of another user (uid 65534)",
            ));
        assert_eq!(
            fs::read_to_string(victim.join("out.json")).unwrap(),
            "precious"
        );
    }
    r.command()
        .args([
            "--metrics-file",
            theirs.join("out.json").to_str().unwrap(),
            "true",
        ])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("a symlink of another user"));
    assert_eq!(
        fs::read_to_string(victim.join("out.json")).unwrap(),
        "precious"
    );
    let state = theirs.join("state");
    r.command()
        .args(["--state", state.to_str().unwrap(), "--budget", "b", "true"])
        .assert()
        .misuse("a symlink of another user");
    assert!(!victim.join("state").exists());
}

/// A report file made private stays private: the new file takes the old one's permissions.
#[test]
fn a_replaced_report_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let r = retry();
    let file = r.write("report.json", "{}");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
    r.command()
        .args(["--report", file.to_str().unwrap(), "true"])
        .assert()
        .code(0);
    assert_eq!(
        fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(report_of(&file)["outcome"], "success");
}

/// On a disk that fills up, the github lines go in whole or not at all: never half a line for
/// the next step's output to glue onto. (A small tmpfs in a private mount namespace.)
#[test]
fn a_full_disk_leaves_no_half_line() {
    let r = retry();
    let at = r.dir.path().display();
    let script = format!(
        "mount -t tmpfs -o size=64k tmpfs '{at}' || exit 99
         head -c 4071 /dev/zero | tr '\\0' x > '{at}/out' && echo >> '{at}/out'
         head -c 1000000 /dev/zero > '{at}/fill' 2>/dev/null
         '{BIN}' --report '{at}/out' --report-format github true; echo \"status $?\"
         wc -c < '{at}/out'; tail -c 1 '{at}/out' | od -An -c
         exit 0"
    );
    let Some(output) = in_mount_namespace(&r, &script, &[], "a full disk") else {
        return;
    };
    let said = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = said.lines().map(str::trim).collect();
    assert_eq!(lines, ["status 0", "4072", "\\n"], "{said}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.matches("cannot write the report").count(),
        1,
        "{stderr}"
    );
}

/// Under a file size limit (`ulimit -f`) that the report would pass, the write fails and is
/// said; `retry` is not ended by SIGXFSZ, and its status stands.
#[test]
fn a_file_size_limit_is_a_report_that_cannot_be_written() {
    let r = retry();
    let big = r.write("big.out", &"x".repeat(5000));
    for (file, format) in [(&big, "github"), (&r.path("new.json"), "json")] {
        let output = r
            .std_command_under(&["sh", "-c", "ulimit -f 0; exec \"$0\" \"$@\""])
            .args([std::ffi::OsStr::new("--report"), file.as_os_str()])
            .args(["--report-format", format, "true"])
            .output()
            .unwrap();
        assert_eq!(shell_status(output.status), 0, "{format}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("cannot write the report"),
            "{format}: {stderr}"
        );
    }
    let left: Vec<_> = fs::read_dir(r.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// A replaced report keeps its group too (a file shared with a reader in that group). (Needs
/// root, to give the file a group this user is not in.)
#[test]
fn a_replaced_report_keeps_its_group() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !root("a report file of another group") {
        return;
    }
    let r = retry();
    let file = r.write("report.json", "{}");
    std::os::unix::fs::chown(&file, None, Some(65534)).unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
    r.command()
        .args(["--report", file.to_str().unwrap(), "true"])
        .assert()
        .code(0);
    let found = fs::metadata(&file).unwrap();
    assert_eq!((found.gid(), found.mode() & 0o777), (65534, 0o640));
}

/// A symlink of this user's that leads through another user's (`mine -> theirs/sub`, where
/// `theirs` is a neighbour's link into a directory of the victim's) is refused as the
/// neighbour's link itself is, whichever name of the path it is. (Needs root.)
#[test]
fn a_link_of_ones_own_through_another_users_link_is_not_followed() {
    use std::os::unix::fs::symlink;
    if !root("a symlink of another user") {
        return;
    }
    let r = retry();
    let victim = r.path("victim");
    fs::create_dir_all(victim.join("sub")).unwrap();
    fs::write(victim.join("sub/out.json"), "precious").unwrap();
    let theirs = r.path("theirs");
    symlink(&victim, &theirs).unwrap();
    std::os::unix::fs::lchown(&theirs, Some(65534), None).unwrap();
    // Mine, to a directory through theirs; mine, to the file through theirs (relative).
    symlink(theirs.join("sub"), r.path("mydir")).unwrap();
    symlink("theirs/sub/out.json", r.path("myfile.json")).unwrap();
    for file in [r.path("mydir/out.json"), r.path("myfile.json")] {
        for format in ["json", "github"] {
            r.command()
                .args([
                    "--report",
                    file.to_str().unwrap(),
                    "--report-format",
                    format,
                    "true",
                ])
                .assert()
                .code(0)
                .stderr(predicate::str::contains(
                    "a symlink of another user (uid 65534)",
                ));
        }
        r.command()
            .args(["--metrics-file", file.to_str().unwrap(), "true"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains("a symlink of another user"));
    }
    assert_eq!(
        fs::read_to_string(victim.join("sub/out.json")).unwrap(),
        "precious"
    );
    symlink(theirs.join("sub"), r.path("mystate")).unwrap();
    r.command()
        .args([
            "--state",
            r.path("mystate").to_str().unwrap(),
            "--budget",
            "b",
            "true",
        ])
        .assert()
        .misuse("a symlink of another user");
    assert_eq!(fs::read_dir(victim.join("sub")).unwrap().count(), 1);
}

/// A path that ends in `/` or `/.` names a directory, as the kernel reads it: a regular file
/// (or nothing) there takes no report or metrics file, and nothing is made.
#[test]
fn a_path_ending_in_a_slash_names_a_directory() {
    let r = retry();
    let file = r.write("f.json", "earlier");
    let written = |flag: &str, path: String| {
        r.command()
            .args([flag, &path, "true"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains(path.as_str()).count(1));
    };
    for ending in ["/", "/."] {
        let at = format!("{}{ending}", file.display());
        written("--report", at.clone());
        written("--metrics-file", at);
        assert_eq!(fs::read_to_string(&file).unwrap(), "earlier", "{ending}");
        let missing = r.path("results");
        written("--report", format!("{}{ending}", missing.display()));
        written("--metrics-file", format!("{}{ending}", missing.display()));
        assert!(!missing.exists(), "{ending}");
    }
}

/// A symlink of the user's own that leads into directories that are not there is a symlink to
/// nothing, and said so.
#[test]
fn a_link_into_missing_directories_is_a_link_to_nothing() {
    let r = retry();
    let link = r.path("link");
    std::os::unix::fs::symlink("/nonexistent/x/y", &link).unwrap();
    for flag in ["--report", "--metrics-file"] {
        r.command()
            .args([flag, link.to_str().unwrap(), "true"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains("it is a symlink to nothing").count(1));
    }
}

/// `github` lines are never appended to a file that has other names: where the kernel lets a
/// neighbour make a hard link to a file of this user's (`fs.protected_hardlinks` off), the
/// lines would land in that file too. (A replaced json report takes only the name.)
#[test]
fn github_lines_are_not_appended_to_a_file_with_other_names() {
    let r = retry();
    let precious = r.write("bashrc", "export PATH\n");
    let output = r.path("output");
    fs::hard_link(&precious, &output).unwrap();
    r.command()
        .args(["--report", output.to_str().unwrap()])
        .args(["--report-format", "github", "true"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("other names (hard links)").count(1));
    assert_eq!(fs::read_to_string(&precious).unwrap(), "export PATH\n");
}

/// A name as long as a name may be takes a report: the temporary file beside it is cut to
/// fit, also for a name that is not UTF-8.
#[test]
fn the_longest_name_takes_a_report() {
    use std::os::unix::ffi::OsStrExt;
    let r = retry();
    for name in [
        "r".repeat(255).into_bytes(),
        [vec![0xff; 100], b"r".repeat(150)].concat(),
    ] {
        let path = r.path("").join(std::ffi::OsStr::from_bytes(&name));
        let done = r
            .command()
            .arg("--report")
            .arg(&path)
            .arg("true")
            .output()
            .unwrap();
        assert_eq!(done.status.code(), Some(0), "{done:?}");
        assert!(done.stderr.is_empty(), "{done:?}");
        assert_eq!(report_of(&path)["outcome"], "success");
    }
}

/// As root, `github` lines go to a file of another user's: in a container job, the file GitHub
/// Actions names in `$GITHUB_OUTPUT` belongs to the runner's user while the steps run as root.
/// A json report still never replaces another user's file.
#[test]
fn root_appends_github_lines_to_a_file_of_another_user() {
    if !root("a file of another user") {
        return;
    }
    let r = retry();
    let output = r.write("set_output", "earlier=kept\n");
    std::os::unix::fs::chown(&output, Some(65534), Some(65534)).unwrap();
    r.command()
        .args(["--report", output.to_str().unwrap()])
        .args(["--report-format", "github", "true"])
        .assert()
        .code(0)
        .stderr("");
    assert!(
        fs::read_to_string(&output)
            .unwrap()
            .starts_with("earlier=kept\nattempts=1\n")
    );
    r.command()
        .args(["--report", output.to_str().unwrap(), "true"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("a file of another user (uid 65534)").count(1));
    // A file a neighbour planted in a directory others share is theirs to read after: no
    // lines go there.
    use std::os::unix::fs::PermissionsExt;
    let shared = r.path("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let planted = shared.join("gh.txt");
    fs::write(&planted, "planted=by-them\n").unwrap();
    std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
    r.command()
        .args(["--report", planted.to_str().unwrap()])
        .args(["--report-format", "github", "true"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("a file of another user (uid 65534)").count(1));
    assert_eq!(fs::read_to_string(&planted).unwrap(), "planted=by-them\n");
}

/// What a neighbour watching the directory sees of a report that replaces a private one
/// (0600): the temporary file beside it is never readable by others, not even for the moment
/// between its making and its taking the old file's mode. A watcher (inotify) looks at each
/// temporary file as soon as it appears.
#[test]
fn a_private_report_is_never_open_to_others_while_it_is_replaced() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::fs::PermissionsExt;
    const WATCHER: &str = r#"
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x100) < 0:
    sys.exit(99)
print("ready", flush=True)
while True:
    events = os.read(fd, 65536)
    at = 0
    while at < len(events):
        _, _, _, length = struct.unpack_from("iIII", events, at)
        name = events[at + 16:at + 16 + length].rstrip(b"\0")
        at += 16 + length
        if name.endswith(b".tmp"):
            try:
                mode = os.stat(os.path.join(sys.argv[1].encode(), name)).st_mode
            except FileNotFoundError:
                continue
            print(oct(mode & 0o777), flush=True)
"#;
    let r = retry();
    let report = r.write("report.json", "{}\n");
    fs::set_permissions(&report, fs::Permissions::from_mode(0o600)).unwrap();
    let mut watcher = Command::new("python3")
        .args(["-c", WATCHER, r.path("").to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = BufReader::new(watcher.stdout.take().unwrap());
    let mut line = String::new();
    seen.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    for _ in 0..100 {
        r.command()
            .args(["--report", report.to_str().unwrap(), "true"])
            .assert()
            .code(0)
            .stderr("");
    }
    watcher.kill().unwrap();
    watcher.wait().unwrap();
    let mut modes = String::new();
    std::io::Read::read_to_string(&mut seen, &mut modes).unwrap();
    assert!(
        modes.lines().all(|mode| mode == "0o600"),
        "modes the watcher saw: {modes}"
    );
    assert_eq!(
        fs::metadata(&report).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// `--report /dev/stdout` prints the report after the command's output, through a pipe as to
/// a file; so does a chain of links to it, followed by name (the pipe has none to follow), and
/// `/dev/fd/N` for a descriptor a shell opened (`3>>log`).
#[test]
fn a_report_to_a_descriptor_follows_the_commands_output() {
    use std::os::unix::fs::symlink;
    let r = retry();
    let link = r.path("link");
    symlink("/dev/stdout", &link).unwrap();
    for name in ["/dev/stdout", link.to_str().unwrap()] {
        for (format, last) in [
            ("json", "\"outcome\":\"success\""),
            ("github", "elapsed_ms="),
        ] {
            let output = r
                .command()
                .args(["-q", "--report", name, "--report-format", format])
                .args(["--", "echo", "the build log"])
                .output()
                .unwrap();
            let (out, said) = (
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
            assert_eq!(
                (output.status.code(), said.as_ref()),
                (Some(0), ""),
                "{name}"
            );
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines[0], "the build log", "{name} {format}: {out}");
            assert!(
                lines.last().unwrap().contains(last),
                "{name} {format}: {out}"
            );
        }
    }
    let log = r.write("log", "earlier\n");
    // `$0` is the builder's `retry`, `$1` the log.
    let output = r
        .std_command_under(&[
            "sh",
            "-c",
            "\"$0\" --report /dev/fd/3 -- echo out 3>>\"$1\"",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(output.stdout, b"out\n");
    let text = fs::read_to_string(&log).unwrap();
    let report: Value = serde_json::from_str(text.strip_prefix("earlier\n").unwrap()).unwrap();
    assert_eq!(report["outcome"], "success");
}

/// On a terminal, `--report /dev/stdout` prints the report after the command's output (the
/// terminal is a device, which takes no report by its own name).
#[test]
fn a_report_to_stdout_on_a_terminal_is_printed() {
    let screen = under_pty(
        &retry(),
        &[
            BIN,
            "-q",
            "--report",
            "/dev/stdout",
            "--",
            "echo",
            "the build log",
        ],
        &[],
        &[],
    )
    .expect("retry runs");
    let lines: Vec<&str> = screen
        .lines()
        .map(|line| line.trim_end_matches('\r'))
        .collect();
    assert_eq!(lines[0], "the build log", "{screen}");
    assert!(lines[1].contains("\"outcome\":\"success\""), "{screen}");
    assert!(screen.ends_with("status 0\n"), "{screen}");
}

/// A report that cannot go through its descriptor is said once, and the status stands: a
/// reader gone from the pipe is not said (as no write to a closed pipe is), any other failure
/// is (stdin open only to be read). The file behind stdin is neither replaced nor written.
#[test]
fn a_descriptor_that_takes_no_report_leaves_the_status_alone() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let r = retry();
    // (`-r 0` once stood after the command, as its arguments: the run waited out five retries.)
    let output = r
        .std_command()
        .args([
            "--report",
            "/dev/stdout",
            "-r",
            "0",
            "--",
            "sh",
            "-c",
            "exit 3",
        ])
        .stdout(Stdio::from(writer))
        .output()
        .unwrap();
    assert_eq!(shell_status(output.status), 3);
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("report"),
        "{output:?}"
    );
    let input = r.write("input", "data\n");
    let output = r
        .std_command()
        .args(["--report", "/dev/stdin", "true"])
        .stdin(fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert_eq!(
        said.matches("cannot write the report /dev/stdin").count(),
        1,
        "{said}"
    );
    assert_eq!(fs::read_to_string(&input).unwrap(), "data\n");
}

/// `github` lines start on a line of their own: after a step that wrote half a line (`url=`)
/// a newline comes first; a file that ends in one, or is empty, gets none.
#[test]
fn github_lines_start_on_a_fresh_line() {
    let r = retry();
    for (earlier, before) in [("url=", "url=\n"), ("a=1\n", "a=1\n"), ("", "")] {
        let file = r.write("github_output", earlier);
        r.command()
            .args(["--report", file.to_str().unwrap(), "--report-format"])
            .args(["github", "true"])
            .assert()
            .code(0)
            .stderr("");
        let text = fs::read_to_string(&file).unwrap();
        assert!(
            text.starts_with(&format!("{before}attempts=1\nretries=0\n")),
            "{earlier:?}: {text:?}"
        );
    }
}

/// Lines that a file size limit cuts short are taken back whole, the newline before them too,
/// and said with that cause, not as a full disk.
#[test]
fn a_short_append_is_taken_back_and_said_with_its_cause() {
    let r = retry();
    let whole = "x".repeat(1019) + "\n";
    let half = "x".repeat(1020);
    for earlier in [whole, half] {
        let file = r.write("github_output", &earlier);
        let output = r
            .command_with_file_size_limit(1024)
            .args(["--report", file.to_str().unwrap(), "--report-format"])
            .args(["github", "true"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{said}");
        assert_eq!(fs::read_to_string(&file).unwrap(), earlier);
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(
            said.contains("cannot write the report")
                && said
                    .contains("File too large: past the file size limit (ulimit -f) of 1024 bytes"),
            "{said}"
        );
    }
}

/// GitHub Actions' `$GITHUB_OUTPUT` behind a descriptor (`--report /dev/stdout >>
/// "$GITHUB_OUTPUT"`), ending in half a line: the lines still start on a fresh one.
#[test]
fn github_lines_through_a_descriptor_start_on_a_fresh_line() {
    let r = retry();
    let out = r.path("github_output");
    std::fs::write(&out, "url=x").unwrap();
    let file = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
    let r = r
        .args(["-q", "--report", "/dev/stdout", "--report-format", "github"])
        .args(["--", "true"]);
    let mut child = r.spawn_with(file, Stdio::piped());
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("url=x\nattempts=1\n"), "{text:?}");
}

/// A report through a pipe whose reader does not read waits for room together with the
/// signals, as `retry`'s own lines do: SIGTERM still ends `retry` at once, with 143 (it once
/// waited, and then exited 0, until the reader left).
#[test]
fn a_report_to_a_stalled_reader_never_holds_a_signal_back() {
    let (reader, writer) = std::io::pipe().unwrap();
    let r = retry()
        .args(["-q", "--report", "/dev/stdout", "--"])
        .args(sh("head -c 65536 /dev/zero"));
    let mut child = r.spawn_with(writer, Stdio::null());
    eventually("the command fills the pipe", || pipe_full(&reader));
    let since = std::time::Instant::now();
    send(&child, libc::SIGTERM);
    assert_eq!(
        status_within(&mut child, since, std::time::Duration::from_secs(10)),
        143
    );
    drop(reader);
}

/// A descriptor that never takes a write (`/dev/stdin` that is a pipe's read end, whose
/// writer stays) fails the report at once, said once, and `retry` ends with the run's status:
/// it never waits for room that cannot come.
#[test]
fn a_descriptor_that_never_takes_a_write_fails_the_report_at_once() {
    let (reader, writer) = std::io::pipe().unwrap();
    let r = retry().args(["--report", "/dev/stdin", "--", "true"]);
    let mut command = r.std_command();
    command.stdin(reader).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    let said = stderr_of(&mut child);
    assert_eq!(
        said.matches("cannot write the report /dev/stdin").count(),
        1,
        "{said}"
    );
    drop(writer);
}

/// Another writer that fills the same pipe between `retry`'s look for room and its write
/// never holds a signal back: the report is written by a thread of its own, and `retry` waits
/// for it together with the signals. Five times, as the other writer wins that race only now
/// and then.
#[test]
fn another_writer_on_the_reports_pipe_never_holds_a_signal_back() {
    for _ in 0..5 {
        let (mut reader, writer) = std::io::pipe().unwrap();
        let _other = Running(
            // Lines of 16 bytes: its writes fill whole pages, and the pipe to the byte.
            std::process::Command::new("yes")
                .arg("another writer!")
                .stdout(writer.try_clone().unwrap())
                .spawn()
                .unwrap(),
        );
        eventually("the other writer fills the pipe", || pipe_full(&reader));
        let r = retry().args(["-q", "--report", "/dev/stdout", "--", "true"]);
        let mut child = r.spawn_with(writer, Stdio::null());
        // One page of room, which both writers race for; then no more.
        let mut page = [0u8; 4096];
        std::io::Read::read_exact(&mut reader, &mut page).unwrap();
        eventually("the pipe is full again", || pipe_full(&reader));
        let since = std::time::Instant::now();
        send(&child, libc::SIGTERM);
        assert_eq!(
            status_within(&mut child, since, std::time::Duration::from_secs(10)),
            143
        );
        drop(reader);
    }
}

/// `github` lines through a descriptor land at its offset, which is not the file's end where the
/// file was opened to read and write (`1<> file`): the byte before that offset says whether a
/// newline goes first.
#[test]
fn github_lines_through_a_descriptor_start_a_line_where_they_land() {
    let r = retry();
    let file = r.write("gh", "old=1\n");
    let output = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&file)
        .unwrap();
    let status = r
        .std_command()
        .args(["-q", "--report-format", "github", "--report", "/dev/stdout"])
        .args(["--", "printf", "url="])
        .stdout(output)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let text = fs::read_to_string(&file).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("url="), "{text}");
    assert_eq!(lines.next(), Some("attempts=1"), "{text}");
}
