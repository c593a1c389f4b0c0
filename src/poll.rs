//! poll(2), the one way `retry` asks whether descriptors are ready: descriptors, each with the
//! events asked of it, and how long to wait. What a wait cut short by a signal (EINTR) or a
//! failed call means is the caller's to decide: each has its own reason to ask again or not.
//!
//! A leaf: one kernel call, and nothing else. `signals` waits with `ppoll` of its own, with its
//! signal pipe and a deadline to the nanosecond.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// How long `poll` waits for a descriptor to be ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Not at all: what is ready now.
    Not,
    /// Up to this long, rounded up to the millisecond.
    For(Duration),
    /// Until one is ready, or a signal interrupts.
    Forever,
}

impl Wait {
    /// poll(2)'s timeout, in milliseconds (-1: none).
    fn timeout(self) -> libc::c_int {
        match self {
            Wait::Not => 0,
            Wait::For(wait) => {
                let rounded_up = wait.as_nanos().div_ceil(1_000_000);
                libc::c_int::try_from(rounded_up).unwrap_or(libc::c_int::MAX)
            }
            Wait::Forever => -1,
        }
    }
}

/// Waits as `wait` says until one of `fds` (each a descriptor and the events asked of it) is
/// ready: the events each reported (`revents`; none at all when the wait ran out), or the error,
/// EINTR included. A hang-up or an error on a descriptor reports, whatever was asked; a number
/// that is not open reports `POLLNVAL`. Safe to call between fork and exec: it allocates
/// nothing.
pub(crate) fn poll<const N: usize>(fds: [(RawFd, i16); N], wait: Wait) -> io::Result<[i16; N]> {
    let mut polls = fds.map(|(fd, events)| libc::pollfd {
        fd,
        events,
        revents: 0,
    });
    // SAFETY: poll(2) on an array of N pollfds of this function's own; a number that is not
    // open is reported in its revents, not undefined.
    let ready = unsafe { libc::poll(polls.as_mut_ptr(), N as libc::nfds_t, wait.timeout()) };
    if ready < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(polls.map(|poll| poll.revents))
}

/// Whether `fd` reports any of `events` now (or a hang-up or an error), without waiting. A
/// failed call reports nothing.
pub(crate) fn ready_now(fd: RawFd, events: i16) -> bool {
    poll([(fd, events)], Wait::Not).is_ok_and(|[revents]| revents != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::time::Instant;

    #[test]
    fn a_pipe_is_readable_once_written_and_hung_up_once_closed() {
        let (reader, mut writer) = io::pipe().unwrap();
        let (read, write) = (reader.as_raw_fd(), writer.as_raw_fd());
        assert!(!ready_now(read, libc::POLLIN));
        assert_eq!(poll([(read, libc::POLLIN)], Wait::Not).unwrap(), [0]);
        assert!(ready_now(write, libc::POLLOUT));
        writer.write_all(b"x").unwrap();
        assert!(ready_now(read, libc::POLLIN));
        let [revents] = poll([(read, libc::POLLIN)], Wait::Forever).unwrap();
        assert_ne!(revents & libc::POLLIN, 0);
        drop(writer);
        let [revents] = poll([(read, libc::POLLIN)], Wait::Forever).unwrap();
        assert_ne!(revents & libc::POLLHUP, 0, "{revents:#x}");
    }

    /// Each descriptor reports its own events, in the order given; one that is not open
    /// reports POLLNVAL, and the call itself does not fail.
    #[test]
    fn each_descriptor_reports_its_own_events() {
        let (quiet, _quiet_writer) = io::pipe().unwrap();
        let (talking, mut talker) = io::pipe().unwrap();
        talker.write_all(b"x").unwrap();
        // (No process holds a billion descriptors: a number closed just now could be reused by
        // a test beside this one.)
        let closed = 1 << 30;
        let [a, b, c] = poll(
            [
                (quiet.as_raw_fd(), libc::POLLIN),
                (talking.as_raw_fd(), libc::POLLIN),
                (closed, libc::POLLIN),
            ],
            Wait::Not,
        )
        .unwrap();
        assert_eq!(a, 0);
        assert_eq!(b & libc::POLLIN, libc::POLLIN);
        assert_eq!(c, libc::POLLNVAL);
    }

    /// A wait that runs out reports nothing, after (at least) its time.
    #[test]
    fn a_wait_that_runs_out_reports_nothing() {
        let (reader, _writer) = io::pipe().unwrap();
        let started = Instant::now();
        let wait = Duration::from_millis(20);
        assert_eq!(
            poll([(reader.as_raw_fd(), libc::POLLIN)], Wait::For(wait)).unwrap(),
            [0]
        );
        assert!(started.elapsed() >= wait);
    }

    #[test]
    fn timeouts_round_up_to_the_millisecond_and_saturate() {
        assert_eq!(Wait::Not.timeout(), 0);
        assert_eq!(Wait::Forever.timeout(), -1);
        assert_eq!(Wait::For(Duration::ZERO).timeout(), 0);
        assert_eq!(Wait::For(Duration::from_nanos(1)).timeout(), 1);
        assert_eq!(Wait::For(Duration::from_millis(1)).timeout(), 1);
        assert_eq!(Wait::For(Duration::from_micros(1500)).timeout(), 2);
        assert_eq!(Wait::For(Duration::MAX).timeout(), libc::c_int::MAX);
    }
}
