//! A path resolved name by name, as the kernel resolves it, for the files `retry` may share a
//! directory with a neighbour (the report, the metrics file, the state directory). Each
//! directory on the way is held open and the next name is opened from it without following a
//! link, so the directory that was checked is the one written in, whatever a neighbour swaps
//! in meanwhile (a link in place of a directory, a moment after the look); a symlink another
//! user owns is never followed. A path that names one of `retry`'s own descriptors
//! (`/dev/stdout`) is said to be one, not resolved through what is open there.
//!
//! A leaf: it makes kernel calls on paths and descriptors, and nothing else.

use std::collections::VecDeque;
use std::ffi::{CStr, CString, OsStr};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, CWD, Mode, OFlags};
use rustix::io::Errno;

use crate::ownership::{acl_writer, acl_writer_of, owned_by_another};

/// As many links as the kernel follows in one resolution (MAXSYMLINKS).
const MOST_LINKS: u32 = 40;

/// How a file that a neighbour may have put in place is opened: never through a link at its
/// name (a link another user planted would choose the file), and never blocking (a FIFO put
/// there would hold `retry` in `open`, beyond any signal). What was opened is then judged
/// (`ownership`), not the name.
const UNFOLLOWED: OFlags = OFlags::NOFOLLOW.union(OFlags::NONBLOCK);

/// An open directory: names in it are opened, made, renamed and removed relative to it, never
/// following a link at the name itself, and never blocking in `open` (a FIFO put at a name).
pub(crate) struct Dir(File);

/// Where a path leads: the directory holding its last name, and that name (`.` for a path
/// without one, such as `/`).
pub(crate) struct Located {
    pub(crate) dir: Dir,
    pub(crate) name: CString,
    /// Whether the last name is a link's target rather than the path's own last name.
    pub(crate) via_link: bool,
    /// What was at the last name when the walk reached it (never a link), if anything.
    pub(crate) found: Option<Metadata>,
}

/// How far `locate` trusts the directories on the way.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// As they are: a file written for others to read. A path that names one of this
    /// process's descriptors is said to (`Unreachable::Descriptor`).
    AsIs,
    /// Only directories no one else may rearrange, the missing ones the path names made (mode
    /// 0700): for a state others must not move away (a breaker closed, a budget renewed) or
    /// replace with their own.
    Private,
}

/// Why a path leads nowhere `retry` may go.
#[derive(Debug)]
pub(crate) enum Unreachable {
    /// A symlink of another user's met on the way (the link, as a path, and its owner):
    /// following it would let them choose where `retry` writes.
    Foreign {
        link: PathBuf,
        owner: u32,
    },
    /// A missing directory on the way could not be made.
    Unmade(io::Error),
    /// A directory on the way that others may rearrange (writable by others without the
    /// sticky bit, or by another user by its ACL), and why, on a `Way::Private`.
    Rearrangeable {
        dir: PathBuf,
        why: String,
    },
    /// A link on the way leads to a directory that is not there (`retry` makes only the
    /// directories the path names itself, never those of a link's target: an unmounted disk
    /// would take them on the wrong file system).
    Dangling,
    /// On a `Way::AsIs`, the path names descriptor N of this process (`/dev/stdout`,
    /// `/dev/fd/N`, `/proc/self/fd/N`, or a link to one of those, by name): what is open there
    /// has no name to go by (a pipe), or one whose file is not `retry`'s to replace (the log
    /// a shell redirected stdout to). The caller writes through the descriptor, or refuses it.
    Descriptor(RawFd),
    Failed(io::Error),
}

impl From<io::Error> for Unreachable {
    fn from(error: io::Error) -> Self {
        Unreachable::Failed(error)
    }
}

/// One step of resolving a path.
enum Step {
    Root,
    Parent,
    /// A name, and whether the path given holds it (rather than a link's target).
    Name(CString, bool),
}

