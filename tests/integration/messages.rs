//! What `retry` says on stderr, at each verbosity.

use predicates::prelude::*;

use crate::util::*;

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
    retry()
        // The first wait (1s to 2s) would cross --max-time: the run ends after one attempt,
        // however slowly a loaded machine runs it (a deadline that fell during an attempt
        // would make it 124).
        .args(["--forever", "--max-time", "500ms", "--base", "2s", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("retry: attempt 1 failed (exit 1)"))
        .stderr(predicate::str::contains("would start past --max-time"));
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
