//! What an attempt that `retry` ends leaves behind outside its process group: processes that
//! called `setsid` (still the attempt's descendants by parentage) and daemons that
//! double-forked (re-parented to `retry`, the subreaper). This is the way without a cgroup (see
//! `cgroup` for the other): found in /proc, walking down from `retry` itself, only when
//! `retry` ends an attempt (a timeout, `--max-time`, a signal); on the path of an attempt that
//! ends on its own, only the record of what `retry` holds before it starts (`below`).
//!
//! A process is the ended attempt's by its lineage: below the attempt, or re-parented to
//! `retry` since the attempt started, and not in the record of what `retry` held before the
//! attempt started (an earlier attempt's or a hook's leftovers), nor below one of those. A
//! re-parented one whose environment holds another `RETRY_ATTEMPT` is another attempt's too;
//! one with none (a daemon that wrote its title over its environment, cleared it or replaced
//! it whole) is taken by lineage alone. What `retry` held before its first attempt (the jobs of
//! the shell it was exec'd from) is recorded too. Where /proc is another PID namespace's
//! (`unshare --pid` without a /proc of its own), nothing is looked for there. What cannot be told apart: a process that an earlier attempt's leftover
//! starts after that leftover's own parent has gone (so it is `retry`'s child, not yet seen),
//! which is re-parented to `retry` once its parent exits, with its environment wiped. What was
//! found once is followed by its number and start time, and signalled through a pidfd opened
//! while that start time still holds: a recycled pid is never signalled. The walk is repeated
//! to a fixed point: one look can miss a process whose parent exits as the walk passes (its
//! children move to `retry`'s list, read already), so "none left" is only taken from a look
//! that finds none alive and no process newly ended. What it cannot reach: a process that left
//! through another subreaper (a service manager), one of another user (`sudo`: signals are
//! refused), and one that a nested `retry` left (it carries the inner run's numbers).

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsRawFd, OwnedFd};

use rustix::process::{Pid, PidfdFlags, pidfd_open};
use std::time::Instant;

use crate::poll::{self, Wait};

/// One process, as /proc/PID/stat gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProcessEntry {
    pub(crate) pid: libc::pid_t,
    pub(crate) parent: libc::pid_t,
    pub(crate) group: libc::pid_t,
    pub(crate) session: libc::pid_t,
    /// When it started, in clock ticks since boot.
    pub(crate) start: u64,
    /// Ended, not yet collected by its parent: a zombie whose threads have all ended (one
    /// whose main thread called pthread_exit shows `Z` while its other threads run on).
    pub(crate) zombie: bool,
    /// How many threads it has.
    pub(crate) threads: u64,
}

/// Reads the line of /proc/PID/stat: the process's name (field 2, in parentheses) may hold
/// any byte, parentheses and spaces too, so the fields are counted from its last `)`.
pub(crate) fn parse_stat(pid: libc::pid_t, line: &[u8]) -> Option<ProcessEntry> {
    let close = line.iter().rposition(|&byte| byte == b')')?;
    let rest = std::str::from_utf8(&line[close + 1..]).ok()?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // Fields 3 (state), 4 (ppid), 5 (pgrp), ... 20 (num_threads), 22 (starttime): index =
    // field - 3.
    let threads = fields.get(17)?.parse().ok()?;
    Some(ProcessEntry {
        pid,
        parent: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        zombie: *fields.first()? == "Z" && threads <= 1,
        threads,
    })
}

/// Who the ended attempt is, and what is not its: what a walk (`walk`) tells its processes by.
pub(crate) struct Lineage<'a> {
    /// The attempt's own process (or a hook's), which started at `since`, in clock ticks.
    pub(crate) root: libc::pid_t,
    pub(crate) since: u64,
    /// `retry`.
    pub(crate) own: libc::pid_t,
    /// `retry`'s own helpers: neither they nor theirs are the attempt's.
    pub(crate) spared: &'a [libc::pid_t],
    /// Whether a process re-parented to `retry` is marked as the attempt's, or not marked.
    pub(crate) adopted: &'a dyn Fn(libc::pid_t) -> bool,
    /// Whether a process is a `retry` nested in the attempt that passes the terminating signal
    /// on to its own attempt's group (see `passes_on`).
    pub(crate) nested: &'a dyn Fn(libc::pid_t) -> bool,
}

/// Whose a process is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Whose {
    /// The ended attempt's.
    Attempts,
    /// An earlier attempt's or a hook's: below what `retry` held before the attempt started.
    Earlier,
    /// Neither: nothing below it is looked at.
    Other,
}

impl Lineage<'_> {
    /// What `entry` is, a child of `retry` (`parent` is `None`) or of a process of `parent`'s
    /// kind. Every one of the attempt's started since `root` did: a process with `root`'s
    /// number that started at another time is another process, whose children are not the
    /// attempt's.
    fn kind(
        &self,
        entry: &ProcessEntry,
        parent: Option<Whose>,
        earlier: &BTreeSet<Known>,
    ) -> Whose {
        if earlier.contains(&(entry.pid, entry.start)) {
            return Whose::Earlier;
        }
        match parent {
            Some(Whose::Earlier) => Whose::Earlier,
            Some(Whose::Attempts) if entry.start >= self.since => Whose::Attempts,
            Some(_) => Whose::Other,
            None if entry.pid == self.root && entry.start == self.since => Whose::Attempts,
            None if entry.pid == self.root || self.spared.contains(&entry.pid) => Whose::Other,
            None if entry.start >= self.since && (self.adopted)(entry.pid) => Whose::Attempts,
            None => Whose::Other,
        }
    }
}

/// A process as `retry` follows it: its number and its start, which tell it from any later
/// process given the same number.
pub(crate) type Known = (libc::pid_t, u64);

/// Where a walk reads processes.
trait Source {
    fn entry(&self, pid: libc::pid_t) -> Option<ProcessEntry>;
    /// The children of `pid` (which has `threads` threads); `None` when there is no list.
    fn children(&self, pid: libc::pid_t, threads: u64) -> Option<Vec<libc::pid_t>>;
    /// Its environment (NUL-separated `NAME=VALUE`s); empty where it cannot be read.
    fn environ(&self, pid: libc::pid_t) -> Vec<u8>;
    /// The child it says it supervises, if it is a `retry` (see `supervised_by`).
    fn supervised(&self, pid: libc::pid_t) -> Option<Supervising>;
}

/// /proc, now.
struct Proc;

impl Source for Proc {
    fn entry(&self, pid: libc::pid_t) -> Option<ProcessEntry> {
        entry_of(pid)
    }

    fn children(&self, pid: libc::pid_t, threads: u64) -> Option<Vec<libc::pid_t>> {
        children_of(pid, threads)
    }

    fn environ(&self, pid: libc::pid_t) -> Vec<u8> {
        environ_of(pid)
    }

    fn supervised(&self, pid: libc::pid_t) -> Option<Supervising> {
        supervised_by(pid)
    }
}

/// A table of processes, whose children are found by their parent's number: every process of
/// /proc where the kernel keeps no lists of children (the rest read there too), and the tests'
/// tables (with the rest they give).
struct Table {
    entries: Vec<ProcessEntry>,
    given: Option<Fixture>,
}

/// What a test's table gives of its processes besides their entries.
#[derive(Default)]
struct Fixture {
    environs: BTreeMap<libc::pid_t, Vec<u8>>,
    supervised: BTreeMap<libc::pid_t, Supervising>,
}

impl Source for Table {
    fn entry(&self, pid: libc::pid_t) -> Option<ProcessEntry> {
        self.entries.iter().find(|entry| entry.pid == pid).copied()
    }