/// The steps of `path`, its names marked `given`. A path that ends in `/` or `/.` names a
/// directory, as the kernel reads it: its last step is then `.` in it.
fn steps(path: &Path, given: bool) -> io::Result<VecDeque<Step>> {
    let mut steps = path
        .components()
        .filter_map(|component| match component {
            Component::RootDir => Some(Ok(Step::Root)),
            Component::ParentDir => Some(Ok(Step::Parent)),
            Component::Normal(name) => Some(c_name(name).map(|name| Step::Name(name, given))),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect::<io::Result<VecDeque<Step>>>()?;
    let bytes = path.as_os_str().as_bytes();
    if bytes.ends_with(b"/") || bytes.ends_with(b"/.") || bytes == b"." {
        steps.push_back(Step::Name(c".".to_owned(), given));
    }
    Ok(steps)
}

/// Whether anyone may rename what is in a directory of `mode`: writable by others, and not
/// sticky.
fn open_to_all(mode: u32) -> bool {
    mode & 0o002 != 0 && mode & 0o1000 == 0
}

/// `name` as the kernel takes it.
pub(crate) fn c_name(name: impl AsRef<OsStr>) -> io::Result<CString> {
    CString::new(name.as_ref().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name holds a NUL byte"))
}

/// Resolves `path` as the kernel would, links followed (the last name's too), to the directory
/// holding its last name. A directory the path names on the way that is missing is made (mode
/// 0700) on a `Way::Private`, else the path leads nowhere; the last name itself need not exist.
pub(crate) fn locate(path: &Path, way: Way) -> Result<Located, Unreachable> {
    let mut walk = Walk::start(path, way)?;
    while let Some(step) = walk.pending.pop_front() {
        match step {
            Step::Root => {
                walk.at = PathBuf::from("/");
                walk.enter(Dir::open_root(true)?)?;
            }
            Step::Parent => {
                let up = walk.dir.open_dir(c"..")?;
                walk.at.pop();
                walk.enter(up)?;
            }
            Step::Name(name, given) => {
                if let Some(end) = walk.name(name, given)? {
                    return Ok(walk.end_at(end));
                }
            }
        }
    }
    let found = walk.dir.own_metadata()?;
    Ok(walk.end_at(End {
        name: c".".to_owned(),
        via_link: false,
        found: Some(found),
    }))
}

/// A walk down a path, name by name, from the directory it holds.
struct Walk {
    way: Way,
    /// The directory reached so far, held open.
    dir: Dir,
    /// Where `dir` is, to name it in a message.
    at: PathBuf,
    /// The steps left: a link's target's go in front.
    pending: VecDeque<Step>,
    /// How many links were followed.
    links: u32,
    /// Whether the last name came from a link.
    via_link: bool,
}

/// Where a walk ended: the last name in the walk's directory (see `Located`).
struct End {
    name: CString,
    /// Whether this name, apart from the links followed before it, is a link's target.
    via_link: bool,
    found: Option<Metadata>,
}

impl Walk {
    /// At the start of `path`: the root or the current directory, and every directory above
    /// the current one noted too (on a `Way::Private`).
    fn start(path: &Path, way: Way) -> Result<Walk, Unreachable> {
        let dir = Dir::open_root(path.is_absolute())?;
        let at = if path.is_absolute() {
            PathBuf::from("/")
        } else {
            std::env::current_dir().unwrap_or_default()
        };
        note(way, &dir, &at)?;
        if way == Way::Private && path.is_relative() {
            // The directories above the current one count as much as those below it.
            for_each_above(&dir, &at, &|dir: &Dir, at: &Path| note(way, dir, at))?;
        }
        let mut pending = steps(path, true)?;
        if path.is_absolute() {
            // (The root is open already.)
            pending.pop_front();
        }
        Ok(Walk {
            way,
            dir,
            at,
            pending,
            links: 0,
            via_link: false,
        })
    }

    /// Goes on from `dir`, reached at `at`, once it passes `note`.
    fn enter(&mut self, dir: Dir) -> Result<(), Unreachable> {
        self.dir = dir;
        note(self.way, &self.dir, &self.at)
    }

    fn end_at(self, end: End) -> Located {
        Located {
            dir: self.dir,
            name: end.name,
            via_link: self.via_link || end.via_link,
            found: end.found,
        }
    }

    /// Takes the step to `name` (which the path itself holds if `given`, else a link's
    /// target): the end of the walk when it is the last name, else `None` and the walk goes on.
    fn name(&mut self, name: CString, given: bool) -> Result<Option<End>, Unreachable> {
        let last = self.pending.is_empty();
        if !last {
            // Mostly a directory: held in one call; anything else is looked at below.
            match self.dir.open_dir(&name) {
                Ok(next) => {
                    self.at.push(OsStr::from_bytes(name.as_bytes()));
                    self.enter(next)?;
                    return Ok(None);
                }
                Err(error)
                    if matches!(
                        error.raw_os_error(),
                        Some(libc::ENOTDIR | libc::ELOOP | libc::ENOENT)
                    ) => {}
                Err(error) => return Err(error.into()),
            }
        }
        // Named there, an open descriptor is a "link" whose text (`pipe:[81]`, or the path a
        // file had when it was opened) is no path to resolve; a closed one is no name at all.
        if last
            && self.way == Way::AsIs
            && let Some(fd) = own_descriptor(&self.dir, &self.at, &name)
        {
            return Err(Unreachable::Descriptor(fd));
        }
        let Some((found, entry)) = self.dir.entry(&name)? else {
            return self.missing(name, given, last);
        };
        if entry.file_type().is_symlink() {
            self.follow(&name, &found, &entry)?;
            self.via_link |= last;
            return Ok(None);
        }
        if last {
            return Ok(Some(End {
                name,
                via_link: false,
                found: Some(entry),
            }));
        }
        if !entry.file_type().is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR).into());
        }
        self.at.push(OsStr::from_bytes(name.as_bytes()));
        self.enter(Dir(found))?;
        Ok(None)
    }

    /// Nothing is at `name`: the end, if it is the last name; else the directory the path
    /// names is made, on a `Way::Private`, and entered next.
    fn missing(
        &mut self,
        name: CString,
        given: bool,
        last: bool,
    ) -> Result<Option<End>, Unreachable> {
        if last {
            return Ok(Some(End {
                name,
                via_link: !given,
                found: None,
            }));
        }
        if !given {
            return Err(Unreachable::Dangling);
        }
        if self.way == Way::AsIs {
            return Err(io::Error::from_raw_os_error(libc::ENOENT).into());
        }
        self.dir.make_dir(&name).map_err(Unreachable::Unmade)?;
        self.pending.push_front(Step::Name(name, given));
        Ok(None)
    }

    /// Follows the link at `name` (open as `found`, described by `entry`): its target's steps
    /// come next. Another user's link is never followed.
    fn follow(&mut self, name: &CStr, found: &File, entry: &Metadata) -> Result<(), Unreachable> {
        if owned_by_another(entry.uid()) {
            return Err(Unreachable::Foreign {
                link: self.at.join(OsStr::from_bytes(name.to_bytes())),
                owner: entry.uid(),
            });
        }
        self.links += 1;
        if self.links > MOST_LINKS {
            return Err(io::Error::from_raw_os_error(libc::ELOOP).into());
        }
        // The target of the very link whose owner was read (held open), not of whatever took
        // its name since.
        let target = read_link(found)?;
        for step in steps(OsStr::from_bytes(&target).as_ref(), false)?
            .into_iter()
            .rev()
        {
            self.pending.push_front(step);
        }
        Ok(())
    }
}

