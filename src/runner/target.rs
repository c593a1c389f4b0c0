//! Where a signal meant for a child of the run goes: its process group, or (under
//! `--foreground`) the child alone, and each way `retry` signals it (terminating it, stopping
//! it with `retry`, telling it of a resize, relaying a signal). Knows nothing of phases, time
//! limits or what a child leaves outside its group.

use std::process::Child;

use rustix::process::Pid;

use crate::signals;

/// Where a signal meant for the attempt goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SignalTarget {
    Group(libc::pid_t),
    Process(libc::pid_t),
}

impl SignalTarget {
    /// Where signals meant for `child` go: the process group it leads, or under
    /// `--foreground` (where it shares `retry`'s group) only the child itself.
    pub(super) fn of(child: &Child, foreground: bool) -> SignalTarget {
        let pid = child.id() as libc::pid_t;
        if foreground {
            SignalTarget::Process(pid)
        } else {
            SignalTarget::Group(pid)
        }
    }

    /// The pid kill(2) takes to reach all of it: a group's is its leader's, negated.
    fn kill_pid(self) -> libc::pid_t {
        match self {
            SignalTarget::Group(pgid) => -pgid,
            SignalTarget::Process(pid) => pid,
        }
    }

    /// The child itself: the group's leader, or the single process.
    fn leader(self) -> libc::pid_t {
        let (SignalTarget::Group(pid) | SignalTarget::Process(pid)) = self;
        pid
    }

    /// By libc's kill(2): `signal` may be a real-time one, which rustix takes only unsafely.
    pub(super) fn send(self, signal: i32) {
        // SAFETY: kill(2) with a pid we spawned (or its group); failure (already gone) is fine.
        unsafe {
            libc::kill(self.kill_pid(), signal);
        }
    }

    /// Sends the terminating signal, then SIGCONT so that a stopped process can act on it.
    pub(super) fn terminate(self, signal: i32) {
        for signal in terminating(signal) {
            self.send(signal);
        }
    }

    /// Ctrl-Z: stops the attempt with SIGTSTP (which it may catch, to restore the terminal) and
    /// `retry` with it; once `retry` is continued, continues the attempt.
    pub(super) fn suspend_with_retry(self) {
        self.send(libc::SIGTSTP);
        signals::stop_self();
        self.send(libc::SIGCONT);
    }

    /// Tells the attempt that the terminal's size changed. Under `--foreground` it shares
    /// `retry`'s process group, which the terminal told already.
    pub(super) fn pass_resize(self) {
        if let SignalTarget::Group(_) = self {
            self.send(libc::SIGWINCH);
        }
    }

    /// Whether the attempt is in `retry`'s own process group (as under `--foreground`, unless
    /// it left).
    pub(super) fn in_retry_group(self) -> bool {
        let leader = Pid::from_raw(self.leader());
        rustix::process::getpgid(leader).is_ok_and(|group| group == rustix::process::getpgrp())
    }

    /// Hands `signal` to the attempt itself, the group's leader, as if it had been sent there.
    pub(super) fn relay(self, signal: i32) {
        // SAFETY: kill(2) on the child we spawned and have not yet reaped.
        unsafe {
            libc::kill(self.leader(), signal);
        }
    }

    /// Whether any process of the group is left (always false for a single process: its end
    /// was already seen).
    pub(super) fn group_alive(self) -> bool {
        match self {
            SignalTarget::Group(pgid) => {
                use rustix::process::{WaitOptions, test_kill_process_group, waitpgid};
                let Some(pgid) = Pid::from_raw(pgid) else {
                    return false;
                };
                // Members adopted by `retry` (see `reaper::adopt_orphans`) that have died are
                // zombies until collected, and a zombie still counts for kill(2).
                while let Ok(Some(_)) = waitpgid(pgid, WaitOptions::NOHANG) {}
                test_kill_process_group(pgid).is_ok()
            }
            SignalTarget::Process(_) => false,
        }
    }
}

/// The signals that terminate with `signal`, in order: it, then SIGCONT, which SIGKILL needs
/// not and SIGCONT is already.
fn terminating(signal: i32) -> impl Iterator<Item = i32> {
    let then_continue = signal != libc::SIGKILL && signal != libc::SIGCONT;
    std::iter::once(signal).chain(then_continue.then_some(libc::SIGCONT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_reached_through_its_negated_leader_and_a_process_by_its_pid() {
        assert_eq!(SignalTarget::Group(4321).kill_pid(), -4321);
        assert_eq!(SignalTarget::Process(4321).kill_pid(), 4321);
        assert_eq!(SignalTarget::Group(4321).leader(), 4321);
        assert_eq!(SignalTarget::Process(4321).leader(), 4321);
    }

    #[test]
    fn a_terminating_signal_is_followed_by_sigcont_unless_it_is_kill_or_cont() {
        let sent = |signal| terminating(signal).collect::<Vec<_>>();
        assert_eq!(sent(libc::SIGTERM), [libc::SIGTERM, libc::SIGCONT]);
        assert_eq!(sent(libc::SIGINT), [libc::SIGINT, libc::SIGCONT]);
        assert_eq!(sent(libc::SIGHUP), [libc::SIGHUP, libc::SIGCONT]);
        assert_eq!(sent(libc::SIGKILL), [libc::SIGKILL]);
        assert_eq!(sent(libc::SIGCONT), [libc::SIGCONT]);
    }
}
