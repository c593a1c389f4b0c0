//! A state file's record: no panic on any text, nor for any decision at any time on any record
//! that parses; a record that parses renders to a text that parses back to itself, and so does
//! every record a decision leaves.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retry::fuzzing::{Decision, decide, read_state};

fuzz_target!(|input: (&str, Vec<Decision>)| {
    let (text, decisions) = input;
    if let Some(rendered) = read_state(text) {
        assert_eq!(read_state(&rendered).as_ref(), Some(&rendered), "{text:?}");
    }
    for rendered in decide(text, &decisions) {
        assert_eq!(read_state(&rendered).as_ref(), Some(&rendered));
    }
});
