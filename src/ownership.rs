//! Whose a file is, and who else may change it, for the paths `retry` may share with a
//! neighbour (the state directory and its files, the metrics file, the report, a hook's values
//! file): the one policy for what `retry` may take as this user's. What another user put there
//! is not followed, read or replaced. Each check is made on what was opened (or, for a name,
//! on what was there when it was opened: see `located`), never on a name looked up again; each
//! caller says a refusal in its own words.
//!
//! A leaf: it asks the kernel who `retry` runs as, and who may write a path, and nothing else.

use std::fs::{FileType, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Why a file or directory is not one `retry` may take as this user's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a regular file (a directory, a device, a FIFO, a socket), where one was wanted.
    NotRegular(FileType),
    /// Others (not the group) may write it, by its mode.
    OthersMayWrite { mode: u32 },
    /// It belongs to another user: not this one, nor root.
    OfAnother { uid: u32 },
    /// Another user may write it, by its ACL: the mode bits say nothing of a named user.
    AclWriter { uid: u32 },
}

/// That `found` (what was opened) is a regular file.
pub(crate) fn regular(found: &Metadata) -> Result<(), Refusal> {
    if found.is_file() {
        Ok(())
    } else {
        Err(Refusal::NotRegular(found.file_type()))
    }
}

/// That `found` (what was opened) is a regular file of this user's (or root's): what `retry`
/// reads from a path a neighbour may reach, or takes over to write.
pub(crate) fn regular_of_ours(found: &Metadata) -> Result<(), Refusal> {
    regular(found)?;
    if owned_by_another(found.uid()) {
        return Err(Refusal::OfAnother { uid: found.uid() });
    }
    Ok(())
}

/// That no one but this user (and root, and the group) may change the file or directory
/// `found`: checked in one order, whatever it is: others by its mode, then its owner, then a
/// named user by its ACL (`acl_writer`, asked only when the first two pass).
pub(crate) fn private(
    found: &Metadata,
    acl_writer: impl FnOnce() -> Option<u32>,
) -> Result<(), Refusal> {
    if found.mode() & 0o002 != 0 {
        return Err(Refusal::OthersMayWrite {
            mode: found.mode() & 0o7777,
        });
    }
    if owned_by_another(found.uid()) {
        return Err(Refusal::OfAnother { uid: found.uid() });
    }
    match acl_writer() {
        Some(uid) => Err(Refusal::AclWriter { uid }),
        None => Ok(()),
    }
}

/// Whether a file owned by `uid` belongs to another user: not this process's, nor root's (root's
/// own files are root's, and what root made is not a neighbour's).
pub(crate) fn owned_by_another(uid: u32) -> bool {
    uid != 0 && uid != rustix::process::geteuid().as_raw()
}

/// A user other than this one (and root) whom the POSIX ACL of `path` lets write it, if one:
/// mode bits say nothing of them (`setfacl -m u:NAME:rw`). The symlink itself, when `path` is
/// one, is what is read.
pub(crate) fn acl_writer(path: &Path) -> Option<u32> {
    writer_in(
        || rustix::fs::lgetxattr_query(path, ACL),
        |buffer: &mut [u8]| rustix::fs::lgetxattr(path, ACL, buffer),
    )
}

/// `acl_writer` of the file open as `file`: the very file, whatever its path leads to now.
pub(crate) fn acl_writer_of(file: &std::fs::File) -> Option<u32> {
    writer_in(
        || rustix::fs::fgetxattr_query(file, ACL),
        |buffer: &mut [u8]| rustix::fs::fgetxattr(file, ACL, buffer),
    )
}

/// The extended attribute that holds a file's POSIX ACL.
const ACL: &str = "system.posix_acl_access";

/// The writer named in the ACL that `read` (a getxattr(2) call into a buffer) gives: its size
/// asked first (`size`), so that a long ACL is read whole. No ACL, or one that cannot be read,
/// names none.
fn writer_in(
    size: impl FnOnce() -> rustix::io::Result<usize>,
    read: impl FnOnce(&mut [u8]) -> rustix::io::Result<usize>,
) -> Option<u32> {
    let size = size().ok()?;
    let mut acl = vec![0u8; size];
    let len = read(&mut acl).ok()?;
    named_writer(acl.get(..len)?, rustix::process::geteuid().as_raw())
}