/// Refuses a directory on the way (`dir`, at `at`) that others may rearrange, on a
/// `Way::Private`.
fn note(way: Way, dir: &Dir, at: &Path) -> Result<(), Unreachable> {
    if way == Way::AsIs {
        return Ok(());
    }
    let mode = dir.own_metadata()?.mode();
    let sticky = mode & 0o1000 != 0;
    let why = if open_to_all(mode) {
        format!(
            "mode {:04o}, writable by others without the sticky bit",
            mode & 0o7777
        )
    } else if !sticky && let Some(writer) = dir.acl_writer() {
        format!("uid {writer} may write it, by its ACL")
    } else {
        return Ok(());
    };
    Err(Unreachable::Rearrangeable {
        dir: at.to_path_buf(),
        why,
    })
}

/// Runs `note` on each directory above `start` (at `at`), up to the root or to one this user
/// may not go through: walked by `..`, as the kernel goes, not by the names of `at`, which
/// may pass through a directory this user cannot search.
fn for_each_above(
    start: &Dir,
    at: &Path,
    note: &impl Fn(&Dir, &Path) -> Result<(), Unreachable>,
) -> Result<(), Unreachable> {
    let mut here = start.open_dir(c".")?;
    let mut at = at.to_path_buf();
    while let Ok(up) = here.open_dir(c"..") {
        let (this, that) = (here.own_metadata()?, up.own_metadata()?);
        if (this.dev(), this.ino()) == (that.dev(), that.ino()) {
            break;
        }
        at.pop();
        note(&up, &at)?;
        here = up;
    }
    Ok(())
}

