//! Waiting for one child of the run (an attempt or a hook) to end under its limits: its
//! deadline, a shutdown signal to `retry` (the terminating signal, the `--kill-after` grace,
//! then SIGKILL), the signals meant for the command, which are passed on, and once `retry`
//! ends the child, what it left outside its group (`stragglers`). Starts no child and reads
//! none of its output.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use super::stragglers::{self, KILL_ROUNDS, Lookout, Stragglers, Supervisee};
use super::target::SignalTarget;
use crate::driver::AttemptSpec;
use crate::log::{Event, Logger};
use crate::outcome::{AttemptEnd, Limit};
use crate::plumbing;
use crate::reaper::{reap, reap_orphans};
use crate::signals::{Signal, SignalQueue};
use crate::stdio::Stream;
use crate::sweep;

/// How the run's children are waited for and ended: where the signals to `retry` come from,
/// where the attempt's go, the terminating signal and the grace before SIGKILL.
#[derive(Clone, Copy)]
pub(super) struct Supervisor<'a> {
    pub(super) events: &'a SignalQueue,
    pub(super) foreground: bool,
    pub(super) kill_signal: i32,
    pub(super) kill_after: Duration,
}

/// What supervising a child has to say while it runs.
pub(super) enum SupervisionNotice {
    /// It was stopped by this signal (SIGTTIN, SIGTTOU) for using the terminal.
    TerminalStop(i32),
    /// This signal, sent to `retry`, was handed to it.
    Relayed(i32),
    /// Nothing more of this stream can be kept: it is read no more.
    HoldFull(Stream),
}

/// Where the attempt is in being stopped by `retry`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Running,
    /// The terminating signal was sent; SIGKILL follows at this instant.
    Terminating {
        kill_at: Instant,
    },
    Killed,
}

impl Phase {
    /// Where the attempt is once the terminating signal is sent at `now`.
    fn terminating(now: Instant, kill_after: Duration) -> Phase {
        match now.checked_add(kill_after) {
            Some(kill_at) => Phase::Terminating { kill_at },
            // A grace too long to represent never escalates.
            None => Phase::Killed,
        }
    }

    /// When SIGKILL follows, if it does.
    fn kill_at(self) -> Option<Instant> {
        match self {
            Phase::Terminating { kill_at } => Some(kill_at),
            Phase::Running | Phase::Killed => None,
        }
    }

    /// When the wait wakes if nothing comes first: at the `deadline` while the attempt runs,
    /// at the end of the grace while it is terminated, never once SIGKILL was sent.
    fn wake_at(self, deadline: Option<(Instant, Limit)>) -> Option<Instant> {
        match self {
            Phase::Running => deadline.map(|(at, _)| at),
            Phase::Terminating { kill_at } => Some(kill_at),
            Phase::Killed => None,
        }
    }
}

/// How a supervised child ended.
pub(super) struct Supervised {
    status: ExitStatus,
    pub(super) ran: Duration,
    /// `retry` terminated it for this limit.
    timed_out: Option<Limit>,
    /// `retry` received this signal meanwhile.
    pub(super) interrupted: Option<i32>,
}

impl Supervised {
    pub(super) fn end(&self) -> AttemptEnd {
        match self.timed_out {
            Some(limit) => AttemptEnd::TimedOut(limit),
            None => end_of(self.status),
        }
    }
}

