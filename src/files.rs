//! Files `retry` writes for others to read (`--metrics-file`, `--report`): only ever a regular
//! file of this user's, replaced whole or appended to, never what else a careless user or a
//! neighbour may have put at the path (a device, a FIFO, a socket, a directory, another
//! user's file or symlink). A path that names one of the descriptors `retry` was started with
//! (`/dev/stdout`) is written through that descriptor, and the file behind it left as it is.

use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::rc::Rc;

use rustix::fs::OFlags;

use crate::located::{self, Located, Unreachable, Way};
use crate::ownership::{self, Refusal, owned_by_another};
use crate::plumbing::OwnStream;

/// How a file of `retry`'s is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// Replaced whole (`replace`), maybe read first.
    Replace,
    /// Appended to (`append`).
    Append,
}

/// The descriptors `retry` was started with that the paths it writes name (`--report
/// /dev/stdout`), each held as a duplicate (closed on exec) taken before `retry` opens
/// anything it keeps: a number that was closed at the start and that `retry` later gives a
/// file of its own (a pipe, a state file) is never taken for the user's.
#[derive(Default)]
pub(crate) struct InheritedFds {
    held: Vec<(RawFd, OwnedFd)>,
    room: Option<WaitForRoom>,
}

/// Waits until a descriptor reads ready, which is how a write through an inherited descriptor
/// says it is done (its thread closes the other end of a pipe): `false` when it will not be in
/// time (a signal is ending `retry`, or the deadline and `--kill-after` have passed), so that
/// neither a reader that does not read nor another writer filling the same pipe ever keeps
/// `retry` from ending.
pub(crate) type WaitForRoom = Rc<dyn Fn(BorrowedFd<'_>) -> bool>;

impl InheritedFds {
    /// Holds the descriptors that `paths` name and that are open. To be called before `retry`
    /// opens anything it keeps (0 to 2 are open by then: `process::prepare` put /dev/null on
    /// any that was closed).
    pub(crate) fn hold<'a>(paths: impl IntoIterator<Item = &'a Path>) -> InheritedFds {
        let named: Vec<RawFd> = paths
            .into_iter()
            .filter_map(|path| match located::locate(path, Way::AsIs) {
                Err(Unreachable::Descriptor(fd)) => Some(fd),
                _ => None,
            })
            .collect();
        // Which were open, all asked before any copy is made: a copy takes the lowest free
        // number, which may be one a later path names (`--metrics-file /dev/fd/3` with 3
        // closed would find the report's copy there).
        let open: Vec<RawFd> = named
            .into_iter()
            .filter(|&fd| {
                // SAFETY: fcntl(2) F_GETFD of a number that may not be open (EBADF).
                unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
            })
            .collect();
        let mut held: Vec<(RawFd, OwnedFd)> = Vec::new();
        for fd in open {
            if held.iter().any(|(number, _)| *number == fd) {
                continue;
            }
            // SAFETY: a number found open just before, borrowed only for the copy.
            let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
            if let Ok(copy) = rustix::io::fcntl_dupfd_cloexec(borrowed, 3) {
                held.push((fd, copy));
            }
        }
        InheritedFds { held, room: None }
    }

    /// Writes through the held descriptors only as they have room (`room`).
    pub(crate) fn waiting_for_room(self, room: WaitForRoom) -> InheritedFds {
        InheritedFds {
            room: Some(room),
            ..self
        }
    }

    fn get(&self, fd: RawFd) -> Option<&OwnedFd> {
        self.held
            .iter()
            .find(|(number, _)| *number == fd)
            .map(|(_, held)| held)
    }
}

/// A file of `retry`'s to write, found by `writable`.
pub(crate) enum WriteTarget {
    /// A path: the regular file of this user's that was there, or none yet.
    Path(Box<AtPath>),
    /// One of the descriptors `retry` was started with, which the path names: written
    /// through, after whatever the command wrote there, as it has room, and what is behind it
    /// never replaced or cut back.
    Descriptor(OwnedFd, Option<WaitForRoom>),
}

/// A path of `retry`'s to write, found by `writable`.
pub(crate) struct AtPath {
    at: Located,
    how: Use,
    /// The regular file of this user's that was there, if one was.
    found: Option<fs::Metadata>,
}

