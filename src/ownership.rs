//! Whose a file is, for the paths `retry` may share with a neighbour (the state directory, the
//! metrics file): what another user put there is not followed, read or replaced.
//!
//! A leaf: it asks the kernel who `retry` runs as, and who owns a path, and nothing else.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Whether a file owned by `uid` belongs to another user: not this process's, nor root's (root's
/// own files are root's, and what root made is not a neighbour's).
pub(crate) fn owned_by_another(uid: u32) -> bool {
    // SAFETY: geteuid(2) cannot fail.
    uid != 0 && uid != unsafe { libc::geteuid() }
}

/// The first symlink along the chain that starts at `path` that another user owns, and its
/// owner: following it would let them choose where `retry` writes.
pub(crate) fn foreign_symlink(path: &Path) -> Option<(PathBuf, u32)> {
    let mut at = path.to_path_buf();
    // As many links as the kernel follows (MAXSYMLINKS).
    for _ in 0..40 {
        let found = std::fs::symlink_metadata(&at).ok()?;
        if !found.file_type().is_symlink() {
            return None;
        }
        if owned_by_another(found.uid()) {
            return Some((at, found.uid()));
        }
        let target = std::fs::read_link(&at).ok()?;
        at = match at.parent() {
            Some(parent) => parent.join(target),
            None => target,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::owned_by_another;

    #[test]
    fn root_and_this_user_own_their_files_and_everyone_else_is_another() {
        // SAFETY: geteuid(2) cannot fail.
        let me = unsafe { libc::geteuid() };
        assert!(!owned_by_another(0));
        assert!(!owned_by_another(me));
        assert!(owned_by_another(me.wrapping_add(1).max(1)));
    }
}
