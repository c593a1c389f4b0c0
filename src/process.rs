//! What `retry` does to its own process before anything else, and the entropy it draws: the
//! start-up the Rust runtime would do and main.rs skips, the panic hook, and the seed.

use std::io::{self, Write};
use std::os::fd::IntoRawFd;

use rustix::fs::{Mode, OFlags};

use crate::outcome::MISUSE;
use crate::poll::{self, Wait};
use crate::signals;
use crate::text;

/// What `retry` needs of the Rust runtime's start-up, which main.rs skips: SIGPIPE ignored (see
/// signals.rs), and descriptors 0, 1 and 2 open, so that no file `retry` opens later lands there
/// and is taken for stdin, stdout or stderr (/dev/null fills a closed one, as std would). And a
/// panic, on any thread, ends `retry` with status 125 and one line, as `timeout(1)` does when it
/// fails itself: never by a signal or a status that would read as the command's own end.
pub(crate) fn prepare() {
    // First: every child starts with what `retry` was started with, before anything changes it.
    signals::record_inherited();
    crate::spool::give_freed_memory_back();
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|text| text.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let place = info.location().map_or(String::new(), |at| {
            format!(" at {}:{}", at.file(), at.line())
        });
        let _ = writeln!(
            io::stderr(),
            "retry: internal error: {}{place}; this is a bug in retry",
            text::one_line(&what)
        );
        std::process::exit(i32::from(MISUSE));
    }));
    signals::ignore(libc::SIGPIPE);
    let Ok(streams) = poll::poll([0, 1, 2].map(|fd| (fd, 0)), Wait::Not) else {
        return;
    };
    for revents in streams {
        if revents & libc::POLLNVAL != 0 {
            // Descriptors are taken lowest first, so each open fills the lowest closed one,
            // and is kept open for good.
            let null = rustix::fs::open(c"/dev/null", OFlags::RDWR, Mode::empty());
            let _ = null.map(IntoRawFd::into_raw_fd);
        }
    }
}

/// For the tests of the panic hook, in debug builds only: `RETRY_INJECT_PANIC=main` panics
/// here, `thread` on a thread of its own.
#[cfg(debug_assertions)]
pub(crate) fn inject_panic() {
    match std::env::var("RETRY_INJECT_PANIC").as_deref() {
        Ok("main") => panic!("injected for a test"),
        Ok("thread") => {
            let _ = std::thread::spawn(|| panic!("injected on a thread for a test")).join();
            unreachable!("the panic hook ends the process");
        }
        _ => {}
    }
}

/// A seed from the OS, so that processes started together draw different delays. getrandom(2)
/// is called directly: one syscall, where a generic entropy source probes for it first (and in
/// a static build falls back to opening /dev/random).
///
/// 53 bits of it: the seed is logged (as a JSON number, and in `--verbose`) so that a run can
/// be replayed with `--seed`, and JSON readers that hold numbers as doubles (JavaScript, jq
/// 1.6, many log pipelines) keep integers exact only up to 2^53.
pub(crate) fn seed() -> u64 {
    const EXACT_IN_A_DOUBLE: u64 = (1 << 53) - 1;
    entropy() & EXACT_IN_A_DOUBLE
}

pub(crate) fn entropy() -> u64 {
    let mut seed = [0u8; 8];
    // GRND_NONBLOCK never blocks at early boot.
    let filled = rustix::rand::getrandom(&mut seed, rustix::rand::GetRandomFlags::NONBLOCK);
    if filled == Ok(seed.len()) {
        return u64::from_ne_bytes(seed);
    }
    // No entropy yet: the pid and the clock still differ between processes.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}
