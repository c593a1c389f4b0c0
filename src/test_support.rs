//! What the unit tests share: small pieces of their own, none of `retry`'s code. A leaf: it
//! names no module of the crate, so that the tests of any module may use it. (The settings a
//! command line resolves to are `Settings::of_args`, beside what they test: a module that
//! `settings` itself imports could not come here for them.)

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `n` milliseconds.
pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Says why a test checks nothing on this machine (a tool, a permission or a kernel feature it
/// needs is not here); under CI (`CI` set and not empty), where it must check, fails instead.
/// The integration tests' `missing` keeps the same rule.
pub(crate) fn skipped(why: &str) {
    let in_ci = std::env::var_os("CI").is_some_and(|value| !value.is_empty());
    assert!(!in_ci, "{why}, and CI must run this test");
    eprintln!("skipped: {why}");
}

/// Where a test's logger writes: the bytes stay for the test to read, through a clone kept
/// while the logger owns another.
#[derive(Clone, Default)]
pub(crate) struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// How many bytes were written so far.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// What was written, as text.
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
