//! The only signal-handling code: signals become `Signal`s, read from signal-hook's self-pipe.
//!
//! Policy, and why:
//! - SIGINT, SIGTERM, SIGHUP, SIGQUIT become `Signal::Shutdown`: `retry` passes the signal on to
//!   the running attempt, starts nothing more, and exits 128 + N. Ctrl-C ends `retry`, never just
//!   the current attempt. A Ctrl-C or Ctrl-\ from the terminal is marked (`from_terminal`),
//!   since it reached the terminal's whole foreground process group, an attempt under
//!   `--foreground` included, and a second copy would read as "again, and harder". One that
//!   another `retry` sent (an outer one passing it on, or its sweep) is marked too
//!   (`from_retry`): it is never a second request.
//! - SIGCHLD becomes `Signal::Child`, so the end of an attempt is noticed at once, with no
//!   polling and no thread. It is unblocked should the parent have blocked it (as `timeout(1)`
//!   does); the other signals keep the mask `retry` inherited.
//! - SIGTSTP (Ctrl-Z) becomes `Signal::Suspend`: the terminal sends it to `retry`'s process group
//!   only, so `retry` passes it on to the attempt's group, stops itself, and on being continued
//!   (`fg`, `bg`) continues the attempt. Without this the attempt would run on, unseen, while
//!   `retry` sat stopped. As the kernel does for its default action, the request is dropped when
//!   no job-control shell could continue `retry` (an orphaned process group: a session leader
//!   under `ssh -t` or script(1)), instead of stopping for good.
//! - SIGWINCH becomes `Signal::Resize`: the terminal tells only its foreground process group,
//!   `retry`'s, that its size changed, so `retry` passes it on to the attempt's group, where a
//!   progress bar or a full-screen program would otherwise never hear of it.
//! - SIGUSR1 and SIGUSR2 become `Signal::Relay`: they are how a user talks to the command itself
//!   (reopen a log, dump state), so `retry` hands them to the running attempt, as if sent to it,
//!   instead of dying of them and leaving the attempt behind. Between attempts they are dropped.
//! - A signal the parent set to be ignored stays ignored, and is not handled, so that
//!   `nohup retry ...` survives a hangup as the bare command would, attempts included (exec
//!   keeps an ignored signal ignored, but resets a handled one). Not so SIGINT, SIGQUIT and
//!   SIGTERM, handled whatever, as `timeout(1)` handles them: a shell ignores SIGINT and SIGQUIT
//!   for every background job of a script, and `kill -INT` must still end `retry ... &` there.
//!   Nor SIGCHLD, which `retry` cannot do without.
//! - SIGPIPE is ignored (as the Rust runtime would; `run` does it, since main.rs skips the
//!   runtime's start-up): a write to a closed pipe is an error `retry` handles.
//! - Every command `retry` starts (an attempt, a hook) gets the dispositions and mask `retry`
//!   was started with (`record_inherited`, `restore_inherited`): what `retry` changed for
//!   itself above is put back between fork and exec. Exec alone would not do: it keeps an
//!   ignored signal ignored (SIGPIPE, were it `retry`'s own) and resets a handled one to its
//!   default (SIGINT the parent ignored); std's `Command` empties the mask; and glibc's
//!   posix_spawn, std's way to start a child, leaves its two internal signals (32 and 33)
//!   ignored in the child.
//!
//! Waiting for the next event with a deadline (`ppoll`, nanosecond precision) is also how `retry`
//! sleeps, so a signal ends any wait at once. There is no signal thread: start-up stays cheap.
//! The same wait, joined with a descriptor, is how `retry` waits on a reader downstream (its
//! messages, held output) and for an attempt's output to drain: neither holds up a shutdown.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Result, anyhow};
use rustix::process::{Resource, Rlimit, setrlimit};
use signal_hook::consts::{
    SIGCHLD, SIGHUP, SIGINT, SIGPIPE, SIGQUIT, SIGTERM, SIGTSTP, SIGUSR1, SIGUSR2, SIGWINCH,
};
use signal_hook::iterator::backend::SignalDelivery;
use signal_hook::iterator::exfiltrator::WithRawSiginfo;

use crate::text::plain_error;

/// Words for an error in setting up: what failed, and why.
fn failed(what: &'static str) -> impl Fn(io::Error) -> anyhow::Error {
    move |error| anyhow!("{what}: {}", plain_error(&error))
}

