//! Output plumbing for streams that a predicate reads (or `--hold-stdout` holds): one thread per
//! piped stream copies every byte to `retry`'s own stream as soon as it arrives (or into a
//! spool), and matches lines on the way.
//!
//! Streams no predicate reads are never piped: the child inherits them and nothing is copied.
//! If `retry`'s own stream is closed (the reader downstream has gone), copying stops and the pipe
//! is closed, so the attempt gets SIGPIPE like any writer to a closed pipe. If it fails
//! otherwise (a full disk), the copy goes on matching and passes nothing on, and the runner
//! says so. A copy that a background process keeps going after its attempt has ended gives its
//! pipe to a process of its own (`Leftover::hand_over`) once the next attempt has ended, or when
//! `retry` ends, so that `retry` holds the descriptors of two attempts' copies at most.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::http::{HttpFindings, HttpLines};
use crate::lines::{LineMatcher, Pattern};
use crate::outcome::AttemptEnd;
use crate::poll::{self, Wait};
use crate::predicate::Matches;
use crate::settings::OutputRules;
use crate::signals::SignalQueue;
use crate::spool::Spool;
use crate::stdio::Stream;
use crate::text::plain_error;

/// Bytes read from a pipe at a time, and the pipe capacity asked for: fewer, larger transfers
/// mean fewer context switches between the attempt and this thread, but a read must stay small
/// enough to be still in the core's cache while it is matched and written on (256 KiB reads
/// took twice as long as 128 KiB ones; see BENCHMARKS.md).
const CHUNK: usize = 128 * 1024;
const PIPE_CAPACITY: usize = 1024 * 1024;

/// Bytes read from a spool at a time, as it is written out or kept.
const SPOOL_READ: usize = 128 * 1024;

/// After an attempt ends, how long its output may stay silent before `retry` stops waiting for
/// the end of it (a background process may hold the pipe open), and the most time it spends
/// copying output that keeps coming (waits on the reader downstream aside; see `finish`).
const DRAIN_IDLE: Duration = Duration::from_millis(100);
const DRAIN_MAX: Duration = Duration::from_secs(2);

/// An unbuffered handle of its own on one of `retry`'s own streams (so a partial line goes out
/// at once, and no lock of std's handle is held), written whole even when a parent left the
/// stream non-blocking: O_NONBLOCK belongs to the open pipe, shared with everyone who holds it
/// (a Node.js parent sets it), and a full pipe must mean a wait, not lost output.
pub(crate) struct OwnStream(File);

impl OwnStream {
    pub(crate) fn on(fd: BorrowedFd<'_>) -> io::Result<OwnStream> {
        Ok(OwnStream(File::from(fd.try_clone_to_owned()?)))
    }
}

impl Write for OwnStream {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        loop {
            match self.0.write(bytes) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    wait_until_ready(self.0.as_fd(), libc::POLLOUT);
                }
                written => return written,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Waits, on this thread and with no time limit, until `fd` is ready for `events` (or hung up):
/// for a descriptor that a parent left non-blocking. An error or EINTR returns at once, and the
/// caller tries again.
pub(crate) fn wait_until_ready(fd: BorrowedFd<'_>, events: i16) {
    let _ = poll::poll([(fd.as_raw_fd(), events)], Wait::Forever);
}

/// The streams (`Stream::bit`) whose held or replayed bytes could take no more, and those of
/// them said already: a copy or the replay's capture thread marks its stream, and wakes the
/// loop that supervises the attempt (a SIGCHLD to `retry` itself), which says it at once.
static STALLED: AtomicU8 = AtomicU8::new(0);
static STALL_SAID: AtomicU8 = AtomicU8::new(0);

/// Marks `stream` as read no more, because nothing more of it can be kept, and wakes the
/// supervising loop to say so.
pub(crate) fn announce_stall(stream: Stream) {
    if STALLED.fetch_or(stream.bit(), Ordering::AcqRel) & stream.bit() == 0 {
        // A signal `retry` handles: a spurious SIGCHLD finds no child ended, and is harmless.
        let _ = rustix::process::kill_process(rustix::process::getpid(), Signal::CHILD);
    }
}

/// The streams marked read no more since this was last asked: each is said once.
pub(crate) fn new_stalls() -> Vec<Stream> {
    let stalled = STALLED.load(Ordering::Acquire);
    let new = stalled & !STALL_SAID.fetch_or(stalled, Ordering::AcqRel);
    [Stream::Stdout, Stream::Stderr, Stream::Stdin]
        .into_iter()
        .filter(|stream| new & stream.bit() != 0)
        .collect()
}

/// Waits until the copy is told to stop (its `link` shut: see `Watch::link`), through any
/// signal.
fn wait_for_stop(stop: RawFd) {
    // (The copy holds its link open until this returns.)
    while poll::poll([(stop, libc::POLLIN)], Wait::Forever).is_err() {}
}

/// Where a watched stream's bytes go.
pub(crate) enum Sink {
    /// On at once to one of `retry`'s own streams.
    Stream(OwnStream),
    /// Into the attempt's spool, as `stream`'s, until the driver says whether this attempt's
    /// output is the final one (and once the spool has been written out, on to stderr).
    Hold(Arc<Mutex<Held>>, Stream),
    /// Nowhere: the stream could not be written (see `Flow::write_error`).
    Discard,
}

impl Sink {
    /// The stream that `more` bytes could not be written to without losing some, if so: held
    /// output may fill the memory it may use when no file takes it.
    fn full(&self, more: usize) -> Option<Stream> {
        match self {
            Sink::Hold(held, stream) => {
                let held = held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                (!held.written_out && !held.has_room(more)).then_some(*stream)
            }
            Sink::Stream(_) | Sink::Discard => None,
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stream(out) => out.write_all(bytes),
            Sink::Discard => Ok(()),
            Sink::Hold(held, stream) => {
                let mut held = held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if !held.written_out {
                    held.append(*stream, bytes);
                    return Ok(());
                }
                drop(held);
                // What a background process of the attempt writes once the attempt's output
                // has gone out belongs to no attempt: on to stderr, as that output went, or as
                // it would go were it not the final attempt's.
                *self = Sink::Stream(OwnStream::on(io::stderr().as_fd())?);
                self.write_all(bytes)
            }
        }
    }
}

/// An attempt's held output: the bytes of the streams it holds (stdout, and under
/// `--failed-output` stderr too), in the order they came, and which stream each stretch of
/// them came from, so that they can go out as they were interleaved.
#[derive(Default)]
pub(crate) struct Held {
    spool: Spool,
    /// The stretches before the last, each a stream byte and a length (`STRETCH` bytes): in a
    /// spool, so that a command that keeps switching streams cannot grow memory without bound.
    stretches: Spool,
    /// The last stretch, still growing.
    last: Option<(Stream, u64)>,
    /// The spool has been written out: what comes later is not held.
    written_out: bool,
}

/// The size of a stretch's record: the stream, then the length in little-endian.
const STRETCH: usize = 9;

impl Held {
    /// Whether `more` bytes may be held (see `Spool::has_room`).
    fn has_room(&self, more: usize) -> bool {
        self.spool.has_room(more) && self.stretches.has_room(STRETCH)
    }

