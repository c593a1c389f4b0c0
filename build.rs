//! Two link options for the `retry` binary on Linux with glibc, each taken only where the
//! toolchain is shown to support it. The binary stays an ordinary position-independent
//! executable (ASLR kept); the library, tests and build scripts are untouched.
//!
//! `retry` lives a few milliseconds around the command it runs, so its start-up is most of what
//! it costs (BENCHMARKS.md):
//!
//! - Packed relative relocations (`-z pack-relative-relocs`, DT_RELR, glibc 2.36 and binutils
//!   2.38 or later): the standard, compact form of the relocations a PIE needs, as
//!   distributions now link by default. Taken when a probe program linked with it runs.
//! - The unwinder linked statically. std asks for it as `-lgcc_s`, a shared library loaded and
//!   resolved at every start (about 0.1 ms here). GCC ships the same unwinder as a static
//!   archive, `libgcc_eh.a` (what `-static-libgcc` and Rust's own static builds use); a linker
//!   script named `libgcc_s.so`, found first on the binary's search path, links that instead.
//!
//! Both are skipped when cross-compiling (the probe cannot run, and the host's archive is not
//! the target's), for a static build (`crt-static`: no shared unwinder to replace), and when the
//! linker is not a gcc-style driver (one that answers `-print-file-name`). The script names the
//! archive by its path, and Cargo reruns this script when that file changes or moves.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    let var = |key: &str| env::var(key).unwrap_or_default();
    let static_build = var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|feature| feature == "crt-static");
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("HOST") != var("TARGET")
        || static_build
    {
        return;
    }
    let Some(out_dir) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    let linker = env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
    if links_and_runs(&linker, &out_dir, "-Wl,-z,pack-relative-relocs") {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if let Some(unwinder) = static_unwinder(&linker) {
        println!("cargo::rerun-if-changed={}", unwinder.display());
        let dir = out_dir.join("static-unwinder");
        let script = format!("INPUT({})\n", unwinder.display());
        if fs::create_dir_all(&dir)
            .and_then(|()| fs::write(dir.join("libgcc_s.so"), script))
            .is_ok()
        {
            println!("cargo::rustc-link-arg-bins=-L{}", dir.display());
        }
    }
}

/// Whether a C program linked by `linker` with `flag` builds and runs here: the linker knows
/// the flag, and the C library loads what it produces.
fn links_and_runs(linker: &str, out_dir: &Path, flag: &str) -> bool {
    let source = out_dir.join("probe.c");
    let program = out_dir.join("probe");
    if fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let linked = Command::new(linker)
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .arg(flag)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    linked
        && Command::new(&program)
            .status()
            .is_ok_and(|status| status.success())
}

/// The path of `libgcc_eh.a` as `linker` finds it, if it is a gcc-style driver that has one.
fn static_unwinder(linker: &str) -> Option<PathBuf> {
    let output = Command::new(linker)
        .arg("-print-file-name=libgcc_eh.a")
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    // Without the archive, the driver prints the bare name back.
    (output.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}