/// In the ACL `xattr` (as the kernel stores it: a version, then tag, permissions and id for
/// each entry), the first named user other than `me` and root who may write, the mask allowing.
fn named_writer(xattr: &[u8], me: u32) -> Option<u32> {
    const USER: u16 = 0x02;
    const MASK: u16 = 0x10;
    const WRITE: u16 = 0x02;
    let entries: Vec<(u16, u16, u32)> = xattr
        .get(4..)?
        .chunks_exact(8)
        .map(|entry| {
            (
                u16::from_le_bytes([entry[0], entry[1]]),
                u16::from_le_bytes([entry[2], entry[3]]),
                u32::from_le_bytes([entry[4], entry[5], entry[6], entry[7]]),
            )
        })
        .collect();
    let mask = entries
        .iter()
        .find(|(tag, _, _)| *tag == MASK)
        .map_or(WRITE, |(_, perm, _)| *perm);
    entries
        .iter()
        .find(|(tag, perm, id)| *tag == USER && perm & mask & WRITE != 0 && *id != me && *id != 0)
        .map(|(_, _, id)| *id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn with_mode(path: &Path, mode: u32) -> Metadata {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
        fs::metadata(path).unwrap()
    }

    #[test]
    fn only_a_regular_file_is_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "").unwrap();
        assert_eq!(regular(&fs::metadata(&file).unwrap()), Ok(()));
        assert_eq!(regular_of_ours(&fs::metadata(&file).unwrap()), Ok(()));
        let found = fs::metadata(dir.path()).unwrap();
        assert_eq!(regular(&found), Err(Refusal::NotRegular(found.file_type())));
        assert!(regular_of_ours(&found).is_err());
    }

    /// Others' write by the mode is found first, and the ACL is read only once the mode and
    /// the owner pass; group write is fine.
    #[test]
    fn what_others_may_change_is_found_in_one_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "").unwrap();
        let no_acl = || None;
        let unasked = || -> Option<u32> { panic!("the ACL was read before the mode") };
        for path in [dir.path(), &file] {
            assert_eq!(
                private(&with_mode(path, 0o666), unasked),
                Err(Refusal::OthersMayWrite { mode: 0o666 })
            );
            assert_eq!(private(&with_mode(path, 0o770), no_acl), Ok(()));
            assert_eq!(
                private(&with_mode(path, 0o700), || Some(65534)),
                Err(Refusal::AclWriter { uid: 65534 })
            );
        }
    }

    /// A file of another user's is refused before its ACL is read. (Needs root, to give a
    /// file away.)
    #[test]
    fn another_users_file_is_refused_before_its_acl_is_read() {
        if !rustix::process::geteuid().is_root() {
            crate::test_support::skipped("only root can make a file another user's");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "").unwrap();
        std::os::unix::fs::chown(&file, Some(65534), None).unwrap();
        let found = with_mode(&file, 0o600);
        let unasked = || -> Option<u32> { panic!("the ACL was read before the owner") };
        assert_eq!(
            private(&found, unasked),
            Err(Refusal::OfAnother { uid: 65534 })
        );
        assert_eq!(
            regular_of_ours(&found),
            Err(Refusal::OfAnother { uid: 65534 })
        );
    }

    #[test]
    fn a_named_user_who_may_write_is_found_in_an_acl_the_mask_allowing() {
        use super::named_writer;
        let acl = |entries: &[(u16, u16, u32)]| {
            let mut bytes = 2u32.to_le_bytes().to_vec();
            for (tag, perm, id) in entries {
                bytes.extend(tag.to_le_bytes());
                bytes.extend(perm.to_le_bytes());
                bytes.extend(id.to_le_bytes());
            }
            bytes
        };
        let owner = (0x01, 6, u32::MAX);
        let other = (0x20, 0, u32::MAX);
        assert_eq!(
            named_writer(&acl(&[owner, (0x02, 6, 65534), other]), 1000),
            Some(65534)
        );
        assert_eq!(
            named_writer(&acl(&[owner, (0x02, 4, 65534), other]), 1000),
            None
        );
        assert_eq!(
            named_writer(&acl(&[owner, (0x02, 6, 65534), (0x10, 4, u32::MAX)]), 1000),
            None,
            "the mask takes write away"
        );
        assert_eq!(
            named_writer(&acl(&[owner, (0x02, 6, 1000)]), 1000),
            None,
            "me"
        );
        assert_eq!(
            named_writer(&acl(&[owner, (0x08, 6, 50)]), 1000),
            None,
            "a group"
        );
        assert_eq!(named_writer(&[], 1000), None);
    }

    #[test]
    fn root_and_this_user_own_their_files_and_everyone_else_is_another() {
        let me = rustix::process::geteuid().as_raw();
        assert!(!owned_by_another(0));
        assert!(!owned_by_another(me));
        assert!(owned_by_another(me.wrapping_add(1).max(1)));
    }

    /// An ACL too long for a small buffer (a named writer among a hundred and fifty other
    /// users) is read whole.
    #[test]
    fn a_long_acl_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut acl = 2u32.to_le_bytes().to_vec();
        let mut entries = vec![(0x01u16, 7u16, u32::MAX)];
        entries.extend((5000..5150).map(|id| (0x02, 4, id)));
        entries.extend([
            (0x02, 7, 65534),
            (0x04, 5, u32::MAX),
            (0x10, 7, u32::MAX),
            (0x20, 5, u32::MAX),
        ]);
        for (tag, perm, id) in entries {
            acl.extend(tag.to_le_bytes());
            acl.extend(perm.to_le_bytes());
            acl.extend(id.to_le_bytes());
        }
        let set = rustix::fs::setxattr(
            dir.path(),
            super::ACL,
            &acl,
            rustix::fs::XattrFlags::empty(),
        );
        if set.is_err() {
            crate::test_support::skipped("no POSIX ACLs here");
            return;
        }
        assert!(acl.len() > 1024);
        assert_eq!(super::acl_writer(dir.path()), Some(65534));
        let file = std::fs::File::open(dir.path()).unwrap();
        assert_eq!(super::acl_writer_of(&file), Some(65534));
    }
}
