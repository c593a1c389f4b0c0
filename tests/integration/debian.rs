//! Debian's `retry` command line (contract, "Debian's `retry` command line"): a table of
//! command lines run under Debian's real binary and under `retry`, compared; and the documented
//! differences, Debian's defaults, the exit status of `-u`/`-w`, the misuse and `--label`, held
//! to the contract.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use predicates::prelude::*;
use tempfile::TempDir;

use crate::support::*;

/// Debian's `retry` binary, unpacked (never installed) into a private directory.
fn debians_retry(what: &str) -> Option<(TempDir, PathBuf)> {
    let dir = tempfile::tempdir().unwrap();
    let package = debians_package(dir.path(), what)?;
    let unpacked = dir.path().join("unpacked");
    let status = Command::new("dpkg")
        .args(["-x"])
        .arg(&package)
        .arg(&unpacked)
        .status();
    if !status.is_ok_and(|status| status.success()) {
        missing("dpkg -x", what);
        return None;
    }
    let binary = unpacked.join("usr/bin/retry");
    Some((dir, binary))
}

/// A command that counts its runs in `runs` (in the working directory), then does `body`
/// with `$n` the run's number.
fn counted(body: &str) -> String {
    format!("n=$(cat runs 2>/dev/null || echo 0); n=$((n+1)); echo $n > runs; {body}")
}

/// What a run did: its exit status, how many attempts ran, and its stdout.
#[derive(Debug, PartialEq, Eq)]
struct Did {
    status: Option<i32>,
    attempts: u32,
    stdout: String,
}

fn did(output: &Output, dir: &Path) -> Did {
    Did {
        status: output.status.code(),
        attempts: fs::read_to_string(dir.join("runs"))
            .map_or(0, |runs| runs.trim().parse().unwrap()),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
    }
}

/// Runs `program ARGS` in a fresh directory with `stdin`, within `BOUND`.
fn run_in_fresh_dir(program: &Path, args: &[String], stdin: &str) -> Did {
    // Ours or Debian's, the same way: as the builder starts `retry`, and no config file.
    let r = retry();
    let mut child = r
        .std_command_of(program)
        .args(args)
        .env("XDG_CONFIG_HOME", r.path("no-config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_string();
    // The input is written from a thread, so that a command that does not read it cannot hold
    // the test.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = input.write_all(stdin.as_bytes());
    });
    let stdout = std::thread::spawn({
        let mut out = child.stdout.take().unwrap();
        move || {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut out, &mut bytes).unwrap();
            bytes
        }
    });
    let stderr = std::thread::spawn({
        let mut err = child.stderr.take().unwrap();
        move || {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut err, &mut bytes).unwrap();
            bytes
        }
    });
    let status = wait_bounded(&mut child);
    writer.join().unwrap();
    let output = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    did(&output, r.dir.path())
}