/// The descriptor `name` is, if `dir` (reached by the names `at`) is this process's own table
/// of descriptors in procfs: `/proc/self/fd` as the kernel resolves it (`/proc/PID/fd`), or a
/// thread's (`/proc/PID/task/TID/fd`, from `/proc/thread-self/fd`), which is the same table.
fn own_descriptor(dir: &Dir, at: &Path, name: &CStr) -> Option<RawFd> {
    // This process as /proc names it: in a pid namespace whose /proc is its parent's, that is
    // not the pid getpid(2) gives.
    let pid = std::fs::read_link("/proc/self").ok()?;
    let pid = pid.as_os_str().as_bytes();
    let parts: Vec<&[u8]> = at.iter().map(OsStrExt::as_bytes).collect();
    let numeric = |word: &[u8]| !word.is_empty() && word.iter().all(u8::is_ascii_digit);
    let ours = match parts[..] {
        [b"/", b"proc", process, b"fd"] => process == pid,
        [b"/", b"proc", process, b"task", thread, b"fd"] => process == pid && numeric(thread),
        _ => false,
    };
    // As the kernel reads the number: no leading zero (`/proc/self/fd/01` names no file).
    let number = |word: &[u8]| numeric(word) && (word == b"0" || word[0] != b'0');
    if !ours || !number(name.to_bytes()) || !dir.on_procfs() {
        return None;
    }
    std::str::from_utf8(name.to_bytes()).ok()?.parse().ok()
}

/// The target of the symlink open (`O_PATH | O_NOFOLLOW`) as `link`.
fn read_link(link: &File) -> io::Result<Vec<u8>> {
    Ok(rustix::fs::readlinkat(link, c"", Vec::new())?.into_bytes())
}

impl Dir {
    fn open_root(absolute: bool) -> io::Result<Dir> {
        let start = if absolute { c"/" } else { c"." };
        open_at(CWD, start, OFlags::PATH | OFlags::DIRECTORY, 0).map(Dir)
    }

