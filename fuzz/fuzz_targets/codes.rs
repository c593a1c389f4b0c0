//! Exit-code lists and single codes: never a panic; every accepted list is non-empty.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(set) = retry::parse::code_set(text) {
        assert!(!set.is_empty());
    }
    if let Ok(code) = retry::parse::exit_code(text) {
        // Decimal digits only; leading zeros are allowed ("055" is 55, as in `exit 055`).
        assert!(text.bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(text.parse::<u64>().ok(), Some(u64::from(code)));
    }
});
