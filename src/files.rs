//! Files `retry` writes for others to read (`--metrics-file`, `--report`): only ever a regular
//! file of this user's, replaced whole or appended to, never what else a careless user or a
//! neighbour may have put at the path (a device, a FIFO, a socket, a directory, another
//! user's file or symlink).

use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::located::{self, Located, Unreachable, Way};
use crate::ownership::owned_by_another;

/// How a file of `retry`'s is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// Replaced whole (`replace`), maybe read first.
    Replace,
    /// Appended to (`append`).
    Append,
}

/// A file of `retry`'s to write, found by `writable`.
pub(crate) struct Target {
    at: Located,
    how: Use,
    /// The regular file of this user's that was there, if one was.
    found: Option<fs::Metadata>,
}

/// Replaces the regular file at `target` with `text`: written to a new file beside it, which
/// then takes its name, so a reader never sees half of it. `nonce` (random bits from the
/// caller) makes the temporary file's name.
pub(crate) fn replace(target: &Target, text: &str, nonce: u64) -> io::Result<()> {
    // Made private while it is written: the file it replaces may have been (a report made
    // 0600 is not to be read through its temporary file).
    let mode = if target.found.is_some() { 0o600 } else { 0o644 };
    let (temporary, mut file) = create_temporary_beside(&target.at, nonce, mode)?;
    // The file keeps the permissions it had, and its group where this user may give it (a
    // file a collector in that group reads); root keeps its owner too. Those of the file
    // `writable` found, of this user's: not of whatever a neighbour put at the name since
    // (they would choose the new file's mode, or its owner).
    if let Some(found) = &target.found {
        let _ = std::os::unix::fs::fchown(&file, Some(found.uid()), Some(found.gid()))
            .or_else(|_| std::os::unix::fs::fchown(&file, None, Some(found.gid())));
    }
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| match &target.found {
            Some(found) => file.set_permissions(fs::Permissions::from_mode(found.mode() & 0o777)),
            None => Ok(()),
        })
        .and_then(|()| target.at.dir.rename(&temporary, &target.at.name));
    if written.is_err() {
        // This run made it, under a name no one else could have known.
        let _ = target.at.dir.remove(&temporary);
    }
    written
}

/// Appends `text` to the regular file at `target` (found by `writable`), or a new one, never
/// replacing what earlier writers left there; in one write, so that other appenders' lines
/// never land inside it.
pub(crate) fn append(target: &Target, text: &str) -> io::Result<()> {
    let at = &target.at;
    let mut found = target.found.clone();
    // The very file found, or a new one: never whatever took the name since. A file another
    // writer made or removed meanwhile (runs appending to one new file at once) is looked at
    // again.
    for _ in 0..3 {
        let flags = match found {
            Some(_) => libc::O_WRONLY | libc::O_APPEND,
            None => libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_EXCL,
        };
        match at.dir.open(&at.name, flags, 0o644) {
            Ok(file) => return append_to(file, found.as_ref(), target, text),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::AlreadyExists | io::ErrorKind::NotFound
                ) =>
            {
                found = look(at, target.how)?;
            }
            Err(error) => return Err(error),
        }
    }
    Err(taken_since())
}

/// Appends `text` to `file`, opened at the name where `found` was seen (or made new).
fn append_to(
    mut file: File,
    found: Option<&fs::Metadata>,
    target: &Target,
    text: &str,
) -> io::Result<()> {
    let opened = file.metadata()?;
    if let Some(found) = found
        && (found.dev(), found.ino()) != (opened.dev(), opened.ino())
    {
        return Err(taken_since());
    }
    if !opened.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    // Its owner again: an inode number is reused, by a neighbour's file too.
    may_take(&target.at, opened.uid(), target.how)?;
    // A second name is a way in for whoever made it: where hard links to others' files are
    // allowed (`fs.protected_hardlinks` off), a neighbour's link to a file of this user's
    // would have the lines appended to that file.
    if opened.nlink() > 1 {
        return Err(io::Error::other(
            "it has other names (hard links), which the lines would reach too",
        ));
    }
    // All or nothing: half a line (a disk that filled up) would glue itself to the next
    // writer's first line. What was written is cut back only while it is still the end of the
    // file: another run's lines after it stay.
    match file.write(text.as_bytes()) {
        Ok(written) if written == text.len() => Ok(()),
        Ok(written) => {
            if written > 0
                && let Ok(end) = file.stream_position()
                && file.metadata().is_ok_and(|now| now.len() == end)
            {
                let _ = file.set_len(end - written as u64);
            }
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        }
        Err(error) => Err(error),
    }
}

