//! Collecting the ends of `retry`'s children: the attempt or hook it waits for, and the orphans
//! it adopts as the child subreaper (or is handed as PID 1 of a container). The runner collects
//! while a child runs, the clock while it sleeps between attempts; both come here, so that
//! neither imports the other. Knows nothing of attempts, hooks or signals sent to them.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};

use rustix::process::{Pid, WaitOptions, waitpid};

use crate::plumbing;

/// Makes `retry` the reaper of its attempts' orphans (Linux's child subreaper): a process whose
/// parent dies is re-parented to `retry` instead of init, and its end is `retry`'s to collect.
/// So a terminated attempt's group is seen to be clear as soon as its last member dies, even
/// where init collects late or never (PID 1 of a container that is not an init), instead of
/// after the whole `--kill-after` grace.
pub(crate) fn adopt_orphans() {
    // Should it fail, only the grace may be spent waiting on a zombie.
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// Collects adopted orphans that have died, so none stays a zombie for long (an attempt that
/// runs for days may orphan many). `running` is the attempt or hook still to be collected by
/// its `Child`, if any: it is left alone, and so, until its own end is collected, are the
/// orphans that the kernel lists after it.
pub(crate) fn reap_orphans(running: Option<&Child>) {
    let running = running.map(|child| child.id() as libc::pid_t);
    loop {
        // (libc's waitid(2): rustix's does not give the pid it found.)
        // SAFETY: an all-zero siginfo_t is a valid value; waitid(2) with WNOWAIT | WNOHANG only
        // looks at the next ended child, and reads its pid.
        let pid = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            if libc::waitid(libc::P_ALL, 0, &mut info, flags) != 0 {
                return;
            }
            info.si_pid()
        };
        if Some(pid) == running {
            return;
        }
        let Some(ended) = Pid::from_raw(pid) else {
            return;
        };
        if let Ok(Some((collected, _))) = waitpid(Some(ended), WaitOptions::NOHANG) {
            plumbing::collected(collected.as_raw_nonzero().get());
        }
    }
}

/// The child's exit status, if it has ended.
pub(crate) fn reap(child: &mut Child) -> Option<ExitStatus> {
    match child.try_wait() {
        Ok(status) => status,
        // ECHILD cannot happen (we are the only waiter); if it did, the child is gone and its
        // status lost: report a plain failure rather than wait forever.
        Err(_) => Some(ExitStatus::from_raw(1 << 8)),
    }
}
