//! Configuration files: never a panic; an accepted file's arguments parse on the command line.
#![no_main]

use clap::Parser;
use libfuzzer_sys::fuzz_target;
use retry::cli::Cli;
use retry::config::ConfigFile;

fuzz_target!(|text: &str| {
    let Ok(file) = ConfigFile::parse("fuzz.toml", text) else {
        return;
    };
    for profile in [None, Some("a"), Some("x")] {
        if let Ok(args) = file.arguments(profile, &[]) {
            let argv = std::iter::once("retry".into())
                .chain(args)
                .chain(["true".into()]);
            let parsed = Cli::try_parse_from(argv);
            assert!(parsed.is_ok(), "{:?}", parsed.err().map(|e| e.to_string()));
        }
    }
});
