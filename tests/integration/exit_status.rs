//! Every row of the exit-status table, produced by the real binary, and `--fail-exit`.

use predicates::prelude::*;

use crate::support::*;

#[test]
fn success_is_0() {
    retry().args(["--", "true"]).assert().code(0).stderr("");
}

#[test]
fn success_after_failures_is_0() {
    let r = retry().args(["--base", "1ms"]);
    let command = r.flaky(2);
    let r = r.args(command);
    r.assert().code(0);
    assert_eq!(r.runs(), 3);
}

#[test]
fn exhausted_gives_the_last_exit_code() {
    retry()
        .args(["-r", "2", "--base", "0"])
        .args(sh("exit $((RETRY_ATTEMPT + 40))"))
        .assert()
        .code(43);
}

#[test]
fn every_exit_code_comes_back() {
    for code in [1, 2, 42, 100, 123, 124, 125, 126, 127, 128, 200, 255] {
        retry()
            .args(["-r", "0", "--"])
            .args(sh(&format!("exit {code}")))
            .assert()
            .code(code);
    }
}

#[test]
fn death_by_signal_is_128_plus_n() {
    for (signal, status) in [("TERM", 143), ("KILL", 137), ("INT", 130), ("USR1", 138)] {
        retry()
            .args(["-r", "1", "--base", "0"])
            .args(sh(&format!("kill -{signal} $$")))
            .assert()
            .code(status)
            .stderr(predicate::str::contains(format!("killed by SIG{signal}")));
    }
}

#[test]
fn timeout_is_124() {
    retry()
        .args(["-r", "0", "--timeout", "50ms", "sleep", "5"])
        .assert()
        .code(124)
        .stderr(predicate::str::contains("timed out"));
}

#[test]
fn max_time_cutting_an_attempt_is_124() {
    retry()
        .args(["--forever", "--max-time", "100ms", "sleep", "5"])
        .assert()
        .code(124);
}

#[test]
fn not_found_is_127_not_retried() {
    retry()
        .args(["--base", "0", "no-such-command-for-retry"])
        .assert()
        .code(127)
        .stderr(predicate::str::contains("no-such-command-for-retry"))
        .stderr(predicate::function(|s: &str| s.lines().count() == 1));
}

/// A whole command line in one word, or a shell builtin, is a common slip: the line says what
/// to do instead.
#[test]
fn a_command_line_in_one_word_gets_a_hint() {
    retry()
        .args(["--base", "0", "true --version"])
        .assert()
        .code(127)
        .stderr(
            "retry: cannot run 'true --version': No such file or directory (command not found); \
             for a command line, give its words apart or use sh -c '...'\n",
        );
    // A path with a space is a file name, not a slip.
    retry()
        .args(["--base", "0", "./no such file"])
        .assert()
        .code(127)
        .stderr(predicate::str::contains("sh -c").not());
    // Nor is a program that is part of the shell.
    retry()
        .args(["--base", "0", "cd", "/tmp"])
        .assert()
        .code(127)
        .stderr(predicate::str::contains(
            "; 'cd' is part of the shell, not a program: use sh -c '...'\n",
        ));
}

/// A command line in one word that holds a URL or a path is the same slip, and so are the
/// builtins one reaches for first (`help`, `exit`, `type`); a URL alone is no program either.
/// `--dry-run` foresees the same line.
#[test]
fn a_command_line_with_a_url_or_a_builtin_gets_a_hint() {
    let words_apart = "; for a command line, give its words apart or use sh -c '...'\n";
    for one_word in ["curl -fsS https://example.com/health", "/bin/echo -n x"] {
        retry()
            .args(["--base", "0", one_word])
            .assert()
            .code(127)
            .stderr(predicate::str::ends_with(words_apart));
        retry()
            .args(["--dry-run", one_word])
            .assert()
            .code(0)
            .stdout(predicate::str::contains(words_apart));
    }
    for builtin in ["help", "exit", "type"] {
        retry()
            .args(["--base", "0", builtin])
            .assert()
            .code(127)
            .stderr(format!(
                "retry: cannot run '{builtin}': No such file or directory (command not found); \
                 '{builtin}' is part of the shell, not a program: use sh -c '...'\n"
            ));
    }
    retry()
        .args(["--base", "0", "https://example.com/health"])
        .assert()
        .code(127)
        .stderr(predicate::str::ends_with(
            "; a URL is not a program: name one that fetches it (curl -fsS URL)\n",
        ));
}

