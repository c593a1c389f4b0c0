//! The state directory: one small file per name (`NAME.state`), changed only under an exclusive
//! lock on its own lock file (`NAME.lock`, held for a read-decide-write and never across a
//! command's run), and replaced atomically (a temporary file renamed over it), so that no
//! update is lost among many concurrent runs and no reader ever sees half a file.
//!
//! The directory is made 0700 and the files 0600. A directory or file that other users can
//! write is refused at the start (misuse): its counts could be anyone's. Anything else that goes
//! wrong (no directory, no space, a lock held too long) is a `StoreError`, and the run fails open.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{FlockOperation, OFlags};
use rustix::io::Errno;

use super::rules::{Op, Record, millis};
use super::store::{Applied, Store, StoreError};
use crate::located::{self, Dir, Located, Unreachable, Way, c_name};
use crate::ownership::{self, Refusal, acl_writer};
use crate::text::{self, plain_error};

/// The longest a run waits, in all, for other runs to let go of the locks it asks for, before
/// it fails open: far more than a transaction takes (a fraction of a millisecond), yet under
/// the second a broken state may cost a run in all. A lock is mostly free at once; waits long
/// enough to count come from a machine so loaded that the holder waits for a CPU (a hundred runs
/// starting at once on two cores waited up to half a second).
pub(crate) const LOCK_WAIT: Duration = Duration::from_millis(800);

/// The most a record may hold, in bytes: eleven slices and a breaker take under 500.
const RECORD_MOST: usize = 4096;

/// Why the state directory cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// Misuse, said in this line: others can write it or a file in it (or, for a URL, this
    /// build cannot keep state there).
    Misuse(String),
    /// It cannot be made or read: the run fails open with this reason.
    Unavailable(String),
}

pub(crate) struct FileStore {
    /// The state directory, held open.
    dir: Dir,
    /// Its path, for messages.
    shown: PathBuf,
    /// This process, which names its temporary files.
    pid: u32,
    /// The time spent waiting for locks so far, of `LOCK_WAIT`.
    waited: Duration,
    /// The lock file of each name used so far, kept open for the run.
    locks: BTreeMap<String, File>,
}

/// `file`, opened from `path`, if it is a regular file; a FIFO, a device or a socket where a
/// state or lock file should be is a broken state.
fn regular(file: File, path: &Path) -> Result<File, StoreError> {
    let found = file.metadata().map_err(|error| {
        StoreError(format!(
            "cannot read {}: {}",
            text::path(path),
            plain_error(&error)
        ))
    })?;
    match ownership::regular(&found) {
        Ok(()) => Ok(file),
        Err(_) => Err(StoreError(format!(
            "{} is not a regular file",
            text::path(path)
        ))),
    }
}

/// What of the state a refusal names, for its line.
#[derive(Clone, Copy)]
enum Part {
    Directory,
    File,
}

/// The line that refuses the state directory or file `shown` (misuse) for `refusal`, with what
/// to do about it.
fn refused(part: Part, shown: &str, refusal: Refusal) -> OpenError {
    let (what, mode, own) = match part {
        Part::Directory => (
            "state directory",
            "chmod 700",
            "use a directory of your own",
        ),
        Part::File => (
            "state file",
            "chmod 600",
            "remove it, or use a state directory of your own",
        ),
    };
    OpenError::Misuse(match refusal {
        Refusal::OthersMayWrite { mode: bits } => format!(
            "{what} {shown} is writable by others (mode {bits:04o}); make it yours alone ({mode})"
        ),
        Refusal::OfAnother { uid } => {
            format!("{what} {shown} belongs to another user (uid {uid}); {own}")
        }
        Refusal::AclWriter { uid } => format!(
            "{what} {shown} is writable by another user (uid {uid}, by its ACL); make it yours alone (setfacl -b)"
        ),
        Refusal::NotRegular(_) => format!("{what} {shown} is not a regular file"),
    })
}