/// Replaces the file at `target` with `text`: written to a new file beside it, which then takes
/// its name, so a reader never sees half of it. `nonce` (random bits from the caller) makes the
/// temporary file's name. A descriptor takes `text` as it comes.
pub(crate) fn replace(target: &WriteTarget, text: &str, nonce: u64) -> io::Result<()> {
    let target = match target {
        WriteTarget::Path(target) => target,
        WriteTarget::Descriptor(fd, room) => return write_through(fd, room.as_ref(), text),
    };
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
        .map_err(real_cause)
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

/// Writes all of `text` through `fd`, as `retry` writes to its own streams (a descriptor a
/// parent left non-blocking waits until it takes more).
/// Whether the regular file behind `fd` (`>> "$GITHUB_OUTPUT"` with `--report /dev/stdout`)
/// ends in half a line, its last byte read where it lies (through a reading copy when `fd` was
/// opened for writing only), never moving the offset others write at. Anything but a regular
/// file (a pipe, a terminal) is never read.
fn descriptor_ends_in_half_a_line(fd: &OwnedFd) -> bool {
    let Ok(file) = fd.try_clone().map(File::from) else {
        return false;
    };
    let Ok(metadata) = file.metadata() else {
        return false;
    };
    if !metadata.is_file() {
        return false;
    }
    // The lines land where the descriptor's offset is: at the end where it appends, else where
    // the command stopped writing (`1<> file`), which may be before the end.
    let appends = rustix::fs::fcntl_getfl(&file)
        .map_or(true, |flags| flags.contains(rustix::fs::OFlags::APPEND));
    let end = match rustix::fs::tell(&file) {
        Ok(offset) if !appends => offset,
        _ => metadata.len(),
    };
    let readable = File::open(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap_or(file);
    ends_in_half_a_line(&readable, end)
}

fn write_through(fd: &OwnedFd, room: Option<&WaitForRoom>, text: &str) -> io::Result<()> {
    let Some(room) = room else {
        return write_all_through(fd, text);
    };
    // On a thread of its own: a write to a blocking pipe that another writer fills blocks
    // whatever room a poll saw before it, and one to a descriptor that never takes a write (a
    // read end, a listening socket) must fail at once, where a wait for room would never end.
    let (done, done_writing) = io::pipe()?;
    let through = fd.try_clone()?;
    let text = text.to_owned();
    let (sender, outcome) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("retry-write-through".into())
        .spawn(move || {
            let _ = sender.send(write_all_through(&through, &text));
            drop(done_writing);
        })?;
    if !room(done.as_fd()) {
        return Err(io::Error::other(
            "its reader does not read, and retry is ending",
        ));
    }
    outcome
        .recv()
        .unwrap_or_else(|_| Err(io::Error::other("the write stopped")))
}

fn write_all_through(fd: &OwnedFd, text: &str) -> io::Result<()> {
    OwnStream::on(fd.as_fd())?
        .write_all(text.as_bytes())
        .map_err(real_cause)
}

/// Appends `text` to the regular file at `target` (found by `writable`), or a new one, never
/// replacing what earlier writers left there; in one write, so that other appenders' lines
/// never land inside it. A file that ends in half a line gets a newline first. A descriptor
/// takes `text` as it comes.
pub(crate) fn append(target: &WriteTarget, text: &str) -> io::Result<()> {
    let target = match target {
        WriteTarget::Path(target) => target,
        WriteTarget::Descriptor(fd, room) if descriptor_ends_in_half_a_line(fd) => {
            return write_through(fd, room.as_ref(), &format!("\n{text}"));
        }
        WriteTarget::Descriptor(fd, room) => return write_through(fd, room.as_ref(), text),
    };
    let at = &target.at;
    let mut found = target.found.clone();
    // The very file found, or a new one: never whatever took the name since. A file another
    // writer made or removed meanwhile (runs appending to one new file at once) is looked at
    // again.
    for _ in 0..3 {
        let opened = match found {
            // Readable too, for its last byte; one this user may only write is written.
            Some(_) => at
                .dir
                .open(&at.name, OFlags::RDWR | OFlags::APPEND, 0)
                .or_else(|error| match error.kind() {
                    io::ErrorKind::PermissionDenied => {
                        at.dir.open(&at.name, OFlags::WRONLY | OFlags::APPEND, 0)
                    }
                    _ => Err(error),
                }),
            None => at.dir.open(
                &at.name,
                OFlags::RDWR | OFlags::APPEND | OFlags::CREATE | OFlags::EXCL,
                0o644,
            ),
        };
        match opened {
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
    target: &AtPath,
    text: &str,
) -> io::Result<()> {
    let opened = file.metadata()?;
    if let Some(found) = found
        && (found.dev(), found.ino()) != (opened.dev(), opened.ino())
    {
        return Err(taken_since());
    }
    ownership::regular(&opened).map_err(|_| not_regular())?;
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
    // A step that wrote half a line (`url=`) would have the first line glued to it.
    let text = if ends_in_half_a_line(&file, opened.len()) {
        format!("\n{text}")
    } else {
        text.to_string()
    };
    all_or_nothing(&mut file, text.as_bytes()).map_err(real_cause)
}

/// Whether the regular `file`, up to `len` bytes, ends in half a line: its byte before `len` is
/// not a newline. One this user may not read is taken to end in a whole line.
fn ends_in_half_a_line(file: &File, len: u64) -> bool {
    let mut last = [0u8];
    len > 0 && file.read_at(&mut last, len - 1).is_ok_and(|read| read == 1) && last[0] != b'\n'
}

/// Appends `bytes` to `file` (open to append) in one write, or none of them: half a line (a
/// disk that filled up) would glue itself to the next writer's first line. After a short
/// write, the rest is tried, for the reason it cannot go (the disk full, the file size limit);
/// then what was written is cut back, only while it is still the end of the file: another
/// run's lines after it stay.
fn all_or_nothing(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    let mut written = file.write(bytes)?;
    if written == bytes.len() {
        return Ok(());
    }
    // (Where an append leaves the offset: the end of what it wrote.)
    let began = file.stream_position().map(|end| end - written as u64);
    let cause = loop {
        match file.write(&bytes[written..]) {
            Ok(0) => break io::Error::from(io::ErrorKind::WriteZero),
            Ok(more) => written += more,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => break error,
        }
        if written == bytes.len() {
            return Ok(());
        }
    };
    if let Ok(began) = began
        && let Ok(end) = file.stream_position()
        && file.metadata().is_ok_and(|now| now.len() == end)
    {
        let _ = file.set_len(began);
    }
    Err(cause)
}

/// `error` with its cause named where the OS's words leave it out: a file too large for the
/// file size limit (`ulimit -f`) rather than for the file system.
fn real_cause(error: io::Error) -> io::Error {
    if error.raw_os_error() != Some(libc::EFBIG) {
        return error;
    }
    if let Some(limit) = rustix::process::getrlimit(rustix::process::Resource::Fsize).current {
        return io::Error::other(format!(
            "File too large: past the file size limit (ulimit -f) of {limit} bytes"
        ));
    }
    error
}

/// What is open as `file`, if it is a regular file this user may take as theirs.
fn regular_of_ours(file: &File) -> io::Result<fs::Metadata> {
    let found = file.metadata()?;
    ownership::regular_of_ours(&found).map_err(|refusal| match refusal {
        Refusal::OfAnother { uid } => of_another(uid),
        _ => not_regular(),
    })?;
    Ok(found)
}

fn not_regular() -> io::Error {
    io::Error::other("it is not a regular file")
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
    let root = rustix::process::geteuid().is_root();
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
/// A path that names one of the descriptors `retry` was started with is that descriptor, as
/// `inherited` holds it; one that was closed then cannot be written.
pub(crate) fn writable(path: &Path, how: Use, inherited: &InheritedFds) -> io::Result<WriteTarget> {
    let unreachable = match located::locate(path, Way::AsIs) {
        Ok(at) => {
            let found = judge(&at, at.found.clone(), how)?;
            return Ok(WriteTarget::Path(Box::new(AtPath { at, how, found })));
        }
        Err(unreachable) => unreachable,
    };
    Err(match unreachable {
        Unreachable::Descriptor(fd) => match inherited.get(fd) {
            Some(held) => {
                return Ok(WriteTarget::Descriptor(
                    held.try_clone()?,
                    inherited.room.clone(),
                ));
            }
            None => io::Error::other(format!(
                "it names descriptor {fd}, which was not open when retry started"
            )),
        },
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
    })
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
        Some(found) => match ownership::regular(&found) {
            Ok(()) => {
                may_take(at, found.uid(), how)?;
                Ok(Some(found))
            }
            Err(_) => Err(io::Error::other(format!(
                "it is {}, not a regular file",
                file_kind(found.file_type())
            ))),
        },
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
/// without blocking and without following a symlink put there (`located::open_unfollowed`);
/// what is open is then judged, not the name.
pub(crate) fn read_bounded(path: &Path, most: u64) -> io::Result<Vec<u8>> {
    let file = located::open_unfollowed(path).map_err(not_a_link)?;
    regular_of_ours(&file)?;
    bounded(file, most)
}

/// The bytes of the regular file at `target`, up to `most`, as `read_bounded` reads them. What
/// is behind a descriptor is never read (a terminal's or a pipe's input is not `retry`'s to
/// take): it has none.
pub(crate) fn read_target(target: &WriteTarget, most: u64) -> io::Result<Vec<u8>> {
    let target = match target {
        WriteTarget::Path(target) => target,
        WriteTarget::Descriptor(..) => return Ok(Vec::new()),
    };
    let file = target
        .at
        .dir
        .open(&target.at.name, OFlags::RDONLY, 0)
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
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
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
    use crate::test_support::skipped;

    /// A file a neighbour puts at the name between the look and the rename (their mode, their
    /// ownership) gives the new file neither: it keeps only what the look found, here nothing.
    #[test]
    fn a_file_put_at_the_name_after_the_look_lends_the_new_one_nothing() {
        if !rustix::process::geteuid().is_root() {
            skipped("only root can make a file another user's");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.prom");
        let target = writable(&path, Use::Replace, &InheritedFds::default()).unwrap();
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
        let target = writable(&path, Use::Append, &InheritedFds::default()).unwrap();
        let bashrc = dir.path().join("bashrc");
        fs::write(&bashrc, "export PATH\n").unwrap();
        fs::hard_link(&bashrc, &path).unwrap();
        let error = append(&target, "attempts=1\n").unwrap_err();
        assert!(error.to_string().contains("hard links"), "{error}");
        assert_eq!(fs::read_to_string(&bashrc).unwrap(), "export PATH\n");
        fs::remove_file(&path).unwrap();
        fs::write(&path, "theirs\n").unwrap();
        let target = writable(&path, Use::Append, &InheritedFds::default()).unwrap();
        // (Kept under another name, so that its inode number is not the next file's.)
        fs::rename(&path, dir.path().join("moved")).unwrap();
        let precious = dir.path().join("precious");
        fs::write(&precious, "mine\n").unwrap();
        fs::rename(&precious, &path).unwrap();
        let error = append(&target, "attempts=1\n").unwrap_err();
        assert!(error.to_string().contains("took its name"), "{error}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "mine\n");
        let target = writable(&path, Use::Append, &InheritedFds::default()).unwrap();
        append(&target, "attempts=1\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "mine\nattempts=1\n");
    }

    /// Runs appending to one new file at once all land: one that finds the file another has
    /// just made appends to it, as to a file it had found.
    #[test]
    fn a_file_made_by_another_appender_since_the_look_takes_the_lines_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let target = writable(&path, Use::Append, &InheritedFds::default()).unwrap();
        let other = writable(&path, Use::Append, &InheritedFds::default()).unwrap();
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
        if !rustix::process::geteuid().is_root() {
            skipped("only root can make a file another user's");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let path = dir.path().join("out.txt");
        fs::write(&path, "").unwrap();
        let target = writable(&path, Use::Append, &InheritedFds::default()).unwrap();
        fs::remove_file(&path).unwrap();
        fs::write(&path, "theirs\n").unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        assert!(append(&target, "attempts=1\n").is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "theirs\n");
    }
}
