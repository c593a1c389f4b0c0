//! What a child that `retry` ends leaves behind outside its process group, and clearing it:
//! the stragglers themselves (`Stragglers`, over `sweep`'s walk of /proc or the attempt's
//! cgroup), the wait for the rest of a terminated group (`clear_group`), and the record kept
//! run after run of how they are to be told apart (`Sweeper`: each attempt's cgroup, or what
//! `retry` held below it before the attempt started). Starts nothing and waits for no child
//! to end: that is `supervise`'s.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::process::Child;
use std::time::{Duration, Instant};

use rustix::fs::MemfdFlags;
use rustix::process::Pid;

use super::target::SignalTarget;
use crate::cgroup::{self, Cgroups};
use crate::log::{Event, Logger};
use crate::plumbing;
use crate::reaper::reap_orphans;
use crate::settings::Settings;
use crate::signals::{Signal, SignalQueue};
use crate::sweep;

/// What a supervised child is, which says whether signals meant for the command reach it, and
/// how what it leaves behind is told from what others left.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Supervisee {
    /// The attempt of this number.
    Attempt(u64),
    Hook,
}

/// How the stragglers of one child are told from what others left: what was there before it,
/// and its cgroup, if it has one.
#[derive(Clone, Copy)]
pub(super) struct Lookout<'s> {
    pub(super) supervisee: Supervisee,
    earlier: &'s BTreeSet<sweep::Known>,
    cgroup: Option<&'s cgroup::Attempt>,
}

/// How what the attempts leave behind is found, attempt after attempt.
pub(super) struct Sweeper {
    /// Under `--foreground`, only the attempt itself is ever signalled: there is no sweep.
    foreground: bool,
    /// What `retry` held below it when the running attempt started (see `sweep::below`), where
    /// the attempt has no cgroup of its own.
    earlier: BTreeSet<sweep::Known>,
    /// Where the attempts' cgroups are made, where `retry` may make them (see `cgroup`).
    cgroups: Option<Cgroups>,
    /// The running attempt's cgroup, if it has one.
    cgroup: Option<cgroup::Attempt>,
    /// The sweep's way was said (`--verbose`).
    said_sweep: bool,
}

impl Sweeper {
    pub(super) fn new(settings: &Settings) -> Sweeper {
        Sweeper {
            foreground: settings.foreground,
            earlier: BTreeSet::new(),
            // Under --foreground, only the attempt itself is ever signalled. A cgroup costs
            // each attempt's start a tenth of a millisecond or more (a fork instead of a
            // vfork, and a move between cgroups): it is had where attempts are timed, which
            // is where sweeps are made run after run; a run that only a signal ends is swept
            // once, at its end, by /proc.
            cgroups: if settings.foreground || !timed(settings) {
                None
            } else {
                Cgroups::here()
            },
            cgroup: None,
            said_sweep: false,
        }
    }

    /// Before attempt `number` starts: its cgroup, if it gets one, and otherwise what `retry`
    /// holds below it now, which is not the attempt's.
    pub(super) fn before_attempt(&mut self, number: u64, logger: &mut Logger) {
        self.cgroup = self
            .cgroups
            .as_mut()
            .and_then(|cgroups| cgroups.for_attempt(number));
        // Under --foreground only the attempt itself is ever signalled: there is no sweep; nor
        // without a cgroup where /proc is another namespace's.
        let swept = self.cgroup.is_some() || sweep::proc_is_ours();
        if !self.said_sweep && !self.foreground && swept {
            self.said_sweep = true;
            let parent = self
                .cgroup
                .as_ref()
                .and_then(|cgroup| cgroup.dir().parent());
            logger.emit(&Event::Sweep { cgroup: parent });
        }
        // Before the first attempt too: what `retry` holds then (the jobs of the shell it was
        // exec'd from) is no attempt's, and may have started in the attempt's clock tick.
        if self.cgroup.is_none() && !self.foreground {
            self.earlier = own_below();
        }
    }

