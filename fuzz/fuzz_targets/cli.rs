//! Whole command lines: never a panic from parsing, resolving, or planning a dry run.
#![no_main]

use clap::Parser;
use libfuzzer_sys::fuzz_target;
use retry::cli::Cli;
use retry::settings::Settings;

fuzz_target!(|text: &str| {
    let words = std::iter::once("retry").chain(text.split('\u{1f}'));
    let Ok(cli) = Cli::try_parse_from(words) else {
        return;
    };
    let Ok(settings) = Settings::resolve(cli) else {
        return;
    };
    let _ = retry::dryrun::plan(&settings);
});