    /// What is at `name` (a link itself, not followed), held open, with what it is; `None`
    /// when nothing is.
    fn entry(&self, name: &CStr) -> io::Result<Option<(File, Metadata)>> {
        match open_at(&self.0, name, OFlags::PATH | OFlags::NOFOLLOW, 0) {
            Ok(found) => {
                let entry = found.metadata()?;
                Ok(Some((found, entry)))
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// What is at `name`, not followed; `None` when nothing is.
    pub(crate) fn metadata(&self, name: &CStr) -> io::Result<Option<Metadata>> {
        Ok(self.entry(name)?.map(|(_, entry)| entry))
    }

    /// Whether the directory is in procfs (a directory named `/proc` may be anything else).
    fn on_procfs(&self) -> bool {
        rustix::fs::fstatfs(&self.0).is_ok_and(|found| found.f_type == libc::PROC_SUPER_MAGIC)
    }

    /// The directory itself.
    pub(crate) fn own_metadata(&self) -> io::Result<Metadata> {
        self.0.metadata()
    }

    /// A user other than this one and root whom the directory's ACL lets write it, if one.
    pub(crate) fn acl_writer(&self) -> Option<u32> {
        match self.open(c".", OFlags::RDONLY | OFlags::DIRECTORY, 0) {
            Ok(readable) => acl_writer_of(&readable),
            // A descriptor that only holds the place (`O_PATH`) has no attributes to read;
            // through /proc it names the directory itself.
            Err(_) => acl_writer(Path::new(&format!(
                "/proc/self/fd/{}/.",
                self.0.as_raw_fd()
            ))),
        }
    }

    /// Opens `name` with `flags` (`O_CREAT` makes it with `mode`), never through a link at the
    /// name and never blocking on a FIFO (`UNFOLLOWED`).
    pub(crate) fn open(&self, name: &CStr, flags: OFlags, mode: u32) -> io::Result<File> {
        open_at(&self.0, name, flags | UNFOLLOWED, mode)
    }

    /// The directory `name` in this one, not through a link.
    pub(crate) fn open_dir(&self, name: &CStr) -> io::Result<Dir> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW;
        open_at(&self.0, name, flags, 0).map(Dir)
    }

    /// Makes the directory `name` (mode 0700, less the umask); one that is already there is
    /// fine.
    pub(crate) fn make_dir(&self, name: &CStr) -> io::Result<()> {
        match rustix::fs::mkdirat(&self.0, name, Mode::RWXU) {
            Err(Errno::EXIST) => Ok(()),
            done => Ok(done?),
        }
    }

    /// Gives `from` the name `to`, replacing what had it (a link itself, never what it leads to).
    pub(crate) fn rename(&self, from: &CStr, to: &CStr) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.0, from, &self.0, to)?)
    }

    /// Removes the file `name`.
    pub(crate) fn remove(&self, name: &CStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.0, name, AtFlags::empty())?)
    }
}

/// Opens `path` to read, as `Dir::open` opens a name (`UNFOLLOWED`); the directories on the
/// way are the kernel's to follow.
pub(crate) fn open_unfollowed(path: &Path) -> io::Result<File> {
    open_at(CWD, &c_name(path)?, OFlags::RDONLY | UNFOLLOWED, 0)
}