    /// The cgroup the attempt about to start joins, if it has one.
    pub(super) fn cgroup(&self) -> Option<&cgroup::Attempt> {
        self.cgroup.as_ref()
    }

    /// Once the attempt has started as `child`: checks that it joined its cgroup.
    pub(super) fn started(&mut self, child: &Child) {
        // Where /proc is another namespace's, the child's number cannot be looked up in it: a
        // cgroup with a process in it is taken as joined.
        let joined = |cgroup: &mut cgroup::Attempt| match sweep::proc_is_ours() {
            true => cgroup.holds(child.id() as i32),
            false => cgroup.populated(),
        };
        if let Some(cgroup) = self.cgroup.take_if(|cgroup| !joined(cgroup)) {
            // It could not join its cgroup: this attempt, and every later one, is swept by
            // /proc, and what `retry` held before it started is what it holds now, less it.
            if let Some(mut cgroups) = self.cgroups.take() {
                cgroups.finished(cgroup);
            }
            self.earlier = own_below();
            self.earlier
                .retain(|&(pid, _)| pid != child.id() as libc::pid_t);
        }
    }

    /// The attempt has ended, or did not start: its cgroup, if it had one, goes.
    pub(super) fn finished(&mut self) {
        if let (Some(cgroups), Some(cgroup)) = (&mut self.cgroups, self.cgroup.take()) {
            cgroups.finished(cgroup);
        }
    }

    /// How the stragglers of `supervisee` are told, while it runs.
    pub(super) fn lookout(&self, supervisee: Supervisee) -> Lookout<'_> {
        Lookout {
            supervisee,
            earlier: &self.earlier,
            cgroup: match supervisee {
                Supervisee::Attempt(_) => self.cgroup.as_ref(),
                Supervisee::Hook => None,
            },
        }
    }
}

/// How long the last rounds of SIGKILL may run past the end of the grace: what forks as it is
/// killed is chased that long, no longer, so that `retry` ends within 100 ms of the grace
/// (the rest is for collecting the attempt and exiting).
pub(super) const KILL_ROUNDS: Duration = Duration::from_millis(80);

/// What a child that `retry` ends leaves behind outside its process group (see `sweep`): found
/// anew each time it is asked, so one forked since is found too, and first looked for before
/// the child is signalled, while what it started is still below it.
pub(super) struct Stragglers<'a> {
    root: libc::pid_t,
    /// The attempt's cgroup, where it has one: then it is the cgroup's processes, and the
    /// kernel's `cgroup.kill` ends them.
    cgroup: Option<&'a cgroup::Attempt>,
    /// When the child started, in clock ticks since boot; `None` when that could not be read
    /// (no /proc), or under `--foreground`, where only the child itself is ever signalled:
    /// then none is found.
    since: Option<u64>,
    /// The attempt's number, which tells the processes re-parented to `retry` that are its (see
    /// `sweep::adopted_by`); `None` for a hook, whose re-parented processes cannot be told from
    /// the attempt's before it: then only what is found below it counts.
    attempt: Option<u64>,
    /// What `retry` held before the child started, and what was found below those since:
    /// never signalled.
    earlier: BTreeSet<sweep::Known>,
    /// The signal that ends them: the one the child got.
    signal: i32,
    /// Every living one found so far out of the child's group: once re-parented, one that was
    /// found below the child is still followed.
    living: Vec<sweep::Followed>,
    /// Those sent `signal` already.
    signalled: BTreeSet<sweep::Known>,
    /// Those a nested `retry` signals itself: `signal` is that one's to pass on (see
    /// `sweep::Relayed`), SIGKILL at the end of the grace still this one's.
    relayed: sweep::Relayed,
    /// The ended ones (not yet collected) the last look found, the child's group and the child
    /// too: their children were re-parented before the next look began.
    ended: BTreeSet<sweep::Known>,
    /// Held until the grace is over, so that a `retry` above this one knows what is left of
    /// the child is this one's to signal, once the child is gone (see `sweep::ending_name`).
    _ending_said: Option<OwnedFd>,
    /// When the grace ends: a look meanwhile is cut short then, so SIGKILL is not late.
    kill_at: Option<Instant>,
    /// SIGKILL was sent, with rounds of it until then: whatever is found from now on gets it
    /// too.
    killed: Option<Instant>,
}

