//! The entry point. `retry` starts from C's `main` instead of Rust's: the Rust runtime's own
//! set-up (finding the main thread's stack guard by parsing /proc/self/maps, an alternate signal
//! stack, two handlers) is a measurable share of a process that runs for a few milliseconds and
//! is started once per retried command (see BENCHMARKS.md). The part of that set-up `retry`
//! relies on is done by `retry::run`; `std::env::args_os` still works, since std captures the
//! arguments at load time.
#![no_main]

use std::ffi::{c_char, c_int};

#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    retry::run(std::env::args_os()).exit()
}