/// Command lines written for Debian's `retry`, each with the stdin it is given: every option,
/// both spellings, `=` forms, the criteria's words and prefixes, codes, ranges and lists, stdout
/// passed on once, stdin replayed. Waits are `-d 0` (Debian's reads whole seconds only).
fn table() -> Vec<(Vec<String>, &'static str)> {
    let fail_until_3 = counted("echo out$n; [ $n -ge 3 ]");
    let exit_n = counted("echo out$n; exit $n");
    let always_1 = counted("echo out$n; exit 1");
    let always_0 = counted("echo out$n");
    let one_one_then_0 = counted("echo out$n; [ $n -ge 3 ] || exit 1");
    let seven_twice = counted("echo out$n; [ $n -ge 3 ] || exit 7");
    let reads = counted("cat; [ $n -ge 3 ]");
    let line = |words: &[&str], script: &str| -> Vec<String> {
        let mut all: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        all.extend(["sh".into(), "-c".into(), script.to_string()]);
        all
    };
    vec![
        (line(&["-t", "3", "-d", "0", "--"], &always_1), ""),
        (line(&["-t", "+3", "-d", "0", "--"], &always_1), ""),
        (line(&["--times=3", "--delay=0", "--"], &always_1), ""),
        (line(&["--times", "2", "--delay", "0", "--"], &always_1), ""),
        (line(&["-t3", "-d0", "--"], &always_1), ""),
        (line(&["-d", "0", "--"], &fail_until_3), ""),
        (line(&["-t", "-1", "-d", "0", "--"], &fail_until_3), ""),
        (line(&["-t", "5", "-d", "0,0,0", "--"], &fail_until_3), ""),
        (line(&["-t", "2", "-d", "0"], &fail_until_3), ""),
        (line(&["-t", "1", "--"], &always_0), ""),
        (line(&["-t", "1", "--"], &always_1), ""),
        (line(&["-u", "fail", "-d", "0", "--"], &always_1), ""),
        (line(&["-u", "f", "-d", "0", "--"], &always_1), ""),
        (line(&["-u", "fa", "-d", "0", "--"], &always_1), ""),
        (line(&["--until=false", "-d", "0", "--"], &always_1), ""),
        (
            line(&["-u", "fals", "-t", "3", "-d", "0", "--"], &always_0),
            "",
        ),
        (
            line(
                &["-u", "success", "-t", "5", "-d", "0", "--"],
                &fail_until_3,
            ),
            "",
        ),
        (
            line(&["-u", "s", "-t", "5", "-d", "0", "--"], &fail_until_3),
            "",
        ),
        (
            line(&["-u", "true", "-t", "2", "-d", "0", "--"], &fail_until_3),
            "",
        ),
        (
            line(&["-u", "tr", "-t", "5", "-d", "0", "--"], &fail_until_3),
            "",
        ),
        (line(&["-u", "3", "-t", "5", "-d", "0", "--"], &exit_n), ""),
        (
            line(&["-u", "2-4", "-t", "5", "-d", "0", "--"], &exit_n),
            "",
        ),
        (
            line(&["-u", "3,4", "-t", "5", "-d", "0", "--"], &exit_n),
            "",
        ),
        (
            line(&["--until", "4-9,10", "-t", "6", "-d", "0", "--"], &exit_n),
            "",
        ),
        (
            line(&["-w", "1", "-t", "5", "-d", "0", "--"], &one_one_then_0),
            "",
        ),
        (
            line(
                &["--while=fail", "-t", "5", "-d", "0", "--"],
                &one_one_then_0,
            ),
            "",
        ),
        (
            line(&["-w", "f", "-t", "2", "-d", "0", "--"], &one_one_then_0),
            "",
        ),
        (
            line(&["-w", "success", "-t", "2", "-d", "0", "--"], &always_0),
            "",
        ),
        (
            line(&["--while", "s", "-t", "3", "-d", "0", "--"], &always_1),
            "",
        ),
        (
            line(&["-w", "7", "-t", "3", "-d", "0", "--"], &seven_twice),
            "",
        ),
        (
            line(&["-w", "7", "-t", "2", "-d", "0", "--"], &seven_twice),
            "",
        ),
        (
            line(&["-w", "0-1", "-t", "4", "-d", "0", "--"], &exit_n),
            "",
        ),
        (
            line(&["-m", "backup", "-t", "2", "-d", "0", "--"], &always_1),
            "",
        ),
        (
            line(&["--message=backup", "-d", "0", "--"], &fail_until_3),
            "",
        ),
        (
            line(
                &["--message", "backup", "-t", "4", "-d", "0", "--"],
                &exit_n,
            ),
            "",
        ),
        (
            line(&["-t", "3", "-d", "0", "--"], &reads),
            "the same input\n",
        ),
        (
            line(&["-t", "2", "-d", "0", "--"], &reads),
            "never enough\n",
        ),
        (
            line(&["-u", "0", "-d", "0", "--"], &reads),
            "line 1\nline 2\n",
        ),
    ]
}