    fn environ(&self, pid: libc::pid_t) -> Vec<u8> {
        match &self.given {
            Some(given) => given.environs.get(&pid).cloned().unwrap_or_default(),
            None => environ_of(pid),
        }
    }

    fn supervised(&self, pid: libc::pid_t) -> Option<Supervising> {
        match &self.given {
            Some(given) => given.supervised.get(&pid).copied(),
            None => supervised_by(pid),
        }
    }

    fn children(&self, pid: libc::pid_t, _: u64) -> Option<Vec<libc::pid_t>> {
        Some(
            self.entries
                .iter()
                .filter(|entry| entry.parent == pid)
                .map(|entry| entry.pid)
                .collect(),
        )
    }
}

/// Walks down from `retry` and hands `found` each process of the ended attempt (its root too,
/// while it is there), as soon as it is read and before its children are: one that `found`
/// kills forks no more while the walk goes on. With each, whether it is a nested `retry`'s to
/// signal (see `Relayed`): sent the terminating signal by both, it would hear it twice. A
/// process re-parented to `retry` is the attempt's when it started since the attempt did, is
/// not `earlier` and is `adopted`; anything below one of the attempt's is the attempt's. What
/// it finds below an `earlier` one it adds to `earlier`: a leftover's child stays its
/// attempt's once its parent has gone and it is re-parented to `retry`. Whether the walk was
/// whole, not cut short at `until`.
pub(crate) fn walk(
    lineage: &Lineage<'_>,
    earlier: &mut BTreeSet<Known>,
    relayed: &mut Relayed,
    until: Option<Instant>,
    found: &mut dyn FnMut(&ProcessEntry, bool),
) -> bool {
    match Proc.children(lineage.own, 2) {
        Some(children) => walk_in(&Proc, children, lineage, earlier, relayed, until, found),
        None => {
            let table = Table {
                entries: every_process(),
                given: None,
            };
            let children = table.children(lineage.own, 2).unwrap_or_default();
            walk_in(&table, children, lineage, earlier, relayed, until, found)
        }
    }
}

/// `walk` in `source`, where `retry` has `children`.
fn walk_in(
    source: &dyn Source,
    children: Vec<libc::pid_t>,
    lineage: &Lineage<'_>,
    earlier: &mut BTreeSet<Known>,
    relayed: &mut Relayed,
    until: Option<Instant>,
    found: &mut dyn FnMut(&ProcessEntry, bool),
) -> bool {
    let mut seen = BTreeSet::from([lineage.own]);
    let mut to_visit: Vec<(libc::pid_t, Option<(Whose, ProcessEntry)>)> =
        children.into_iter().map(|pid| (pid, None)).collect();
    while let Some((pid, parent)) = to_visit.pop() {
        if until.is_some_and(|until| Instant::now() >= until) {
            return false;
        }
        if !seen.insert(pid) {
            continue;
        }
        let Some(entry) = source.entry(pid) else {
            continue;
        };
        let kind = lineage.kind(&entry, parent.map(|(kind, _)| kind), earlier);
        match kind {
            Whose::Attempts => {
                let parent = parent.map(|(_, parent)| parent);
                found(&entry, relayed.judge(&entry, parent.as_ref(), source));
            }
            Whose::Earlier => {
                earlier.insert((entry.pid, entry.start));
            }
            Whose::Other => continue,
        }
        let children = source.children(pid, entry.threads).unwrap_or_default();
        // A nested `retry` is noted before its attempt's processes, below it, are judged.
        if kind == Whose::Attempts && !children.is_empty() && (lineage.nested)(pid) {
            let entries: Vec<ProcessEntry> =
                children.iter().filter_map(|&c| source.entry(c)).collect();
            relayed.note(&entry, &entries, source);
        }
        to_visit.extend(
            children
                .into_iter()
                .map(|child| (child, Some((kind, entry)))),
        );
    }
    true
}

/// What `retry` (`own`) holds below it now, less its helpers (`spared`) and theirs: taken
/// before an attempt starts, it is what that attempt's sweep leaves alone.
pub(crate) fn below(own: libc::pid_t, spared: &[libc::pid_t]) -> BTreeSet<Known> {
    // Everything below `retry` is taken as the earlier attempts' own, to be recorded.
    let lineage = Lineage {
        root: own,
        since: 0,
        own,
        spared,
        adopted: &|_| true,
        nested: &|_| false,
    };
    let mut below = BTreeSet::new();
    let mut relayed = Relayed::default();
    walk(
        &lineage,
        &mut BTreeSet::new(),
        &mut relayed,
        None,
        &mut |entry, _| {
            below.insert((entry.pid, entry.start));
        },
    );
    below
}

/// A process `retry` follows to end it, by a pidfd opened while it held its number: a signal
/// sent through that never reaches a process that took the number since.
pub(crate) struct Followed {
    pub(crate) known: Known,
    /// `None` where the kernel has no pidfds (before Linux 5.3), or when `retry` holds enough
    /// of them already: then one is opened for each signal.
    pidfd: Option<OwnedFd>,
}

impl Followed {
    /// Follows `known`, keeping a pidfd open when `keep` allows; `None` when it holds its
    /// number no more.
    pub(crate) fn new(known: Known, keep: bool) -> Option<Followed> {
        let pidfd = pidfd_of(known)?;
        Some(Followed {
            known,
            pidfd: pidfd.filter(|_| keep),
        })
    }

    /// Follows `pid`, a number of this PID namespace, by a pidfd alone, where /proc is
    /// another namespace's and cannot tell its start: `None` without a pidfd. Whose it is, the
    /// caller checks once the pidfd is open (a cgroup that still lists the number).
    pub(crate) fn by_pidfd(pid: libc::pid_t) -> Option<Followed> {
        let pidfd = pidfd_open(Pid::from_raw(pid)?, PidfdFlags::empty()).ok()?;
        Some(Followed {
            known: (pid, 0),
            pidfd: Some(pidfd),
        })
    }

    /// Sends each of `signals`, in turn; failure (it has ended) is fine.
    pub(crate) fn signal(&self, signals: &[i32]) {
        let send = |pidfd: &OwnedFd| {
            for &signal in signals {
                // SAFETY: pidfd_send_signal(2) on a pidfd, with no siginfo.
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        pidfd.as_raw_fd(),
                        signal,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    );
                }
            }
        };
        if let Some(pidfd) = &self.pidfd {
            return send(pidfd);
        }
        match pidfd_of(self.known) {
            Some(Some(pidfd)) => send(&pidfd),
            // No pidfds at all: kill(2) right after the check that it still holds its number.
            Some(None) => {
                for &signal in signals {
                    // SAFETY: kill(2) with a pid checked just before.
                    unsafe {
                        libc::kill(self.known.0, signal);
                    }
                }
            }
            None => {}
        }
    }

    /// `Some(false)` while it runs, `Some(true)` once it has ended and waits to be collected,
    /// `None` once it was.
    pub(crate) fn ended(&self) -> Option<bool> {
        if let Some(pidfd) = &self.pidfd {
            // A pidfd reads ready once its process has ended.
            if let Ok([0]) = poll::poll([(pidfd.as_raw_fd(), libc::POLLIN)], Wait::Not) {
                return Some(false);
            }
        }
        let (pid, start) = self.known;
        entry_of(pid)
            .filter(|now| now.start == start)
            .map(|now| now.zombie)
    }
}

