//! The only signal-handling code: one thread turns signals into events on a channel.
//!
//! Policy, and why:
//! - SIGINT, SIGTERM, SIGHUP, SIGQUIT become `Event::Shutdown`: `retry` passes the signal on to
//!   the running attempt, starts nothing more, and exits 128 + N. Ctrl-C ends `retry`, never just
//!   the current attempt.
//! - SIGCHLD becomes `Event::Child`, so the end of an attempt is noticed at once, with no
//!   polling and no thread per attempt.
//! - SIGPIPE stays ignored (Rust's default): a write to a closed pipe is an error `retry`
//!   handles. Children get the default disposition back when they exec.
//!
//! Waiting on the channel with a timeout is also how `retry` sleeps, so a signal ends any wait.

use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Instant;

use anyhow::{Context, Result};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

/// The signals that end `retry`.
pub const SHUTDOWN: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A child changed state; whoever waits on one should check it.
    Child,
    /// `retry` was asked to stop by this signal.
    Shutdown(i32),
}

pub struct Events {
    receiver: Receiver<Event>,
}

impl Events {
    /// Installs the handlers and starts the thread that forwards signals as events.
    pub fn listen() -> Result<Events> {
        let mut signals = Signals::new(SHUTDOWN.iter().copied().chain([SIGCHLD]))
            .context("cannot install signal handlers")?;
        let (sender, receiver) = mpsc::channel();
        thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    let event = if signal == SIGCHLD {
                        Event::Child
                    } else {
                        Event::Shutdown(signal)
                    };
                    if sender.send(event).is_err() {
                        break;
                    }
                }
            })
            .context("cannot start the signal thread")?;
        Ok(Events { receiver })
    }

    /// The next event, or `None` once `until` has passed. Without `until`, waits for an event.
    pub fn next(&self, until: Option<Instant>) -> Option<Event> {
        match until {
            None => self.receiver.recv().ok(),
            Some(until) => {
                let left = until.saturating_duration_since(Instant::now());
                self.receiver.recv_timeout(left).ok()
            }
        }
    }
}

/// Ends `retry` the way the signal would have, as `timeout(1)` does, so that a calling shell
/// sees a death by that signal (and a bash loop around Ctrl-C stops too). No core file is
/// written for SIGQUIT. Falls back to exiting 128 + N.
pub fn exit_by(signal: i32) -> ! {
    // SAFETY: plain libc calls on this process with valid arguments; nothing else runs after.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}
