//! Where files live by default, as the XDG Base Directory rules say, read from the environment.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// The XDG base directory `key` names, else `~/fallback`. A relative value is ignored (the XDG
/// rule, applied to `HOME` too): it would read from the current directory.
pub(crate) fn xdg_base(key: &str, fallback: &str) -> Option<PathBuf> {
    absolute(key).or_else(|| Some(home()?.join(fallback)))
}

/// `HOME`, unless it is unset, empty or relative.
pub(crate) fn home() -> Option<PathBuf> {
    absolute("HOME")
}

fn absolute(key: &str) -> Option<PathBuf> {
    non_empty_env(key)
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
}

/// Why a leading `~` is not the home directory.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unexpanded {
    /// `~USER`: another user's home is not looked up (that would read the password database
    /// for a path one can as well write in full).
    AnotherUser,
    /// There is no `home` to read it as.
    NoHome,
    /// The value must be text (`home_expanded_text`), and was, but `home` is not.
    HomeNotText,
}

impl std::fmt::Display for Unexpanded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unexpanded::AnotherUser => {
                "only ~ and ~/ are expanded (to $HOME), not ~USER; write the path in full"
            }
            Unexpanded::NoHome => {
                "it begins with ~, the home directory, but $HOME is unset, empty or relative"
            }
            Unexpanded::HomeNotText => "$HOME is not valid UTF-8, which a state location must be",
        })
    }
}

/// `value` with a leading `~` or `~/` read as `home`, as a shell reads it: for a path that no
/// shell saw (a config file's, an environment variable set by a CI file or a service unit).
/// A value that does not begin with `~` is returned as it is.
pub(crate) fn home_expanded(value: &OsStr, home: Option<&Path>) -> Result<OsString, Unexpanded> {
    let Some(rest) = value.as_bytes().strip_prefix(b"~") else {
        return Ok(value.to_owned());
    };
    if !(rest.is_empty() || rest.starts_with(b"/")) {
        return Err(Unexpanded::AnotherUser);
    }
    let home = home.ok_or(Unexpanded::NoHome)?;
    let mut path = home.as_os_str().as_bytes().to_vec();
    if path.ends_with(b"/") && rest.starts_with(b"/") {
        path.pop();
    }
    path.extend_from_slice(rest);
    Ok(OsString::from_vec(path))
}

/// `home_expanded`, for a value that must be text: a state location, which may be a URL. One
/// that was text until its `~` became a `home` that is not is refused for that home; one that
/// was not text to begin with comes back as it is, for the caller to refuse.
pub(crate) fn home_expanded_text(
    value: &OsStr,
    home: Option<&Path>,
) -> Result<OsString, Unexpanded> {
    let expanded = home_expanded(value, home)?;
    if value.to_str().is_some() && expanded.to_str().is_none() {
        return Err(Unexpanded::HomeNotText);
    }
    Ok(expanded)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_is_home() {
        let home = Some(Path::new("/home/u"));
        let expanded = |value: &str, home| home_expanded(OsStr::new(value), home);
        assert_eq!(expanded("~", home).unwrap(), "/home/u");
        assert_eq!(expanded("~/", home).unwrap(), "/home/u/");
        assert_eq!(expanded("~/a b", home).unwrap(), "/home/u/a b");
        assert_eq!(expanded("~//x", home).unwrap(), "/home/u//x");
        assert_eq!(expanded("~/x", Some(Path::new("/"))).unwrap(), "/x");
        assert_eq!(expanded("~/x", Some(Path::new("/h/"))).unwrap(), "/h/x");
        for as_it_is in ["", "x", "./~", "a/~/b", "/~"] {
            assert_eq!(expanded(as_it_is, home).unwrap(), as_it_is);
            assert_eq!(expanded(as_it_is, None).unwrap(), as_it_is, "needs no home");
        }
        assert_eq!(expanded("~bob/x", home), Err(Unexpanded::AnotherUser));
        assert_eq!(expanded("~~", home), Err(Unexpanded::AnotherUser));
        assert_eq!(expanded("~/x", None), Err(Unexpanded::NoHome));
        let odd = OsString::from_vec(b"/h\xff".to_vec());
        assert_eq!(
            home_expanded(OsStr::new("~/x"), Some(Path::new(&odd))).unwrap(),
            OsString::from_vec(b"/h\xff/x".to_vec())
        );
    }

    #[test]
    fn a_value_that_must_be_text_stays_text() {
        let odd = OsString::from_vec(b"/h\xff".to_vec());
        let odd = Some(Path::new(&odd));
        let expanded = |value: &[u8], home| home_expanded_text(OsStr::from_bytes(value), home);
        assert_eq!(expanded(b"~/x", odd), Err(Unexpanded::HomeNotText));
        assert_eq!(expanded(b"/x", odd).unwrap(), "/x", "no ~, no home");
        assert_eq!(expanded(b"~/x", Some(Path::new("/h"))).unwrap(), "/h/x");
        // Not text to begin with: the home is not to blame.
        assert_eq!(
            expanded(b"~/\xff", odd).unwrap(),
            OsString::from_vec(b"/h\xff/\xff".to_vec())
        );
        assert_eq!(expanded(b"~bob", odd), Err(Unexpanded::AnotherUser));
    }
}