/// What is open as `file`, if it is a regular file this user may take as theirs.
fn regular_of_ours(file: &File) -> io::Result<fs::Metadata> {
    let found = file.metadata()?;
    if !found.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    if owned_by_another(found.uid()) {
        return Err(of_another(found.uid()));
    }
    Ok(found)
}

/// Whether a regular file owned by `uid`, in `at`'s directory, may be written `how`: one of
/// this user's (or root's), or, for root appending, one of a user whose directory holds it and
/// whom alone it lets write there. In a container job, the file GitHub Actions names in
/// `$GITHUB_OUTPUT` belongs to the runner's user, in a directory of theirs, while the steps run
/// as root; a file a neighbour planted in a directory others share (`/tmp`) stays refused.
fn may_take(at: &Located, uid: u32, how: Use) -> io::Result<()> {
    if !owned_by_another(uid) {
        return Ok(());
    }
    // SAFETY: geteuid(2) cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if how == Use::Append && root {
        let dir = at.dir.own_metadata()?;
        if (dir.uid() == uid || dir.uid() == 0) && dir.mode() & 0o002 == 0 {
            return Ok(());
        }
    }
    Err(of_another(uid))
}

fn taken_since() -> io::Error {
    io::Error::other("another file took its name while retry looked")
}

fn of_another(uid: u32) -> io::Error {
    io::Error::other(format!(
        "it is a file of another user (uid {uid}), not a regular file of this user's"
    ))
}

/// Where a file of `retry`'s goes: `path` when nothing or a regular file is there, the regular
/// file a chain of symlinks ends at; anything else cannot be written. What another user put
/// there (a regular file, or any symlink on the way) is neither read nor written: in a
/// directory shared with a neighbour, it would turn the write on a file of their choosing, or
/// feed the run a content of their making. Root's own are root's; root appends to another
/// user's regular file (see `root_appends`). The directory found is held
/// open, so that the file is read and written there whatever is swapped in on the way later.
pub(crate) fn writable(path: &Path, how: Use) -> io::Result<Target> {
    let at = located::locate(path, Way::AsIs).map_err(|unreachable| match unreachable {
        Unreachable::Foreign { link, owner } => io::Error::other(format!(
            "it is reached through {}, a symlink of another user (uid {owner}), not a regular \
             file of this user's",
            crate::text::path(&link)
        )),
        Unreachable::Failed(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            io::Error::other("it is a loop of symlinks, not a regular file")
        }
        Unreachable::Dangling => symlink_to_nothing(),
        // (Only a `Way::Private` asks.)
        Unreachable::Rearrangeable { .. } => io::Error::other("others may rearrange it"),
        Unreachable::Failed(error) | Unreachable::Unmade(error) => error,
    })?;
    let found = judge(&at, at.found.clone(), how)?;
    Ok(Target { at, how, found })
}

/// What is at `at`'s name now: nothing, or a regular file that may be written `how`.
fn look(at: &Located, how: Use) -> io::Result<Option<fs::Metadata>> {
    judge(at, at.dir.metadata(&at.name)?, how)
}

/// `found` at `at`'s name, if it is nothing or a regular file that may be written `how`.
fn judge(at: &Located, found: Option<fs::Metadata>, how: Use) -> io::Result<Option<fs::Metadata>> {
    match found {
        None if at.via_link => Err(symlink_to_nothing()),
        None => Ok(None),
        Some(found) if found.is_file() => {
            may_take(at, found.uid(), how)?;
            Ok(Some(found))
        }
        Some(found) => Err(io::Error::other(format!(
            "it is {}, not a regular file",
            file_kind(found.file_type())
        ))),
    }
}

fn symlink_to_nothing() -> io::Error {
    io::Error::other("it is a symlink to nothing, not a regular file")
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

/// The bytes of the regular file of this user's (or root's) at `path`, up to `most`: opened
/// without blocking (a FIFO put there would otherwise hold `retry` in `open`) and without
/// following a symlink put there; what is open is then judged, not the name.
pub(crate) fn read_bounded(path: &Path, most: u64) -> io::Result<Vec<u8>> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(not_a_link)?;
    regular_of_ours(&file)?;
    bounded(file, most)
}

/// The bytes of the regular file at `target`, up to `most`, as `read_bounded` reads them.
pub(crate) fn read_target(target: &Target, most: u64) -> io::Result<Vec<u8>> {
    let file = target
        .at
        .dir
        .open(&target.at.name, libc::O_RDONLY, 0)
        .map_err(not_a_link)?;
    regular_of_ours(&file)?;
    bounded(file, most)
}

fn not_a_link(error: io::Error) -> io::Error {
    match error.raw_os_error() {
        Some(libc::ELOOP) => io::Error::other("it is a symlink, not a regular file"),
        _ => error,
    }
}