/// A pidfd for `known`, checked to be its own: `None` when the number is another's now (or
/// no one's), `Some(None)` when the kernel has no pidfds.
fn pidfd_of(known: Known) -> Option<Option<OwnedFd>> {
    let (pid, start) = known;
    let pidfd = match pidfd_open(Pid::from_raw(pid)?, PidfdFlags::empty()) {
        Ok(pidfd) => Some(pidfd),
        Err(rustix::io::Errno::NOSYS) => None,
        // Gone, or no descriptor to be had: not signalled rather than signalled by number.
        Err(_) => return None,
    };
    // The process that had the number when the pidfd was opened has it still: the pidfd is
    // that process's.
    entry_of(pid)
        .is_some_and(|now| now.start == start)
        .then_some(pidfd)
}

/// Runs `round` (which says whether any is left) again until it finds none, or until `until`
/// as `now` tells it, whichever comes first; whether any was left at the last round. The bound
/// holds however many a round finds: a tree that forks as it is killed is chased until then,
/// no longer.
pub(crate) fn rounds_until(
    mut round: impl FnMut() -> bool,
    now: impl Fn() -> Instant,
    until: Instant,
) -> bool {
    loop {
        if !round() {
            return false;
        }
        if now() >= until {
            return true;
        }
    }
}

/// Whether a process re-parented to `retry` (and started since the attempt did) is attempt
/// `attempt`'s, by the `RETRY_ATTEMPT` its environment holds: yes for that number, no for
/// another (an earlier attempt's, a hook's), and, with none, yes where there is no environment
/// to read one in: a daemon that wrote its title over it (redis, postgres, perl's `$0`), one
/// that cleared it (`env -i`), or one whose environment cannot be read (it made itself
/// undumpable, as ssh-agent does).
pub(crate) fn adopted_by(pid: libc::pid_t, attempt: u64) -> bool {
    marked_for(&environ_of(pid), attempt)
}

/// Process `pid`'s environment, as /proc/PID/environ gives it; empty where it cannot be read.
fn environ_of(pid: libc::pid_t) -> Vec<u8> {
    std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default()
}

/// The attempt number an environment's first `RETRY_ATTEMPT` gives, if any.
fn attempt_number(environ: &[u8]) -> Option<u64> {
    let mark = environ
        .split(|&byte| byte == 0)
        .find_map(|variable| variable.strip_prefix(b"RETRY_ATTEMPT="))?;
    std::str::from_utf8(mark).ok()?.parse().ok()
}

/// Whether process `pid` runs this program, as a `retry` nested in an attempt does: its
/// executable is this process's file (a copy, or another version, is not, and may pass no
/// signal on).
pub(crate) fn runs_this_program(pid: libc::pid_t) -> bool {
    use std::os::unix::fs::MetadataExt;
    static OWN: std::sync::OnceLock<Option<(u64, u64)>> = std::sync::OnceLock::new();
    let file = |pid: &str| {
        let metadata = std::fs::metadata(format!("/proc/{pid}/exe")).ok()?;
        Some((metadata.dev(), metadata.ino()))
    };
    let own = OWN.get_or_init(|| file("self"));
    own.is_some_and(|own| file(&pid.to_string()) == Some(own))
}

/// A nested `retry`'s (`nested`'s, with `children`) running attempt (or hook), whose group a
/// terminating signal is passed on to: the child it says it supervises (`supervising`, see
/// `supervised_by`), where that leads a group of its own, read as it is now. Not one in its own
/// group (under `--foreground` its attempt is there, and hears from whoever signals that
/// group). Once that child is gone, and the nested `retry` gives what is left of it the rest of
/// its grace, as that one said it began ending it (`EndingChild`); none if it said nothing: the
/// child ended on its own, and what it left the nested `retry` never signals.
fn attempt_of(
    nested: &ProcessEntry,
    children: &[ProcessEntry],
    supervising: Supervising,
    environ: &dyn Fn(libc::pid_t) -> Vec<u8>,
) -> Option<NestedAttempt> {
    let Some(child) = children.iter().find(|child| child.pid == supervising.pid) else {
        let ending = supervising.ending?;
        return Some(match ending.adopting {
            Some(adopting) => NestedAttempt {
                group: supervising.pid,
                since: adopting.since,
                adopts: Adopts::Marked(adopting.attempt),
            },
            None => NestedAttempt {
                group: supervising.pid,
                since: u64::MAX,
                adopts: Adopts::Nothing,
            },
        });
    };
    if child.pid != child.group || child.group == nested.group {
        return None;
    }
    let adopts = match attempt_number(&environ(child.pid)) {
        _ if !supervising.attempt => Adopts::Nothing,
        Some(number) => Adopts::Marked(number),
        None => Adopts::All,
    };
    Some(NestedAttempt {
        group: child.group,
        since: child.start,
        adopts,
    })
}

/// The child a `retry` supervises, as it says it in the name of a memfd it holds meanwhile
/// (`supervision_name`): an attempt or a hook; and, once it has begun ending that child, how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Supervising {
    pub(crate) pid: libc::pid_t,
    pub(crate) attempt: bool,
    pub(crate) ending: Option<EndingChild>,
}

/// How a `retry` ending the child it supervises (`pid`) takes what that child left, as it says
/// it in the name of a second memfd (`ending_name`), held until its grace is over: the child
/// may be gone by then, and /proc no longer shows when it started or what its number was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EndingChild {
    pub(crate) pid: libc::pid_t,
    /// What it adopts besides the child's group, if anything: re-parented processes marked
    /// with `attempt` (or not marked) started after `since` (see `Relayed::judge`).
    pub(crate) adopting: Option<Adopting>,
}

/// An attempt's number, and the clock tick it started in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Adopting {
    pub(crate) attempt: u64,
    pub(crate) since: u64,
}

/// The name of the memfd a `retry` holds while it supervises its child `pid` (an `attempt`, or
/// a hook): a `retry` above it
/// reads it (`supervised_by`) to know which of its children that is, and what it signals
/// itself. A name no other program gives (`ls -l /proc/PID/fd` shows it as
/// `/memfd:retry-attempt-PID (deleted)`).
pub(crate) fn supervision_name(pid: libc::pid_t, attempt: bool) -> String {
    let kind = if attempt { "attempt" } else { "hook" };
    format!("retry-{kind}-{pid}")
}

/// The name of the memfd a `retry` holds from when it begins ending its child to the end of
/// that child's grace (`retry-ending-PID`, or `retry-ending-PID-ATTEMPT-SINCE` where it adopts
/// what is re-parented to it).
pub(crate) fn ending_name(ending: EndingChild) -> String {
    match ending.adopting {
        Some(Adopting { attempt, since }) => {
            format!("retry-ending-{}-{attempt}-{since}", ending.pid)
        }
        None => format!("retry-ending-{}", ending.pid),
    }
}

/// How many of a process's descriptors are looked at for the memfds `supervision_name` and
/// `ending_name` name: made while `retry` holds only its own few, they take the lowest
/// numbers free; a `retry` started with thousands open is not read through, which would delay
/// the signal.
const SUPERVISION_SCANNED: usize = 64;

