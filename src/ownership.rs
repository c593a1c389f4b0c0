//! Whose a file is, for the paths `retry` may share with a neighbour (the state directory, the
//! metrics file, the report): what another user put there is not followed, read or replaced.
//!
//! A leaf: it asks the kernel who `retry` runs as, and who may write a path, and nothing else.

use std::path::Path;

/// Whether a file owned by `uid` belongs to another user: not this process's, nor root's (root's
/// own files are root's, and what root made is not a neighbour's).
pub(crate) fn owned_by_another(uid: u32) -> bool {
    // SAFETY: geteuid(2) cannot fail.
    uid != 0 && uid != unsafe { libc::geteuid() }
}

/// A user other than this one (and root) whom the POSIX ACL of `path` lets write it, if one:
/// mode bits say nothing of them (`setfacl -m u:NAME:rw`). The symlink itself, when `path` is
/// one, is what is read.
pub(crate) fn acl_writer(path: &Path) -> Option<u32> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    writer_in(|buffer: &mut [u8]| {
        // SAFETY: lgetxattr(2) into a buffer of the size given (none: the size needed), with
        // NUL-terminated names.
        unsafe {
            libc::lgetxattr(
                path.as_ptr(),
                c"system.posix_acl_access".as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        }
    })
}

/// `acl_writer` of the file open as `file`: the very file, whatever its path leads to now.
pub(crate) fn acl_writer_of(file: &std::fs::File) -> Option<u32> {
    use std::os::fd::AsRawFd;
    writer_in(|buffer: &mut [u8]| {
        // SAFETY: fgetxattr(2) of an open descriptor into a buffer of the size given (none:
        // the size needed).
        unsafe {
            libc::fgetxattr(
                file.as_raw_fd(),
                c"system.posix_acl_access".as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        }
    })
}

/// The writer named in the ACL that `read` (a getxattr(2) call into a buffer) gives: asked its
/// size first, so that a long ACL is read whole. No ACL, or one that cannot be read, names none.
fn writer_in(mut read: impl FnMut(&mut [u8]) -> isize) -> Option<u32> {
    let size = usize::try_from(read(&mut [])).ok()?;
    let mut acl = vec![0u8; size];
    let len = usize::try_from(read(&mut acl)).ok()?;
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    named_writer(acl.get(..len)?, me)
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
    use super::owned_by_another;

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
        // SAFETY: geteuid(2) cannot fail.
        let me = unsafe { libc::geteuid() };
        assert!(!owned_by_another(0));
        assert!(!owned_by_another(me));
        assert!(owned_by_another(me.wrapping_add(1).max(1)));
    }

    /// An ACL too long for a small buffer (a named writer among a hundred and fifty other
    /// users) is read whole.
    #[test]
    fn a_long_acl_is_read_whole() {
        use std::os::unix::ffi::OsStrExt;
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
        let path = std::ffi::CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        // SAFETY: setxattr(2) with NUL-terminated names and a buffer of the length given.
        let set = unsafe {
            libc::setxattr(
                path.as_ptr(),
                c"system.posix_acl_access".as_ptr(),
                acl.as_ptr().cast(),
                acl.len(),
                0,
            )
        };
        if set != 0 {
            crate::test_support::skipped("no POSIX ACLs here");
            return;
        }
        assert!(acl.len() > 1024);
        assert_eq!(super::acl_writer(dir.path()), Some(65534));
        let file = std::fs::File::open(dir.path()).unwrap();
        assert_eq!(super::acl_writer_of(&file), Some(65534));
    }
}