/// `retry 3 curl ...`: a number where the command goes is an attempt count, most likely. It is
/// still a command that was not found (127), as a program named `3` could be run.
#[test]
fn a_number_where_the_command_goes_suggests_attempts() {
    retry()
        .args(["3", "curl", "-fsS", "https://example.com/health"])
        .assert()
        .code(127)
        .stderr(
            "retry: cannot run '3': No such file or directory (command not found); \
             did you mean --attempts 3?\n",
        );
    // No run has 0 attempts: 0 is a count of retries.
    retry()
        .args(["0", "curl"])
        .assert()
        .code(127)
        .stderr(predicate::str::ends_with("; did you mean --retries 0?\n"));
}

/// An empty command word (`retry "$CMD"` with CMD unset) is misuse, for a run and a plan alike.
#[test]
fn an_empty_command_word_is_misuse() {
    for args in [&[""][..], &["--", ""], &["--dry-run", ""], &["", "x"]] {
        retry().args(args).assert().misuse("empty").stdout("");
    }
}

#[test]
fn not_executable_is_126_not_retried() {
    let r = retry().args(["--base", "0"]);
    let script = r.write_with_mode("script.sh", "#!/bin/sh\necho hi\n", 0o644);
    r.args([script.to_str().unwrap()])
        .assert()
        .code(126)
        .stderr(predicate::str::contains("script.sh"))
        .stderr(predicate::function(|s: &str| s.lines().count() == 1));
}

/// An executable file that is no program (a script with no `#!` line) is run by /bin/sh, as
/// execvp(3) does, so as env(1) and timeout(1) do: found by path or through PATH, with its
/// arguments as they are (never read by a shell) and its own exit status.
#[test]
fn an_executable_script_without_a_shebang_line_is_run_by_sh() {
    let r = retry().args(["-r", "1", "--base", "0"]);
    let script = r.write_with_mode(
        "bin/no-shebang",
        "printf '%s|' \"$@\"; echo \"$RETRY_ATTEMPT\"; exit 3\n",
        0o755,
    );
    let bin = r.path("bin");
    r.command()
        .args([script.to_str().unwrap(), "a b", "$(touch pwned)"])
        .assert()
        .code(3)
        .stdout("a b|$(touch pwned)|1\na b|$(touch pwned)|2\n");
    assert!(!r.path("pwned").exists());
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    r.command()
        .env("PATH", path)
        .args(["no-shebang", "x"])
        .assert()
        .code(3)
        .stdout("x|1\nx|2\n");
}

/// An executable file whose first line has a NUL byte is a binary the kernel cannot run (one
/// for another machine), not a script: 126, as in bash.
#[test]
fn an_executable_binary_the_kernel_cannot_run_is_126() {
    let r = retry().args(["-r", "1", "--base", "0"]);
    let binary = r.write_with_mode("foreign", b"\x7fELF\x02\x01\x01\x00garbage\n", 0o755);
    r.args([binary.to_str().unwrap()])
        .assert()
        .code(126)
        .stderr(predicate::str::contains("foreign"))
        .stderr(predicate::function(|s: &str| s.lines().count() == 1));
}

