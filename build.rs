//! Links the `retry` binary for a fast start on Linux with glibc.
//!
//! `retry` lives a few milliseconds around the command it runs, so its start-up is most of what
//! it costs (BENCHMARKS.md). Two things in a default Rust link cost there, and only the binary
//! is relinked without them (the library, tests and build scripts are untouched; `cargo
//! build-static`, `.cargo/config.toml`, goes further with a static link):
//!
//! - A position-independent executable makes the dynamic loader apply ~8000 relative
//!   relocations at every start, dirtying the pages they touch; linked at a fixed address
//!   (`-no-pie`) it applies three.
//! - std asks for the unwinder as `-lgcc_s`, a shared library loaded and resolved at every
//!   start. GCC ships the same unwinder as a static archive, `libgcc_eh.a` (what `-static-libgcc`
//!   and Rust's own static builds use); a linker script named `libgcc_s.so`, found first on the
//!   binary's search path, links that instead. Where the linker's compiler has no such archive,
//!   the shared one stays.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    println!("cargo::rustc-link-arg-bins=-no-pie");
    if env::var("CARGO_CFG_TARGET_ENV").as_deref() != Ok("gnu")
        || env::var("CARGO_CFG_TARGET_FEATURE")
            .is_ok_and(|features| features.split(',').any(|feature| feature == "crt-static"))
    {
        return;
    }
    let (Some(unwinder), Some(out_dir)) = (static_unwinder(), env::var_os("OUT_DIR")) else {
        return;
    };
    let dir = Path::new(&out_dir).join("static-unwinder");
    let script = format!("INPUT({})\n", unwinder.display());
    if fs::create_dir_all(&dir)
        .and_then(|()| fs::write(dir.join("libgcc_s.so"), script))
        .is_ok()
    {
        println!("cargo::rustc-link-arg-bins=-L{}", dir.display());
    }
}

/// The path of `libgcc_eh.a` as the compiler that links the binary finds it, if it has one.
fn static_unwinder() -> Option<PathBuf> {
    let linker = env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
    let output = Command::new(linker)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    // Without the archive, the compiler prints the bare name back.
    (output.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}