/// Debian's `retry` and this one agree on the exit status, the number of attempts and the bytes
/// on stdout for every command line of the table.
#[test]
fn debians_command_lines_do_what_they_did() {
    let Some((_dir, debian)) = debians_retry("Debian's command lines") else {
        return;
    };
    let table = table();
    assert!(table.len() >= 25);
    for (args, stdin) in table {
        let theirs = run_in_fresh_dir(&debian, &args, stdin);
        let ours = run_in_fresh_dir(Path::new(BIN), &args, stdin);
        assert!(theirs.attempts > 0, "{args:?}: {theirs:?}");
        assert_eq!(ours, theirs, "retry {args:?} (left: ours, right: Debian's)");
    }
}

/// Debian's `retry` prints its version for `-v`, and runs nothing for `-t 0`: the differences
/// the table below holds `retry` to are Debian's 1.0.5's own.
#[test]
fn the_documented_differences_are_debians_behaviour() {
    let Some((_dir, debian)) = debians_retry("Debian's differences") else {
        return;
    };
    let never = counted("exit 1");
    let theirs = |words: &[&str]| {
        let mut args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        args.extend(["sh".into(), "-c".into(), never.clone()]);
        run_in_fresh_dir(&debian, &args, "")
    };
    assert_eq!(
        theirs(&["-t", "0", "--"]).status,
        Some(0),
        "-t 0 runs nothing"
    );
    assert_eq!(theirs(&["-t", "0", "--"]).attempts, 0);
    assert_eq!(theirs(&["-t", "2", "-d", "0,", "--"]).status, Some(1));
    assert_eq!(
        theirs(&["-t", "2", "-d", "0,", "--"]).attempts,
        2,
        "-d 0, is taken"
    );
    assert_eq!(
        theirs(&["-t", "1", "-u", "1,bogus", "--"]).attempts,
        1,
        "accepted"
    );
    assert_eq!(
        theirs(&["-t", "1", "-u", "nope", "--"]).status,
        Some(1),
        "misuse"
    );
    // Only the first entry of a list counts there.
    let exit_n = counted("exit $n");
    let args: Vec<String> = ["-u", "5,2", "-t", "4", "-d", "0", "sh", "-c", &exit_n]
        .iter()
        .map(|w| w.to_string())
        .collect();
    assert_eq!(run_in_fresh_dir(&debian, &args, "").attempts, 4);
    assert_eq!(run_in_fresh_dir(Path::new(BIN), &args, "").attempts, 2);
}

#[test]
fn every_entry_of_a_list_of_criteria_counts() {
    let r = retry().args(["-u", "5,2", "-t", "4", "-d", "0", "--"]);
    let command = counted("exit $n");
    r.args(sh(&command)).assert().code(2);
}

/// Misuse, where Debian's 1.0.5 exits 1 or takes what it is given.
#[test]
fn bad_debian_lines_are_misuse() {
    for args in [
        &["-t", "0"][..],
        &["-t", "-2"],
        &["-t", "x"],
        &["--times=1.5"],
        &["-d", "0,"],
        &["-d", "1,,2"],
        &["-d", ""],
        &["-d", "x"],
        &["-u", "1,bogus"],
        &["-u", ""],
        &["-u", "1,"],
        &["-u", "256"],
        &["-u", "4-2"],
        &["-u", "successful"],
        &["-w", "-1"],
        &["-u", "s", "-w", "f"],
        &["-u", "s", "--invert"],
        &["-w", "1", "--retry-on-exit", "1"],
        &["-u", "0", "--stop-on-exit", "2"],
        &["-u", "0", "--until-stdout", "x"],
        &["-w", "1", "--until-stderr", "x"],
        &["-u", "0", "--retry-if-stdout", "x"],
        &["-u", "0", "--retry-if-stderr", "x"],
        &["-u", "0", "--http"],
        &["-u", "0", "--consecutive", "2"],
        &["-w", "1", "--restart"],
        &["-t", "3", "--retries", "2"],
        &["-t", "3", "--attempts", "2"],
        &["-t", "3", "--forever"],
        &["-d", "1", "--delays", "2"],
        &["-d", "1", "--base", "2"],
        &["-d", "1", "--backoff", "constant"],
        &["-m", "x", "--label", "y"],
        &["--tim=2"],
        &["--unt=s"],
    ] {
        retry()
            .args(args)
            .args(["--", "true"])
            .assert()
            .code(125)
            .stdout("")
            .stderr(
                predicate::str::starts_with("retry: ")
                    .and(predicate::str::is_match("\\A[^\n]*\n\\z").unwrap()),
            );
    }
}

