//! Whose a file is, for the paths `retry` may share with a neighbour (the state directory, the
//! metrics file): what another user put there is not followed, read or replaced.
//!
//! A leaf: it asks the kernel who `retry` runs as, and nothing else.

/// Whether a file owned by `uid` belongs to another user: not this process's, nor root's (root's
/// own files are root's, and what root made is not a neighbour's).
pub(crate) fn owned_by_another(uid: u32) -> bool {
    // SAFETY: geteuid(2) cannot fail.
    uid != 0 && uid != unsafe { libc::geteuid() }
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
