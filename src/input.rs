//! What each attempt reads on stdin (`--stdin auto|replay|inherit|null`).
//!
//! - `auto`: a regular file is rewound to the offset it had when `retry` started, before every
//!   attempt after the first; a pipe, socket or terminal is passed through untouched and `retry`
//!   reads none of it (so `while read ...; do retry ...; done` keeps its input).
//! - `replay`: a thread copies stdin into a spool as the attempts read it (at most `READ_AHEAD`
//!   beyond the furthest any attempt has been given, so an endless producer is held back as a
//!   pipe would hold it, rather than filling the disk); each attempt gets a pipe fed from the
//!   start of the spool, following it as it grows, so no attempt waits for the end of the input
//!   before it starts, and every attempt sees the same bytes.
//! - `inherit`: stdin as is, every time. `null`: /dev/null.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use crate::cli::StdinMode;
use crate::plumbing;
use crate::poll::{self, Wait};
use crate::spool::Spool;
use crate::text::plain_error;

/// What `retry`'s own stdin is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StdinKind {
    /// A regular file, and the offset to rewind it to.
    File(u64),
    /// A pipe or a socket: what one attempt reads, the next does not see.
    Stream,
    Other,
}

fn inspect() -> StdinKind {
    use rustix::fs::FileType;
    let stdin = io::stdin();
    let Ok(stat) = rustix::fs::fstat(&stdin) else {
        return StdinKind::Other;
    };
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => match rustix::fs::tell(&stdin) {
            Ok(offset) => StdinKind::File(offset),
            Err(_) => StdinKind::Other,
        },
        FileType::Fifo | FileType::Socket => StdinKind::Stream,
        _ => StdinKind::Other,
    }
}

/// Gives each attempt its stdin.
pub(crate) struct Input {
    mode: StdinMode,
    kind: StdinKind,
    replay: Option<Arc<Replay>>,
}

impl Input {
    pub(crate) fn new(mode: StdinMode) -> Input {
        Input {
            mode,
            kind: inspect(),
            replay: None,
        }
    }

    /// Whether later attempts see only what earlier ones left unread (the `auto` warning).
    pub(crate) fn shared_stream(&self) -> bool {
        self.mode == StdinMode::Auto && self.kind == StdinKind::Stream
    }

    /// Why replayed stdin stays in memory past the spool's bound, if it does.
    pub(crate) fn spill_error(&self) -> Option<String> {
        let replay = self.replay.as_ref()?;
        replay.lock().spool.spill_error().map(str::to_string)
    }

    /// Why reading stdin for the replay stopped before its end, if it did: the attempts then
    /// get only what was read before.
    pub(crate) fn read_error(&self) -> Option<String> {
        self.replay.as_ref()?.lock().read_error.clone()
    }

    /// The stdin for attempt `number`, and a feeder to stop when the attempt ends. Fails when a
    /// replay cannot be set up (no descriptor or thread to spare): an attempt must not read
    /// less than the whole input.
    pub(crate) fn for_attempt(&mut self, number: u64) -> io::Result<(Stdio, Option<Feeder>)> {
        Ok(match self.mode {
            StdinMode::Inherit => (Stdio::inherit(), None),
            StdinMode::Null => (Stdio::null(), None),
            StdinMode::Auto => {
                if let (StdinKind::File(offset), true) = (self.kind, number > 1) {
                    // A failure leaves it where it is.
                    let _ = rustix::fs::seek(io::stdin(), rustix::fs::SeekFrom::Start(offset));
                }
                (Stdio::inherit(), None)
            }
            StdinMode::Replay => {
                let replay = match &self.replay {
                    Some(replay) => Arc::clone(replay),
                    None => Arc::clone(self.replay.insert(Replay::start()?)),
                };
                let (reader, writer) = io::pipe()?;
                (Stdio::from(reader), Some(Feeder::start(replay, writer)?))
            }
        })
    }
}

/// How far the capture of stdin may run ahead of what the attempts have been given.
const READ_AHEAD: u64 = 1024 * 1024;

/// Everything read from stdin so far.
struct Replay {
    state: Mutex<Captured>,
    /// The spool grew, or stdin ended: for feeders at its end.
    grew: Condvar,
    /// A feeder went further: for the capture, held back by `READ_AHEAD`.
    fed: Condvar,
}

#[derive(Default)]
struct Captured {
    spool: Spool,
    ended: bool,
    /// The furthest offset of the spool given to an attempt.
    furthest_fed: u64,
    /// Why reading stdin failed, if it did before its end.
    read_error: Option<String>,
}