impl FileStore {
    /// Opens the state directory `dir` for the records of `names`, making it (0700) if it is
    /// not there.
    pub(crate) fn open(path: &Path, names: &[&str]) -> Result<FileStore, OpenError> {
        let shown = text::path(path);
        // Resolved name by name and held open: the directory checked below is the one used,
        // whatever is put on its path later (a neighbour's link in place of a directory).
        let located = locate_private(path, &shown)?;
        let dir = open_or_make(&located, &shown)?;
        let meta = dir
            .own_metadata()
            .map_err(|error| unavailable("cannot read", &shown, &error))?;
        if !meta.is_dir() {
            return Err(not_a_directory(&shown));
        }
        ownership::private(&meta, || dir.acl_writer())
            .map_err(|refusal| refused(Part::Directory, &shown, refusal))?;
        for name in names {
            for file in [state_name(name), lock_name(name)] {
                check_file(&dir, path, &file)?;
            }
        }
        Ok(FileStore {
            dir,
            shown: path.to_path_buf(),
            pid: std::process::id(),
            waited: Duration::ZERO,
            locks: BTreeMap::new(),
        })
    }

    /// The lock file of `name`, locked: open (made if need be) and held exclusively, waiting
    /// for another run that holds it up to `LOCK_WAIT`.
    fn lock(&mut self, name: &str) -> Result<&File, StoreError> {
        if !self.locks.contains_key(name) {
            let path = self.shown.join(lock_name(name));
            let file = self
                .open_file(&lock_name(name), OFlags::RDWR | OFlags::CREATE, 0o600)
                .map_err(|error| {
                    StoreError(format!(
                        "cannot open {}: {}",
                        text::path(&path),
                        plain_error(&error)
                    ))
                })?;
            let file = regular(file, &path)?;
            self.locks.insert(name.to_string(), file);
        }
        let file = &self.locks[name];
        let failed = |error: io::Error| {
            StoreError(format!(
                "cannot lock {}: {}",
                text::path(&self.shown.join(lock_name(name))),
                plain_error(&error)
            ))
        };
        match rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(Errno::WOULDBLOCK) => {}
            Err(error) => return Err(failed(error.into())),
        }
        let started = std::time::Instant::now();
        let locked = wait_for_lock(file, LOCK_WAIT.saturating_sub(self.waited));
        self.waited = self.waited.saturating_add(started.elapsed());
        match locked {
            Ok(true) => Ok(file),
            Ok(false) => Err(StoreError(format!(
                "{} is held by other processes for more than {}ms",
                text::path(&self.shown.join(lock_name(name))),
                LOCK_WAIT.as_millis()
            ))),
            Err(error) => Err(failed(error)),
        }
    }

    /// Reads the record of `name`: `None` when there is none yet; a record that does not parse
    /// comes back as `Err(())`.
    fn load(&self, name: &str) -> Result<Option<Result<Record, ()>>, StoreError> {
        let path = self.shown.join(state_name(name));
        let unreadable = |error: io::Error| {
            StoreError(format!(
                "cannot read {}: {}",
                text::path(&path),
                plain_error(&error)
            ))
        };
        let mut file = match self.open_file(&state_name(name), OFlags::RDONLY, 0) {
            Ok(file) => regular(file, &path)?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(unreadable(error)),
        };
        // A record is a few hundred bytes: one read takes it whole, and a file that fills the
        // buffer is no record.
        let mut buffer = [0u8; RECORD_MOST];
        let mut filled = 0;
        loop {
            match file.read(&mut buffer[filled..]) {
                Ok(0) => break,
                Ok(read) => {
                    filled += read;
                    if filled == buffer.len() {
                        return Ok(Some(Err(())));
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(unreadable(error)),
            }
        }
        let record = std::str::from_utf8(&buffer[..filled])
            .ok()
            .and_then(Record::parse);
        Ok(Some(record.ok_or(())))
    }

    /// Replaces the record of `name` at once: a temporary file, renamed over the old one.
    fn save(&self, name: &str, record: &Record) -> Result<(), StoreError> {
        let path = self.shown.join(state_name(name));
        let cannot_write = |error: io::Error| {
            StoreError(format!(
                "cannot write {}: {}",
                text::path(&path),
                plain_error(&error)
            ))
        };
        // A name of its own, made new: only what this run made is ever removed. (The directory
        // is this user's alone, so the name need not be unforeseeable, only unused.)
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let temporary = format!("{name}.{}.{nanos:08x}.tmp", self.pid);
        let mut file = self
            .open_file(
                &temporary,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
                0o600,
            )
            .map_err(cannot_write)?;
        let temporary = c_name(&temporary).map_err(cannot_write)?;
        let written = file.write_all(record.render().as_bytes()).and_then(|()| {
            let state = c_name(state_name(name))?;
            self.dir.rename(&temporary, &state)
        });
        written.map_err(|error| {
            let _ = self.dir.remove(&temporary);
            cannot_write(error)
        })
    }

    /// Opens the file `name` of the state directory: never through a symbolic link, so that a
    /// link planted where a record or lock file should be is a broken state (the run fails
    /// open), not a way to make `retry` write elsewhere; and never blocking, so that a FIFO
    /// planted there cannot hold the run in `open` beyond any signal (what was opened must then
    /// be a regular file, see `regular`). The command inherits none of them.
    fn open_file(&self, name: &str, flags: OFlags, mode: u32) -> io::Result<File> {
        self.dir.open(&c_name(name)?, flags, mode)
    }
}

fn unavailable(what: &str, shown: &str, error: &io::Error) -> OpenError {
    OpenError::Unavailable(format!("{what} {shown}: {}", plain_error(error)))
}

fn not_a_directory(shown: &str) -> OpenError {
    OpenError::Unavailable(format!("{shown} is not a directory"))
}

/// Where the state directory `path` (`shown`) is, through directories no one else may
/// rearrange, the missing ones made (see `located::Way::Private`).
fn locate_private(path: &Path, shown: &str) -> Result<Located, OpenError> {
    match located::locate(path, Way::Private) {
        Ok(located) => Ok(located),
        Err(Unreachable::Foreign { link, owner }) => Err(OpenError::Misuse(format!(
            "state directory {shown} is reached through {}, a symlink of another user (uid {owner}); use a directory of your own",
            text::path(&link)
        ))),
        Err(Unreachable::Unmade(error)) => Err(unavailable("cannot make", shown, &error)),
        Err(Unreachable::Rearrangeable { dir, why }) => Err(OpenError::Misuse(format!(
            "state directory {shown} is reached through {}, which others may rearrange ({why}); use a directory of your own",
            text::path(&dir)
        ))),
        Err(Unreachable::Dangling) => Err(OpenError::Unavailable(format!(
            "cannot make {shown}: a symlink on the way leads to nothing"
        ))),
        // (Only a `Way::AsIs` looks for one.)
        Err(Unreachable::Descriptor(fd)) => Err(OpenError::Unavailable(format!(
            "{shown} names descriptor {fd}, not a directory"
        ))),
        Err(Unreachable::Failed(error)) => Err(unavailable("cannot read", shown, &error)),
    }
}

/// The state directory at `located`, held open; made (0700) if nothing is there.
fn open_or_make(located: &Located, shown: &str) -> Result<Dir, OpenError> {
    match located.dir.open_dir(&located.name) {
        Ok(dir) => Ok(dir),
        // A link to nothing: made where it leads, the state could land on the wrong file
        // system (a disk not mounted yet).
        Err(error) if error.kind() == io::ErrorKind::NotFound && located.via_link => Err(
            OpenError::Unavailable(format!("cannot make {shown}: it is a symlink to nothing")),
        ),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            located
                .dir
                .make_dir(&located.name)
                .map_err(|error| unavailable("cannot make", shown, &error))?;
            located
                .dir
                .open_dir(&located.name)
                .map_err(|error| unavailable("cannot read", shown, &error))
        }
        Err(error) if matches!(error.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
            Err(not_a_directory(shown))
        }
        Err(error) => Err(unavailable("cannot read", shown, &error)),
    }
}