/// The most pidfds the stragglers hold open at once: beyond that, one is opened for each
/// signal, and `retry` keeps descriptors for its own files whatever an attempt forks.
const HELD_PIDFDS: usize = 256;

impl<'a> Stragglers<'a> {
    /// Takes the first look, which must come before the child is signalled (with `signal`,
    /// `kill_at` being when the grace ends, if it does).
    pub(super) fn of(
        child: &Child,
        target: SignalTarget,
        lookout: Lookout<'a>,
        signal: i32,
        kill_at: Option<Instant>,
    ) -> Stragglers<'a> {
        let root = child.id() as libc::pid_t;
        let attempt = match lookout.supervisee {
            Supervisee::Attempt(number) => Some(number),
            Supervisee::Hook => None,
        };
        let started = match target {
            SignalTarget::Group(_) if sweep::proc_is_ours() => {
                sweep::entry_of(root).map(|entry| entry.start)
            }
            _ => None,
        };
        let ending_said = match target {
            SignalTarget::Group(_) => {
                let ending = sweep::EndingChild {
                    pid: root,
                    adopting: attempt
                        .zip(started)
                        .map(|(attempt, since)| sweep::Adopting { attempt, since }),
                };
                rustix::fs::memfd_create(sweep::ending_name(ending), MemfdFlags::CLOEXEC).ok()
            }
            SignalTarget::Process(_) => None,
        };
        let mut stragglers = Stragglers {
            root,
            cgroup: lookout.cgroup,
            since: match target {
                SignalTarget::Group(_) if sweep::proc_is_ours() => started,
                SignalTarget::Group(_) if lookout.cgroup.is_some() => Some(0),
                _ => None,
            },
            attempt,
            earlier: lookout.earlier.clone(),
            signal,
            living: Vec::new(),
            signalled: BTreeSet::new(),
            relayed: sweep::Relayed::default(),
            ended: BTreeSet::new(),
            _ending_said: ending_said,
            kill_at,
            killed: None,
        };
        stragglers.look(kill_at, &[]);
        stragglers
    }

    /// Looks for them again (up to `until`: a look cut short settles nothing), sending each
    /// one found alive `send` as soon as it is found (so one killed forks no more while the
    /// walk goes on); whether this look shows that none is left: none alive, the child's
    /// group's included, and none ended since the last look (whose children may have moved to
    /// `retry` after its list was read).
    fn look(&mut self, until: Option<Instant>, send: &[i32]) -> bool {
        let Some(since) = self.since else {
            return true;
        };
        if let Some(cgroup) = self.cgroup {
            return self.look_in(cgroup, until, send);
        }
        let helpers = plumbing::helpers();
        let (attempt, signal) = (self.attempt, self.signal);
        let lineage = sweep::Lineage {
            root: self.root,
            since,
            own: rustix::process::getpid().as_raw_nonzero().get(),
            spared: &helpers,
            adopted: &|pid| attempt.is_some_and(|attempt| sweep::adopted_by(pid, attempt)),
            nested: &|pid| sweep::passes_on(pid, signal),
        };
        let mut settled = true;
        let mut ended = BTreeSet::new();
        let (root, living) = (self.root, &mut self.living);
        let whole = sweep::walk(
            &lineage,
            &mut self.earlier,
            &mut self.relayed,
            until,
            &mut |entry, _| {
                let known = (entry.pid, entry.start);
                if entry.zombie {
                    ended.insert(known);
                } else if entry.group == root {
                    settled = false;
                } else if let Some(followed) =
                    living.iter().find(|followed| followed.known == known)
                {
                    followed.signal(send);
                } else {
                    let keep = living.len() < HELD_PIDFDS;
                    if let Some(followed) = sweep::Followed::new(known, keep) {
                        followed.signal(send);
                        living.push(followed);
                    }
                }
            },
        );
        self.living.retain(|followed| match followed.ended() {
            Some(false) => true,
            Some(true) => {
                ended.insert(followed.known);
                false
            }
            None => false,
        });
        settled &= whole && self.living.is_empty() && ended.is_subset(&self.ended);
        self.ended = ended;
        settled
    }

    /// `look` where the attempt has a cgroup: its processes out of the child's group are
    /// listed there, and none is left once it is empty. A look cut short at `until` settles
    /// nothing.
    fn look_in(&mut self, cgroup: &cgroup::Attempt, until: Option<Instant>, send: &[i32]) -> bool {
        let listed = cgroup.processes();
        // Where /proc is another namespace's, its start cannot be read: the pidfd alone
        // follows it, and the cgroup's own list (in this namespace's numbers) says whose.
        let ours = sweep::proc_is_ours();
        // A nested `retry` without a cgroup of its own has its attempt here: what it signals
        // itself is found first.
        if ours {
            let entries: Vec<sweep::ProcessEntry> = listed
                .iter()
                .filter_map(|&pid| sweep::entry_of(pid))
                .collect();
            self.relayed.judge_listed(&entries, self.signal);
        }
        for pid in listed {
            if until.is_some_and(|until| Instant::now() >= until) {
                return false;
            }
            let group = Pid::from_raw(pid).and_then(|pid| rustix::process::getpgid(Some(pid)).ok());
            // (Gone, when it has none.)
            let Some(group) = group.map(|group| group.as_raw_nonzero().get()) else {
                continue;
            };
            if group == self.root {
                continue;
            }
            let start = match ours {
                true => match sweep::entry_of(pid) {
                    Some(entry) => entry.start,
                    None => continue,
                },
                false => 0,
            };
            if self
                .living
                .iter()
                .any(|followed| followed.known == (pid, start))
            {
                continue;
            }
            let keep = self.living.len() < HELD_PIDFDS;
            let followed = match ours {
                true => sweep::Followed::new((pid, start), keep),
                false => sweep::Followed::by_pidfd(pid),
            };
            // Followed once its pidfd is open: still in the cgroup then, it is the attempt's.
            let in_cgroup = || match ours {
                true => cgroup.holds(pid),
                false => cgroup.processes().contains(&pid),
            };
            if let Some(followed) = followed.filter(|_| in_cgroup()) {
                followed.signal(send);
                self.living.push(followed);
            }
        }
        self.living
            .retain(|followed| followed.ended() == Some(false));
        !cgroup.populated()
    }

    /// Sends the signal (and SIGCONT, so a stopped one can act on it) to those not sent it
    /// yet, or SIGKILL to all once that was sent; whether any may be left.
    pub(super) fn terminate(&mut self) -> bool {
        if let Some(until) = self.killed {
            return self.kill(until);
        }
        let settled = self.look(self.kill_at, &[]);
        for followed in &self.living {
            if !self.relayed.contains(&followed.known) && self.signalled.insert(followed.known) {
                followed.signal(&[self.signal, libc::SIGCONT]);
            }
        }
        !settled
    }

    /// Another `retry` passed `signal` on while the child is being ended with `self.signal`:
    /// the same one again is no news, and another one the child's group and every one found
    /// hear too (that `retry` leaves them to this one, see `sweep::Relayed`).
    pub(super) fn pass_on(&mut self, target: SignalTarget, signal: i32) {
        if signal == self.signal || self.killed.is_some() {
            return;
        }
        target.terminate(signal);
        for followed in &self.living {
            if !self.relayed.contains(&followed.known) {
                followed.signal(&[signal, libc::SIGCONT]);
            }
        }
    }

    /// SIGKILL to every one, again until none is found (one that forks as it is killed has
    /// children the last look did not see, and a killed one forks no more) or until `until`
    /// (the first time it is asked: later calls keep to it); whether any may still be left.
    pub(super) fn kill(&mut self, until: Instant) -> bool {
        let until = *self.killed.get_or_insert(until);
        if let Some(cgroup) = self.cgroup {
            return cgroup.kill(until);
        }
        // Those already found first, before a walk for the rest; and one whole walk however
        // late it is: killed, what forked (and loaded the machine) forks no more, so the walk
        // is quick, and it finds what they forked since the last look.
        for followed in &self.living {
            followed.signal(&[libc::SIGKILL]);
        }
        if self.look(None, &[libc::SIGKILL]) {
            return false;
        }
        sweep::rounds_until(
            || !self.look(Some(until), &[libc::SIGKILL]),
            Instant::now,
            until,
        )
    }
}

