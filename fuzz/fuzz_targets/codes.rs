//! Exit-code lists and single codes: never a panic; every accepted list is non-empty.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(set) = retry::parse::code_set(text) {
        assert!(!set.is_empty());
        assert_eq!(set.iter().count() > 0, true);
    }
    if let Ok(code) = retry::parse::exit_code(text) {
        assert_eq!(code.to_string(), text);
    }
});
