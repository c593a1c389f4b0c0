//! How a command is started, found as execvp(3) looks for it (`exactly`), and why one cannot
//! be: to say why a spawn failed (not found, not executable, a missing interpreter, a
//! directory), and for `--dry-run` to foresee it without starting anything.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString, c_char};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ending::Ending;
use crate::interpreter;
use crate::log;
use crate::outcome::AttemptEnd;
use crate::predicate::{Matches, Verdict};
use crate::settings::Settings;
use crate::signals;

/// Makes `command`'s child start as `retry` itself was started, signals included
/// (`signals::restore_inherited`), and exec its program as execvp(3) finds it, but never run a
/// file the kernel cannot (ENOEXEC) through /bin/sh: whether to is `retry`'s choice (a script
/// without `#!` is, a binary for another machine is not: `runner::spawn`), where
/// glibc's execvp, which std calls in a child it forked, would run /bin/sh on any such file.
/// Call it once the environment is set: the child execs with the environment seen here (the
/// parent's with the command's changes; not for a command whose environment was cleared).
pub(crate) fn exactly(command: &mut Command) {
    let exec = Exec::of(command);
    if exec.is_some() {
        // The child execs with `exec`'s environment, never std's: std need not build its own
        // copy of the whole environment for each attempt.
        command.env_clear();
    }
    // SAFETY: the closure runs in the child between fork and exec, and calls only
    // async-signal-safe functions (sigaction, pthread_sigmask, execve) on data made before the
    // fork; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            signals::restore_inherited();
            match &exec {
                Some(exec) => Err(exec.run()),
                // (A NUL byte in a value: std's own exec says so.)
                None => Ok(()),
            }
        });
    }
}

/// What the child needs to exec the command itself, made before the fork.
struct Exec {
    /// The files to try in turn: the program as named when it holds a `/`, else each
    /// directory of the child's `PATH` joined with it.
    candidates: Vec<CString>,
    /// The arguments and the environment as execve(2) takes them, each ending in a null
    /// pointer.
    argv_pointers: Vec<*const c_char>,
    envp_pointers: Vec<*const c_char>,
    /// The strings those point into, kept alive.
    _strings: [Vec<CString>; 2],
}

// SAFETY: the pointers point into the strings of the same `Exec` (whose heap buffers do not
// move with it), which nothing changes once it is made; they are only read.
unsafe impl Send for Exec {}
// SAFETY: as for Send.
unsafe impl Sync for Exec {}

impl Exec {
    /// `None` when a value of the environment holds a NUL byte (std refuses a word with one
    /// before it forks).
    fn of(command: &Command) -> Option<Exec> {
        let mut environment: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => environment.insert(key.to_owned(), value.to_owned()),
                None => environment.remove(key),
            };
        }
        let program = command.get_program();
        let c_string = |bytes: &[u8]| CString::new(bytes).ok();
        let candidates = if program.is_empty() {
            // No file has that name: "No such file or directory", as execvp says.
            Vec::new()
        } else if program.as_bytes().contains(&b'/') {
            vec![c_string(program.as_bytes())?]
        } else {
            // As glibc's execvp: its default without PATH; an empty entry is the current
            // directory.
            let search = environment
                .get(OsStr::new("PATH"))
                .map_or(&b"/bin:/usr/bin"[..], |path| path.as_bytes());
            search
                .split(|&byte| byte == b':')
                .map(|dir| match dir {
                    b"" => c_string(program.as_bytes()),
                    dir => c_string(&[dir, b"/", program.as_bytes()].concat()),
                })
                .collect::<Option<_>>()?
        };
        let argv = std::iter::once(program)
            .chain(command.get_args())
            .map(|word| c_string(word.as_bytes()))
            .collect::<Option<Vec<_>>>()?;
        let envp = environment
            .iter()
            .map(|(key, value)| c_string(&[key.as_bytes(), b"=", value.as_bytes()].concat()))
            .collect::<Option<Vec<_>>>()?;
        let pointers = |strings: &[CString]| {
            let mut pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
            pointers.push(std::ptr::null());
            pointers
        };
        Some(Exec {
            argv_pointers: pointers(&argv),
            envp_pointers: pointers(&envp),
            candidates,
            _strings: [argv, envp],
        })
    }

    /// Execs the first candidate that can be, as glibc's execvp goes through them (on past a
    /// file missing or not allowed, and "Permission denied" if one was not), without its
    /// shell; returns only why none could be.
    fn run(&self) -> io::Error {
        let mut denied = false;
        let mut last = libc::ENOENT;
        for candidate in &self.candidates {
            // SAFETY: execve(2) with a NUL-terminated path and null-terminated arrays of
            // NUL-terminated strings, all alive in `self`; it returns only on failure.
            unsafe {
                libc::execve(
                    candidate.as_ptr(),
                    self.argv_pointers.as_ptr(),
                    self.envp_pointers.as_ptr(),
                );
            }
            last = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::ENOENT);
            match last {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ESTALE | libc::ENOTDIR | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => return io::Error::from_raw_os_error(last),
            }
        }
        io::Error::from_raw_os_error(if denied { libc::EACCES } else { last })
    }
}

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
    path.is_file() && rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
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
        log::cannot_start(program, end, &error)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(pointers: &[*const c_char]) -> Vec<String> {
        let (last, words) = pointers.split_last().unwrap();
        assert!(last.is_null());
        words
            .iter()
            .map(|&word| {
                // SAFETY: each points to a NUL-terminated string of the `Exec` still alive.
                let word = unsafe { std::ffi::CStr::from_ptr(word) };
                word.to_string_lossy().into()
            })
            .collect()
    }

    /// The child looks for the program along its own `PATH` (a hook may hand on another), an
    /// empty entry being the current directory, and gets the environment the command was given.
    #[test]
    fn the_child_execs_along_its_own_path_with_its_own_environment() {
        let mut command = Command::new("prog");
        command
            .args(["a b", "c"])
            .env("PATH", "/x::/y/")
            .env("RETRY_TEST_SET", "1")
            .env_remove("HOME");
        let exec = Exec::of(&command).unwrap();
        let candidates: Vec<_> = exec
            .candidates
            .iter()
            .map(|c| c.to_str().unwrap())
            .collect();
        assert_eq!(candidates, ["/x/prog", "prog", "/y//prog"]);
        assert_eq!(strings(&exec.argv_pointers), ["prog", "a b", "c"]);
        let environment = strings(&exec.envp_pointers);
        assert!(environment.contains(&"RETRY_TEST_SET=1".to_string()));
        assert!(environment.contains(&"PATH=/x::/y/".to_string()));
        assert!(!environment.iter().any(|word| word.starts_with("HOME=")));
        // A program named with a `/` is that file alone; an empty name, none.
        let exec = Exec::of(&Command::new("./here/prog")).unwrap();
        assert_eq!(exec.candidates, [CString::new("./here/prog").unwrap()]);
        let exec = Exec::of(&Command::new("")).unwrap();
        assert!(exec.candidates.is_empty());
        assert_eq!(exec.run().raw_os_error(), Some(libc::ENOENT));
    }
}