/// After a terminated attempt has died, gives what is left of its group until `kill_at`,
/// then SIGKILL. Returns a shutdown signal received meanwhile, which also cuts the grace
/// unless another `retry` sent it.
///
/// Members that are not `retry`'s children (those whose parent still lives) send it no
/// SIGCHLD, so this one rare path checks the group at growing intervals (1ms to 50ms)
/// instead of waiting for an event.
pub(super) fn clear_group(
    events: &SignalQueue,
    target: SignalTarget,
    kill_at: Instant,
    mut stragglers: Option<&mut Stragglers<'_>>,
) -> Option<i32> {
    let mut pause = Duration::from_millis(1);
    let mut asked = None;
    let left = |stragglers: &mut Option<&mut Stragglers<'_>>| {
        let group = target.group_alive();
        // Those re-parented to `retry` that have died are its to collect.
        reap_orphans(None);
        match stragglers {
            Some(stragglers) => stragglers.terminate() | group,
            None => group,
        }
    };
    let kill = |stragglers: &mut Option<&mut Stragglers<'_>>| {
        target.send(libc::SIGKILL);
        if let Some(stragglers) = stragglers {
            stragglers.kill(Instant::now().min(kill_at) + KILL_ROUNDS);
        }
    };
    while left(&mut stragglers) {
        let now = Instant::now();
        if now >= kill_at {
            kill(&mut stragglers);
            return asked;
        }
        match events.next(Some((now + pause).min(kill_at))) {
            // From a `retry` above this one, it is no request to hurry (see
            // `Signal::Shutdown`): the grace runs on, and `retry` stops after it.
            Some(Signal::Shutdown {
                signal,
                from_retry: true,
                ..
            }) => {
                asked.get_or_insert(signal);
                if let Some(stragglers) = &mut stragglers {
                    stragglers.pass_on(target, signal);
                }
            }
            Some(Signal::Shutdown { signal, .. }) => {
                kill(&mut stragglers);
                return Some(signal);
            }
            Some(Signal::Suspend) => target.suspend_with_retry(),
            Some(Signal::Resize) => target.pass_resize(),
            // The attempt has ended: there is no one left to tell.
            Some(Signal::Child | Signal::Relay(_)) | None => {}
        }
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    // The last of them may have died since they were last collected.
    reap_orphans(None);
    asked
}

/// Whether the attempts of a run with `settings` may be ended at a time limit.
fn timed(settings: &Settings) -> bool {
    settings.max_time.is_some()
        || settings
            .timeouts
            .list()
            .iter()
            .any(|limit| !limit.is_zero())
}

/// What `retry` holds below it now, less its helpers (see `sweep::below`); nothing where /proc
/// is another namespace's (nothing is looked for there).
fn own_below() -> BTreeSet<sweep::Known> {
    if !sweep::proc_is_ours() {
        return BTreeSet::new();
    }
    let own = rustix::process::getpid().as_raw_nonzero().get();
    sweep::below(own, &plumbing::helpers())
}