/// Refuses the state file `name` in `dir` (at `path`), if it is there, when someone else may
/// change it.
fn check_file(dir: &Dir, path: &Path, name: &str) -> Result<(), OpenError> {
    let file =
        c_name(name).map_err(|error| unavailable("cannot read", &text::path(path), &error))?;
    let path = path.join(file.to_string_lossy().as_ref());
    // A link's own mode means nothing; it is never followed (see `load`, `lock`).
    let Ok(Some(meta)) = dir.metadata(&file) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    ownership::private(&meta, || acl_writer(&path))
        .map_err(|refusal| refused(Part::File, &text::path(&path), refusal))
}

/// Waits up to `wait` for the exclusive lock on `file`, which another process holds: `true` once
/// it is this process's. The kernel queues a blocked flock(2) and hands the lock over as it is
/// let go, where polling would let a busy name starve a run; flock(2) has no time-out, so the
/// blocking call runs on a thread of its own, on a duplicate of the descriptor (the lock belongs
/// to the open file, which both share). Given up on, that thread lets go of the lock as soon as
/// it gets it: a rendezvous channel tells it that nobody took the answer.
fn wait_for_lock(file: &File, wait: Duration) -> io::Result<bool> {
    let waiter = file.try_clone()?;
    let (answer, answered) = mpsc::sync_channel(0);
    thread::Builder::new()
        .name("state-lock".into())
        .spawn(move || {
            let locked = loop {
                match rustix::fs::flock(&waiter, FlockOperation::LockExclusive) {
                    Err(Errno::INTR) => {}
                    locked => break locked.map_err(io::Error::from),
                }
            };
            let took = locked.is_ok();
            if answer.send(locked).is_err() && took {
                let _ = rustix::fs::flock(&waiter, FlockOperation::Unlock);
            }
        })?;
    match answered.recv_timeout(wait) {
        Ok(locked) => locked.map(|()| true),
        Err(_) => Ok(false),
    }
}