/// The signals that end `retry`.
pub const SHUTDOWN: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// The signals `retry` handles: the last four whatever, the others unless the parent left them
/// ignored (see the policy above).
pub const HANDLED: [i32; 9] = [
    SIGHUP, SIGTSTP, SIGWINCH, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT, SIGTERM, SIGCHLD,
];

/// The signals whose disposition `retry` changes for itself before it starts a child: SIGPIPE
/// (ignored) and those it handles. (SIGXFSZ is ignored only once every child has ended.)
const CHANGED: [i32; 10] = [
    SIGPIPE, SIGHUP, SIGTSTP, SIGWINCH, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT, SIGTERM, SIGCHLD,
];

/// What `retry` was started with, of what it changes for itself.
struct InheritedSignals {
    /// The signal mask, all 64 signals, as the kernel keeps it: glibc's calls leave out its
    /// own signals 32 and 33, which a parent may have blocked all the same.
    mask: u64,
    /// Which of `CHANGED` were ignored.
    ignored: [bool; CHANGED.len()],
    /// Which of glibc's own signals (32, 33) were ignored: glibc may give them handlers of its
    /// own in `retry` (which exec resets to the default), and its sigaction refuses them.
    glibc_ignored: [bool; GLIBC_OWN.len()],
}

/// glibc's internal signals (SIGCANCEL, SIGSETXID), which its calls will not touch.
const GLIBC_OWN: [i32; 2] = [32, 33];

/// The kernel's `struct sigaction` on x86-64 and aarch64: handler, flags, restorer, mask.
type KernelAction = [usize; 4];

/// The kernel's sigset size, in bytes, for the raw calls below.
const KERNEL_SIGSET: usize = 8;

static INHERITED: OnceLock<InheritedSignals> = OnceLock::new();

/// Records the signal mask and the dispositions of `CHANGED` and `GLIBC_OWN` as `retry` was
/// started with them, for every child to start with again (`restore_inherited`): thirteen
/// system calls, before anything changes them. Only the first call records.
pub(crate) fn record_inherited() {
    INHERITED.get_or_init(|| {
        let mut mask: u64 = 0;
        // SAFETY: rt_sigprocmask(2) with no new mask only writes the current one, of the
        // kernel's sigset size, into `mask`.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigprocmask,
                libc::SIG_BLOCK,
                std::ptr::null::<u64>(),
                &mut mask,
                KERNEL_SIGSET,
            );
        }
        InheritedSignals {
            mask,
            ignored: CHANGED.map(ignored),
            glibc_ignored: GLIBC_OWN.map(|signal| {
                let mut current: KernelAction = [0; 4];
                // SAFETY: rt_sigaction(2) with no new action only writes the current one, in
                // the kernel's layout, into `current`.
                let read = unsafe {
                    libc::syscall(
                        libc::SYS_rt_sigaction,
                        signal,
                        std::ptr::null::<KernelAction>(),
                        &mut current,
                        KERNEL_SIGSET,
                    )
                };
                read == 0 && current[0] == libc::SIG_IGN
            }),
        }
    });
}

/// Whether `signal` was ignored when `retry` started (as the parent left it).
fn ignored_at_start(signal: i32) -> bool {
    match (INHERITED.get(), CHANGED.iter().position(|&s| s == signal)) {
        (Some(inherited), Some(index)) => inherited.ignored[index],
        _ => ignored(signal),
    }
}

/// Gives the calling process the signal dispositions and mask `retry` was started with (see
/// the policy above): a signal the parent ignored is ignored, every other one `retry` changed
/// is at its default, and the parent's blocked signals are blocked, glibc's own included. For
/// a child between fork and exec (`start::exactly`): it makes only sigaction(2) and
/// rt_sigprocmask(2) calls, which are async-signal-safe, on data recorded before any child was
/// started, and allocates nothing.
pub(crate) fn restore_inherited() {
    let Some(inherited) = INHERITED.get() else {
        return;
    };
    // SAFETY: sigaction(2), rt_sigaction(2) and rt_sigprocmask(2) with valid signals and
    // structures of their own types and sizes; no handler is installed.
    unsafe {
        for (signal, ignored) in CHANGED.into_iter().zip(inherited.ignored) {
            // Also before exec, no handler of `retry`'s may run in the child: it would write
            // to `retry`'s own signal pipe.
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = if ignored {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
        for (signal, ignored) in GLIBC_OWN.into_iter().zip(inherited.glibc_ignored) {
            // One that had glibc's handler gets the default from exec itself.
            if ignored {
                let action: KernelAction = [libc::SIG_IGN, 0, 0, 0];
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    signal,
                    &action,
                    std::ptr::null_mut::<KernelAction>(),
                    KERNEL_SIGSET,
                );
            }
        }
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &inherited.mask,
            std::ptr::null_mut::<u64>(),
            KERNEL_SIGSET,
        );
    }
}