fn bounded(file: File, most: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(most).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A new file `.NAME.RANDOM.tmp` beside `target`: hidden, and without the file's own ending
/// (`.prom`), so a collector never reads it half written; its name cannot be foreseen, so no
/// one can have made it first.
fn create_temporary_beside(target: &Located, nonce: u64, mode: u32) -> io::Result<(CString, File)> {
    // The name's bytes as they are, cut so that the whole stays within a name's 255 bytes.
    let name = target.name.as_bytes();
    let name = &name[..name
        .len()
        .min(255 - ".".len() - ".0123456789abcdef.tmp".len())];
    let mut tries = 0u32;
    loop {
        let bits = nonce.rotate_left(17 * tries) ^ u64::from(tries);
        let mut temporary = b".".to_vec();
        temporary.extend_from_slice(name);
        temporary.extend_from_slice(format!(".{bits:016x}.tmp").as_bytes());
        let temporary =
            CString::new(temporary).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        match target.dir.open(
            &temporary,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            mode,
        ) {
            Ok(file) => return Ok((temporary, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && tries < 3 => tries += 1,
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Says why a test checks nothing here; under CI, where it must check, fails instead.
    fn skipped(why: &str) {
        let in_ci = std::env::var_os("CI").is_some_and(|value| !value.is_empty());
        assert!(!in_ci, "{why}, and CI must allow it");
        eprintln!("skipped: {why}");
    }

    /// A file a neighbour puts at the name between the look and the rename (their mode, their
    /// ownership) gives the new file neither: it keeps only what the look found, here nothing.
    #[test]
    fn a_file_put_at_the_name_after_the_look_lends_the_new_one_nothing() {
        // SAFETY: geteuid(2) cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            skipped("only root can make a file another user's");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.prom");
        let target = writable(&path, Use::Replace).unwrap();
        fs::write(&path, "theirs").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        replace(&target, "ours", 7).unwrap();
        let found = fs::metadata(&path).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "ours");
        assert_eq!((found.uid(), found.gid()), (0, 0));
        assert_eq!(found.mode() & 0o002, 0, "{:o}", found.mode());
    }

    /// `github` lines go to the very file `writable` found, or to a new one: never to a file
    /// that took the name since (a neighbour's hard link to a file of this user's, made and
    /// undone around the look).
    #[test]
    fn lines_go_only_to_the_file_found_or_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let target = writable(&path, Use::Append).unwrap();
        let bashrc = dir.path().join("bashrc");
        fs::write(&bashrc, "export PATH\n").unwrap();
        fs::hard_link(&bashrc, &path).unwrap();
        let error = append(&target, "attempts=1\n").unwrap_err();
        assert!(error.to_string().contains("hard links"), "{error}");
        assert_eq!(fs::read_to_string(&bashrc).unwrap(), "export PATH\n");
        fs::remove_file(&path).unwrap();
        fs::write(&path, "theirs\n").unwrap();
        let target = writable(&path, Use::Append).unwrap();
        // (Kept under another name, so that its inode number is not the next file's.)
        fs::rename(&path, dir.path().join("moved")).unwrap();
        let precious = dir.path().join("precious");
        fs::write(&precious, "mine\n").unwrap();
        fs::rename(&precious, &path).unwrap();
        let error = append(&target, "attempts=1\n").unwrap_err();
        assert!(error.to_string().contains("took its name"), "{error}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "mine\n");
        let target = writable(&path, Use::Append).unwrap();
        append(&target, "attempts=1\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "mine\nattempts=1\n");
    }

    /// Runs appending to one new file at once all land: one that finds the file another has
    /// just made appends to it, as to a file it had found.
    #[test]
    fn a_file_made_by_another_appender_since_the_look_takes_the_lines_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let target = writable(&path, Use::Append).unwrap();
        let other = writable(&path, Use::Append).unwrap();
        append(&other, "attempts=2\n").unwrap();
        append(&target, "attempts=1\n").unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "attempts=2\nattempts=1\n"
        );
    }

    /// A file of another user's that took the name (and maybe the inode number) of the file
    /// found takes no lines.
    #[test]
    fn a_file_of_another_user_in_place_of_the_one_found_takes_no_lines() {
        // SAFETY: geteuid(2) cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            skipped("only root can make a file another user's");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let path = dir.path().join("out.txt");
        fs::write(&path, "").unwrap();
        let target = writable(&path, Use::Append).unwrap();
        fs::remove_file(&path).unwrap();
        fs::write(&path, "theirs\n").unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        assert!(append(&target, "attempts=1\n").is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "theirs\n");
    }
}