impl Supervisor<'_> {
    /// Waits for `child` to end, terminating it (and its group) at `deadline` or when `retry`
    /// is asked to stop. `notify` hears of each time the child is stopped for using the
    /// terminal from a background process group, and of each signal relayed.
    /// SIGUSR1 and SIGUSR2 sent to `retry` are handed to an attempt (they are meant for the
    /// command, not for a hook).
    pub(super) fn supervise(
        &self,
        child: &mut Child,
        target: SignalTarget,
        deadline: Option<(Instant, Limit)>,
        started: Instant,
        notify: &mut dyn FnMut(SupervisionNotice),
        lookout: Lookout<'_>,
    ) -> Supervised {
        // Held while the child is supervised, so that a `retry` above this one knows which of
        // this one's children it is (see `sweep::supervision_name`): what this one signals
        // itself, that one does not. Without it, that one signals them too.
        let _said = rustix::fs::memfd_create(
            sweep::supervision_name(
                child.id() as libc::pid_t,
                matches!(lookout.supervisee, Supervisee::Attempt(_)),
            ),
            rustix::fs::MemfdFlags::CLOEXEC,
        );
        let mut supervision = Supervision {
            child,
            target,
            lookout,
            kill_signal: self.kill_signal,
            kill_after: self.kill_after,
            phase: Phase::Running,
            timed_out: None,
            interrupted: None,
            stragglers: None,
        };
        let status = loop {
            match self.events.next(supervision.phase.wake_at(deadline)) {
                Some(Signal::Child) => {
                    if let Some(status) = supervision.on_child(notify) {
                        break status;
                    }
                }
                Some(Signal::Suspend) => target.suspend_with_retry(),
                Some(Signal::Resize) => target.pass_resize(),
                Some(Signal::Relay(signal))
                    if matches!(lookout.supervisee, Supervisee::Attempt(_)) =>
                {
                    target.relay(signal);
                    notify(SupervisionNotice::Relayed(signal));
                }
                Some(Signal::Relay(_)) => {}
                Some(Signal::Shutdown {
                    signal,
                    from_terminal,
                    from_retry,
                }) => supervision.on_shutdown(signal, from_terminal, from_retry),
                None => supervision.on_wake(deadline),
            }
        };
        supervision.finish(self.events, status, started.elapsed())
    }

    /// Waits for the attempt to end, under its limits, saying what befalls it meanwhile;
    /// `say_spill_failures` says which spools could not spill to a file, before a stream is
    /// said to be held no more.
    pub(super) fn supervise_attempt(
        &self,
        child: &mut Child,
        spec: &AttemptSpec,
        started: Instant,
        lookout: Lookout<'_>,
        logger: &mut Logger,
        say_spill_failures: &mut dyn FnMut(&mut Logger),
    ) -> Supervised {
        let target = SignalTarget::of(child, self.foreground);
        let mut stopped_said = false;
        let mut notify = |notice| match notice {
            SupervisionNotice::TerminalStop(signal) => {
                if !std::mem::replace(&mut stopped_said, true) {
                    logger.emit(&Event::TerminalStop {
                        attempt: spec.number,
                        signal,
                    });
                }
            }
            SupervisionNotice::Relayed(signal) => logger.emit(&Event::Relayed {
                attempt: spec.number,
                signal,
            }),
            SupervisionNotice::HoldFull(stream) => {
                // A stream is read no more because no file could take it: that comes first.
                say_spill_failures(logger);
                logger.emit(&Event::HoldFull { stream });
            }
        };
        self.supervise(child, target, spec.deadline, started, &mut notify, lookout)
    }
}

/// One child's supervision under way: how far `retry` has gone in ending it, and why.
struct Supervision<'s> {
    child: &'s mut Child,
    target: SignalTarget,
    lookout: Lookout<'s>,
    kill_signal: i32,
    kill_after: Duration,
    phase: Phase,
    /// `retry` terminated it for this limit.
    timed_out: Option<Limit>,
    /// `retry` received this signal meanwhile.
    interrupted: Option<i32>,
    /// Once `retry` ends the child: what it leaves outside its group.
    stragglers: Option<Stragglers<'s>>,
}

impl<'s> Supervision<'s> {
    /// A child of `retry` changed state: the child's exit status, once it has ended.
    fn on_child(&mut self, notify: &mut dyn FnMut(SupervisionNotice)) -> Option<ExitStatus> {
        for stream in plumbing::new_stalls() {
            notify(SupervisionNotice::HoldFull(stream));
        }
        if let Some(status) = reap(self.child) {
            return Some(status);
        }
        reap_orphans(Some(self.child));
        if let Some(signal) = terminal_stop(self.child) {
            notify(SupervisionNotice::TerminalStop(signal));
        }
        None
    }

    /// `retry` was asked to stop by `signal`: the child gets it, and the grace begins; asked
    /// again, SIGKILL.
    fn on_shutdown(&mut self, signal: i32, from_terminal: bool, from_retry: bool) {
        let target = self.target;
        if let (true, Some(stragglers)) = (from_retry, &mut self.stragglers) {
            // This one ends the child already (asked, or for its own time-out), and a `retry`
            // above it passed `signal` on (see `Signal::Shutdown`): no request to hurry, and
            // the child hears it only if it is not the signal it had.
            self.interrupted.get_or_insert(signal);
            stragglers.pass_on(target, signal);
        } else if self.interrupted.is_some() {
            // A second request (Ctrl-C again): no more grace.
            let stragglers = self.stragglers(signal);
            target.send(libc::SIGKILL);
            stragglers.kill(Instant::now() + KILL_ROUNDS);
            self.phase = Phase::Killed;
        } else {
            self.interrupted = Some(signal);
            if self.phase == Phase::Running {
                self.phase = Phase::terminating(Instant::now(), self.kill_after);
            }
            let stragglers = self.stragglers(signal);
            // The terminal's Ctrl-C reached an attempt in `retry`'s own group
            // (--foreground) already; a second copy would read as "again, and
            // harder", which tells terraform or docker compose to quit at once.
            if !(from_terminal && target.in_retry_group()) {
                target.terminate(signal);
            }
            stragglers.terminate();
        }
    }