fn state_name(name: &str) -> String {
    format!("{name}.state")
}

fn lock_name(name: &str) -> String {
    format!("{name}.lock")
}

/// The wall clock in milliseconds: the one clock every run on this machine shares.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

impl FileStore {
    /// Runs `decide` on the record of `name` under its lock: load, decide, store (when it
    /// changed). `replaced` says the record found was corrupt.
    pub(crate) fn transact<T>(
        &mut self,
        name: &str,
        decide: &mut dyn FnMut(&mut Record, u64) -> T,
    ) -> Result<(T, bool), StoreError> {
        self.lock(name)?;
        let result = (|| {
            let (mut record, replaced, stored) = match self.load(name)? {
                Some(Ok(record)) => (record.clone(), false, Some(record)),
                Some(Err(())) => (Record::default(), true, None),
                None => (Record::default(), false, None),
            };
            let value = decide(&mut record, now_ms());
            if stored.as_ref() != Some(&record) {
                self.save(name, &record)?;
            }
            Ok((value, replaced))
        })();
        if let Some(lock) = self.locks.get(name) {
            let _ = rustix::fs::flock(lock, FlockOperation::Unlock);
        }
        result
    }

    /// Runs `look` on the record of `name` as some run last stored it, without its lock: a
    /// record is replaced atomically, so it is whole. A corrupt one reads as fresh, and says
    /// so (`true`); it stays as it is.
    fn peek<T>(
        &mut self,
        name: &str,
        look: &mut dyn FnMut(&Record, u64) -> T,
    ) -> Result<(T, bool), StoreError> {
        let (record, corrupt) = match self.load(name)? {
            Some(Ok(record)) => (record, false),
            Some(Err(())) => (Record::default(), true),
            None => (Record::default(), false),
        };
        Ok((look(&record, now_ms()), corrupt))
    }
}

