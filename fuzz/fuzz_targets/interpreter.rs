//! The interpreter a file names (`#!` line, ELF loader): never a panic on any bytes, and what
//! it names is a non-empty run of the bytes given, with no NUL.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|head: &[u8]| {
    if let Some(path) = retry::interpreter::interpreter(head) {
        assert!(!path.is_empty() && !path.contains(&0));
        let start = path.as_ptr() as usize - head.as_ptr() as usize;
        assert!(start + path.len() <= head.len());
    }
});