impl Replay {
    /// Starts copying `retry`'s stdin into the spool. Fails, reading nothing, when no
    /// descriptor or thread can be had for it.
    fn start() -> io::Result<Arc<Replay>> {
        let replay = Arc::new(Replay {
            state: Mutex::new(Captured::default()),
            grew: Condvar::new(),
            fed: Condvar::new(),
        });
        let capture = Arc::clone(&replay);
        let mut source = File::from(io::stdin().as_fd().try_clone_to_owned()?);
        thread::Builder::new().name("stdin".into()).spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let mut state = capture.lock();
                while state.spool.len() >= state.furthest_fed.saturating_add(READ_AHEAD) {
                    state = capture.fed.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                if !state.spool.has_room(buffer.len()) {
                    // Nothing read may be dropped, and nothing more kept: stdin is read no
                    // more, and the producer waits as for a slow reader. The attempts get what
                    // was kept, and then wait too, until they end or their time is up.
                    drop(state);
                    plumbing::announce_stall(crate::stdio::Stream::Stdin);
                    loop {
                        thread::park();
                    }
                }
                drop(state);
                let read = match source.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(read) => read,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    // A parent may have left stdin non-blocking (the flag belongs to the open
                    // pipe): "nothing yet" is not the end of the input.
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        plumbing::wait_until_ready(source.as_fd(), libc::POLLIN);
                        continue;
                    }
                    Err(error) => {
                        capture.lock().read_error = Some(plain_error(&error));
                        break;
                    }
                };
                capture.lock().spool.append(&buffer[..read]);
                capture.grew.notify_all();
            }
            capture.lock().ended = true;
            capture.grew.notify_all();
        })?;
        Ok(replay)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Captured> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Feeds one attempt's stdin pipe from the start of the replay.
pub(crate) struct Feeder {
    replay: Arc<Replay>,
    stop: Arc<AtomicBool>,
    /// Dropped, wakes the feeder from a wait on a full pipe: a background process of the
    /// attempt may hold its stdin open and never read it.
    link: UnixStream,
}

impl Feeder {
    /// Fails when no thread can be had: the attempt would read nothing.
    fn start(replay: Arc<Replay>, writer: io::PipeWriter) -> io::Result<Feeder> {
        let stop = Arc::new(AtomicBool::new(false));
        let (source, stopped) = (Arc::clone(&replay), Arc::clone(&stop));
        let (link, woken) = UnixStream::pair()?;
        // Writes that never block, so that a full pipe is a wait the feeder can be woken from.
        // The flag is the write end's alone: the attempt holds the other.
        let flags = rustix::fs::fcntl_getfl(&writer)?;
        rustix::fs::fcntl_setfl(&writer, flags | rustix::fs::OFlags::NONBLOCK)?;
        thread::Builder::new()
            .name("feeder".into())
            .spawn(move || {
                let mut buffer = vec![0u8; 64 * 1024];
                let mut offset = 0u64;
                loop {
                    let mut state = source.lock();
                    let read = loop {
                        if stopped.load(Ordering::Acquire) {
                            return;
                        }
                        match state.spool.read_at(offset, &mut buffer) {
                            Ok(0) if state.ended => return,
                            Ok(0) => {
                                state = source.grew.wait(state).unwrap_or_else(|p| p.into_inner());
                            }
                            Ok(read) => break read,
                            Err(_) => return,
                        }
                    };
                    drop(state);
                    // The attempt stopped reading (or ended), or the feeder was stopped:
                    // nothing more to give it.
                    if !feed(&writer, &buffer[..read], woken.as_raw_fd()) {
                        return;
                    }
                    offset += read as u64;
                    let mut state = source.lock();
                    if offset > state.furthest_fed {
                        state.furthest_fed = offset;
                        drop(state);
                        source.fed.notify_one();
                    }
                }
            })?;
        Ok(Feeder { replay, stop, link })
    }

    /// Stops feeding once the attempt has ended; the pipe closes with the thread.
    pub(crate) fn stop(self) {
        self.stop.store(true, Ordering::Release);
        // Take the lock so the feeder is either before its check or already waiting.
        drop(self.replay.lock());
        self.replay.grew.notify_all();
        drop(self.link);
    }
}

/// Writes all of `bytes` to `writer` (non-blocking), waiting while the pipe is full; `false`
/// when it cannot, or once `stop` is readable (its other end closed).
fn feed(mut writer: &io::PipeWriter, mut bytes: &[u8], stop: RawFd) -> bool {
    while !bytes.is_empty() {
        match writer.write(bytes) {
            Ok(written) => bytes = &bytes[written..],
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                let ready = [(writer.as_raw_fd(), libc::POLLOUT), (stop, libc::POLLIN)];
                if poll::poll(ready, Wait::Forever).is_ok_and(|[_, stopped]| stopped != 0) {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
    true
}