/// The child process `pid` supervises, if it is a `retry` that says so (see
/// `supervision_name`), with how it is ending it (`ending_name`), read in its /proc/PID/fd,
/// lowest numbers first. Only a memfd closed on exec is its own: one it was handed across its
/// exec (by whatever exec'd it, under any name) is not.
fn supervised_by(pid: libc::pid_t) -> Option<Supervising> {
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let (mut supervising, mut ending) = (None, None);
    for descriptor in descriptors.flatten().take(SUPERVISION_SCANNED) {
        let Some(said) = std::fs::read_link(descriptor.path())
            .ok()
            .and_then(|link| retry_memfd(link.to_str()?))
        else {
            continue;
        };
        let own = || {
            let number = descriptor.file_name();
            let info =
                std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", number.to_str()?)).ok()?;
            let flags = info.lines().find_map(|line| line.strip_prefix("flags:"))?;
            let flags = u32::from_str_radix(flags.trim(), 8).ok()?;
            Some(flags & libc::O_CLOEXEC as u32 != 0)
        };
        if own() != Some(true) {
            continue;
        }
        match said {
            RetryMemfd::Supervising(said) => supervising = supervising.or(Some(said)),
            RetryMemfd::Ending(said) => ending = ending.or(Some(said)),
        }
    }
    let mut supervising: Supervising = supervising?;
    supervising.ending = ending.filter(|ending| ending.pid == supervising.pid);
    Some(supervising)
}

/// What a memfd's name says, one of `retry`'s.
#[derive(Debug, PartialEq, Eq)]
enum RetryMemfd {
    Supervising(Supervising),
    Ending(EndingChild),
}

/// What a descriptor's link text (`/memfd:NAME (deleted)`) says, if NAME is a
/// `supervision_name` or an `ending_name`.
fn retry_memfd(link: &str) -> Option<RetryMemfd> {
    let name = link
        .strip_prefix("/memfd:retry-")?
        .strip_suffix(" (deleted)")?;
    let (kind, rest) = name.split_once('-')?;
    let number = |text: &str| text.parse().ok().filter(|&number: &u64| number > 0);
    let pid = |text: &str| number(text).and_then(|pid| libc::pid_t::try_from(pid).ok());
    match kind {
        "attempt" | "hook" => Some(RetryMemfd::Supervising(Supervising {
            pid: pid(rest)?,
            attempt: kind == "attempt",
            ending: None,
        })),
        "ending" => {
            let mut fields = rest.split('-');
            let ending_pid = pid(fields.next()?)?;
            let adopting = match (fields.next(), fields.next(), fields.next()) {
                (None, None, None) => None,
                (Some(attempt), Some(since), None) => Some(Adopting {
                    attempt: number(attempt)?,
                    since: since.parse().ok()?,
                }),
                _ => return None,
            };
            Some(RetryMemfd::Ending(EndingChild {
                pid: ending_pid,
                adopting,
            }))
        }
        _ => None,
    }
}

/// What, below `retry`, nested `retry`s that pass the terminating signal on (see `passes_on`)
/// signal themselves: each one's running attempt's group, what that attempt started, in the
/// group or out of it, and what the nested one adopted since its attempt started, by the same
/// marks as this one's sweep (`adopted_by`). Kept from look to look, from the first, before
/// any signal is sent: once an attempt's shell has died of the signal and what it started is
/// re-parented, or a process has left the group, /proc shows no more whose they are. Sent the
/// terminating signal by both `retry`s, a command would hear it twice.
#[derive(Default)]
pub(crate) struct Relayed {
    /// Each nested `retry` seen with a running attempt, and that attempt, as first seen.
    attempts: BTreeMap<Known, NestedAttempt>,
    /// The processes found to be theirs.
    processes: BTreeSet<Known>,
}

/// A nested `retry`'s running attempt (or hook): its group, when it started, and what it adopts
/// of what is re-parented to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NestedAttempt {
    group: libc::pid_t,
    since: u64,
    adopts: Adopts,
}

/// What a nested `retry` takes for its running child's of what is re-parented to it since that
/// child started, by the same rule as this one's sweep (`adopted_by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Adopts {
    /// Marked with this attempt's number, or not marked.
    Marked(u64),
    /// Everything: the attempt's environment cannot be read, so neither can its number.
    All,
    /// Nothing: a hook is swept by parentage only.
    Nothing,
}

impl Relayed {
    /// Whether a nested `retry` signals `process` itself.
    pub(crate) fn contains(&self, process: &Known) -> bool {
        self.processes.contains(process)
    }

    /// Notes `nested`, with `children`, a `retry` that passes the terminating signal on, the
    /// first time it is seen running an attempt.
    fn note(&mut self, nested: &ProcessEntry, children: &[ProcessEntry], source: &dyn Source) {
        let known = (nested.pid, nested.start);
        if self.attempts.contains_key(&known) {
            return;
        }
        let Some(supervising) = source.supervised(nested.pid) else {
            return;
        };
        if let Some(attempt) = attempt_of(nested, children, supervising, &|pid| source.environ(pid))
        {
            self.attempts.insert(known, attempt);
        }
    }

    /// Whether `entry`, a child of `parent` (`None`: of this `retry`), is a nested `retry`'s
    /// to signal: found so before, in the group of its attempt, below one that is, or adopted
    /// by it since its attempt started. Since, by a later clock tick: what the nested `retry`
    /// held before its attempt started (a job of the shell that exec'd it, which may carry
    /// the same `RETRY_ATTEMPT`) it never signals, and may have started in the attempt's tick;
    /// a daemon of the attempt's that did too is sent the signal by both.
    fn judge(
        &mut self,
        entry: &ProcessEntry,
        parent: Option<&ProcessEntry>,
        source: &dyn Source,
    ) -> bool {
        let known = (entry.pid, entry.start);
        let adopted = |attempt: &NestedAttempt| {
            entry.start > attempt.since
                && match attempt.adopts {
                    Adopts::Marked(number) => marked_for(&source.environ(entry.pid), number),
                    Adopts::All => true,
                    Adopts::Nothing => false,
                }
        };
        let theirs = self.processes.contains(&known)
            || self
                .attempts
                .values()
                .any(|attempt| attempt.group == entry.group)
            || parent.is_some_and(|parent| {
                let parent = (parent.pid, parent.start);
                self.processes.contains(&parent) || self.attempts.get(&parent).is_some_and(adopted)
            });
        if theirs {
            self.processes.insert(known);
        }
        theirs
    }

    /// `note` and `judge` over `listed`, the processes of an attempt's cgroup as /proc shows
    /// them now, of which those `passes_on(signal)` tells are nested `retry`s.
    pub(crate) fn judge_listed(&mut self, listed: &[ProcessEntry], signal: i32) {
        self.judge_in(listed, &|pid| passes_on(pid, signal), &Proc);
    }

    /// `judge_listed` in `source`: `listed` has no order, so each is judged again until none
    /// more is found theirs.
    fn judge_in(
        &mut self,
        listed: &[ProcessEntry],
        nested: &dyn Fn(libc::pid_t) -> bool,
        source: &dyn Source,
    ) {
        for nested in listed.iter().filter(|entry| nested(entry.pid)) {
            let children: Vec<ProcessEntry> = source
                .children(nested.pid, nested.threads)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|child| source.entry(child))
                .collect();
            self.note(nested, &children, source);
        }
        loop {
            let before = self.processes.len();
            for entry in listed {
                let parent = listed.iter().find(|parent| parent.pid == entry.parent);
                self.judge(entry, parent, source);
            }
            if self.processes.len() == before {
                return;
            }
        }
    }
}

/// Whether process `pid` is a nested `retry` that passes `signal` on to its attempt: the
/// shutdown signals and SIGUSR1/2, but not one it keeps ignored as it was started with (SIGHUP
/// under `nohup`), nor one that ends it at once (SIGALRM, ...).
pub(crate) fn passes_on(pid: libc::pid_t, signal: i32) -> bool {
    let passed = match signal {
        libc::SIGTERM | libc::SIGINT | libc::SIGQUIT | libc::SIGUSR1 | libc::SIGUSR2 => true,
        libc::SIGHUP => !ignores(pid, signal),
        _ => false,
    };
    passed && runs_this_program(pid)
}