/// A signal `retry` received, read as what it asks of `retry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// A child changed state; whoever waits on one should check it.
    Child,
    /// `retry` was asked to stop by this signal. `from_terminal`: it is Ctrl-C or Ctrl-\, which
    /// the terminal sent to its whole foreground process group, not to `retry` alone.
    /// `from_retry`: another `retry` sent it, one this one runs under, passing the signal on
    /// or ending what its attempt started: never a second request, "again, and harder" (that
    /// one ends what is left with SIGKILL itself when it means it).
    Shutdown {
        signal: i32,
        from_terminal: bool,
        from_retry: bool,
    },
    /// `retry` was asked to suspend (SIGTSTP): the job it runs should stop until continued.
    Suspend,
    /// The terminal's size changed (SIGWINCH).
    Resize,
    /// A signal for the command itself (SIGUSR1, SIGUSR2).
    Relay(i32),
}

pub struct SignalQueue {
    state: RefCell<State>,
}

struct State {
    delivery: SignalDelivery<UnixStream, WithRawSiginfo>,
    queued: VecDeque<Signal>,
    /// A shutdown signal has arrived: from now on nothing may wait on a reader.
    shutting_down: bool,
    /// Past this instant (the run's `--max-time` and its grace) nothing may wait on a reader.
    readers_until: Option<Instant>,
}

impl SignalQueue {
    /// Installs the handlers. Signals that arrive from here on are queued until read.
    pub fn listen() -> Result<SignalQueue> {
        let (read, write) = UnixStream::pair().map_err(failed("cannot create the signal pipe"))?;
        read.set_nonblocking(true)
            .and_then(|()| write.set_nonblocking(true))
            .map_err(failed("cannot set up the signal pipe"))?;
        let handled = HANDLED.into_iter().filter(|signal| {
            [SIGINT, SIGQUIT, SIGTERM, SIGCHLD].contains(signal) || !ignored_at_start(*signal)
        });
        let delivery = SignalDelivery::with_pipe(read, write, WithRawSiginfo, handled)
            .map_err(failed("cannot install signal handlers"))?;
        // The mask is inherited from the parent, which may have blocked SIGCHLD: the end of an
        // attempt would then never be heard of. Other blocked signals stay blocked, as with
        // `timeout(1)`: a parent that blocks SIGTERM means it.
        // Threads inherit the mask: this runs before any other thread exists.
        unblock(SIGCHLD);
        Ok(SignalQueue {
            state: RefCell::new(State {
                delivery,
                queued: VecDeque::new(),
                shutting_down: false,
                readers_until: None,
            }),
        })
    }

    /// The next signal, or `None` once `until` has passed. Without `until`, waits for a signal.
    pub fn next(&self, until: Option<Instant>) -> Option<Signal> {
        let mut state = self.state.borrow_mut();
        loop {
            if let Some(event) = state.queued.pop_front() {
                return Some(event);
            }
            if state.wait(until, None) == Woke::Timeout {
                return None;
            }
        }
    }

    /// Waits until `fd` is readable or its other end has closed (`true`), or until `until` has
    /// passed (`false`), unless a shutdown signal comes first: then returns that signal. Ctrl-Z
    /// meanwhile stops `retry` until it is continued. For waits while no attempt runs: the ends
    /// of children are dropped.
    pub fn wait_readable(&self, fd: BorrowedFd<'_>, until: Option<Instant>) -> Result<bool, i32> {
        let mut state = self.state.borrow_mut();
        loop {
            while let Some(event) = state.queued.pop_front() {
                match event {
                    Signal::Shutdown { signal, .. } => return Err(signal),
                    Signal::Suspend => stop_self(),
                    Signal::Child | Signal::Resize | Signal::Relay(_) => {}
                }
            }
            match state.wait(until, Some((fd, libc::POLLIN))) {
                Woke::Ready => return Ok(true),
                Woke::Timeout => return Ok(false),
                Woke::Signals => {}
            }
        }
    }

    /// From `at` on, waits on a reader downstream end at once: `retry` must end by then
    /// whatever its readers do.
    pub fn wait_on_readers_until(&self, at: Instant) {
        self.state.borrow_mut().readers_until = Some(at);
    }

