//! Links the `retry` binary as a position-dependent executable on Linux.
//!
//! `retry` lives a few milliseconds around the command it runs, so its start-up is most of what
//! it costs. A position-independent executable makes the dynamic loader apply ~8000 relative
//! relocations at every start, dirtying the pages they touch; linked at a fixed address it applies
//! three. Only the binary is linked this way: the library, tests and build scripts are untouched,
//! and `cargo build-static` (`.cargo/config.toml`) goes further with a static link.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