/// Whether process `pid` ignores `signal`, by its `SigIgn` in /proc/PID/status (unknown: no).
fn ignores(pid: libc::pid_t, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

/// `adopted_by` for the environment `environ` (NUL-separated `NAME=VALUE`s, as
/// /proc/PID/environ gives them). With no mark, the process is taken by lineage alone: a
/// daemon of the attempt's may have written its title over its environment, cleared it, or
/// replaced it whole (`env -i PATH=... daemon`, a `subprocess` with `env=`), which cannot be
/// told from a whole environment no attempt passed on.
fn marked_for(environ: &[u8], attempt: u64) -> bool {
    let mut marks = environ
        .split(|&byte| byte == 0)
        .filter_map(|variable| variable.strip_prefix(b"RETRY_ATTEMPT="));
    let ours = attempt.to_string();
    match marks.next() {
        None => true,
        Some(first) => first == ours.as_bytes() || marks.any(|mark| mark == ours.as_bytes()),
    }
}

/// Whether /proc shows this PID namespace, where a process's number in /proc is the one its
/// system calls take. Not so under `unshare --fork --pid` without a /proc of its own: there
/// /proc is the parent namespace's, and no number read in it may be signalled or followed.
pub(crate) fn proc_is_ours() -> bool {
    static OURS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OURS.get_or_init(|| {
        let shown = std::fs::read_link("/proc/self")
            .ok()
            .and_then(|link| link.to_str()?.parse::<u32>().ok());
        shown == Some(std::process::id())
    })
}

/// The process `pid` as /proc shows it now, if it is there.
pub(crate) fn entry_of(pid: libc::pid_t) -> Option<ProcessEntry> {
    let line = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &line)
}

/// The children of every thread of `pid` (which has `threads` of them: with one, its list is
/// read without listing its tasks); `None` when the kernel keeps no such lists (or the process
/// is gone).
fn children_of(pid: libc::pid_t, threads: u64) -> Option<Vec<libc::pid_t>> {
    let parse = |text: &str| -> Vec<libc::pid_t> {
        text.split_ascii_whitespace()
            .filter_map(|pid| pid.parse().ok())
            .collect()
    };
    if threads == 1 {
        return std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .ok()
            .map(|text| parse(&text));
    }
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut children = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        any = true;
        children.extend(parse(&text));
    }
    any.then_some(children)
}