/// `-t` and `-m` are Debian's: `--timeout` and `--max-time` have no short option now.
#[test]
fn timeout_and_max_time_have_no_short_option() {
    retry()
        .args(["-t", "3s", "--", "true"])
        .assert()
        .misuse("--times");
    // -m names the command; it does not end the run.
    retry()
        .args(["-m", "1ms", "-d", "0", "-t", "2", "--"])
        .args(sh("sleep 0.2; exit 1"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("retry: 1ms: attempt 2/2 failed"));
    let help = retry().args(["--help"]).assert().code(0);
    let help = String::from_utf8_lossy(&help.get_output().stdout).into_owned();
    assert!(help.contains("      --timeout <DUR>"), "{help}");
    assert!(help.contains("      --max-time <DUR>"), "{help}");
    assert!(help.contains("-t, --times <N>") && help.contains("-m, --message <TEXT>"));
}

#[test]
fn v_is_verbose_and_capital_v_the_version() {
    retry()
        .args(["-v", "--", "true"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("succeeded"));
    retry()
        .args(["-V"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("(retry-exec)"));
}

/// A command that cannot be started is not retried, as without Debian's options, unless a
/// criterion names its status.
#[test]
fn a_command_that_cannot_start_is_retried_only_when_named() {
    for once in [&["-t", "3"][..], &["-w", "fail"], &["-u", "s"]] {
        retry()
            .args(once)
            .args(["-d", "0", "--", "no-such-command-here"])
            .assert()
            .code(127)
            .stderr(
                predicate::str::contains("cannot run")
                    .and(predicate::str::contains("attempt").not()),
            );
    }
    retry()
        .args([
            "-w",
            "127",
            "-t",
            "3",
            "-d",
            "0",
            "--",
            "no-such-command-here",
        ])
        .assert()
        .code(127)
        .stderr(predicate::str::contains("giving up after 3 attempts"));
}

/// Debian's leaves a command killed by a signal alone; here it is retried like any failure,
/// and its status is 128 + N.
#[test]
fn a_command_killed_by_a_signal_is_retried() {
    let r = retry().args(["-t", "2", "-d", "0", "--"]);
    let r = r.args(sh(&counted("kill -9 $$")));
    r.assert().code(137);
    assert_eq!(r.runs(), 2);
    let r = retry().args(["-u", "137", "-t", "3", "-d", "0", "--"]);
    let r = r.args(sh(&counted("kill -9 $$")));
    r.assert().code(137);
    assert_eq!(r.runs(), 1);
}

/// Under `-u`/`-w` the last attempt's status is `retry`'s however the run ends; a run that met
/// its criteria is a success for `--on-success` and the report.
#[test]
fn under_criteria_the_last_status_is_the_exit_status() {
    let r = retry();
    let report = r.path("report.json");
    let r = r
        .args(["-u", "fail", "--report", report.to_str().unwrap()])
        .args(["--on-success", "echo success-hook >&2", "--", "false"]);
    r.assert()
        .code(1)
        .stderr(predicate::str::contains("success-hook"));
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(report["outcome"], "success");
    assert_eq!(report["exit_status"], 1);
    // The JSON success event gives the status retry exits with.
    let out = retry()
        .args(["-u", "fail", "--log-format", "json", "--", "false"])
        .assert()
        .code(1);
    let events = json_events(&out.get_output().stderr);
    let success = events.iter().find(|e| e["event"] == "success").unwrap();
    assert_eq!(success["exit_code"], 1, "{events:?}");
    retry()
        .args(["-w", "success", "-t", "2", "-d", "0", "--", "true"])
        .assert()
        .code(0);
    retry()
        .args([
            "-w",
            "success",
            "-t",
            "2",
            "-d",
            "0",
            "--fail-exit",
            "9",
            "--",
            "true",
        ])
        .assert()
        .code(9);
    retry()
        .args(["-u", "fail", "--timeout", "1s", "--"])
        .args(sh("exec sleep 60"))
        .assert()
        .code(124);
    // Without -u or -w, a failed run whose last attempt exited 0 still exits 1.
    retry()
        .args(["-t", "2", "-d", "0", "--retry-if-stdout", "x", "--"])
        .args(sh("echo x"))
        .assert()
        .code(1);
}

/// What a Debian command line leaves unsaid is Debian's: no limit and 10 s waits without
/// jitter (`--dry-run` shows them), unless given in any layer; a line without Debian's options
/// keeps `retry`'s defaults.
#[test]
fn debians_defaults_stand_where_nothing_is_given() {
    let plan = |args: &[&str], config: Option<&str>| -> String {
        let mut r = retry();
        if let Some(config) = config {
            let path = r.write("config.toml", config);
            r = r.args(["--config", path.to_str().unwrap()]);
        }
        let out = r
            .args(["--dry-run"])
            .args(args)
            .args(["--", "true"])
            .assert()
            .code(0);
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let debian = plan(&["-u", "s"], None);
    assert!(
        debian.contains("delays 10s") && debian.contains("no jitter"),
        "{debian}"
    );
    assert!(debian.contains("no attempt limit"), "{debian}");
    let own = plan(&[], None);
    assert!(own.contains("6 attempts") && own.contains("equal"), "{own}");
    let limited = plan(&["-m", "x"], Some("[defaults]\nretries = 2\n"));
    assert!(
        limited.contains("3 attempts") && limited.contains("delays 10s"),
        "{limited}"
    );
    let curve = plan(&["-t", "4"], Some("[defaults]\nbase = \"2s\"\n"));
    assert!(
        curve.contains("4 attempts") && !curve.contains("delays 10s"),
        "{curve}"
    );
    let max = plan(&["-t", "4", "--max", "5s"], None);
    assert!(!max.contains("delays 10s"), "{max}");
    let ethernet = plan(&["-u", "s", "--backoff", "ethernet"], None);
    assert!(ethernet.contains("16 attempts"), "{ethernet}");
    // The command line's -t and -d replace the file's limit and schedule in any spelling.
    let file = "[defaults]\nforever = true\nbase = \"3s\"\nmultiplier = 3\n";
    let replaced = plan(&["-t", "2", "-d", "1"], Some(file));
    assert!(
        replaced.contains("2 attempts") && replaced.contains("delays 1s"),
        "{replaced}"
    );
    // -u on the command line replaces the file's verdict keys.
    plan(
        &["-u", "s"],
        Some("[defaults]\ninvert = true\nretry-on-exit = [1]\n"),
    );
}

/// stdout is passed on once: a run that gave up writes nothing on stdout, unless
/// `--failed-output` or `--hold-stdout` says otherwise.
#[test]
fn a_run_that_gave_up_writes_nothing_on_stdout() {
    retry()
        .args(["-t", "2", "-d", "0", "--"])
        .args(sh("echo out; exit 1"))
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains("out\nout\n"));
    for given in ["--hold-stdout", "--failed-output=drop"] {
        retry()
            .args(["-t", "2", "-d", "0", given, "--"])
            .args(sh("echo out; exit 1"))
            .assert()
            .code(1)
            .stdout("out\n");
    }
    let r = retry();
    let config = r.write("c.toml", "[defaults]\nfailed-output = \"pass\"\n");
    r.args([
        "--config",
        config.to_str().unwrap(),
        "-t",
        "2",
        "-d",
        "0",
        "--",
    ])
    .args(sh("echo out; exit 1"))
    .assert()
    .code(1)
    .stdout("out\nout\n");
}

/// stdin is replayed to every attempt unless `--stdin` is given.
#[test]
fn stdin_is_replayed_unless_given() {
    let command = sh("cat; exit 1");
    retry()
        .args(["-t", "3", "-d", "0", "--"])
        .args(&command)
        .command()
        .write_stdin("in\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("in\n").count(3));
    retry()
        .args(["-t", "3", "-d", "0", "--stdin", "null", "--"])
        .args(&command)
        .command()
        .write_stdin("in\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("in\n").count(0));
}

/// `--label` and `-m` name the command in every line about the run, and in JSON events.
#[test]
fn a_label_names_the_command_in_every_line() {
    let out = retry()
        .args([
            "--label",
            "backup",
            "--attempts",
            "2",
            "--base",
            "0",
            "--stdin",
            "null",
            "--",
            "false",
        ])
        .assert()
        .code(1)
        .stdout("");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(
        lines.iter().all(|l| l.starts_with("retry: backup: ")),
        "{stderr}"
    );
    assert!(
        lines[0].starts_with("retry: backup: attempt 1/2 failed"),
        "{stderr}"
    );
    let out = retry()
        .args([
            "-m",
            "nightly",
            "-t",
            "2",
            "-d",
            "0",
            "--log-format",
            "json",
            "--",
            "false",
        ])
        .assert()
        .code(1);
    let events = json_events(&out.get_output().stderr);
    assert!(events.len() > 3);
    assert!(events.iter().all(|e| e["label"] == "nightly"), "{events:?}");
    let out = retry()
        .args(["--log-format", "json", "-r", "0", "--", "false"])
        .assert()
        .code(1);
    assert!(
        json_events(&out.get_output().stderr)
            .iter()
            .all(|e| e.get("label").is_none())
    );
    // --label brings none of Debian's defaults: retry's 6 attempts.
    let out = retry()
        .args(["--dry-run", "--label", "x", "--", "true"])
        .assert()
        .code(0);
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("6 attempts"));
}

/// Debian's options are command-line only; `label` is a key like the other long flags.
#[test]
fn debians_options_are_no_config_keys_but_label_is() {
    for (key, hint) in [
        ("times = 3", "write 'attempts' here"),
        ("delay = \"1\"", "write 'delays' here"),
        ("until = \"s\"", "command line only"),
        ("message = \"x\"", "write 'label' here"),
    ] {
        let r = retry();
        let config = r.write("c.toml", &format!("[defaults]\n{key}\n"));
        r.args(["--config", config.to_str().unwrap(), "--", "true"])
            .assert()
            .misuse(hint);
    }
    let r = retry();
    let config = r.write("c.toml", "[profile.nightly]\nlabel = \"nightly\"\n");
    r.args(["--config", config.to_str().unwrap(), "--profile", "nightly"])
        .args(["-r", "0", "--", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("retry: nightly: giving up"));
}

/// Debian's sleeps after the final attempt too; here no wait follows it (an hour's wait would
/// outlast the test's bound).
#[test]
fn no_wait_follows_the_final_attempt() {
    retry()
        .args(["-t", "1", "-d", "3600", "--", "false"])
        .assert()
        .code(1);
    retry()
        .args(["-t", "2", "-d", "0,3600", "--", "false"])
        .assert()
        .code(1);
}

/// `-m` takes any bytes, as Debian's does (a Latin-1 script's message): the run goes on, the
/// message shown with U+FFFD where it is not UTF-8.
#[test]
fn a_message_that_is_not_utf8_is_taken() {
    use std::os::unix::ffi::OsStrExt;
    let r = retry();
    let output = r
        .std_command()
        .arg("-m")
        .arg(std::ffi::OsStr::from_bytes(b"caf\xe9"))
        .args(["-t", "2", "-d", "0", "--", "false"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("caf\u{FFFD}"), "{said}");
}