    /// Nothing came before the phase's instant: the `deadline` has passed (the child gets the
    /// terminating signal), or the grace has (SIGKILL).
    fn on_wake(&mut self, deadline: Option<(Instant, Limit)>) {
        let target = self.target;
        match self.phase {
            Phase::Running => {
                self.timed_out = deadline.map(|(_, limit)| limit);
                self.phase = Phase::terminating(Instant::now(), self.kill_after);
                let signal = self.kill_signal;
                let stragglers = self.stragglers(signal);
                target.terminate(signal);
                stragglers.terminate();
            }
            Phase::Terminating { .. } | Phase::Killed => {
                target.send(libc::SIGKILL);
                let kill_at = self.phase.kill_at().unwrap_or_else(Instant::now);
                if let Some(stragglers) = &mut self.stragglers {
                    stragglers.kill(kill_at + KILL_ROUNDS);
                }
                self.phase = Phase::Killed;
            }
        }
    }

    /// What the child leaves outside its group, first looked for before it gets `signal`.
    fn stragglers(&mut self, signal: i32) -> &mut Stragglers<'s> {
        let (child, target, lookout) = (&*self.child, self.target, self.lookout);
        let kill_at = self.phase.kill_at();
        self.stragglers
            .get_or_insert_with(|| Stragglers::of(child, target, lookout, signal, kill_at))
    }

    /// The child has ended with `status`, after running for `ran`: what is left of its group
    /// gets the rest of the grace, and what it left outside gets what the child got.
    fn finish(mut self, events: &SignalQueue, status: ExitStatus, ran: Duration) -> Supervised {
        match (self.phase, &mut self.stragglers) {
            (Phase::Terminating { kill_at }, stragglers) => {
                if let Some(signal) =
                    stragglers::clear_group(events, self.target, kill_at, stragglers.as_mut())
                {
                    self.interrupted.get_or_insert(signal);
                }
            }
            // SIGKILL was sent (and goes to those found since), or the grace never ends (they
            // get the terminating signal, once).
            (Phase::Killed, Some(stragglers)) => {
                stragglers.terminate();
            }
            _ => {}
        }
        Supervised {
            status,
            ran,
            timed_out: self.timed_out,
            interrupted: self.interrupted,
        }
    }
}

/// The signal that stopped the child, when it was stopped for using the terminal from a
/// background process group (SIGTTIN, SIGTTOU). Collects the stop report, never an exit.
fn terminal_stop(child: &Child) -> Option<i32> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let pid = Pid::from_child(child);
    let stop = waitid(
        WaitId::Pid(pid),
        WaitIdOptions::STOPPED | WaitIdOptions::NOHANG,
    )
    .ok()??;
    let signal = stop.stopping_signal()?;
    [libc::SIGTTIN, libc::SIGTTOU]
        .contains(&signal)
        .then_some(signal)
}

fn end_of(status: ExitStatus) -> AttemptEnd {
    match (status.code(), status.signal()) {
        (Some(code), _) => AttemptEnd::Exited(code as u8),
        (None, Some(signal)) => AttemptEnd::Signaled(signal),
        (None, None) => AttemptEnd::Exited(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_wakes_at_the_deadline_then_at_the_end_of_the_grace_then_never() {
        let now = Instant::now();
        let deadline = Some((now + Duration::from_secs(5), Limit::Attempt));
        assert_eq!(
            Phase::Running.wake_at(deadline),
            Some(now + Duration::from_secs(5))
        );
        assert_eq!(Phase::Running.wake_at(None), None);
        let terminating = Phase::terminating(now, Duration::from_secs(2));
        assert_eq!(
            terminating,
            Phase::Terminating {
                kill_at: now + Duration::from_secs(2)
            }
        );
        // The grace's end counts once the attempt is terminated, the deadline no more.
        assert_eq!(
            terminating.wake_at(deadline),
            Some(now + Duration::from_secs(2))
        );
        assert_eq!(terminating.kill_at(), Some(now + Duration::from_secs(2)));
        assert_eq!(Phase::Killed.wake_at(deadline), None);
        assert_eq!(Phase::Killed.kill_at(), None);
        assert_eq!(Phase::Running.kill_at(), None);
    }

    #[test]
    fn a_grace_too_long_to_represent_never_escalates() {
        let now = Instant::now();
        assert_eq!(Phase::terminating(now, Duration::MAX), Phase::Killed);
        assert_eq!(
            Phase::terminating(now, Duration::ZERO),
            Phase::Terminating { kill_at: now }
        );
    }

    #[test]
    fn a_timed_out_attempt_ended_by_retry_is_a_timeout_whatever_its_status() {
        let killed = ExitStatus::from_raw(libc::SIGKILL);
        let supervised = |status, timed_out| Supervised {
            status,
            ran: Duration::ZERO,
            timed_out,
            interrupted: None,
        };
        assert_eq!(
            supervised(killed, Some(Limit::Run)).end(),
            AttemptEnd::TimedOut(Limit::Run)
        );
        assert_eq!(
            supervised(ExitStatus::from_raw(0), Some(Limit::Attempt)).end(),
            AttemptEnd::TimedOut(Limit::Attempt)
        );
        assert_eq!(
            supervised(killed, None).end(),
            AttemptEnd::Signaled(libc::SIGKILL)
        );
        assert_eq!(
            supervised(ExitStatus::from_raw(3 << 8), None).end(),
            AttemptEnd::Exited(3)
        );
    }
}