/// Every process /proc shows that could be read.
fn every_process() -> Vec<ProcessEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let name = entry.ok()?.file_name();
        entry_of(name.to_str()?.parse().ok()?)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn entry(pid: i32, parent: i32, group: i32, start: u64) -> ProcessEntry {
        ProcessEntry {
            pid,
            parent,
            group,
            session: group,
            start,
            zombie: false,
            threads: 1,
        }
    }

    /// A process that leads a group of its own.
    fn leader(pid: i32, parent: i32, start: u64) -> ProcessEntry {
        entry(pid, parent, pid, start)
    }

    /// `entries`, with the `RETRY_ATTEMPT` each of `marks` gives a process (no other
    /// environment can be read), and the child each of `supervised` says it supervises, an
    /// attempt or not (a hook).
    fn table(
        entries: &[ProcessEntry],
        marks: &[(i32, u64)],
        supervised: &[(i32, i32, bool)],
    ) -> Table {
        let mut given = Fixture::default();
        for &(pid, number) in marks {
            let environ = format!("HOME=/\0RETRY_ATTEMPT={number}\0");
            given.environs.insert(pid, environ.into_bytes());
        }
        for &(pid, child, attempt) in supervised {
            let supervising = Supervising {
                pid: child,
                attempt,
                ending: None,
            };
            given.supervised.insert(pid, supervising);
        }
        Table {
            entries: entries.to_vec(),
            given: Some(given),
        }
    }

    /// What a walk over `table` finds of the attempt `root` (started at `since`) of retry 100,
    /// whose helper 500 is spared, in the order found.
    fn left_behind(
        table: &[ProcessEntry],
        root: i32,
        since: u64,
        earlier: &mut BTreeSet<Known>,
        adopted: &dyn Fn(i32) -> bool,
    ) -> Vec<i32> {
        let lineage = Lineage {
            root,
            since,
            own: 100,
            spared: &[500],
            adopted,
            nested: &|_| false,
        };
        let mut found = Vec::new();
        let table = self::table(table, &[], &[]);
        let children = table.children(100, 2).unwrap();
        let whole = walk_in(
            &table,
            children,
            &lineage,
            earlier,
            &mut Relayed::default(),
            None,
            &mut |entry, _| {
                found.push(entry.pid);
            },
        );
        assert!(whole);
        found.sort_unstable();
        found
    }

    #[test]
    fn a_stat_line_is_read_from_after_the_name() {
        let line = b"4242 (a) b) (c 1) S 7 4242 4242 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 123456 1 2 3\n";
        assert_eq!(parse_stat(4242, line), Some(entry(4242, 7, 4242, 123_456)));
        let zombie = b"9 (sh) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0\n";
        assert!(parse_stat(9, zombie).unwrap().zombie);
        // A main thread ended by pthread_exit, two threads running on: alive.
        let headless = b"9 (sh) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 3 0 77 0 0\n";
        assert!(!parse_stat(9, headless).unwrap().zombie);
        assert_eq!(parse_stat(9, headless).unwrap().threads, 3);
        assert_eq!(parse_stat(1, b"1 (init) S 0 1"), None, "cut short");
        assert_eq!(parse_stat(1, b"no parenthesis"), None);
        assert_eq!(parse_stat(1, b"1 (x) S a b c"), None);
    }

    /// retry is 100; the attempt 200 started at tick 50, in its own group.
    #[test]
    fn what_an_attempt_leaves_behind() {
        let table = [
            entry(100, 1, 100, 10),
            // The attempt, a child in its group, and a setsid'd child with a child of its own.
            entry(200, 100, 200, 50),
            entry(201, 200, 200, 51),
            entry(202, 200, 202, 52),
            entry(203, 202, 202, 53),
            // A daemon of the attempt's re-parented to retry, with a child.
            entry(300, 100, 300, 60),
            entry(301, 300, 300, 61),
            // An earlier attempt's background process, re-parented before, and its child
            // forked since: left alone.
            entry(400, 100, 400, 20),
            entry(401, 400, 400, 70),
            // A daemon that process started since, re-parented to retry: not the attempt's.
            entry(402, 100, 402, 71),
            // retry's own helper, started since, and its child: spared.
            entry(500, 100, 100, 55),
            entry(501, 500, 100, 56),
            // Strangers.
            entry(600, 1, 600, 80),
            entry(601, 600, 600, 81),
        ];
        let ours = |pid| pid != 402;
        let none = || BTreeSet::new();
        let all = [200, 201, 202, 203, 300, 301];
        assert_eq!(left_behind(&table, 200, 50, &mut none(), &ours), all);
        // Once the attempt is gone, its children are re-parented to retry.
        let after: Vec<ProcessEntry> = table
            .iter()
            .filter(|e| e.pid != 200)
            .map(|e| ProcessEntry {
                parent: if e.parent == 200 { 100 } else { e.parent },
                ..*e
            })
            .collect();
        assert_eq!(
            left_behind(&after, 200, 50, &mut none(), &ours),
            [201, 202, 203, 300, 301]
        );
        // Unmarked, a re-parented process is not taken; the attempt's own tree still is.
        assert_eq!(
            left_behind(&table, 200, 50, &mut none(), &|_| false),
            [200, 201, 202, 203]
        );
        assert!(left_behind(&table, 999, u64::MAX, &mut none(), &ours).is_empty());
        // Another process has the attempt's number now: its children are not the attempt's.
        let reused = [
            entry(100, 1, 100, 10),
            entry(200, 100, 200, 90),
            entry(201, 200, 200, 91),
        ];
        assert!(left_behind(&reused, 200, 50, &mut none(), &ours).is_empty());
    }

    /// What `retry` held before the attempt started is never the attempt's,
    /// though it started in the same clock tick and carries no mark (a daemon that wrote its
    /// title over its environment), and neither is what it starts, also once re-parented.
    #[test]
    fn what_retry_held_before_the_attempt_is_never_the_attempts() {
        let table = [
            entry(100, 1, 100, 10),
            entry(200, 100, 200, 50),
            // An earlier attempt's daemon, started in the attempt's tick, and its child.
            entry(300, 100, 300, 50),
            entry(301, 300, 300, 60),
        ];
        let unmarked = |_| true;
        let mut earlier = BTreeSet::from([(300, 50)]);
        assert_eq!(left_behind(&table, 200, 50, &mut earlier, &unmarked), [200]);
        assert!(earlier.contains(&(301, 60)), "its child is followed");
        // The daemon has gone: its child is re-parented to retry, and still not the attempt's.
        let after = [table[0], table[1], entry(301, 100, 300, 60)];
        assert_eq!(left_behind(&after, 200, 50, &mut earlier, &unmarked), [200]);
        // Had it been recorded with another start, the number would be another process's.
        let mut other = BTreeSet::from([(300, 49)]);
        assert_eq!(
            left_behind(&table, 200, 50, &mut other, &unmarked),
            [200, 300, 301]
        );
    }

    /// A nested `retry`'s running attempt is the child it says it supervises, where that
    /// leads a group of its own: not an older or a younger one that leads one (a job of the
    /// shell it was exec'd from, an earlier attempt's daemon, a daemon of this attempt's
    /// re-parented to it), nor one in its own group (`--foreground`). Once that child is gone,
    /// what the nested `retry` said as it began ending it: without that, none.
    #[test]
    fn a_nested_retrys_running_attempt_is_the_child_it_says_it_supervises() {
        let nested = entry(210, 200, 200, 51);
        let job = leader(211, 210, 50);
        let daemon = leader(212, 210, 52);
        let attempt = leader(213, 210, 53);
        let helper = entry(214, 210, 200, 54);
        let younger_daemon = leader(218, 210, 70);
        let children = [job, daemon, attempt, helper, younger_daemon];
        let environ = |pid: i32| match pid {
            213 => b"RETRY_ATTEMPT=3\0".to_vec(),
            _ => Vec::new(),
        };
        let attempt_of =
            |children: &[ProcessEntry], pid: i32, attempt: bool, ending: Option<EndingChild>| {
                let supervising = Supervising {
                    pid,
                    attempt,
                    ending,
                };
                attempt_of(&nested, children, supervising, &environ)
            };
        let running = |group, since, adopts| {
            Some(NestedAttempt {
                group,
                since,
                adopts,
            })
        };
        let marked = running(213, 53, Adopts::Marked(3));
        assert_eq!(attempt_of(&children, 213, true, None), marked);
        assert_eq!(
            attempt_of(&children, 213, false, None),
            running(213, 53, Adopts::Nothing),
            "a hook adopts nothing"
        );
        assert_eq!(
            attempt_of(&children, 214, true, None),
            None,
            "in its own group"
        );
        // Under --foreground the attempt is in the nested retry's own group.
        let foreground = entry(216, 210, 200, 60);
        assert_eq!(attempt_of(&[foreground], 216, true, None), None);
        // A child that joined another's group leads none.
        assert_eq!(
            attempt_of(&[entry(217, 210, 211, 61)], 217, true, None),
            None
        );
        // Its environment cannot be read: what is re-parented to the nested retry since is its.
        let unread = leader(219, 210, 71);
        assert_eq!(
            attempt_of(&[unread], 219, true, None),
            running(219, 71, Adopts::All)
        );
        // Gone: what the nested retry said as it began ending it, and what it did not say
        // (the child ended on its own) is nothing.
        assert_eq!(
            attempt_of(&children, 9999, true, None),
            None,
            "gone, unsaid"
        );
        let adopting = Some(Adopting {
            attempt: 4,
            since: 80,
        });
        let ending = |adopting| {
            Some(EndingChild {
                pid: 9999,
                adopting,
            })
        };
        assert_eq!(
            attempt_of(&children, 9999, true, ending(adopting)),
            running(9999, 80, Adopts::Marked(4))
        );
        assert_eq!(
            attempt_of(&children, 9999, false, ending(None)),
            running(9999, u64::MAX, Adopts::Nothing)
        );
        // While the child is there, it is read as it is now.
        let said = Some(EndingChild { pid: 213, adopting });
        assert_eq!(attempt_of(&children, 213, true, said), marked);
    }

    /// The memfds a `retry` holds while it supervises a child, and while it ends it, say that
    /// child and how, and nothing else reads as such a name.
    #[test]
    fn a_supervised_child_is_read_from_the_memfds_names() {
        let said = |name: String| retry_memfd(&format!("/memfd:{name} (deleted)"));
        for (pid, attempt) in [(4242, true), (7, false)] {
            let supervising = Supervising {
                pid,
                attempt,
                ending: None,
            };
            let expected = Some(RetryMemfd::Supervising(supervising));
            assert_eq!(said(supervision_name(pid, attempt)), expected);
        }
        let adopting = Adopting {
            attempt: 3,
            since: 0,
        };
        for ending in [
            EndingChild {
                pid: 4242,
                adopting: None,
            },
            EndingChild {
                pid: 4242,
                adopting: Some(adopting),
            },
        ] {
            assert_eq!(said(ending_name(ending)), Some(RetryMemfd::Ending(ending)));
        }
        for link in [
            "/memfd:retry-attempt-12",
            "/memfd:retry-daemon-12 (deleted)",
            "/memfd:retry-attempt-0 (deleted)",
            "/memfd:retry-attempt--3 (deleted)",
            "/memfd:retry-attempt-x (deleted)",
            "/memfd:retry-attempt-12-3 (deleted)",
            "/memfd:retry-ending-12-3 (deleted)",
            "/memfd:retry-ending-12-0-5 (deleted)",
            "/memfd:retry-ending-12-3-5-6 (deleted)",
            "/memfd:retry-ending-12-3-x (deleted)",
            "/memfd:retry-ending- (deleted)",
            "/memfd:retry-ending-99999999999-3-5 (deleted)",
            "/memfd:other-attempt-12 (deleted)",
            "/tmp/retry-attempt-12 (deleted)",
            "anon_inode:[pidfd]",
            "pipe:[123]",
        ] {
            assert_eq!(retry_memfd(link), None, "{link}");
        }
    }

    /// What a process says it supervises is read in its descriptors, among the lowest numbers
    /// only: one past them is not looked for; and how it ends it, where it says it of that
    /// child.
    #[test]
    fn what_a_process_supervises_is_read_in_its_lowest_descriptors() {
        use std::io::BufRead;
        // A child process, so that what the other tests of this process hold is not in the way.
        let script = "import os, sys
held = [os.open('/dev/null', os.O_RDONLY) for _ in range(int(sys.argv[1]))]
for name in sys.argv[3:]:
    os.memfd_create(name, os.MFD_CLOEXEC if sys.argv[2] == 'own' else 0)
print('ready', flush=True)
sys.stdin.read()";
        let supervising = supervision_name(4242, true);
        let adopting = Some(Adopting {
            attempt: 2,
            since: 77,
        });
        let ending = |pid| ending_name(EndingChild { pid, adopting });
        let expected = |ending: Option<EndingChild>| {
            Some(Supervising {
                pid: 4242,
                attempt: true,
                ending,
            })
        };
        let said_ending = Some(EndingChild {
            pid: 4242,
            adopting,
        });
        // One not closed on exec could have been handed across it: not its own.
        let cases = [
            (0, "own", vec![supervising.clone()], expected(None)),
            (
                SUPERVISION_SCANNED + 10,
                "own",
                vec![supervising.clone()],
                None,
            ),
            (0, "inherited", vec![supervising.clone()], None),
            (
                0,
                "own",
                vec![ending(4242), supervising.clone()],
                expected(said_ending),
            ),
            (
                0,
                "own",
                vec![supervising.clone(), ending(4243)],
                expected(None),
            ),
            (0, "own", vec![ending(4242)], None),
        ];
        for (held, whose, names, found) in cases {
            // python3 is on every machine the tests run on (CI starts with it): missing, this fails.
            let mut child = std::process::Command::new("python3")
                .args(["-c", script, &held.to_string(), whose])
                .args(&names)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("python3");
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(
                supervised_by(child.id() as i32),
                found,
                "{held} held first, {whose}: {names:?}"
            );
            drop(child.stdin.take());
            child.wait().unwrap();
        }
        assert_eq!(supervised_by(i32::MAX), None, "no such process");
    }

    /// retry 100's attempt 200, a shell running a nested retry (210) whose attempt 2 runs.
    fn nested_table() -> Vec<ProcessEntry> {
        vec![
            entry(100, 1, 100, 10),
            // The attempt: a shell, with a nested retry in its group, and a child leading a
            // group of its own.
            entry(200, 100, 200, 50),
            entry(210, 200, 200, 51),
            entry(220, 200, 220, 52),
            // The nested retry's attempt 2, a child in its group, and a setsid'd one.
            entry(211, 210, 211, 53),
            entry(212, 211, 211, 54),
            leader(213, 211, 55),
            // A daemon of its attempt 2's, re-parented to it; one its attempt 1 left, and
            // that one's child, forked since and re-parented too; a younger one of attempt
            // 1's, leading a group of its own.
            leader(214, 210, 56),
            leader(215, 210, 52),
            entry(216, 210, 215, 57),
            leader(217, 210, 58),
            // Jobs the shell started before it exec'd the nested retry, one of them in the
            // tick its attempt started, carrying the same number (the outer retry's attempt 2).
            entry(209, 210, 209, 50),
            leader(208, 210, 53),
        ]
    }

    /// The marks in `nested_table`: the nested retry's attempts' and their daemons'.
    const NESTED_MARKS: [(i32, u64); 6] =
        [(211, 2), (214, 2), (215, 1), (216, 1), (217, 1), (208, 2)];

    /// What each retry in `nested_table` says it supervises: its attempt.
    const NESTED_SUPERVISED: [(i32, i32, bool); 2] = [(210, 211, true), (200, 220, true)];

    /// Walks `table` (see `nested_table`), telling the nested retrys by `nested`: what it finds,
    /// each with whether a nested retry signals it itself.
    fn walk_nested(
        table: &Table,
        nested: &dyn Fn(i32) -> bool,
        relayed: &mut Relayed,
    ) -> Vec<(i32, bool)> {
        let lineage = Lineage {
            root: 200,
            since: 50,
            own: 100,
            spared: &[],
            adopted: &|_| true,
            nested,
        };
        let mut found = Vec::new();
        let children = table.children(100, 2).unwrap();
        let mut record = |entry: &ProcessEntry, relayed| found.push((entry.pid, relayed));
        let whole = walk_in(
            table,
            children,
            &lineage,
            &mut BTreeSet::new(),
            relayed,
            None,
            &mut record,
        );
        assert!(whole);
        found.sort_unstable();
        found
    }

    /// Each of `found`, with whether it is in `relayed`.
    fn relayed_among(found: &[i32], relayed: &[i32]) -> Vec<(i32, bool)> {
        found
            .iter()
            .map(|&pid| (pid, relayed.contains(&pid)))
            .collect()
    }

    /// What a nested `retry` signals itself is found so: its running attempt's group, what
    /// that attempt started out of the group, and what it adopted since, marked as its
    /// attempt's or not marked; not the nested `retry` itself, nor what is beside it, nor what
    /// its earlier attempt left, nor the job of the shell that exec'd it.
    #[test]
    fn what_a_nested_retry_signals_itself_is_found_as_its_own() {
        let found = [200, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 220];
        let table = table(&nested_table(), &NESTED_MARKS, &NESTED_SUPERVISED);
        let walk =
            |nested: &dyn Fn(i32) -> bool| walk_nested(&table, nested, &mut Relayed::default());
        let theirs = [211, 212, 213, 214];
        assert_eq!(walk(&|pid| pid == 210), relayed_among(&found, &theirs));
        assert_eq!(walk(&|_| false), relayed_among(&found, &[]));
        // The attempt's root is a retry too: its attempt is the group 220 leads (the nested
        // retry in its own group is no attempt of its).
        assert_eq!(
            walk(&|pid| pid == 200 || pid == 210),
            relayed_among(&found, &[211, 212, 213, 214, 220])
        );
        // Where its attempt's environment cannot be read, what it adopted since is its.
        let unmarked = self::table(&nested_table(), &[], &NESTED_SUPERVISED);
        assert_eq!(
            walk_nested(&unmarked, &|pid| pid == 210, &mut Relayed::default()),
            relayed_among(&found, &[211, 212, 213, 214, 216, 217])
        );
        // Running a hook, it takes nothing re-parented to it for the hook's: only its group
        // and what is below that.
        let hook = self::table(&nested_table(), &NESTED_MARKS, &[(210, 211, false)]);
        assert_eq!(
            walk_nested(&hook, &|pid| pid == 210, &mut Relayed::default()),
            relayed_among(&found, &[211, 212, 213])
        );
        // Between two attempts, it says it supervises none: nothing is its.
        let between = self::table(&nested_table(), &NESTED_MARKS, &[]);
        assert_eq!(
            walk_nested(&between, &|pid| pid == 210, &mut Relayed::default()),
            relayed_among(&found, &[])
        );
    }

    /// What a nested `retry` signals itself once its attempt's shell is gone (it died of the
    /// nested one's own signal, and was collected) is found by what that one said as it began
    /// ending it: the group, and what it adopts since; where it said nothing (the attempt ended
    /// on its own), nothing is its.
    #[test]
    fn what_a_nested_retry_ends_is_its_own_once_its_attempt_is_gone() {
        // nested_table without 211: 212 and 213 were re-parented to the nested retry.
        let gone: Vec<ProcessEntry> = nested_table()
            .into_iter()
            .filter(|entry| entry.pid != 211)
            .map(|entry| match entry.parent {
                211 => ProcessEntry {
                    parent: 210,
                    ..entry
                },
                _ => entry,
            })
            .collect();
        let found = [200, 208, 209, 210, 212, 213, 214, 215, 216, 217, 220];
        let walk = |ending| {
            let mut table = table(&gone, &NESTED_MARKS, &[]);
            let supervising = Supervising {
                pid: 211,
                attempt: true,
                ending,
            };
            table
                .given
                .as_mut()
                .unwrap()
                .supervised
                .insert(210, supervising);
            walk_nested(&table, &|pid| pid == 210, &mut Relayed::default())
        };
        let adopting = Some(Adopting {
            attempt: 2,
            since: 53,
        });
        assert_eq!(
            walk(Some(EndingChild { pid: 211, adopting })),
            relayed_among(&found, &[212, 213, 214])
        );
        assert_eq!(
            walk(Some(EndingChild {
                pid: 211,
                adopting: None
            })),
            relayed_among(&found, &[212])
        );
        assert_eq!(walk(None), relayed_among(&found, &[]));
    }

    /// What a nested `retry` was once found to signal stays its own, look after look: its
    /// attempt's shell has died of the signal and what it started was re-parented to the
    /// nested retry, a member has left the group, or the nested retry itself has gone.
    #[test]
    fn what_a_nested_retry_signals_stays_its_own_from_look_to_look() {
        let mut relayed = Relayed::default();
        let first = table(&nested_table(), &NESTED_MARKS, &NESTED_SUPERVISED);
        walk_nested(&first, &|pid| pid == 210, &mut relayed);
        let later = [
            entry(100, 1, 100, 10),
            entry(200, 100, 200, 50),
            entry(210, 200, 200, 51),
            // 211 died: 212 and 213 were re-parented to the nested retry, and 212 forked a
            // child that left the group.
            entry(212, 210, 211, 54),
            leader(213, 210, 55),
            leader(230, 212, 80),
            // What 214 forked in the group it leads; 215's child is still not its.
            leader(214, 210, 56),
            entry(231, 214, 214, 81),
            entry(216, 210, 215, 57),
        ];
        let later = table(&later, &NESTED_MARKS, &[]);
        assert_eq!(
            walk_nested(&later, &|pid| pid == 210, &mut relayed),
            relayed_among(
                &[200, 210, 212, 213, 214, 216, 230, 231],
                &[212, 213, 214, 230, 231]
            )
        );
        // The nested retry has gone too: what it left is re-parented to retry.
        let orphaned = [
            entry(100, 1, 100, 10),
            entry(212, 100, 211, 54),
            leader(213, 100, 55),
            leader(230, 212, 80),
            entry(216, 100, 215, 57),
        ];
        let orphaned = table(&orphaned, &NESTED_MARKS, &[]);
        assert_eq!(
            walk_nested(&orphaned, &|_| false, &mut relayed),
            relayed_among(&[212, 213, 216, 230], &[212, 213, 230])
        );
    }

    /// In an attempt's cgroup, listed in no order (a child before its parent), what a nested
    /// `retry` signals itself is found as in a walk.
    #[test]
    fn what_a_nested_retry_signals_is_found_in_a_list_in_any_order() {
        let entries = nested_table();
        let source = table(&entries, &NESTED_MARKS, &NESTED_SUPERVISED);
        let mut listed: Vec<ProcessEntry> = entries[1..].to_vec();
        listed.sort_by_key(|entry| std::cmp::Reverse(entry.start));
        let mut relayed = Relayed::default();
        relayed.judge_in(&listed, &|pid| pid == 210, &source);
        let mut theirs: Vec<i32> = listed
            .iter()
            .filter(|entry| relayed.contains(&(entry.pid, entry.start)))
            .map(|entry| entry.pid)
            .collect();
        theirs.sort_unstable();
        assert_eq!(theirs, [211, 212, 213, 214]);
    }

    /// This process runs this program; a child running another (a `sleep`) does not.
    #[test]
    fn a_nested_retry_runs_this_same_program() {
        assert!(runs_this_program(std::process::id() as i32));
        let mut sleep = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(!runs_this_program(sleep.id() as i32));
        sleep.kill().unwrap();
        sleep.wait().unwrap();
        assert!(!runs_this_program(i32::MAX), "no such process");
        let own = std::process::id() as i32;
        assert!(passes_on(own, libc::SIGTERM) && !passes_on(own, libc::SIGALRM));
    }

    /// A walk past its bound stops, and says it was cut short.
    #[test]
    fn a_walk_past_its_bound_is_cut_short() {
        let table = table(
            &[entry(100, 1, 100, 10), entry(200, 100, 200, 50)],
            &[],
            &[],
        );
        let lineage = Lineage {
            root: 200,
            since: 50,
            own: 100,
            spared: &[],
            adopted: &|_| true,
            nested: &|_| false,
        };
        let mut found = 0;
        let past = Some(Instant::now());
        let children = table.children(100, 2).unwrap();
        assert!(!walk_in(
            &table,
            children,
            &lineage,
            &mut BTreeSet::new(),
            &mut Relayed::default(),
            past,
            &mut |_, _| found += 1
        ));
        assert_eq!(found, 0);
    }

    /// The sweep's bound, on a fake clock: rounds that always find more (a tree that forks
    /// as it is killed, each round taking 7 ms) stop at the first round that ends past the
    /// bound; rounds that find none stop at once.
    #[test]
    fn rounds_stop_at_their_bound_however_many_they_find() {
        let start = Instant::now();
        let clock = std::cell::Cell::new(start);
        let until = start + Duration::from_millis(80);
        let mut rounds = 0;
        let left = rounds_until(
            || {
                rounds += 1;
                clock.set(clock.get() + Duration::from_millis(7));
                true
            },
            || clock.get(),
            until,
        );
        assert!(left);
        assert_eq!(rounds, 12, "the twelfth round ends at 84 ms");
        assert!(clock.get() < until + Duration::from_millis(7));
        let mut rounds = 0;
        let left = rounds_until(
            || {
                rounds += 1;
                rounds < 3
            },
            || start,
            until,
        );
        assert!(!left);
        assert_eq!(rounds, 3);
    }

    #[test]
    fn a_re_parented_process_is_the_attempts_by_its_mark_or_for_want_of_one() {
        let environ = b"PATH=/bin\0RETRY_ATTEMPT=7\0X_RETRY_ATTEMPT=9\0";
        assert!(marked_for(environ, 7));
        assert!(!marked_for(environ, 70) && !marked_for(environ, 9) && !marked_for(environ, 1));
        assert!(!marked_for(b"RETRY_ATTEMPT=77", 7));
        // No mark at all: a title written over it, a cleared or an unreadable environment.
        assert!(marked_for(b"", 7));
        assert!(marked_for(b"\0\0\0\0", 7));
        assert!(marked_for(b"mydaemon\0\0\0\0", 7));
        // One replaced whole (`env -i PATH=/bin daemon`).
        assert!(marked_for(b"PATH=/bin\0", 7));
    }

    #[test]
    fn this_process_reads_its_own_namespace_in_proc() {
        assert!(proc_is_ours());
    }

    #[test]
    fn what_this_process_holds_below_it_is_its_children() {
        let own = std::process::id() as i32;
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let start = entry_of(pid).map(|e| e.start);
        let below = below(own, &[]);
        let _ = child.kill();
        let _ = child.wait();
        assert!(below.contains(&(pid, start.unwrap())), "{below:?}");
        assert!(below.iter().all(|&(p, _)| p != own));
    }

    /// A signal goes through a pidfd to the process that was followed, and to no other.
    #[test]
    fn a_followed_process_is_signalled_and_seen_to_end() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let start = entry_of(pid).unwrap().start;
        assert!(
            Followed::new((pid, start + 1), true).is_none(),
            "another start"
        );
        let followed = Followed::new((pid, start), true).unwrap();
        assert_eq!(followed.ended(), Some(false));
        followed.signal(&[libc::SIGKILL]);
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert_eq!(followed.ended(), None, "collected");
    }
}