/// A script whose `#!` interpreter is missing is 127, as with env(1) and timeout(1), but the
/// line names the interpreter rather than saying the script, which is right there, is missing;
/// a `\r` left by Windows line ends is shown escaped, and said to be one.
#[test]
fn a_script_with_a_missing_interpreter_names_it() {
    let r = retry().args(["-r", "1", "--base", "0"]);
    let script = r.write_with_mode("crlf.sh", "#!/bin/sh\r\necho hi\r\n", 0o755);
    r.args([script.to_str().unwrap()])
        .assert()
        .code(127)
        .stderr(predicate::str::contains(
            "crlf.sh': its interpreter $'/bin/sh\\r' was not found; the file has Windows line \
             endings (CRLF) (command not found)",
        ))
        .stderr(predicate::function(|s: &str| s.lines().count() == 1));
}

/// A binary whose dynamic loader is missing (one built for another system) is 127 too, and the
/// line names the loader rather than the binary, which is right there.
#[test]
fn a_binary_with_a_missing_loader_names_it() {
    let r = retry().args(["-r", "1", "--base", "0"]);
    let mut image = std::fs::read("/bin/true").unwrap();
    let loader = retry::interpreter::interpreter(&image[..retry::interpreter::HEAD])
        .expect("/bin/true is linked dynamically")
        .to_vec();
    let missing: Vec<u8> = std::iter::once(b'/')
        .chain(std::iter::repeat_n(b'x', loader.len() - 1))
        .collect();
    let at = image
        .windows(loader.len())
        .position(|window| window == loader.as_slice())
        .unwrap();
    image[at..at + loader.len()].copy_from_slice(&missing);
    let binary = r.write_with_mode("foreign-true", image, 0o755);
    let expected = format!(
        "retry: cannot run '{}': its interpreter '{}' was not found (command not found)\n",
        binary.display(),
        String::from_utf8(missing).unwrap()
    );
    r.args([binary.to_str().unwrap()])
        .assert()
        .code(127)
        .stderr(expected);
}

/// A command name is quoted with its control characters escaped as bash would read them back
/// (`$'...'`), so that the message stays one line and cannot drive the terminal.
#[test]
fn a_command_name_with_control_characters_stays_on_one_line() {
    retry()
        .args(["no\x1b[31msuch\ncommand"])
        .assert()
        .code(127)
        .stderr(predicate::str::contains("$'no\\x1b[31msuch\\ncommand'"))
        .stderr(predicate::function(|s: &str| {
            s.lines().count() == 1 && !s.contains('\x1b')
        }));
}

/// When the system has no process or descriptor to spare for an attempt, the attempt failed,
/// and may succeed later: it is retried like any failure (126 if it is the last), unlike a
/// command that is missing or not executable. Walked here through every limit of open
/// descriptors: the run either cannot start at all, or its attempts could not start, or the
/// attempt ran with both streams judged; never a verdict on output that nothing read.
#[test]
fn an_attempt_the_system_cannot_start_is_a_retryable_failure() {
    let r = retry().args([
        "-r",
        "2",
        "--base",
        "0",
        "--until-stdout",
        "x",
        "--until-stderr",
        "y",
        "echo",
        "x",
    ]);
    let runs = r.runs_under_open_file_limits("");
    for output in runs.ran {
        assert_eq!(output.stdout, b"x\n");
    }
    for output in runs.could_not_start {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("attempt 3/3 failed"), "{stderr}");
        assert!(!stderr.contains("cannot run"), "{stderr}");
    }
}

#[test]
fn a_directory_is_not_executable() {
    retry()
        .args(["/"])
        .assert()
        .code(126)
        .stderr("retry: cannot run '/': it is a directory (command not executable)\n");
}

#[test]
fn not_found_is_retried_when_listed() {
    retry()
        .args([
            "-r",
            "2",
            "--base",
            "0",
            "--retry-on-exit",
            "127",
            "no-such-command-for-retry",
        ])
        .assert()
        .code(127)
        .stderr(predicate::str::contains(
            "attempt 3/3 failed (command not found: No such file or directory)",
        ));
}

