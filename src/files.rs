//! Files `retry` writes for others to read (`--metrics-file`, `--report`): only ever a regular
//! file of this user's, replaced whole or appended to, never what else a careless user or a
//! neighbour may have put at the path (a device, a FIFO, a socket, a directory, another
//! user's file or symlink).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::ownership::owned_by_another;

/// Replaces the regular file at `target` (found by `writable`) with `text`: written to a new
/// file beside it, which then takes its name, so a reader never sees half of it. `nonce`
/// (random bits from the caller) makes the temporary file's name.
pub(crate) fn replace(target: &Path, text: &str, nonce: u64) -> io::Result<()> {
    let (temporary, mut file) = create_temporary_beside(target, nonce)?;
    // The file keeps the permissions it had (a report made private stays private), and its
    // group where this user may give it (a file a collector in that group reads); root keeps
    // its owner too.
    let kept = fs::metadata(target).ok();
    if let Some(found) = &kept {
        let _ = std::os::unix::fs::fchown(&file, Some(found.uid()), Some(found.gid()))
            .or_else(|_| std::os::unix::fs::fchown(&file, None, Some(found.gid())));
    }
    let written = match &kept {
        Some(found) => file.set_permissions(fs::Permissions::from_mode(found.mode() & 0o777)),
        None => Ok(()),
    }
    .and_then(|()| file.write_all(text.as_bytes()))
    .and_then(|()| fs::rename(&temporary, target));
    if written.is_err() {
        // This run made it, under a name no one else could have known.
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// Appends `text` to the regular file at `target` (found by `writable`), or a new one, never
/// replacing what earlier writers left there; in one write, so that other appenders' lines
/// never land inside it.
pub(crate) fn append(target: &Path, text: &str) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(target)?;
    // Whatever took the name since `writable` looked.
    let found = file.metadata()?;
    if !found.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    // All or nothing: half a line (a disk that filled up) would glue itself to the next
    // writer's first line.
    match file.write(text.as_bytes()) {
        Ok(written) if written == text.len() => Ok(()),
        short => {
            let _ = file.set_len(found.len());
            Err(short
                .err()
                .unwrap_or_else(|| io::Error::from_raw_os_error(libc::ENOSPC)))
        }
    }
}

/// Where a file of `retry`'s goes: `path` when nothing or a regular file is there, the regular
/// file a chain of symlinks ends at; anything else cannot be written. What another user put
/// there (a regular file, or any symlink of the chain) is neither read nor written: in a
/// directory shared with a neighbour, it would turn the write on a file of their choosing, or
/// feed the run a content of their making. Root's own are root's.
pub(crate) fn writable(path: &Path) -> io::Result<PathBuf> {
    let not_regular = |kind: fs::FileType| {
        io::Error::other(format!("it is {}, not a regular file", file_kind(kind)))
    };
    if let Some((link, owner)) = crate::ownership::foreign_symlink(path) {
        return Err(io::Error::other(format!(
            "it is reached through {}, a symlink of another user (uid {owner}), not a regular \
             file of this user's",
            crate::text::path(&link)
        )));
    }
    let mut at = path.to_path_buf();
    // As many links as the kernel follows (MAXSYMLINKS).
    for _ in 0..40 {
        let found = match fs::symlink_metadata(&at) {
            Err(error) if error.kind() == io::ErrorKind::NotFound && at == path => {
                return Ok(at);
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(io::Error::other(
                    "it is a symlink to nothing, not a regular file",
                ));
            }
            Err(error) => return Err(error),
            Ok(found) => found,
        };
        let kind = found.file_type();
        // (Another user's symlinks were refused above.)
        if kind.is_file() && owned_by_another(found.uid()) {
            return Err(io::Error::other(format!(
                "it is a file of another user (uid {}), not a regular file of this user's",
                found.uid()
            )));
        }
        if kind.is_file() {
            return if at == path {
                Ok(at)
            } else {
                fs::canonicalize(&at)
            };
        }
        if !kind.is_symlink() {
            return Err(not_regular(kind));
        }
        let target = fs::read_link(&at)?;
        at = match at.parent() {
            Some(parent) => parent.join(target),
            None => target,
        };
    }
    Err(io::Error::other(
        "it is a loop of symlinks, not a regular file",
    ))
}

fn file_kind(kind: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a symlink to one of those"
    }
}

/// The bytes of the regular file at `path`, up to `most`: opened without blocking (a FIFO put
/// there would otherwise hold `retry` in `open`) and without following a symlink put there.
pub(crate) fn read_bounded(path: &Path, most: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            Some(libc::ELOOP) => io::Error::other("it is a symlink, not a regular file"),
            _ => error,
        })?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(most).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A new file `.NAME.RANDOM.tmp` in the directory of `target`: hidden, and without the
/// file's own ending (`.prom`), so a collector never reads it half written; its name cannot be
/// foreseen, so no one can have made it first.
fn create_temporary_beside(target: &Path, nonce: u64) -> io::Result<(PathBuf, fs::File)> {
    let name = target
        .file_name()
        .map_or_else(|| "metrics".into(), |name| name.to_string_lossy());
    let mut tries = 0u32;
    loop {
        let bits = nonce.rotate_left(17 * tries) ^ u64::from(tries);
        let temporary = target.with_file_name(format!(".{name}.{bits:016x}.tmp"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && tries < 3 => tries += 1,
            Err(error) => return Err(error),
        }
    }
}
