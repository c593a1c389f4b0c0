//! Why a command cannot be started, found as execvp(3) looks for it: to say why a spawn failed
//! (not found, not executable, a missing interpreter, a directory), and for `--dry-run` to
//! foresee it without starting anything.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::ending::Ending;
use crate::interpreter;
use crate::outcome::AttemptEnd;
use crate::predicate::{Matches, Verdict};
use crate::report;
use crate::settings::Settings;

/// The file that `program` names, found as execvp(3) finds it: as is when it holds a `/`, else
/// in the first directory of `PATH` with an executable file of that name.
pub(crate) fn locate(program: &OsStr) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
    std::env::split_paths(&search)
        .map(|dir| dir.join(program))
        .find(|candidate| executable_file(candidate))
}

/// Whether the first line of `file` (within its first 80 bytes) has no NUL byte: bash's test
/// for a binary that it will not run as a script.
pub(crate) fn reads_as_text(file: &Path) -> bool {
    let mut start = [0u8; 80];
    let Ok(read) = File::open(file).and_then(|mut file| file.read(&mut start)) else {
        return false;
    };
    !start[..read]
        .iter()
        .take_while(|&&byte| byte != b'\n')
        .any(|&byte| byte == 0)
}

fn executable_file(path: &Path) -> bool {
    let Ok(name) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) with a NUL-terminated path and a valid mode.
    path.is_file() && unsafe { libc::access(name.as_ptr(), libc::X_OK) } == 0
}

/// What a failed spawn of `program` means for the attempt, and the words that say why: not
/// found, not executable, or a failure that may pass (short of processes or memory).
pub(crate) fn failure(error: &io::Error, program: &OsStr) -> (AttemptEnd, String) {
    let end = match error.raw_os_error() {
        // Short of processes, memory or descriptors, or the file is being written: this may
        // pass, so the attempt is a failure like any other.
        Some(libc::EAGAIN | libc::ENOMEM | libc::EMFILE | libc::ENFILE | libc::ETXTBSY) => {
            AttemptEnd::SpawnFailed
        }
        _ if error.kind() == io::ErrorKind::NotFound => AttemptEnd::NotFound,
        _ => AttemptEnd::NotExecutable,
    };
    let text = match (end, missing_interpreter(program)) {
        // The kernel says "No such file or directory" of a file whose interpreter is missing
        // (see `interpreter`), while the file is right there.
        (AttemptEnd::NotFound, Some(interpreter)) => {
            let crlf = interpreter.as_os_str().as_bytes().ends_with(b"\r");
            format!(
                "its interpreter {} was not found{}",
                crate::text::quote(interpreter.as_os_str()),
                if crlf {
                    "; the file has Windows line endings (CRLF)"
                } else {
                    ""
                }
            )
        }
        // The kernel's "Permission denied" of a directory sends one looking at its mode.
        (AttemptEnd::NotExecutable, _) if locate(program).is_some_and(|path| path.is_dir()) => {
            "it is a directory".to_string()
        }
        _ => crate::text::plain_error(error),
    };
    (end, text)
}

/// Why `program` could not be started, seen without starting it, as execvp(3) would look for
/// it: for `--dry-run`. Only the plain cases, each said as a run would say it: not found, not
/// executable (a directory, a file without the execute bit), a missing interpreter.
pub(crate) fn problem(program: &OsStr) -> Option<(AttemptEnd, String)> {
    let errno = if program.as_bytes().contains(&b'/') {
        let path = Path::new(program);
        if !path.exists() {
            libc::ENOENT
        } else if !executable_file(path) {
            libc::EACCES
        } else {
            missing_interpreter(program)?;
            libc::ENOENT
        }
    } else if locate(program).is_some() {
        missing_interpreter(program)?;
        libc::ENOENT
    } else {
        // execvp(3) goes on past a file it may not run, and says so if nothing else is found.
        let search = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
        if std::env::split_paths(&search).any(|dir| dir.join(program).exists()) {
            libc::EACCES
        } else {
            libc::ENOENT
        }
    };
    Some(failure(&io::Error::from_raw_os_error(errno), program))
}

/// The interpreter (`#!` line or ELF loader) named by the file that `program` runs, when that
/// file exists and the interpreter does not.
fn missing_interpreter(program: &OsStr) -> Option<PathBuf> {
    let mut head = vec![0u8; interpreter::HEAD];
    let mut file = File::open(locate(program)?).ok()?;
    let mut read = 0;
    // A short read is not the end of the file: fill what can be had.
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(more) => read += more,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let path = PathBuf::from(OsStr::from_bytes(interpreter::interpreter(&head[..read])?));
    (!path.exists()).then_some(path)
}

/// For `--dry-run`: what a run would say of a COMMAND that cannot be started, and what would
/// follow; empty when it can be, as far as can be seen without starting it.
pub(crate) fn note(settings: &Settings) -> String {
    let Some(program) = settings.command.first() else {
        return String::new();
    };
    let Some((end, error)) = problem(program) else {
        return String::new();
    };
    let then = match settings.judge.judge(end, Matches::default()) {
        Verdict::Retry => format!("every attempt would fail so, with status {}", end.status()),
        _ => format!(
            "a run would end at once with status {}",
            Ending::Permanent.exit_status(Some(end), settings.fail_exit)
        ),
    };
    format!(
        "note: {}\nnote: {then}\n",
        report::cannot_start(program, end, &error)
    )
}