#[test]
fn misuse_is_125() {
    retry()
        .args(["--retries", "x", "true"])
        .assert()
        .misuse("--retries");
    retry()
        .args(["--no-such-flag", "true"])
        .assert()
        .misuse("--no-such-flag");
    retry().assert().misuse("no command given");
}

#[test]
fn help_version_and_dry_run_are_0() {
    retry()
        .args(["--help"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Usage:"));
    retry()
        .args(["-h"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("--retries"));
    retry().args(["--dry-run", "false"]).assert().code(0);
}

/// Debian's unrelated `retry` may be on the same PATH: the version names the package.
#[test]
fn the_version_names_the_package() {
    for flag in ["--version", "-V"] {
        retry().args([flag]).assert().code(0).stdout(format!(
            "retry {} (retry-exec)\n",
            env!("CARGO_PKG_VERSION")
        ));
    }
}

#[test]
fn failed_run_whose_last_attempt_exited_0_exits_1() {
    retry()
        .args(["-r", "1", "--base", "0", "--invert", "true"])
        .assert()
        .code(1);
    retry()
        .args(["--stop-on-exit", "0", "true"])
        .assert()
        .code(1);
}

#[test]
fn sigpipe_death_is_141_quietly_and_not_retried() {
    let r = retry().args(["--base", "0", "--fail-exit", "1"]);
    let script = format!("echo x >> '{}'; kill -PIPE $$", r.path("runs").display());
    let r = r.args(sh(&script));
    r.assert().code(141).stderr("");
    let runs = std::fs::read_to_string(r.path("runs")).unwrap();
    assert_eq!(runs.lines().count(), 1);
}

#[test]
fn fail_exit_replaces_failed_statuses() {
    for (args, _why) in [
        (vec!["-r", "1", "--base", "0", "false"], "exhausted"),
        (
            vec!["--stop-on-exit", "3", "sh", "-c", "exit 3"],
            "permanent",
        ),
        (
            vec!["-r", "0", "--timeout", "20ms", "sleep", "5"],
            "timeout",
        ),
        (vec!["no-such-command-for-retry"], "not found"),
        (vec!["/"], "not executable"),
        (vec!["-r", "0", "sh", "-c", "kill -KILL $$"], "signal"),
    ] {
        retry()
            .args(["--fail-exit", "7"])
            .args(args)
            .assert()
            .code(7);
    }
}

#[test]
fn fail_exit_does_not_touch_success_or_misuse() {
    retry().args(["--fail-exit", "7", "true"]).assert().code(0);
    retry()
        .args(["--fail-exit", "7", "--base", "bad", "true"])
        .assert()
        .misuse("--base");
}

#[test]
fn fail_exit_range_is_checked() {
    retry()
        .args(["--fail-exit", "256", "true"])
        .assert()
        .misuse("--fail-exit");
    retry()
        .args(["--fail-exit", "-1", "true"])
        .assert()
        .misuse("--fail-exit");
    retry()
        .args(["--fail-exit", "0", "-r0", "false"])
        .assert()
        .code(0);
}

/// The rows of the README's table under `heading`: (first cell, second cell).
fn readme_table(heading: &str) -> Vec<(String, String)> {
    const README: &str = include_str!("../../README.md");
    let section = README
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no {heading:?} in the README"))
        .1;
    section
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            (cells[0].trim().to_string(), cells[1].trim().to_string())
        })
        .collect()
}

/// Runs of `retry` (its arguments) and the status each gives.
type Runs<'a> = &'a [(&'a [&'a str], i32)];

