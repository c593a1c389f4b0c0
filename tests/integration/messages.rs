//! What `retry` says on stderr, at each verbosity.

use predicates::prelude::*;

use crate::support::*;

#[test]
fn one_line_per_failed_attempt_and_one_when_giving_up() {
    retry()
        // assert_cmd gives stdin as a pipe, which would add the stdin warning.
        .args(["--stdin", "null", "-r", "2", "--base", "1ms", "--jitter", "none", "false"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::is_match(
            "^retry: attempt 1/3 failed \\(exit 1\\) after [0-9.]+(µs|ms|s); next attempt in 1ms\n\
             retry: attempt 2/3 failed \\(exit 1\\) after [0-9.]+(µs|ms|s); next attempt in 2ms\n\
             retry: attempt 3/3 failed \\(exit 1\\) after [0-9.]+(µs|ms|s)\n\
             retry: giving up after 3 attempts in [0-9.]+(µs|ms|s): no retries left \\(exit status 1\\)\n$",
        ).unwrap());
}

#[test]
fn unlimited_runs_say_attempt_n_without_a_total() {
    let r = retry();
    let flaky = r.flaky(1);
    r.args(["--forever", "--delays", "0"])
        .args(flaky)
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "retry: attempt 1 failed (exit 1) after",
        ))
        .stderr(predicate::str::contains("attempt 2/").not());
}

/// A permanent failure says which rule made it one.
#[test]
fn permanent_failures_say_so_and_by_which_rule() {
    retry()
        .args(["--retry-on-exit", "1", "sh", "-c", "exit 2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("attempt 1/6 failed (exit 2)"))
        .stderr(predicate::str::contains(
            "permanent failure, not in --retry-on-exit (exit status 2)",
        ));
    retry()
        .args(["--stop-on-exit", "2", "sh", "-c", "exit 2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "permanent failure, by --stop-on-exit (exit status 2)",
        ));
    retry()
        .args(["--retry-on-exit", "1", "--timeout", "10ms", "sleep", "5"])
        .assert()
        .code(124)
        .stderr(predicate::str::contains(
            "permanent failure, not in --retry-on-exit (exit status 124)",
        ));
}

#[test]
fn quiet_says_nothing_about_attempts() {
    retry()
        .args(["-q", "-r", "2", "--base", "0", "false"])
        .assert()
        .code(1)
        .stderr("");
}

#[test]
fn quiet_still_says_a_command_cannot_start() {
    retry()
        .args(["-q", "no-such-command-for-retry"])
        .assert()
        .code(127)
        .stderr(predicate::str::contains(
            "cannot run 'no-such-command-for-retry'",
        ));
}

#[test]
fn verbose_adds_starts_the_seed_and_success() {
    retry()
        .args(["-v", "--seed", "42", "-r", "1", "--base", "0"])
        .args(sh("[ $RETRY_ATTEMPT = 2 ]"))
        .assert()
        .code(0)
        .stderr(predicate::str::contains("seed 42"))
        .stderr(predicate::str::contains("attempt 1/2 starting"))
        .stderr(predicate::str::contains("attempt 2/2 succeeded"));
}

#[test]
fn quiet_success_is_silent() {
    retry().args(["true"]).assert().code(0).stderr("");
}

#[test]
fn the_attempts_output_passes_through_untouched() {
    retry()
        .args(["-r", "0"])
        .args(sh("printf 'out\\377\\n'; printf 'err' >&2"))
        .assert()
        .code(0)
        .stdout(predicate::eq(b"out\xff\n" as &[u8]))
        .stderr("err");
}

/// Control bytes in anything a message can name (a command, a file, a path, a name) are
/// written escaped, as bash would read them back (in JSON, as JSON escapes them): no line
/// `retry` prints, in a run or a dry run, can retitle or clear a terminal.
#[test]
fn no_message_writes_a_control_byte_it_was_given() {
    use std::os::unix::fs::PermissionsExt;
    let nasty = "x\u{1b}]0;OWNED\u{7}\u{1b}[2J\u{9b}2J";
    let r = retry();
    let script = r.path(&format!("not-executable-{nasty}"));
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let script = script.display().to_string();
    let open_dir = r.path(&format!("open-{nasty}"));
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let taken = r.path(&format!("taken-{nasty}.prom"));
    std::fs::create_dir(&taken).unwrap();
    let missing = r.path(&format!("missing-{nasty}"));
    let state = format!("--state={}", open_dir.display());
    let runs: Vec<Vec<String>> = vec![
        vec!["--dry-run".into(), "--".into(), nasty.into()],
        vec!["--".into(), nasty.into()],
        vec![
            "--log-format".into(),
            "json".into(),
            "--".into(),
            nasty.into(),
        ],
        vec!["-v".into(), "--".into(), nasty.into(), nasty.into()],
        vec!["--dry-run".into(), "--".into(), script.clone()],
        vec!["-r".into(), "0".into(), "--".into(), script],
        vec![format!("--metrics-file={}", taken.display()), "true".into()],
        vec![
            format!("--metrics-file={}/m.prom", missing.display()),
            "true".into(),
        ],
        vec![state, "--budget".into(), "api".into(), "true".into()],
        vec!["--budget".into(), nasty.into(), "true".into()],
        vec![format!("--config={}", missing.display()), "true".into()],
    ];
    for args in runs {
        let output = r.command().args(&args).output().unwrap();
        let said = [output.stdout, output.stderr].concat();
        let said = String::from_utf8_lossy(&said);
        let json = args.iter().any(|arg| arg == "json");
        assert!(
            !said.chars().any(|c| c.is_control() && c != '\n'),
            "{args:?}: {said:?}"
        );
        // Each names the nasty word, escaped as bash's `$'...'` writes it, so it can be read
        // back (JSON escapes as JSON does).
        let escaped = if json {
            r"x\u001b]0;OWNED\u0007\u001b[2J\u009b2J"
        } else {
            r"x\x1b]0;OWNED\x07\x1b[2J\u009b2J"
        };
        assert!(said.contains(escaped), "{args:?}: {said:?}");
    }
}