    /// When waits on a reader downstream must end (see `wait_on_readers_until`).
    pub fn readers_until(&self) -> Option<Instant> {
        self.state.borrow().readers_until
    }

    /// The shutdown signal that has arrived, if one has (looking, without waiting, at what the
    /// signal pipe holds): a run that ends while such a signal waits ends by it.
    pub fn shutdown_arrived(&self) -> Option<i32> {
        let mut state = self.state.borrow_mut();
        while state.wait(Some(Instant::now()), None) == Woke::Signals {}
        state.queued.iter().find_map(|event| match event {
            Signal::Shutdown { signal, .. } => Some(*signal),
            _ => None,
        })
    }

    /// Waits until `fd` reads ready (a write handed to a thread is done: `files`), together
    /// with the signals, on the terms of `wait_writable`.
    pub fn wait_written(&self, fd: BorrowedFd<'_>) -> bool {
        self.wait_ready(fd, libc::POLLIN)
    }

    /// Waits until `fd` has room for a write of up to PIPE_BUF bytes, together with the
    /// signals. Returns `false` when `fd` has no room once a shutdown signal has arrived
    /// (without waiting) or once `readers_until` has passed: a reader that does not read must
    /// not keep `retry` from ending.
    pub fn wait_writable(&self, fd: BorrowedFd<'_>) -> bool {
        self.wait_ready(fd, libc::POLLOUT)
    }

    fn wait_ready(&self, fd: BorrowedFd<'_>, events: i16) -> bool {
        let mut state = self.state.borrow_mut();
        loop {
            let until = if state.shutting_down {
                Some(Instant::now())
            } else {
                state.readers_until
            };
            match state.wait(until, Some((fd, events))) {
                Woke::Ready => return true,
                Woke::Timeout => return false,
                Woke::Signals => {}
            }
        }
    }
}

/// `retry`'s stderr, for its own messages. Each write first waits for room together with the
/// signals (`SignalQueue::wait_writable`), so a reader downstream that stops reading cannot keep a
/// shutdown waiting; once `retry` is shutting down, a message with no room is dropped.
pub struct Stderr {
    events: Rc<SignalQueue>,
}

impl Stderr {
    pub fn new(events: Rc<SignalQueue>) -> Stderr {
        Stderr { events }
    }
}

