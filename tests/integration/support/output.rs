//! Reading what `retry` wrote: its JSON events, a child's whole stdout or stderr, and the one
//! shape of misuse (exit 125, one line on stderr naming what was wrong).
//!
//! A leaf: it reads output the test already has, and starts and waits for nothing.

use std::process::Child;

use assert_cmd::assert::Assert;
use predicates::prelude::*;

/// The JSON events `retry` wrote on `stderr` (`--log-format json`), each line one object; a
/// line that is not one fails the test.
pub fn json_events(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}

/// The JSON events among the lines of `stderr` where the command's own lines stand beside
/// them: the lines that are not JSON are passed over (`json_events` fails on them).
pub fn json_events_among(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// The whole of the child's piped stdout: for a child that has ended, with nothing left that
/// holds its stdout open.
pub fn stdout_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut stdout)
        .expect("stdout is text");
    stdout
}

/// The whole of the child's piped stderr: for a child that has ended, with nothing left that
/// holds its stderr open.
pub fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr)
        .expect("stderr is text");
    stderr
}

/// What misuse of `retry` looks like, on a finished run.
pub trait Misuse {
    /// Asserts that `retry` was misused: exit 125, and one line on stderr, `retry`'s own
    /// (`retry: `, not a panic), that contains `names` (the flag, value or file at fault).
    fn misuse(self, names: &str) -> Self;
}

impl Misuse for Assert {
    fn misuse(self, names: &str) -> Self {
        self.code(125)
            .stderr(predicate::str::starts_with("retry: "))
            .stderr(predicate::function(|s: &str| s.lines().count() == 1))
            .stderr(predicate::str::contains(names))
            .stderr(predicate::str::contains("panicked").not())
    }
}
