//! What an attempt that `retry` ends leaves behind outside its process group: processes that
//! called `setsid` (still the attempt's descendants by parentage) and daemons that
//! double-forked (re-parented to `retry`, the subreaper). Found in /proc, walking down from
//! `retry` itself, only when `retry` ends an attempt (a timeout, `--max-time`, a signal):
//! nothing here runs on the path of an attempt that ends on its own.
//!
//! A process re-parented to `retry` is the ended attempt's when it started after the attempt did
//! and its environment holds the attempt's `RETRY_ATTEMPT=N`, or no `RETRY_ATTEMPT` at all (a
//! daemon that wrote its title over its environment, or cleared it): one that an earlier
//! attempt or a hook left (`RETRY_ATTEMPT` of another number) is left alone, however late it
//! was re-parented. What was found once, while still below the attempt, is followed by its
//! number and start time. What it cannot reach: a process that left through another subreaper
//! (a service manager), one of another user (`sudo`: kill(2) is refused), and one that a
//! nested `retry` left (it carries the inner run's numbers).

use std::collections::BTreeSet;

/// One process, as /proc/PID/stat gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) pid: libc::pid_t,
    pub(crate) parent: libc::pid_t,
    pub(crate) group: libc::pid_t,
    /// When it started, in clock ticks since boot.
    pub(crate) start: u64,
    /// Ended, not yet collected by its parent.
    pub(crate) zombie: bool,
}

/// Reads the line of /proc/PID/stat: the process's name (field 2, in parentheses) may hold
/// any byte, parentheses and spaces too, so the fields are counted from its last `)`.
pub(crate) fn parse_stat(pid: libc::pid_t, line: &[u8]) -> Option<Entry> {
    let close = line.iter().rposition(|&byte| byte == b')')?;
    let rest = std::str::from_utf8(&line[close + 1..]).ok()?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // Fields 3 (state), 4 (ppid), 5 (pgrp), ... 22 (starttime): index = field - 3.
    Some(Entry {
        pid,
        parent: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        zombie: *fields.first()? == "Z",
    })
}

