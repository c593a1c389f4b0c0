//! The entry point. `retry` starts from C's `main` instead of Rust's: the Rust runtime's own
//! set-up (finding the main thread's stack guard by parsing /proc/self/maps, an alternate signal
//! stack, two handlers) is about 0.1 ms of a process that runs for a few milliseconds and is
//! started once per retried command (BENCHMARKS.md). What `retry` relies on of that set-up,
//! `retry::run` does itself (SIGPIPE ignored, descriptors 0 to 2 open, a panic that ends in
//! status 125); the arguments are read from `argv` here, as every C library passes them.
//!
//! Given up: the runtime's stack-overflow message (an overflow of the main thread's stack still
//! ends the process by SIGSEGV at the kernel's guard page, where Rust's handler would print a
//! line and abort) and the name "main" of the main thread in a panic's message.
#![no_main]

use std::ffi::{CStr, OsString, c_char, c_int};
use std::os::unix::ffi::OsStringExt;

#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    let count = usize::try_from(argc).unwrap_or(0);
    let args = (0..count).map(|index| {
        // SAFETY: the C runtime passes `argc` pointers to NUL-terminated strings in `argv`,
        // which live as long as the process.
        let arg = unsafe { CStr::from_ptr(*argv.add(index)) };
        OsString::from_vec(arg.to_bytes().to_vec())
    });
    retry::run(args).exit()
}
