//! Where files live by default, as the XDG Base Directory rules say, read from the environment.

use std::ffi::OsString;
use std::path::PathBuf;

/// The XDG base directory `key` names, else `~/fallback`. A relative value is ignored (the XDG
/// rule, applied to `HOME` too): it would read from the current directory.
pub(crate) fn xdg_base(key: &str, fallback: &str) -> Option<PathBuf> {
    let absolute = |key| {
        non_empty_env(key)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute(key).or_else(|| Some(absolute("HOME")?.join(fallback)))
}

/// A variable's value, unless it is unset or empty (which the XDG rules read as unset).
pub(crate) fn non_empty_env(key: &str) -> Option<OsString> {
    std::env::var_os(key).filter(|value| !value.is_empty())
}

/// Where temporary files go: `TMPDIR`, else `/tmp`. Set but empty, `TMPDIR` counts as unset (the
/// standard library would read it as the current directory).
pub(crate) fn temp_dir() -> PathBuf {
    non_empty_env("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}
