//! Durations: never a panic; an accepted bare number reads back as the seconds it says.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(duration) = retry::parse::duration(text) {
        let trimmed = text.trim();
        if let Ok(whole) = trimmed.parse::<u64>() {
            assert_eq!(duration.as_secs(), whole);
            assert_eq!(duration.subsec_nanos(), 0);
        }
        assert!(!trimmed.starts_with('-'));
    }
});