    fn append(&mut self, stream: Stream, bytes: &[u8]) {
        self.spool.append(bytes);
        let len = bytes.len() as u64;
        self.last = match self.last {
            Some((last, held)) if last == stream => Some((last, held + len)),
            Some(ended) => {
                self.stretches.append(&stretch_record(ended));
                Some((stream, len))
            }
            None => Some((stream, len)),
        };
    }

    /// Writes out what is held, stretch by stretch in the order it came, through
    /// `out(stream, bytes)`, and holds no more: later output is passed on at once. An error
    /// from `out` ends the write-out; `out` decides which are worth that.
    pub(crate) fn write_out(
        &mut self,
        mut out: impl FnMut(Stream, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let held = std::mem::take(self);
        self.written_out = true;
        let mut buffer = vec![0u8; SPOOL_READ];
        let mut offset = 0u64;
        let mut record = [0u8; STRETCH];
        let mut at = 0u64;
        let last = held.last.into_iter();
        let earlier = std::iter::from_fn(|| {
            let read = held.stretches.read_at(at, &mut record).ok()?;
            at += read as u64;
            (read == STRETCH).then(|| stretch_from(&record))
        });
        for (stream, len) in earlier.chain(last) {
            let end = offset + len;
            let whole = copy_range(&held.spool, offset..end, &mut buffer, |bytes| {
                out(stream, bytes)
            })?;
            if !whole {
                return Ok(());
            }
            offset = end;
        }
        Ok(())
    }

    /// Why held bytes past the memory bound stay in memory, if they do.
    pub(crate) fn spill_error(&self) -> Option<&str> {
        self.spool
            .spill_error()
            .or_else(|| self.stretches.spill_error())
    }

    /// Drops what is held, as if written out: later output is passed on at once.
    pub(crate) fn discard(&mut self) {
        *self = Held {
            written_out: true,
            ..Held::default()
        };
    }

    /// Moves what is held, all of its streams in the order they came, to the end of `kept`, as
    /// if written out; how many bytes it was. An empty `kept` takes the spool itself, with no
    /// copy.
    fn move_to(&mut self, kept: &mut Spool) -> io::Result<u64> {
        let moved = self.spool.len();
        if kept.len() == 0 {
            *kept = std::mem::take(&mut self.spool);
            self.discard();
            return Ok(moved);
        }
        let copied = self.spool.copy_to(&mut SpoolWriter(kept));
        self.discard();
        copied.map(|()| moved)
    }
}

fn stretch_record((stream, len): (Stream, u64)) -> [u8; STRETCH] {
    let mut record = [0u8; STRETCH];
    record[0] = u8::from(stream == Stream::Stderr);
    record[1..].copy_from_slice(&len.to_le_bytes());
    record
}

fn stretch_from(record: &[u8; STRETCH]) -> (Stream, u64) {
    let stream = if record[0] == 1 {
        Stream::Stderr
    } else {
        Stream::Stdout
    };
    let mut len = [0u8; 8];
    len.copy_from_slice(&record[1..]);
    (stream, u64::from_le_bytes(len))
}

/// Appends what is written to a spool.
struct SpoolWriter<'a>(&'a mut Spool);

impl Write for SpoolWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.append(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The held output of earlier attempts under `--failed-output on-give-up`, kept for the end of
/// the run: one spool for all (so memory and descriptors stay bounded however many attempts
/// there are), and where each attempt's stdout and stderr lie in it.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    spool: Spool,
    attempts: Vec<KeptAttempt>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct KeptAttempt {
    pub(crate) attempt: u64,
    pub(crate) end: AttemptEnd,
    len: u64,
    /// Under `--keep-max`: the length of the head kept, and how many bytes after it were
    /// left out before the tail.
    cut: Option<(u64, u64)>,
}

impl Kept {
    /// Keeps an attempt's held output, its streams in the order they came: all of it, or,
    /// past `most` bytes (0: no bound), its first and last `most / 2`.
    pub(crate) fn keep(
        &mut self,
        attempt: u64,
        end: AttemptEnd,
        held: &Mutex<Held>,
        most: u64,
    ) -> io::Result<()> {
        let mut held = held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let whole = held.spool.len();
        let (len, cut) = if most == 0 || whole <= most {
            (held.move_to(&mut self.spool)?, None)
        } else {
            let head = most / 2;
            let tail = most - head;
            let mut out = SpoolWriter(&mut self.spool);
            let mut buffer = vec![0u8; SPOOL_READ];
            for range in [0..head, whole - tail..whole] {
                copy_range(&held.spool, range, &mut buffer, |bytes| {
                    out.write_all(bytes)
                })?;
            }
            held.discard();
            (most, Some((head, whole - most)))
        };
        drop(held);
        // What is kept waits for the end of the run, while later attempts fill spools of their
        // own: it goes to the file now, so memory holds one attempt's output at most.
        self.spool.spill_now();
        self.attempts.push(KeptAttempt {
            attempt,
            end,
            len,
            cut,
        });
        Ok(())
    }

    /// Why what is kept stays in memory, when no temporary file could take it.
    pub(crate) fn spill_error(&self) -> Option<&str> {
        self.spool.spill_error()
    }

    /// Takes what is kept, leaving nothing: each attempt, in the order kept, with its output.
    pub(crate) fn take(&mut self) -> Vec<(KeptAttempt, KeptOutput)> {
        let kept = std::mem::take(self);
        let spool = Arc::new(kept.spool);
        let mut from = 0;
        kept.attempts
            .into_iter()
            .map(|attempt| {
                let output = KeptOutput {
                    spool: Arc::clone(&spool),
                    from,
                    len: attempt.len,
                    attempt: attempt.attempt,
                    cut: attempt.cut,
                };
                from += attempt.len;
                (attempt, output)
            })
            .collect()
    }

    /// Forgets what is kept.
    pub(crate) fn clear(&mut self) {
        *self = Kept::default();
    }
}

/// One kept attempt's output: its part of the run's kept spool, which a thread of its own may
/// write out.
#[derive(Debug)]
pub(crate) struct KeptOutput {
    spool: Arc<Spool>,
    from: u64,
    len: u64,
    attempt: u64,
    cut: Option<(u64, u64)>,
}

impl KeptOutput {
    /// Writes the kept output; where `--keep-max` cut it, one line between its head and its
    /// tail says how much was left out. It ends its line, so that what follows (the next
    /// header, the final attempt's output) starts one of its own.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        let end = self.from + self.len;
        let mut buffer = vec![0u8; SPOOL_READ];
        let mut copy = |range, out: &mut dyn Write| {
            copy_range(&self.spool, range, &mut buffer, |bytes| {
                out.write_all(bytes)
            })
        };
        match self.cut {
            None => {
                copy(self.from..end, out)?;
            }
            Some((head, left_out)) => {
                copy(self.from..self.from + head, out)?;
                // The line stands on its own, whatever the head ended with.
                let apart = if head > 0 && !self.ends_a_line_at(self.from + head) {
                    "\n"
                } else {
                    ""
                };
                writeln!(
                    out,
                    "{apart}retry: [{left_out} bytes of attempt {} left out]",
                    self.attempt
                )?;
                copy(self.from + head..end, out)?;
            }
        }
        if self.len > 0 && !self.ends_a_line_at(end) {
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    /// Whether the byte before `offset` ends a line.
    fn ends_a_line_at(&self, offset: u64) -> bool {
        let mut last = [0u8; 1];
        self.spool
            .read_at(offset - 1, &mut last)
            .is_ok_and(|read| read == 1 && last[0] == b'\n')
    }
}

/// Hands `range` of `spool` to `out`, a `buffer` at a time: `false` when the spool ended
/// before the range did.
fn copy_range(
    spool: &Spool,
    range: std::ops::Range<u64>,
    buffer: &mut [u8],
    mut out: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<bool> {
    let mut offset = range.start;
    while offset < range.end {
        let wanted = buffer.len().min((range.end - offset) as usize);
        let read = spool.read_at(offset, &mut buffer[..wanted])?;
        if read == 0 {
            return Ok(false);
        }
        out(&buffer[..read])?;
        offset += read as u64;
    }
    Ok(true)
}

/// Waits until `source` has input, or has ended or failed (for the read to tell); `false` once
/// the copy is to stop (its link shut: see `Watch::link`), whatever is waiting in `source`.
fn await_input(source: RawFd, stop: RawFd) -> bool {
    loop {
        match poll::poll(
            [(source, libc::POLLIN), (stop, libc::POLLIN)],
            Wait::Forever,
        ) {
            Ok([_, stopped]) => return stopped == 0,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
}

/// A stream being copied and matched.
pub(crate) struct Watch {
    /// Which of `retry`'s streams the copy writes to, for messages.
    stream: Stream,
    /// The pipe's read end, as the copy holds it (see `Leftover`).
    source: RawFd,
    /// This end of a socket pair whose other end the copy holds, both ways at once: it reads
    /// at its end once the copy has ended (a descriptor, so that the wait for it is also a
    /// wait for signals), and shut or dropped here, it tells the copy to stop once it has
    /// passed on what it read (the copy of an ended attempt that nothing is to take over, see
    /// `finish`, or one handed over).
    link: UnixStream,
    flow: Arc<Flow>,
    findings: Arc<Findings>,
}

/// How the copy is going, for the wait after the attempt has ended.
#[derive(Default)]
struct Flow {
    /// Bytes passed on.
    written: AtomicU64,
    /// The copy is in a write: the reader downstream has not taken the last bytes yet.
    writing: AtomicBool,
    /// Time spent in writes, in all, in nanoseconds.
    writing_nanos: AtomicU64,
    /// Why writing failed, when it failed other than for a reader gone (a full disk): the
    /// copy then goes on matching what comes, and passes nothing on.
    write_error: OnceLock<String>,
    /// The held output could take no more (no file, and the memory bound reached): the copy
    /// read no more of its source, whose writer waits as for a slow reader.
    stalled: AtomicBool,
}

/// What the copies of an ended attempt saw.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    /// What the patterns matched (`status` aside: see `http_findings`).
    pub matches: Matches,
    /// What the HTTP lines and hints said.
    pub http_findings: HttpFindings,
    /// For each stream that could not be written (see `Flow::write_error`), its name and why.
    pub write_errors: Vec<(Stream, String)>,
    /// The copies still running: a background process holds their pipe open.
    pub leftovers: Vec<Leftover>,
}

/// A copy that outlived its attempt, because a background process of the attempt (a server
/// started with `&`) still holds the pipe open. It goes on passing output on, unjudged, until
/// `hand_over` gives it to a process of its own.
#[derive(Debug)]
pub(crate) struct Leftover {
    link: UnixStream,
    /// `hand_over` has asked it.
    asked: bool,
}

impl Leftover {
    /// Asks the copy to give its pipe to a process of its own once it has passed on what it
    /// read, so that no byte is lost, nor passed on out of order; the copy then ends. A
    /// background process of an attempt (a server started with `&`) may write on to a pipe
    /// that a copy reads: were the copy to end without a helper, that write would meet a
    /// closed pipe and SIGPIPE would kill the process, which without a pattern would have
    /// written on; were the copy to stay in `retry`, a supervisor's descriptors would grow with
    /// every restart. Asked again, it does nothing.
    pub(crate) fn hand_over(&mut self) {
        if !self.asked {
            self.asked = true;
            let _ = (&self.link).write_all(&[HAND_OVER]);
        }
    }

    /// Whether the copy has ended (its background writers have all gone, or it has handed its
    /// pipe over): dropping it then closes the last descriptor it held.
    pub(crate) fn finished(&self) -> bool {
        link_ended(self.link.as_fd())
    }
}

/// Starts copying `source` to `sink` (`retry`'s `stream`), matching `rules` on the way. Fails
/// when no thread, or no pipe to say when it ends, can be had.
pub(crate) fn watch(
    mut source: impl Read + AsFd + Send + 'static,
    sink: Sink,
    stream: Stream,
    rules: &OutputRules,
) -> io::Result<Watch> {
    let (link, copy_link) = UnixStream::pair()?;
    let source_fd = source.as_fd().as_raw_fd();
    // A copy that outlives `retry` passes on to the same stream; held output, which has no
    // attempt of its own by then, to stderr, so that stdout still carries one attempt's output.
    let after_end = match &sink {
        Sink::Stream(_) => Some(stream.fd()),
        Sink::Hold(..) => Some(Stream::Stderr.fd()),
        Sink::Discard => None,
    };
    let flow = Arc::new(Flow::default());
    let findings = Arc::new(Findings::default());
    let scan = Scan::new(rules, Arc::clone(&findings));
    // Failure (an unprivileged limit) leaves the default size.
    let _ = rustix::pipe::fcntl_setpipe_size(&source, PIPE_CAPACITY);
    let thread_flow = Arc::clone(&flow);
    thread::Builder::new()
        .name("output".into())
        .spawn(move || {
            let end = copy(&mut source, sink, scan, &thread_flow, copy_link.as_fd());
            if end == CopyEnd::HandOver {
                pass_on_in_a_process_of_its_own(source.as_fd().as_raw_fd(), after_end);
            }
            // In this order, so that a link not yet ended means `source` is still open (see
            // `more_to_come`), and the helper holds its own.
            drop(copy_link);
            drop(source);
            #[cfg(debug_assertions)]
            inject_late_thread_end();
        })?;
    Ok(Watch {
        stream,
        source: source_fd,
        link,
        flow,
        findings,
    })
}

/// For the memory test, in debug builds only: `RETRY_INJECT_LATE_THREAD_END=MS` keeps a copy's
/// thread MS milliseconds past the end of its copy, as a loaded machine does that has not yet
/// run it to its end, so that the next attempts' copies start on threads of their own.
#[cfg(debug_assertions)]
fn inject_late_thread_end() {
    if let Some(late) = std::env::var("RETRY_INJECT_LATE_THREAD_END")
        .ok()
        .and_then(|ms| ms.parse().ok())
    {
        thread::sleep(Duration::from_millis(late));
    }
}

/// How many bytes wait in the pipe `fd` (0 when it cannot tell).
fn bytes_waiting(fd: BorrowedFd<'_>) -> usize {
    rustix::io::ioctl_fionread(fd).map_or(0, |waiting| usize::try_from(waiting).unwrap_or(0))
}

/// How a copy ended: for good, or to hand its source over.
#[derive(PartialEq)]
enum CopyEnd {
    /// Its source ended or broke, or it was told to stop.
    Done,
    /// To give its source to a process of its own (see `Leftover::hand_over`).
    HandOver,
}

/// The byte on a copy's link that asks it to hand its source over before it stops.
const HAND_OVER: u8 = b'h';

/// The copy: passes what `source` gives on to `sink` as it comes, and judges it, until the
/// source ends or the copy is told to stop (`stop`, its link, readable).
fn copy(
    source: &mut (impl Read + AsFd),
    mut sink: Sink,
    mut scan: Scan,
    flow: &Flow,
    stop: BorrowedFd<'_>,
) -> CopyEnd {
    let source_fd = source.as_fd().as_raw_fd();
    let mut buffer = vec![0u8; CHUNK];
    let mut end = CopyEnd::Done;
    loop {
        if !await_input(source_fd, stop.as_raw_fd()) {
            end = end_asked_on(stop);
            break;
        }
        // Only held output can be full, and only by bytes that wait: at the source's end the
        // read says so. (A stream passed on as it comes asks nothing more of the kernel.)
        if let Sink::Hold(..) = sink
            && let waiting = bytes_waiting(source.as_fd()).min(CHUNK)
            && waiting > 0
            && let Some(stream) = sink.full(waiting)
        {
            // Nothing may be dropped, and nothing more kept: the stream is read no more, and
            // its writer waits as it would for a slow reader, until the attempt ends (or its
            // time is up) and `retry` stops the copy.
            flow.stalled.store(true, Ordering::Release);
            announce_stall(stream);
            wait_for_stop(stop.as_raw_fd());
            break;
        }
        let read = match source.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let bytes = &buffer[..read];
        // Pass the bytes on before matching them: the reader downstream waits for them.
        flow.writing.store(true, Ordering::Release);
        let began = Instant::now();
        let written = sink.write_all(bytes);
        let took = began.elapsed().as_nanos().try_into().unwrap_or(u64::MAX);
        flow.writing_nanos.fetch_add(took, Ordering::Relaxed);
        flow.written.fetch_add(read as u64, Ordering::Relaxed);
        flow.writing.store(false, Ordering::Release);
        // What the attempt printed is judged even when it could not be passed on.
        scan.feed(bytes);
        match written {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => break,
            Err(error) => {
                let _ = flow.write_error.set(plain_error(&error));
                sink = Sink::Discard;
            }
        }
    }
    scan.finish();
    end
}

/// What the link `stop`, readable, asks of the copy: to hand its source over, or (at its end)
/// only to stop.
fn end_asked_on(stop: BorrowedFd<'_>) -> CopyEnd {
    // The link is readable: the read returns at once.
    let mut byte = [0u8];
    if rustix::io::read(stop, &mut byte) == Ok(1) && byte[0] == HAND_OVER {
        CopyEnd::HandOver
    } else {
        CopyEnd::Done
    }
}

/// What a copy has found so far, shared with the wait for it.
#[derive(Default)]
struct Findings {
    until: AtomicBool,
    retry_if: AtomicBool,
    stop_if: AtomicBool,
    /// What the HTTP lines and hints said.
    http_findings: Mutex<HttpFindings>,
}

impl Findings {
    fn flag(&self, raised: Raises) -> &AtomicBool {
        match raised {
            Raises::Until => &self.until,
            Raises::RetryIf => &self.retry_if,
            Raises::StopIf => &self.stop_if,
        }
    }

    fn http_findings(&self) -> std::sync::MutexGuard<'_, HttpFindings> {
        self.http_findings.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Which finding a pattern's match raises.
#[derive(Clone, Copy)]
enum Raises {
    Until,
    RetryIf,
    StopIf,
}

/// The line matching of one copy: the patterns that raise findings, and the collectors whose
/// lines are read for HTTP statuses and hints (HTTP lines first, at index 0 when read, then
/// the custom hint).
struct Scan {
    matcher: LineMatcher,
    /// What the match of each pattern, by index, raises.
    raises: Vec<Raises>,
    http: HttpLines,
    hint: Option<Pattern>,
    findings: Arc<Findings>,
}

impl Scan {
    fn new(rules: &OutputRules, findings: Arc<Findings>) -> Scan {
        let mut patterns = Vec::new();
        let mut raises = Vec::new();
        for (pattern, raised) in [
            (&rules.until, Raises::Until),
            (&rules.retry_if, Raises::RetryIf),
            (&rules.stop_if, Raises::StopIf),
        ] {
            if let Some(pattern) = pattern {
                patterns.push(pattern.clone());
                raises.push(raised);
            }
        }
        let mut collectors = Vec::new();
        if rules.http.any() {
            collectors.push(http_lines_pattern().clone());
        }
        collectors.extend(rules.hint.clone());
        Scan {
            matcher: LineMatcher::new(patterns, collectors),
            raises,
            http: rules.http,
            hint: rules.hint.clone(),
            findings,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        let mut collected = collector(self.http, self.hint.as_ref(), &self.findings);
        self.matcher.feed(bytes, &mut collected);
        self.publish();
    }

    /// Judges a last line that has no newline.
    fn finish(&mut self) {
        let mut collected = collector(self.http, self.hint.as_ref(), &self.findings);
        self.matcher.finish(&mut collected);
        self.publish();
    }

    fn publish(&self) {
        for (index, &raised) in self.raises.iter().enumerate() {
            if self.matcher.matched(index) {
                self.findings.flag(raised).store(true, Ordering::Release);
            }
        }
    }
}

/// What becomes of a collected line: the custom hint's collector is the last one, when there
/// is a hint; any other is an HTTP line.
fn collector<'a>(
    http: HttpLines,
    hint: Option<&'a Pattern>,
    findings: &'a Findings,
) -> impl FnMut(usize, &[u8]) + 'a {
    let hint_index = usize::from(http.any());
    move |index, line| {
        let at = Instant::now();
        match hint {
            Some(hint) if index == hint_index => {
                if let Some(text) = hint.capture(line) {
                    findings.http_findings().read_custom_hint(at, text);
                }
            }
            _ => findings.http_findings().read_http_line(at, line, http),
        }
    }
}

/// The sieve for HTTP lines (`http::SIEVE`), compiled once for the run, not for every attempt.
fn http_lines_pattern() -> &'static Pattern {
    static SIEVE: OnceLock<Pattern> = OnceLock::new();
    SIEVE.get_or_init(|| Pattern::new(crate::http::SIEVE).expect("a valid pattern"))
}

/// How long `retry` waits for a reader downstream to take an attempt's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReaderWait {
    /// As long as the run's limits allow, so that the output goes on whole.
    Whole,
    /// Only while the reader keeps taking it: `retry` is shutting down.
    WhileFlowing,
}

/// Waits for the watched streams to reach their end after the attempt has ended, and says
/// what matched and what could not be written; returns instead the shutdown signal that
/// `retry` receives meanwhile.
///
/// A reader downstream that takes its time is waited for, so that what the attempt wrote goes
/// on whole. A source that has gone quiet is not: a background process may hold the pipe open,
/// so the wait ends after `DRAIN_IDLE` without output, or after `DRAIN_MAX` spent copying (the
/// waits on the reader not counted) from one that keeps writing, and in any case at `until`
/// (the run's time limit and its grace, past which nothing may hold the run); or, when `retry`
/// is shutting down, only while the reader keeps taking output.
pub(crate) fn finish(
    watches: Vec<Watch>,
    events: &SignalQueue,
    reader_wait: ReaderWait,
    until: Option<Instant>,
) -> Result<Drained, i32> {
    let mut drained = Drained::default();
    for watch in watches {
        let drain = if reader_wait == ReaderWait::WhileFlowing {
            let give_up = Some(Instant::now() + DRAIN_MAX);
            wait_while_flowing(events, watch.link.as_fd(), &watch.flow.written, give_up)?;
            // An interrupted run leaves nothing behind to be handed over.
            Drain::Done
        } else {
            drain(events, &watch, until)?
        };
        let findings = &watch.findings;
        drained.matches.until |= findings.until.load(Ordering::Acquire);
        drained.matches.retry_if |= findings.retry_if.load(Ordering::Acquire);
        drained.matches.stop_if |= findings.stop_if.load(Ordering::Acquire);
        drained.http_findings.merge(&findings.http_findings());
        if let Some(error) = watch.flow.write_error.get() {
            drained.write_errors.push((watch.stream, error.clone()));
        }
        let stalled = watch.flow.stalled.load(Ordering::Acquire);
        match drain {
            Drain::Done => {}
            Drain::ReaderTooSlow => drained
                .write_errors
                .push((watch.stream, READER_TOO_SLOW.into())),
            // What a stalled copy never read was never held: it is not passed on after the end,
            // and the copy stops as `watch` is dropped.
            Drain::Left if stalled => {}
            Drain::Left => drained.leftovers.push(Leftover {
                link: watch.link,
                asked: false,
            }),
        }
    }
    Ok(drained)
}

/// Why writing stopped when the reader downstream held the output past the time it had.
pub(crate) const READER_TOO_SLOW: &str = "the reader downstream did not take it in time";

/// How the wait for a watched stream's end ended.
#[derive(PartialEq)]
enum Drain {
    /// At the stream's end.
    Done,
    /// Before it: the stream went quiet, or kept coming too long, while a background process
    /// holds the pipe open. The copy goes on.
    Left,
    /// At `until`, with output still waiting for the reader downstream: the rest is lost.
    ReaderTooSlow,
}

fn drain(events: &SignalQueue, watch: &Watch, until: Option<Instant>) -> Result<Drain, i32> {
    let flow = &watch.flow;
    let started = Instant::now();
    let writing_before = flow.writing_nanos.load(Ordering::Relaxed);
    let mut seen = flow.written.load(Ordering::Relaxed);
    loop {
        let idle_until = Instant::now() + DRAIN_IDLE;
        let wake = until.map_or(idle_until, |until| until.min(idle_until));
        if events.wait_readable(watch.link.as_fd(), Some(wake))? {
            return Ok(Drain::Done);
        }
        if until.is_some_and(|until| Instant::now() >= until) {
            return Ok(if flow.writing.load(Ordering::Acquire) {
                Drain::ReaderTooSlow
            } else {
                Drain::Left
            });
        }
        if flow.writing.load(Ordering::Acquire) {
            continue;
        }
        let now = flow.written.load(Ordering::Relaxed);
        let writing = flow.writing_nanos.load(Ordering::Relaxed) - writing_before;
        let copying = started
            .elapsed()
            .saturating_sub(Duration::from_nanos(writing));
        // Quiet is a stream that nothing comes from while a writer still holds it open. Bytes
        // waiting in the pipe, or a pipe whose writers have all gone, mean only that the copy
        // has not had its turn yet (a loaded machine): its end is near, and what it has still
        // to read is this attempt's.
        let quiet = now == seen && (flow.stalled.load(Ordering::Acquire) || !more_to_come(watch));
        if quiet || copying >= DRAIN_MAX {
            return Ok(Drain::Left);
        }
        seen = now;
    }
}

/// Whether the copy of `watch` has bytes waiting to be read, or an end to reach (no writer
/// left). Asked only while the copy runs (its link not ended), so its source is still open.
fn more_to_come(watch: &Watch) -> bool {
    // (The source is the copy's, open while it runs.)
    link_ended(watch.link.as_fd()) || poll::ready_now(watch.source, libc::POLLIN)
}

/// Waits for a copy to end (`done` hangs up: `true`) as long as it moves: returns `false` once
/// `moved` (its count of bytes) has stood still for `DRAIN_IDLE`, or `give_up` has passed. A
/// shutdown signal meanwhile is returned instead.
pub(crate) fn wait_while_flowing(
    events: &SignalQueue,
    done: BorrowedFd<'_>,
    moved: &AtomicU64,
    give_up: Option<Instant>,
) -> Result<bool, i32> {
    let mut seen = moved.load(Ordering::Relaxed);
    loop {
        let idle_until = Instant::now() + DRAIN_IDLE;
        if events.wait_readable(
            done,
            Some(give_up.map_or(idle_until, |at| at.min(idle_until))),
        )? {
            return Ok(true);
        }
        let now = moved.load(Ordering::Relaxed);
        if now == seen || give_up.is_some_and(|at| Instant::now() >= at) {
            return Ok(false);
        }
        seen = now;
    }
}

/// When `retry` has its answer: asks every copy still running to hand its pipe over (see
/// `Leftover::hand_over`), and waits until each has. As after an attempt, a reader downstream
/// that takes its time is waited for, up to the run's limit (`events.readers_until()`), past
/// which the rest of what a copy was writing is lost. A shutdown signal meanwhile is returned.
pub(crate) fn hand_over(mut leftovers: Vec<Leftover>, events: &SignalQueue) -> Result<(), i32> {
    for leftover in &mut leftovers {
        leftover.hand_over();
    }
    for leftover in &leftovers {
        events.wait_readable(leftover.link.as_fd(), events.readers_until())?;
    }
    Ok(())
}

/// Whether the copy at the other end of the link `fd` has ended. The copy never writes on its
/// link, so the link is readable only once the copy has closed its end: readable now is ended.
fn link_ended(fd: BorrowedFd<'_>) -> bool {
    poll::ready_now(fd.as_raw_fd(), libc::POLLIN)
}

/// Gives `source` to a process of its own, which passes what comes on to `target` (or
/// nowhere), unjudged, until the last writer closes the pipe, holding nothing else open;
/// should `target` have closed, it closes `source`, and the writers get SIGPIPE as they would
/// have. `retry` collects it when it ends (see `reaper::reap_orphans`). Without a process to
/// spare, the writers learn from SIGPIPE that no one reads.
fn pass_on_in_a_process_of_its_own(source: RawFd, target: Option<RawFd>) {
    // Every descriptor the helper keeps, sorted, to close all others.
    let mut keep = [source, target.unwrap_or(source)].map(|fd| fd as libc::c_uint);
    keep.sort_unstable();
    // SAFETY: fork(2) in a process with other threads: the child runs `copy_to_the_end`, which
    // calls only async-signal-safe functions and allocates nothing, and ends with _exit(2).
    match unsafe { libc::fork() } {
        0 => copy_to_the_end(source, target, &keep),
        pid if pid > 0 => HELPERS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(pid),
        _ => {}
    }
}

/// The helpers `pass_on_in_a_process_of_its_own` started that have not been collected yet:
/// `retry`'s own children, never an attempt's leftovers.
static HELPERS: std::sync::Mutex<Vec<libc::pid_t>> = std::sync::Mutex::new(Vec::new());

/// The helpers still running (or ended and not yet collected).
pub(crate) fn helpers() -> Vec<libc::pid_t> {
    HELPERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// `pid` was collected: if it was a helper, its number may now be anyone's.
pub(crate) fn collected(pid: libc::pid_t) {
    HELPERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .retain(|&helper| helper != pid);
}

/// The helper of `pass_on_in_a_process_of_its_own`.
fn copy_to_the_end(source: RawFd, target: Option<RawFd>, keep: &[libc::c_uint; 2]) -> ! {
    // Named apart from `retry` in ps(1) and pgrep(1).
    let _ = rustix::thread::set_name(c"retry-output");
    crate::signals::defaults_for_a_helper();
    // SAFETY: close_range(2), read(2), write(2) and _exit(2) on this process's own
    // descriptors; all async-signal-safe.
    unsafe {
        let mut from = 0;
        for &fd in keep.iter().chain(&[libc::c_uint::MAX]) {
            if fd > from {
                libc::syscall(libc::SYS_close_range, from, fd - 1, 0);
            }
            from = fd.saturating_add(1);
        }
        let mut buffer = [0u8; 64 * 1024];
        loop {
            let read = libc::read(source, buffer.as_mut_ptr().cast(), buffer.len());
            if read < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if read <= 0 {
                break;
            }
            if let Some(target) = target
                && !write_all(target, &buffer[..read as usize])
            {
                break;
            }
        }
        libc::_exit(0)
    }
}

/// Writes all of `bytes` to `fd`, waiting while it is full; `false` when it fails. Only
/// async-signal-safe calls, for the helper of `pass_on_in_a_process_of_its_own`.
fn write_all(fd: RawFd, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: write(2) with a valid buffer.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written > 0 {
            bytes = &bytes[written as usize..];
            continue;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => {}
            // A parent may have left the stream non-blocking.
            Some(libc::EAGAIN) => wait_until_ready(
                // SAFETY: `fd` is open for as long as this borrow.
                unsafe { BorrowedFd::borrow_raw(fd) },
                libc::POLLOUT,
            ),
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(stretches: &[(Stream, &[u8])]) -> Mutex<Held> {
        let mut held = Held::default();
        for (stream, bytes) in stretches {
            held.append(*stream, bytes);
        }
        Mutex::new(held)
    }

    fn written_out(held: &Mutex<Held>) -> Vec<(Stream, Vec<u8>)> {
        let mut out: Vec<(Stream, Vec<u8>)> = Vec::new();
        held.lock()
            .unwrap()
            .write_out(|stream, bytes| {
                match out.last_mut() {
                    Some((last, held)) if *last == stream => held.extend_from_slice(bytes),
                    _ => out.push((stream, bytes.to_vec())),
                }
                Ok(())
            })
            .unwrap();
        out
    }

    use Stream::{Stderr as E, Stdout as O};

    /// Held output goes out as the streams were interleaved, stretch by stretch; writes in a
    /// row to one stream are one stretch.
    #[test]
    fn held_output_goes_out_as_it_was_interleaved() {
        let held = held(&[
            (O, b"a"),
            (O, b"b"),
            (E, b"c"),
            (O, b""),
            (O, b"d"),
            (E, b"e"),
        ]);
        assert_eq!(
            written_out(&held),
            [
                (O, b"ab".to_vec()),
                (E, b"c".to_vec()),
                (O, b"d".to_vec()),
                (E, b"e".to_vec())
            ]
        );
        let held = held.into_inner().unwrap();
        assert!(held.written_out, "what comes later is passed on");
        assert_eq!(written_out(&Mutex::new(held)), [], "nothing goes out twice");
        assert_eq!(written_out(&Mutex::new(Held::default())), []);
    }

    /// Writes in a row to one stream make one stretch: a record is written only when the
    /// stream changes.
    #[test]
    fn a_stretch_is_recorded_when_the_stream_changes() {
        let mut held = Held::default();
        for _ in 0..1000 {
            held.append(O, b"x");
        }
        assert_eq!(held.stretches.len(), 0);
        assert_eq!(held.last, Some((O, 1000)));
        held.append(E, b"yy");
        held.append(O, b"z");
        assert_eq!(held.stretches.len(), 2 * STRETCH as u64);
        assert_eq!(held.last, Some((O, 1)));
        assert_eq!(stretch_from(&stretch_record((E, 1 << 40))), (E, 1 << 40));
        assert_eq!(stretch_from(&stretch_record((O, 7))), (O, 7));
    }

    /// A command that switches streams at every write keeps its order past the memory bound
    /// of the stretches' records, which spill as the bytes do.
    #[test]
    fn many_stretches_keep_their_order() {
        let mut held = Held::default();
        let switches = crate::spool::MEMORY_LIMIT / STRETCH + 1000;
        for i in 0..switches {
            let (stream, byte) = if i % 2 == 0 { (O, b'o') } else { (E, b'e') };
            held.append(stream, &[byte]);
        }
        assert!(held.stretches.len() > crate::spool::MEMORY_LIMIT as u64);
        let out = written_out(&Mutex::new(held));
        assert_eq!(out.len(), switches);
        assert!(out.iter().enumerate().all(|(i, (stream, bytes))| {
            (*stream, bytes.as_slice())
                == if i % 2 == 0 {
                    (O, &b"o"[..])
                } else {
                    (E, &b"e"[..])
                }
        }));
    }

    /// An error from the writer ends the write-out there.
    #[test]
    fn a_failed_write_ends_the_write_out() {
        let held = held(&[(O, b"a"), (E, b"b"), (O, b"c")]);
        let mut seen = Vec::new();
        let ended = held.lock().unwrap().write_out(|stream, bytes| {
            seen.push((stream, bytes.to_vec()));
            match stream {
                E => Err(io::Error::from(io::ErrorKind::BrokenPipe)),
                _ => Ok(()),
            }
        });
        assert_eq!(ended.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(seen, [(O, b"a".to_vec()), (E, b"b".to_vec())]);
    }

    /// Each kept attempt comes back in order with exactly its own output, its streams as they
    /// were interleaved, and a newline when it did not end its line; the first attempt's spool
    /// taken as it is, later ones copied after it.
    #[test]
    fn kept_output_comes_back_attempt_by_attempt() {
        let mut kept = Kept::default();
        let big = vec![b'x'; 200_000];
        kept.keep(
            1,
            AttemptEnd::Exited(1),
            &held(&[(O, b"out 1\n"), (E, b"err 1\n"), (O, b"out 1 again\n")]),
            0,
        )
        .unwrap();
        kept.keep(2, AttemptEnd::Exited(2), &held(&[(E, &big)]), 200_000)
            .unwrap();
        kept.keep(3, AttemptEnd::Signaled(9), &held(&[]), 1)
            .unwrap();
        let taken = kept.take();
        assert!(kept.take().is_empty(), "nothing is kept twice");
        let written: Vec<(u64, AttemptEnd, Vec<u8>)> = taken
            .iter()
            .map(|(attempt, output)| {
                let mut bytes = Vec::new();
                output.write_to(&mut bytes).unwrap();
                (attempt.attempt, attempt.end, bytes)
            })
            .collect();
        assert_eq!(
            written,
            [
                (
                    1,
                    AttemptEnd::Exited(1),
                    b"out 1\nerr 1\nout 1 again\n".to_vec()
                ),
                // A replay ends its line; an empty one is nothing at all.
                (2, AttemptEnd::Exited(2), [&big[..], b"\n"].concat()),
                (3, AttemptEnd::Signaled(9), Vec::new()),
            ]
        );
    }

    /// Past `--keep-max`, an attempt's first and last halves are kept, and the line between
    /// them, on a line of its own, says how much was left out; a later attempt's output
    /// follows whole.
    #[test]
    fn kept_output_past_the_bound_keeps_both_ends() {
        let mut kept = Kept::default();
        kept.keep(
            4,
            AttemptEnd::Exited(1),
            &held(&[(O, b"abcdef"), (E, b"ghij\n")]),
            4,
        )
        .unwrap();
        kept.keep(5, AttemptEnd::Exited(1), &held(&[(O, b"whole\n")]), 100)
            .unwrap();
        let written: Vec<Vec<u8>> = kept
            .take()
            .iter()
            .map(|(_, output)| {
                let mut bytes = Vec::new();
                output.write_to(&mut bytes).unwrap();
                bytes
            })
            .collect();
        assert_eq!(
            written,
            [
                b"ab\nretry: [7 bytes of attempt 4 left out]\nj\n".to_vec(),
                b"whole\n".to_vec()
            ]
        );
    }
}
