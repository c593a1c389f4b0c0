//! Exit fidelity: every status of the last attempt comes back unchanged; every signal that
//! kills it comes back as 128 + N. And the command never goes through a shell.

use predicates::prelude::*;

use crate::support::*;

/// The status `retry` exits with when its one attempt runs `sh -c SCRIPT`.
fn status_of(script: &str) -> Option<i32> {
    retry()
        .args(["-q", "-r", "0", "--stdin", "null", "sh", "-c", script])
        .command()
        .output()
        .expect("run retry")
        .status
        .code()
}

#[test]
fn every_exit_code_0_to_255_comes_back() {
    for code in 0..=255u8 {
        assert_eq!(
            status_of(&format!("exit {code}")),
            Some(i32::from(code)),
            "exit {code}"
        );
    }
}

/// Signals whose default action ends the process.
const DEADLY: &[i32] = &[
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGKILL,
    libc::SIGUSR1,
    libc::SIGSEGV,
    libc::SIGUSR2,
    libc::SIGPIPE,
    libc::SIGALRM,
    libc::SIGTERM,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGSYS,
];

#[test]
fn every_deadly_signal_comes_back_as_128_plus_n() {
    for &signal in DEADLY {
        assert_eq!(
            status_of(&format!("kill -{signal} $$")),
            Some(128 + signal),
            "signal {signal}"
        );
    }
    // The real-time signals are deadly by default too.
    for signal in libc::SIGRTMIN()..=libc::SIGRTMAX() {
        assert_eq!(
            status_of(&format!("kill -{signal} $$")),
            Some(128 + signal),
            "signal {signal}"
        );
    }
}

#[test]
fn the_command_is_never_passed_through_a_shell() {
    let r = retry().args([
        "-r", "0", "echo", "$HOME", ";", "touch", "pwned", "*", "`id`", "|", "cat",
    ]);
    r.assert()
        .code(0)
        .stdout("$HOME ; touch pwned * `id` | cat\n");
    assert!(!r.path("pwned").exists());
}

#[test]
fn a_config_file_in_the_working_directory_cannot_inject_a_hook() {
    let r = retry().args(["-r", "1", "--base", "0", "false"]);
    let marker = r.path("hooked");
    let hook = format!("[defaults]\non-retry = \"touch '{}'\"\n", marker.display());
    r.write("config.toml", &hook);
    r.write(".config/retry/config.toml", &hook);
    r.write("retry/config.toml", &hook);
    r.assert()
        .code(1)
        .stderr(predicate::str::contains("failed"));
    assert!(!marker.exists());
}
