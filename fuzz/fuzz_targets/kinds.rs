//! --jitter, --backoff, --kill-signal and --multiplier: never a panic, only valid values.
#![no_main]

use clap::ValueEnum;
use libfuzzer_sys::fuzz_target;
use retry::backoff::{Backoff, Jitter};

fuzz_target!(|text: &str| {
    if let Ok(Jitter::Factor(f)) = retry::parse::jitter(text) {
        assert!((0.0..=1.0).contains(&f) && f.is_sign_positive());
    }
    let _ = Backoff::from_str(text, false);
    if let Ok(signal) = retry::parse::signal(text) {
        let name = retry::parse::signal_name(signal).expect("a parsed signal has a name");
        assert_eq!(
            retry::parse::signal(&name),
            Ok(signal),
            "the name reads back"
        );
    }
    if let Ok(m) = retry::parse::multiplier(text) {
        assert!(m.is_finite() && m >= 1.0);
    }
});