impl Store for FileStore {
    fn apply(&mut self, name: &str, op: &Op) -> Result<Applied, StoreError> {
        if op.reads_only() {
            let (reply, corrupt) =
                self.peek(name, &mut |record, now| record.clone().apply(op, now))?;
            return Ok(Applied {
                reply,
                replaced: corrupt,
            });
        }
        let (reply, replaced) = self.transact(name, &mut |record, now| record.apply(op, now))?;
        Ok(Applied { reply, replaced })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_record_survives_a_round_trip_and_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("a/b");
        let mut store = FileStore::open(&state, &["api"]).unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().mode() & 0o777;
        assert_eq!(mode(&state), 0o700);
        let (_, replaced) = store
            .transact("api", &mut |record, _| {
                record.breaker.failures = 3;
            })
            .unwrap();
        assert!(!replaced);
        assert_eq!(mode(&state.join("api.state")), 0o600);
        assert_eq!(mode(&state.join("api.lock")), 0o600);
        let (seen, _) = store
            .transact("api", &mut |record, _| record.breaker.failures)
            .unwrap();
        assert_eq!(seen, 3);
        let leftovers: Vec<_> = fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn a_corrupt_record_is_replaced_by_a_fresh_one() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("api.state"), "garbage\n").unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let mut store = FileStore::open(dir.path(), &["api"]).unwrap();
        let (failures, replaced) = store
            .transact("api", &mut |record, _| {
                record.breaker.failures += 1;
                record.breaker.failures
            })
            .unwrap();
        assert!(replaced);
        assert_eq!(failures, 1);
        let (failures, replaced) = store
            .transact("api", &mut |record, _| record.breaker.failures)
            .unwrap();
        assert!(!replaced);
        assert_eq!(failures, 1);
    }

    #[test]
    fn what_others_can_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            FileStore::open(dir.path(), &["api"]),
            Err(OpenError::Misuse(line)) if line.contains("writable by others (mode 0777)")
        ));
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o770)).unwrap();
        assert!(
            FileStore::open(dir.path(), &["api"]).is_ok(),
            "group write is fine"
        );
        let file = dir.path().join("api.state");
        fs::write(&file, "").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(
            FileStore::open(dir.path(), &["api"]),
            Err(OpenError::Misuse(line)) if line.contains("api.state")
        ));
    }

    #[test]
    fn a_file_where_the_directory_should_be_is_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state");
        fs::write(&file, "").unwrap();
        assert!(matches!(
            FileStore::open(&file, &["api"]),
            Err(OpenError::Unavailable(_))
        ));
        assert!(matches!(
            FileStore::open(&file.join("below"), &["api"]),
            Err(OpenError::Unavailable(_))
        ));
    }

    #[test]
    fn a_lock_held_too_long_fails_within_the_bound() {
        use std::time::Instant;
        let dir = tempfile::tempdir().unwrap();
        let mut store = FileStore::open(dir.path(), &["api"]).unwrap();
        let holder = File::create(dir.path().join("api.lock")).unwrap();
        rustix::fs::flock(&holder, FlockOperation::LockExclusive).unwrap();
        let started = Instant::now();
        let error = store.transact("api", &mut |_, _| ()).err().unwrap();
        assert!(error.0.contains("held by other processes"), "{error:?}");
        assert!(started.elapsed() >= LOCK_WAIT);
        // That it gives up at all, not how promptly: a loaded machine may take its time (the
        // 200 ms between LOCK_WAIT and the 1 s bound is no margin for a test).
        assert!(started.elapsed() < 10 * LOCK_WAIT);
    }
}
