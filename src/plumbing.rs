//! Output plumbing for streams that a predicate reads (or `--hold-stdout` holds): one thread per
//! piped stream copies every byte to `retry`'s own stream as soon as it arrives (or into a
//! spool), and matches lines on the way.
//!
//! Streams no predicate reads are never piped: the child inherits them and nothing is copied.
//! If `retry`'s own stream is closed (the reader downstream has gone), copying stops and the pipe
//! is closed, so the attempt gets SIGPIPE like any writer to a closed pipe.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::lines::LineMatcher;
use crate::predicate::Matches;
use crate::settings::OutputRules;
use crate::spool::Spool;

/// Bytes read from a pipe at a time, and the pipe capacity asked for: fewer, larger transfers
/// mean fewer context switches between the attempt and this thread.
const CHUNK: usize = 256 * 1024;
const PIPE_CAPACITY: libc::c_int = 1024 * 1024;

/// After an attempt ends, how long its output may stay silent before `retry` stops waiting for
/// the end of it (a background process may hold the pipe open), and the most it waits in all.
const DRAIN_IDLE: Duration = Duration::from_millis(100);
const DRAIN_MAX: Duration = Duration::from_secs(2);

/// Where a watched stream's bytes go.
pub enum Sink {
    /// On at once to one of `retry`'s own streams (`None`: nowhere, no descriptor was left).
    Stream(Option<File>),
    /// Into a spool, until the driver says whether this attempt's output is the final one.
    Hold(Arc<Mutex<Spool>>),
}

impl Sink {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stream(Some(out)) => out.write_all(bytes),
            Sink::Stream(None) => Ok(()),
            Sink::Hold(spool) => spool
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .append(bytes),
        }
    }
}

/// A stream being copied and matched.
pub struct Watch {
    done: Receiver<()>,
    progress: Arc<AtomicU64>,
    until: Arc<AtomicBool>,
    retry_if: Arc<AtomicBool>,
}

/// Starts copying `source` to `sink`, matching `rules` on the way.
pub fn watch(
    mut source: impl Read + AsRawFd + Send + 'static,
    mut sink: Sink,
    rules: &OutputRules,
) -> Watch {
    let (done_sender, done) = mpsc::channel();
    let progress = Arc::new(AtomicU64::new(0));
    let until = Arc::new(AtomicBool::new(false));
    let retry_if = Arc::new(AtomicBool::new(false));
    let mut slots = Vec::new();
    let mut patterns = Vec::new();
    for (pattern, flag) in [(&rules.until, &until), (&rules.retry_if, &retry_if)] {
        if let Some(pattern) = pattern {
            patterns.push(pattern.clone());
            slots.push(Arc::clone(flag));
        }
    }
    // SAFETY: fcntl on a pipe we own; failure (an unprivileged limit) leaves the default size.
    unsafe {
        libc::fcntl(source.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_CAPACITY);
    }
    let thread_progress = Arc::clone(&progress);
    // Should no thread start, the closure is dropped with the pipe in it: the attempt then gets
    // SIGPIPE when it writes, which ends the run quietly instead of hanging it.
    let _ = thread::Builder::new().name("output".into()).spawn(move || {
        let mut matcher = LineMatcher::new(patterns);
        let mut buffer = vec![0u8; CHUNK];
        let publish = |matcher: &LineMatcher| {
            for (index, flag) in slots.iter().enumerate() {
                if matcher.matched(index) {
                    flag.store(true, Ordering::Release);
                }
            }
        };
        loop {
            let read = match source.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let bytes = &buffer[..read];
            // Pass the bytes on before matching them: the reader downstream waits for them.
            if sink.write_all(bytes).is_err() {
                break;
            }
            thread_progress.fetch_add(read as u64, Ordering::Relaxed);
            matcher.feed(bytes);
            publish(&matcher);
        }
        matcher.finish();
        publish(&matcher);
        drop(source);
        let _ = done_sender.send(());
    });
    Watch {
        done,
        progress,
        until,
        retry_if,
    }
}

/// Waits for the watched streams to reach their end, as long as output keeps coming, and says
/// what matched.
pub fn finish(watches: Vec<Watch>) -> Matches {
    let started = Instant::now();
    let mut matches = Matches::default();
    for watch in watches {
        let mut seen = watch.progress.load(Ordering::Relaxed);
        loop {
            match watch.done.recv_timeout(DRAIN_IDLE) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let now = watch.progress.load(Ordering::Relaxed);
                    if now == seen || started.elapsed() >= DRAIN_MAX {
                        break;
                    }
                    seen = now;
                }
            }
        }
        matches.until |= watch.until.load(Ordering::Acquire);
        matches.retry_if |= watch.retry_if.load(Ordering::Acquire);
    }
    matches
}