/// The README's exit-status table says what the binary does: each row, as written, with a run
/// of the real binary for each case it names.
#[test]
fn the_readmes_exit_status_table_is_what_retry_does() {
    let r = retry();
    let script = r.write_with_mode("script.sh", "#!/bin/sh\n", 0o644);
    let script = script.to_str().unwrap();
    let state = format!("--state={}", r.path("state").display());
    let state = state.as_str();
    let breaker = [
        state,
        "--breaker",
        "api",
        "--breaker-threshold",
        "1",
        "-r",
        "0",
    ];
    let (b, b2) = (&breaker[..], [&breaker[..], &["false"]].concat());
    let opens: &[&str] = &b2;
    let probe_then = [b, &["true"]].concat();
    let kept_out: &[&str] = &probe_then;
    let show = [state, "--budget", "api", "--show-state"];
    let reset = [state, "--budget", "api", "--reset-state"];
    #[rustfmt::skip]
    let rows: [(&str, &str, Runs); 9] = [
        ("the run succeeded", "0", &[(&["-r", "0", "true"], 0)]),
        (
            "retries exhausted, `--max-time` reached, or a permanent failure",
            "the last attempt's exit code",
            &[
                (&["-r", "0", "sh", "-c", "exit 3"], 3),
                (&["--max-time", "2s", "--base", "10s", "sh", "-c", "exit 5"], 5),
                (&["--stop-on-exit", "4", "sh", "-c", "exit 4"], 4),
            ],
        ),
        ("the last attempt was killed by signal N", "128 + N", &[(&["-r", "0", "sh", "-c", "kill -USR1 $$"], 138)]),
        (
            "`retry` terminated the last attempt for `--timeout` or `--max-time`",
            "124",
            &[(&["-r", "0", "--timeout", "50ms", "sleep", "5"], 124), (&["--max-time", "50ms", "sleep", "5"], 124)],
        ),
        ("COMMAND not found / not executable", "127 / 126", &[(&["no-such-command-for-retry"], 127), (&[script], 126)]),
        (
            "`retry` itself was misused: bad flag, bad value, bad config file, unknown profile",
            "125",
            &[(&["--bogus", "true"], 125), (&["--retries", "x", "true"], 125)],
        ),
        (
            "`retry` received SIGINT/SIGTERM/SIGHUP/SIGQUIT",
            "128 + that signal",
            // The attempt signals its parent, `retry`.
            &[(&["sh", "-c", "kill -TERM $PPID; sleep 5"], 143), (&["sh", "-c", "kill -HUP $PPID; sleep 5"], 129)],
        ),
        ("`--breaker` open before the run's first attempt", "75", &[(opens, 1), (kept_out, 75)]),
        (
            "`--help`, `--version`, `--dry-run`, `--show-state`, `--reset-state`",
            "0",
            &[(&["--help"], 0), (&["--version"], 0), (&["--dry-run", "true"], 0), (&show, 0), (&reset, 0)],
        ),
    ];
    let documented = readme_table("## Exit status");
    let expected: Vec<(String, String)> = rows
        .iter()
        .map(|(case, status, _)| (case.to_string(), status.to_string()))
        .collect();
    assert_eq!(documented, expected, "the README's table changed");
    for (case, _, runs) in rows {
        for (args, status) in runs {
            let mut child = r
                .std_command()
                .args(*args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("spawn retry");
            assert_eq!(
                shell_status(wait_bounded(&mut child)),
                *status,
                "{case}: {args:?}"
            );
        }
    }
}

/// A bug in `retry` must never read as the command's own end: a panic, on the main thread or
/// another, ends `retry` with 125 and one line, as `timeout(1)` does when it fails itself. The
/// panic is injected through a variable that only a debug build reads.
#[test]
fn a_panic_in_retry_exits_125_with_one_line() {
    for place in ["main", "thread"] {
        let assert = retry()
            .args(["--", "true"])
            .command()
            .env("RETRY_INJECT_PANIC", place)
            .assert();
        if cfg!(debug_assertions) {
            let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
            assert.code(125);
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(
                stderr.starts_with("retry: internal error: injected")
                    && stderr.contains("this is a bug in retry"),
                "{stderr}"
            );
        } else {
            assert.code(0).stderr("");
        }
    }
}