/// The processes of `table` an ended attempt `root` (started at `since`) leaves behind: its
/// descendants, and those of the processes re-parented to `retry` (`own`) that are the
/// attempt's (`adopted`: started since it did, and marked as its), less `retry`'s own helpers
/// (`spared`) and theirs; `root` itself is not one. Every one started since `root` did: a
/// process with `root`'s number that started at another time is another process, whose
/// children are not the attempt's.
pub(crate) fn left_behind(
    table: &[Entry],
    root: libc::pid_t,
    since: u64,
    own: libc::pid_t,
    spared: &[libc::pid_t],
    adopted: &dyn Fn(libc::pid_t) -> bool,
) -> Vec<Entry> {
    let mut found: BTreeSet<libc::pid_t> = table
        .iter()
        .filter(|entry| {
            entry.parent == own
                && entry.pid != root
                && entry.start >= since
                && !spared.contains(&entry.pid)
                && adopted(entry.pid)
        })
        .map(|entry| entry.pid)
        .collect();
    if table
        .iter()
        .any(|entry| entry.pid == root && entry.start == since)
    {
        found.insert(root);
    }
    // Parentage is a tree: grow the set until no process's parent is newly in it.
    loop {
        let before = found.len();
        for entry in table {
            if entry.start >= since && found.contains(&entry.parent) {
                found.insert(entry.pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    table
        .iter()
        .filter(|entry| entry.pid != root && found.contains(&entry.pid))
        .copied()
        .collect()
}

/// `retry` (`own`) and every process below it, walking down through
/// /proc/PID/task/TID/children, less what is below a `spared` one: as dear as `retry`'s own
/// family, whatever else the machine runs. Where the kernel keeps no such lists, every process
/// of /proc.
pub(crate) fn family(own: libc::pid_t, spared: &[libc::pid_t]) -> Vec<Entry> {
    let Some(children) = children_of(own) else {
        return every_process();
    };
    let mut table: Vec<Entry> = entry_of(own).into_iter().collect();
    let mut seen: BTreeSet<libc::pid_t> = BTreeSet::from([own]);
    let mut to_visit: Vec<libc::pid_t> = children;
    while let Some(pid) = to_visit.pop() {
        if !seen.insert(pid) {
            continue;
        }
        let Some(entry) = entry_of(pid) else {
            continue;
        };
        table.push(entry);
        if !spared.contains(&pid) {
            to_visit.extend(children_of(pid).unwrap_or_default());
        }
    }
    table
}

/// Whether a process re-parented to `retry` (and started since the attempt did) is attempt
/// `attempt`'s, by the `RETRY_ATTEMPT` its environment holds: yes for that number, no for
/// another (an earlier attempt's, a hook's), and yes for none at all: a daemon that wrote its
/// title over its environment (redis, postgres, perl's `$0`), one that cleared it (`env -i`),
/// or one whose environment cannot be read (it made itself undumpable, as ssh-agent does).
pub(crate) fn adopted_by(pid: libc::pid_t, attempt: u64) -> bool {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    marked_for(&environ, attempt)
}

/// `adopted_by` for the environment `environ` (NUL-separated `NAME=VALUE`s, as
/// /proc/PID/environ gives them).
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

/// The process `pid` as /proc shows it now, if it is there.
pub(crate) fn entry_of(pid: libc::pid_t) -> Option<Entry> {
    let line = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &line)
}

/// The children of every thread of `pid`; `None` when the kernel keeps no such lists (or the
/// process is gone).
fn children_of(pid: libc::pid_t) -> Option<Vec<libc::pid_t>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut children = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        any = true;
        children.extend(
            text.split_ascii_whitespace()
                .filter_map(|pid| pid.parse::<libc::pid_t>().ok()),
        );
    }
    any.then_some(children)
}

/// Every process /proc shows that could be read.
fn every_process() -> Vec<Entry> {
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
    use super::*;

    fn entry(pid: i32, parent: i32, group: i32, start: u64) -> Entry {
        Entry {
            pid,
            parent,
            group,
            start,
            zombie: false,
        }
    }

    #[test]
    fn a_stat_line_is_read_from_after_the_name() {
        let line = b"4242 (a) b) (c 1) S 7 4242 4242 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 123456 1 2 3\n";
        assert_eq!(parse_stat(4242, line), Some(entry(4242, 7, 4242, 123_456)));
        let zombie = b"9 (sh) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0\n";
        assert!(parse_stat(9, zombie).unwrap().zombie);
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
            // retry's own helper, started since: spared.
            entry(500, 100, 100, 55),
            // Strangers.
            entry(600, 1, 600, 80),
            entry(601, 600, 600, 81),
        ];
        let ours = |pid| pid != 402;
        let left: Vec<i32> = left_behind(&table, 200, 50, 100, &[500], &ours)
            .iter()
            .map(|e| e.pid)
            .collect();
        assert_eq!(left, [201, 202, 203, 300, 301]);
        // Once the attempt is gone, its children are re-parented to retry.
        let after: Vec<Entry> = table
            .iter()
            .filter(|e| e.pid != 200)
            .map(|e| Entry {
                parent: if e.parent == 200 { 100 } else { e.parent },
                ..*e
            })
            .collect();
        let left: Vec<i32> = left_behind(&after, 200, 50, 100, &[500], &ours)
            .iter()
            .map(|e| e.pid)
            .collect();
        assert_eq!(left, [201, 202, 203, 300, 301]);
        // Unmarked, a re-parented process is not taken; the attempt's own tree still is.
        let left: Vec<i32> = left_behind(&table, 200, 50, 100, &[500], &|_| false)
            .iter()
            .map(|e| e.pid)
            .collect();
        assert_eq!(left, [201, 202, 203]);
        assert!(left_behind(&table, 999, u64::MAX, 100, &[], &ours).is_empty());
        // Another process has the attempt's number now: its children are not the attempt's.
        let reused = [
            entry(100, 1, 100, 10),
            entry(200, 1, 200, 90),
            entry(201, 200, 200, 91),
        ];
        assert!(left_behind(&reused, 200, 50, 100, &[], &ours).is_empty());
    }

    #[test]
    fn a_re_parented_process_is_the_attempts_by_its_mark_or_for_want_of_one() {
        let environ = b"PATH=/bin\0RETRY_ATTEMPT=7\0X_RETRY_ATTEMPT=9\0";
        assert!(marked_for(environ, 7));
        assert!(!marked_for(environ, 70) && !marked_for(environ, 9) && !marked_for(environ, 1));
        assert!(!marked_for(b"RETRY_ATTEMPT=77", 7));
        // No mark at all: a title written over it, a cleared or an unreadable environment.
        assert!(marked_for(b"", 7));
        assert!(marked_for(b"mydaemon\0\0\0\0", 7));
        assert!(marked_for(b"PATH=/bin\0", 7));
    }

    #[test]
    fn the_family_of_this_process_holds_it() {
        let own = std::process::id() as i32;
        let all = family(own, &[]);
        let me = all.iter().find(|e| e.pid == own).expect("this process");
        assert_eq!(entry_of(own).map(|e| e.start), Some(me.start));
        assert!(!me.zombie);
    }
}
