//! The real, interruptible sleep: a wait on the signal channel that a shutdown signal ends.

use std::time::{Duration, Instant};

use crate::driver::{Interrupted, Sleep};
use crate::reaper;
use crate::signals::{self, Signal, SignalQueue};

pub struct RealClock<'a> {
    events: &'a SignalQueue,
}

impl<'a> RealClock<'a> {
    pub fn new(events: &'a SignalQueue) -> Self {
        RealClock { events }
    }
}

impl Sleep for RealClock<'_> {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&mut self, duration: Duration) -> Result<(), Interrupted> {
        // A wait past what `Instant` can hold is a wait for a signal.
        let until = Instant::now().checked_add(duration);
        loop {
            match self.events.next(until) {
                None => return Ok(()),
                Some(Signal::Shutdown { signal, .. }) => return Err(Interrupted(signal)),
                // Orphans of earlier attempts (see `reaper::adopt_orphans`) that have died.
                Some(Signal::Child) => reaper::reap_orphans(None),
                // Nothing runs but `retry`; the wait goes on once it is continued.
                Some(Signal::Suspend) => signals::stop_self(),
                // No attempt runs to be told.
                Some(Signal::Resize | Signal::Relay(_)) => {}
            }
        }
    }
}