impl Write for Stderr {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let stderr = io::stderr();
        loop {
            if !self.events.wait_writable(stderr.as_fd()) {
                return Err(io::Error::other("stderr is full and retry is ending"));
            }
            // A pipe that polls writable takes up to PIPE_BUF bytes without blocking; should
            // another writer fill it first and the pipe be non-blocking (a parent's choice),
            // the wait starts again.
            match (&stderr).write(&bytes[..bytes.len().min(libc::PIPE_BUF)]) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                written => return written,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(PartialEq)]
enum Woke {
    Timeout,
    /// The extra descriptor is ready.
    Ready,
    /// Signals arrived; their events are queued.
    Signals,
}

impl State {
    /// Waits for a signal, for `until` to pass, or for `extra` to be ready for its events (or
    /// hung up).
    fn wait(&mut self, until: Option<Instant>, extra: Option<(BorrowedFd<'_>, i16)>) -> Woke {
        let timeout = until.map(|until| {
            let left = until.saturating_duration_since(Instant::now());
            libc::timespec {
                tv_sec: left.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: left.subsec_nanos().into(),
            }
        });
        let timeout_ptr = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // ppoll(2) here, not `poll::poll`: every deadline of a run (a --timeout, the end of a
        // wait, --max-time) is waited for here, to the nanosecond; poll(2) counts whole
        // milliseconds, and would wake each of them up to a millisecond late.
        let mut polls = [self.delivery.get_read().as_raw_fd(), -1].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let count = match extra {
            Some((fd, events)) => {
                polls[1].fd = fd.as_raw_fd();
                polls[1].events = events;
                2
            }
            None => 1,
        };
        // SAFETY: `count` valid pollfds, a valid or null timespec, no signal mask change.
        let ready =
            unsafe { libc::ppoll(polls.as_mut_ptr(), count, timeout_ptr, std::ptr::null()) };
        if ready == 0 {
            return Woke::Timeout;
        }
        // Signals first: a shutdown must not wait behind a ready descriptor.
        if ready < 0 || polls[0].revents != 0 {
            // ready < 0 is EINTR (a signal landed mid-wait): its byte is in the pipe now.
            let arrived: Vec<libc::siginfo_t> = self.delivery.pending().collect();
            self.shutting_down |= arrived.iter().any(|info| SHUTDOWN.contains(&info.si_signo));
            self.queued
                .extend(arrived.into_iter().filter_map(|info| match info.si_signo {
                    SIGCHLD => Some(Signal::Child),
                    SIGTSTP => group_can_be_continued().then_some(Signal::Suspend),
                    SIGWINCH => Some(Signal::Resize),
                    signal @ (SIGUSR1 | SIGUSR2) => Some(Signal::Relay(signal)),
                    signal => Some(Signal::Shutdown {
                        signal,
                        // The kernel itself sends these only from a terminal's keyboard.
                        from_terminal: matches!(signal, SIGINT | SIGQUIT)
                            && info.si_code == libc::SI_KERNEL,
                        from_retry: sent_by_retry(&info),
                    }),
                }));
            return Woke::Signals;
        }
        Woke::Ready
    }
}

/// Whether the signal `info` tells of was sent, by kill(2) or a pidfd, by another process
/// running this program.
fn sent_by_retry(info: &libc::siginfo_t) -> bool {
    if info.si_code != libc::SI_USER {
        return false;
    }
    // SAFETY: a signal sent with SI_USER carries the sender's pid.
    let sender = unsafe { info.si_pid() };
    sender > 0 && sender as u32 != std::process::id() && crate::sweep::runs_this_program(sender)
}

/// Whether `retry`'s process group is not orphaned: some ancestor in the group has its parent
/// in another group of the same session, the job-control shell that can continue it. Walks up
/// through the ancestors in the group (shells that ran `retry` without job control).
fn group_can_be_continued() -> bool {
    let Some((mut parent, group, session)) = lineage(std::process::id() as i32) else {
        return false;
    };
    for _ in 0..64 {
        let Some((grandparent, parent_group, parent_session)) = lineage(parent) else {
            return false;
        };
        if parent_group != group {
            return parent_session == session;
        }
        parent = grandparent;
    }
    false
}

/// A process's parent, process group and session, from /proc.
fn lineage(pid: i32) -> Option<(i32, i32, i32)> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let entry = crate::sweep::parse_stat(pid, &stat)?;
    Some((entry.parent, entry.group, entry.session))
}

/// Ignores `signal` from now on, in `retry` and in what it starts after: SIGPIPE from the
/// start (a write to a closed pipe is an error to say, not a death), SIGXFSZ once the
/// attempts have ended (a file past `ulimit -f` is a write that fails).
pub fn ignore(signal: i32) {
    // SAFETY: signal(2) with SIG_IGN on a signal no handler of `retry`'s uses.
    unsafe {
        libc::signal(signal, libc::SIG_IGN);
    }
}

/// Stops `retry` as SIGTSTP's default action would have; returns once it is continued.
pub fn stop_self() {
    // SAFETY: raise(3) with a valid signal; SIGSTOP cannot be caught, so this returns only after
    // a SIGCONT.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}

/// Ends `retry` the way the signal would have, as `timeout(1)` does, so that a calling shell
/// sees a death by that signal (and a bash loop around Ctrl-C stops too). No core file is
/// written for SIGQUIT. Falls back to exiting 128 + N.
pub fn exit_by(signal: i32) -> ! {
    let no_core = Rlimit {
        current: Some(0),
        maximum: Some(0),
    };
    let _ = setrlimit(Resource::Core, no_core);
    // SAFETY: signal(2) on this process with a valid signal; nothing else runs after.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
    unblock(signal);
    // SAFETY: raise(3) with a valid signal.
    unsafe {
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}

/// For the output helper, a child `retry` forks that runs no loop of its own: each signal
/// `retry` handles goes back to its default action (Ctrl-C, a hangup end the helper), and a
/// signal ignored now stays ignored. Only sigaction(2) calls: async-signal-safe, no allocation.
pub(crate) fn defaults_for_a_helper() {
    for signal in HANDLED {
        if !ignored(signal) {
            // SAFETY: signal(2) with SIG_DFL on a valid signal of this process.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

/// Whether `signal` is set to be ignored now.
fn ignored(signal: i32) -> bool {
    // SAFETY: sigaction(2) with a null new action only reads the current one into `current`.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Unblocks `signal` for the calling thread.
fn unblock(signal: i32) {
    // SAFETY: a sigset_t initialised by sigemptyset and holding one valid signal; unblocking
    // only lets pending and future deliveries of it through.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}