fn open_at(dir: impl AsFd, name: &CStr, flags: OFlags, mode: u32) -> io::Result<File> {
    let mode = Mode::from_raw_mode(mode);
    loop {
        match rustix::fs::openat(&dir, name, flags | OFlags::CLOEXEC, mode) {
            Err(Errno::INTR) => {}
            opened => return Ok(File::from(opened?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{FileTypeExt, symlink};

    fn name_of(located: &Located) -> &str {
        located.name.to_str().unwrap()
    }

    fn same_dir(located: &Located, path: &Path) -> bool {
        let held = located.dir.own_metadata().unwrap();
        let there = fs::metadata(path).unwrap();
        (held.dev(), held.ino()) == (there.dev(), there.ino())
    }

    #[test]
    fn a_plain_path_is_its_parent_and_last_name() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("a")).unwrap();
        let located = locate(&root.path().join("a/file"), Way::AsIs).unwrap();
        assert_eq!(name_of(&located), "file");
        assert!(!located.via_link);
        assert!(same_dir(&located, &root.path().join("a")));
        let located = locate(Path::new("/"), Way::AsIs).unwrap();
        assert_eq!(name_of(&located), ".");
    }

    #[test]
    fn links_are_followed_as_the_kernel_follows_them() {
        let root = tempfile::tempdir().unwrap();
        let path = |name: &str| root.path().join(name);
        fs::create_dir_all(path("real/sub")).unwrap();
        symlink("real/sub", path("dirlink")).unwrap();
        symlink("../other", path("real/sub/filelink")).unwrap();
        // `..` after a link goes up from where the link led, not from where it stood.
        let located = locate(&path("dirlink/../x"), Way::AsIs).unwrap();
        assert!(same_dir(&located, &path("real")));
        assert_eq!(name_of(&located), "x");
        // The last name's link is followed too, and said.
        let located = locate(&path("dirlink/filelink"), Way::AsIs).unwrap();
        assert!(same_dir(&located, &path("real")));
        assert_eq!(name_of(&located), "other");
        assert!(located.via_link);
        symlink("loop", path("loop")).unwrap();
        assert!(matches!(
            locate(&path("loop"), Way::AsIs),
            Err(Unreachable::Failed(error)) if error.raw_os_error() == Some(libc::ELOOP)
        ));
    }

    #[test]
    fn missing_directories_are_made_only_when_asked() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("a/b/c");
        assert!(matches!(
            locate(&deep, Way::AsIs),
            Err(Unreachable::Failed(error)) if error.kind() == io::ErrorKind::NotFound
        ));
        let located = locate(&deep, Way::Private).unwrap();
        assert!(same_dir(&located, &root.path().join("a/b")));
        assert_eq!(name_of(&located), "c");
        assert!(!root.path().join("a/b/c").exists());
    }

    #[test]
    fn a_file_on_the_way_is_not_a_directory() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("file"), "").unwrap();
        assert!(matches!(
            locate(&root.path().join("file/x"), Way::Private),
            Err(Unreachable::Failed(error)) if error.raw_os_error() == Some(libc::ENOTDIR)
        ));
    }

    #[test]
    fn names_are_opened_made_renamed_and_removed_in_the_held_directory() {
        let root = tempfile::tempdir().unwrap();
        let located = locate(&root.path().join("f"), Way::AsIs).unwrap();
        let dir = &located.dir;
        assert!(dir.metadata(c"f").unwrap().is_none());
        drop(
            dir.open(c"t", OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, 0o600)
                .unwrap(),
        );
        dir.rename(c"t", c"f").unwrap();
        assert!(dir.metadata(c"f").unwrap().unwrap().is_file());
        symlink("f", root.path().join("l")).unwrap();
        let error = dir.open(c"l", OFlags::RDONLY, 0).unwrap_err();
        assert_eq!(
            error.raw_os_error(),
            Some(libc::ELOOP),
            "a link is never followed"
        );
        dir.remove(c"f").unwrap();
        assert!(!root.path().join("f").exists());
    }

    /// A path is opened as a name in a held directory is: a link at its last name is not
    /// followed, and a FIFO does not hold the open.
    #[test]
    fn a_path_opens_unfollowed_and_unblocked() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        fs::write(&file, "x").unwrap();
        assert!(
            open_unfollowed(&file)
                .unwrap()
                .metadata()
                .unwrap()
                .is_file()
        );
        symlink(&file, root.path().join("l")).unwrap();
        let error = open_unfollowed(&root.path().join("l")).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ELOOP));
        let fifo = root.path().join("p");
        let fifo_type = rustix::fs::FileType::Fifo;
        rustix::fs::mknodat(CWD, &fifo, fifo_type, Mode::RUSR | Mode::WUSR, 0).unwrap();
        let opened = open_unfollowed(&fifo).unwrap();
        assert!(opened.metadata().unwrap().file_type().is_fifo());
    }

    /// This process's descriptors, by any name the kernel gives them or a link to one, are
    /// said to be descriptors, open or not, on a `Way::AsIs` only; another process's are not.
    #[test]
    fn a_descriptor_of_this_process_is_said_to_be_one() {
        let root = tempfile::tempdir().unwrap();
        symlink("/dev/stderr", root.path().join("link")).unwrap();
        let link = root.path().join("link");
        for (path, fd) in [
            (Path::new("/dev/stdout"), 1),
            (Path::new("/dev/fd/0"), 0),
            (Path::new("/proc/self/fd/987654"), 987654),
            (Path::new("/proc/thread-self/fd/1"), 1),
            (&link, 2),
        ] {
            assert!(
                matches!(locate(path, Way::AsIs), Err(Unreachable::Descriptor(found)) if found == fd),
                "{path:?}"
            );
        }
        assert!(!matches!(
            locate(&link, Way::Private),
            Err(Unreachable::Descriptor(_))
        ));
        let parent = rustix::process::getppid().unwrap();
        let parent = format!("/proc/{}/fd/1", parent.as_raw_nonzero());
        assert!(!matches!(
            locate(Path::new(&parent), Way::AsIs),
            Err(Unreachable::Descriptor(_))
        ));
    }

    /// Where the kernel's own resolution (`stat`, links followed) finds a file, `locate` finds
    /// the same one; where the kernel finds nothing, the last name is missing or `locate`
    /// fails too: over trees of directories, files and links of this user's (relative,
    /// absolute, to nothing, in loops, through `..`).
    mod against_the_kernel {
        use super::*;
        use proptest::prelude::*;
        use std::os::unix::fs::MetadataExt;

        const NAMES: [&str; 6] = ["a", "b", "f", "l", "m", "n"];

        fn component() -> impl Strategy<Value = &'static str> {
            proptest::sample::select(vec!["a", "b", "f", "l", "m", "n", "..", "zz"])
        }

        fn link_target() -> impl Strategy<Value = (bool, Vec<&'static str>)> {
            (any::<bool>(), proptest::collection::vec(component(), 1..4))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]
            #[test]
            fn locate_finds_what_the_kernel_finds(
                kinds in proptest::collection::vec(0u8..3, NAMES.len()),
                targets in proptest::collection::vec(link_target(), NAMES.len()),
                path in proptest::collection::vec(component(), 1..5),
            ) {
                let root = tempfile::tempdir().unwrap();
                let base = root.path().join("t");
                // Each name, in the base and in each directory of it: a directory, a file or
                // a link.
                for dir in [base.clone(), base.join("a"), base.join("b")] {
                    fs::create_dir_all(&dir).unwrap();
                }
                for (index, name) in NAMES.iter().enumerate() {
                    for dir in [base.clone(), base.join("a")] {
                        let at = dir.join(name);
                        if at.exists() || fs::symlink_metadata(&at).is_ok() {
                            continue;
                        }
                        match kinds[index] {
                            0 => fs::create_dir(&at).unwrap(),
                            1 => fs::write(&at, name).unwrap(),
                            _ => {
                                let (absolute, parts) = &targets[index];
                                let mut target = if *absolute { base.clone() } else { PathBuf::new() };
                                for part in parts {
                                    target.push(part);
                                }
                                symlink(&target, &at).unwrap();
                            }
                        }
                    }
                }
                let mut asked = base.clone();
                for part in &path {
                    asked.push(part);
                }
                let kernel = fs::metadata(&asked);
                let ours = locate(&asked, Way::AsIs);
                match (&kernel, &ours) {
                    (Ok(there), Ok(located)) => {
                        let found = located.dir.metadata(&located.name).unwrap();
                        let found = found.unwrap_or_else(|| panic!("{asked:?}: kernel finds it, locate does not"));
                        prop_assert_eq!((found.dev(), found.ino()), (there.dev(), there.ino()), "{:?}", asked);
                    }
                    (Ok(_), Err(error)) => prop_assert!(false, "{:?}: kernel finds it, locate fails: {:?}", asked, error),
                    (Err(_), Ok(located)) => {
                        let found = located.dir.metadata(&located.name).unwrap();
                        prop_assert!(found.is_none(), "{:?}: kernel finds nothing, locate finds {:?}", asked, found);
                    }
                    (Err(_), Err(_)) => {}
                }
            }
        }
    }
}
