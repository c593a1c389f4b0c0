//! The entry point. `retry` starts from C's `main` instead of Rust's: the Rust runtime's own
//! set-up (finding the main thread's stack guard by parsing /proc/self/maps, an alternate signal
//! stack, two handlers) is a measurable share of a process that runs for a few milliseconds and
//! is started once per retried command (see BENCHMARKS.md). What of that set-up `retry` relies on
//! is done here; `std::env::args_os` still works, since std captures the arguments at load time.
#![no_main]

use std::ffi::{c_char, c_int};

#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    open_standard_descriptors();
    // SAFETY: setting a disposition before any thread exists. Writes to a closed pipe then fail
    // with EPIPE, which `retry` handles; children get SIGPIPE back by default (std's `Command`).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    retry::run(std::env::args_os()).exit()
}

/// Opens /dev/null on any of descriptors 0, 1 and 2 that is closed, as the Rust runtime would, so
/// that no file `retry` opens later lands there and is taken for stdin, stdout or stderr.
fn open_standard_descriptors() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: three valid pollfds and no timeout; open(2) with a valid C string. Descriptors are
    // taken lowest first, so each open fills the lowest closed one.
    unsafe {
        if libc::poll(fds.as_mut_ptr(), 3, 0) < 0 {
            return;
        }
        for fd in fds {
            if fd.revents & libc::POLLNVAL != 0 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
}
