//! Held output written out: the last attempt's (`--hold-stdout`, `--failed-output`), passed
//! on, dropped or kept as whose output it is says, and the output kept of earlier attempts
//! for the give-up (`--failed-output on-give-up`). Each copy runs on a thread of its own while
//! `retry` waits for signals, so that a reader downstream that does not read never holds a
//! signal back. Holds what `plumbing` spools; reads no attempt's stream itself.

use std::io::{self, PipeReader, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use super::warnings::Warnings;
use crate::cli::FailedOutput;
use crate::driver::{Halt, OutputOf, Settle};
use crate::log::{Event, Logger};
use crate::outcome::AttemptEnd;
use crate::plumbing::{self, Held, Kept, OwnStream, ReaderWait};
use crate::settings::Settings;
use crate::signals::SignalQueue;
use crate::stdio::Stream;

/// The run's held output, from when an attempt starts until it is released.
pub(super) struct HeldOutput {
    /// The last attempt's held output (its stdout under `--hold-stdout`, its stdout and
    /// stderr under `--failed-output`), until it is released.
    pub(super) held: Option<Arc<Mutex<Held>>>,
    /// Earlier attempts' output under `--failed-output on-give-up`, until the run ends.
    kept: Kept,
    /// The most kept of each earlier attempt's output (`--keep-max`; 0: no bound).
    keep_max: u64,
    failed_output: FailedOutput,
    /// The final attempt of a run that did not succeed has its held stdout go to stderr.
    stdout_once: bool,
}

/// What becomes of held output when it is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disposal {
    /// It is written out now, as the route says.
    Written(Route),
    /// It is dropped (`--failed-output drop`).
    Dropped,
    /// It is kept for the give-up as the output of this attempt, which ended so
    /// (`--failed-output on-give-up`).
    Kept { attempt: u64, end: AttemptEnd },
}

/// What becomes of the held output of `output_of` (see `OutputOf`) under `failed_output`;
/// `stdout_once` when stdout is passed on only from a success.
fn disposal(failed_output: FailedOutput, stdout_once: bool, output_of: OutputOf) -> Disposal {
    match (failed_output, output_of) {
        (_, OutputOf::GaveUp) if stdout_once => Disposal::Written(Route::Stderr),
        (_, OutputOf::FinalAttempt | OutputOf::GaveUp) => Disposal::Written(Route::Own),
        (FailedOutput::Pass, OutputOf::EarlierAttempt { .. }) => Disposal::Written(Route::Stderr),
        (FailedOutput::Drop, OutputOf::EarlierAttempt { .. }) => Disposal::Dropped,
        (FailedOutput::OnGiveUp, OutputOf::EarlierAttempt { attempt, end }) => {
            Disposal::Kept { attempt, end }
        }
    }
}

/// How long the output kept for the give-up waits for the reader as the run stands at
/// `settle`; `None` when it is forgotten instead.
fn settle_wait(settle: Settle, failed_output: FailedOutput) -> Option<ReaderWait> {
    match (settle, failed_output) {
        (Settle::GaveUp, FailedOutput::OnGiveUp) => Some(ReaderWait::Whole),
        (Settle::Interrupted, FailedOutput::OnGiveUp) => Some(ReaderWait::WhileFlowing),
        _ => None,
    }
}

impl HeldOutput {
    pub(super) fn new(settings: &Settings) -> HeldOutput {
        HeldOutput {
            held: None,
            kept: Kept::default(),
            keep_max: settings.keep_max,
            failed_output: settings.failed_output,
            stdout_once: settings.stdout_once,
        }
    }

    /// Whose output the held output of attempt `attempt`, which ended as `end` when a signal to
    /// `retry` cut it short, is.
    pub(super) fn of_interrupted(&self, attempt: u64, end: AttemptEnd) -> OutputOf {
        // Under --hold-stdout, an interrupted run has no final attempt, but its held
        // output is not dropped while the reader takes it; under --failed-output, the
        // attempt a signal to retry ended is the final one.
        match self.failed_output {
            FailedOutput::Pass => OutputOf::EarlierAttempt { attempt, end },
            _ => OutputOf::FinalAttempt,
        }
    }

    /// Why the held output stays in memory, if it does: no temporary file could take it.
    pub(super) fn spill_error(&self) -> Option<String> {
        self.held.as_ref().and_then(|held| {
            let held = held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            held.spill_error().map(str::to_string)
        })
    }

    /// Passes the held output on as `output_of` says (see `OutputOf`), waiting for the reader
    /// as `reader_wait` says.
    pub(super) fn release_held(
        &mut self,
        output_of: OutputOf,
        reader_wait: ReaderWait,
        events: &SignalQueue,
        warnings: &mut Warnings,
        logger: &mut Logger,
    ) -> Result<(), Halt> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        let route = match disposal(self.failed_output, self.stdout_once, output_of) {
            Disposal::Written(route) => route,
            Disposal::Dropped => {
                held.lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .discard();
                return Ok(());
            }
            Disposal::Kept { attempt, end } => {
                let failed = match self.kept.keep(attempt, end, &held, self.keep_max) {
                    Err(error) => Some(crate::text::plain_error(&error)),
                    // Kept in memory, when no temporary file could take it: said as for the
                    // other spools.
                    Ok(()) => self.kept.spill_error().map(str::to_string),
                };
                if let Some(error) = failed {
                    warnings.say_once(
                        logger,
                        Event::SpillFailed {
                            stream: Stream::Stdout,
                            error: &error,
                        },
                    );
                }
                return Ok(());
            }
        };
        let copied = copy_out(events, reader_wait, move |progress| {
            copy_held(&held, route, progress)
        })?;
        said_copy(copied, warnings, logger).map(drop)
    }

    /// Writes the output kept of earlier attempts to stderr, or forgets it, as `settle` says
    /// (see `Execute::settle_failed_output`).
    pub(super) fn settle(
        &mut self,
        settle: Settle,
        events: &SignalQueue,
        warnings: &mut Warnings,
        logger: &mut Logger,
    ) -> Result<(), Halt> {
        let Some(reader_wait) = settle_wait(settle, self.failed_output) else {
            self.kept.clear();
            return Ok(());
        };
        for (kept, output) in self.kept.take() {
            logger.emit(&Event::FailedOutput {
                attempt: kept.attempt,
                end: kept.end,
            });
            let copied = copy_out(events, reader_wait, move |progress| {
                let on_stderr = |error| CopyFailed {
                    stream: Stream::Stderr,
                    error,
                };
                let out = OwnStream::on(io::stderr().as_fd()).map_err(on_stderr)?;
                let moved = &progress.moved;
                output
                    .write_to(&mut Counted { out, moved })
                    .map_err(on_stderr)
            })?;
            if !said_copy(copied, warnings, logger)? {
                break;
            }
        }
        Ok(())
    }
}

/// Runs `copy` (which keeps `Progress`) on a thread of its own while this one waits for
/// signals, so that a signal still ends `retry` at once when the reader downstream does not
/// read; the thread is then left behind, as `retry` is about to exit. Without a pipe or a
/// thread, the copy runs here. Returns how the copy went, or the signal that cut the wait
/// short.
fn copy_out(
    events: &SignalQueue,
    reader_wait: ReaderWait,
    copy: impl Fn(&Progress) -> Result<(), CopyFailed> + Send + Sync + 'static,
) -> Result<Result<(), CopyFailed>, Halt> {
    let progress = Arc::new(Progress::default());
    let copy = Arc::new(copy);
    let on_thread = (Arc::clone(&copy), Arc::clone(&progress));
    let Some((done, copier)) = spawn_copier(move || (on_thread.0)(&on_thread.1)) else {
        return Ok(copy(&progress));
    };
    let ended = match reader_wait {
        ReaderWait::WhileFlowing => {
            plumbing::wait_while_flowing(events, done.as_fd(), &progress.moved, None)
        }
        ReaderWait::Whole => events.wait_readable(done.as_fd(), events.readers_until()),
    };
    match ended {
        Ok(true) => Ok(copier.join().unwrap_or(Ok(()))),
        Ok(false) if reader_wait == ReaderWait::WhileFlowing => Ok(Ok(())),
        Ok(false) => Ok(Err(CopyFailed {
            stream: progress.writing(),
            error: io::Error::other(plumbing::READER_TOO_SLOW),
        })),
        Err(signal) => Err(Halt::Interrupted(signal)),
    }
}

/// Says how a copy went, once per stream; whether it went whole. A reader gone from stdout
/// ends the run; from stderr, only the copy.
fn said_copy(
    copied: Result<(), CopyFailed>,
    warnings: &mut Warnings,
    logger: &mut Logger,
) -> Result<bool, Halt> {
    let CopyFailed { stream, error } = match copied {
        Ok(()) => return Ok(true),
        Err(failed) => failed,
    };
    if error.kind() == io::ErrorKind::BrokenPipe {
        return if stream == Stream::Stdout {
            Err(Halt::BrokenPipe)
        } else {
            Ok(false)
        };
    }
    let error = crate::text::plain_error(&error);
    warnings.say_once(
        logger,
        Event::WriteFailed {
            stream,
            error: &error,
        },
    );
    Ok(false)
}

/// Starts `copy` on a thread of its own; returns the thread and a pipe that hangs up when it
/// ends. `None` when no pipe or thread can be had.
fn spawn_copier<T: Send + 'static>(
    copy: impl FnOnce() -> T + Send + 'static,
) -> Option<(PipeReader, JoinHandle<T>)> {
    let (done, finished) = io::pipe().ok()?;
    let copier = thread::Builder::new()
        .name("release".into())
        .spawn(move || {
            let copied = copy();
            drop(finished);
            copied
        })
        .ok()?;
    Some((done, copier))
}

/// Where held output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// Each stream's bytes to that stream: the final attempt's.
    Own,
    /// All to stderr: an earlier attempt's stdout under `--hold-stdout`.
    Stderr,
}

/// How far a copy has got: the bytes it wrote, and the stream it writes to now.
#[derive(Default)]
struct Progress {
    moved: AtomicU64,
    on_stderr: AtomicBool,
}

impl Progress {
    fn writing(&self) -> Stream {
        if self.on_stderr.load(Ordering::Relaxed) {
            Stream::Stderr
        } else {
            Stream::Stdout
        }
    }
}

/// A copy that could not write to `stream`.
struct CopyFailed {
    stream: Stream,
    error: io::Error,
}

/// Writes held output out, its stretches in the order they came, as `route` says. A stream
/// that fails is written no more, and the copy goes on with the other; a reader gone from
/// stdout ends it, as the run will end.
fn copy_held(held: &Mutex<Held>, route: Route, progress: &Progress) -> Result<(), CopyFailed> {
    let mut held = held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut stdout: Option<OwnStream> = None;
    let mut stderr: Option<OwnStream> = None;
    let mut failed: [Option<io::Error>; 2] = [None, None];
    let written = held.write_out(|stream, bytes| {
        let target = match route {
            Route::Own => stream,
            Route::Stderr => Stream::Stderr,
        };
        let index = usize::from(target == Stream::Stderr);
        if failed[index].is_some() {
            return Ok(());
        }
        progress
            .on_stderr
            .store(target == Stream::Stderr, Ordering::Relaxed);
        let out = if target == Stream::Stderr {
            &mut stderr
        } else {
            &mut stdout
        };
        let written = match out {
            Some(out) => Ok(out),
            None => own_stream(target).map(|opened| out.insert(opened)),
        }
        .and_then(|out| {
            Counted {
                out,
                moved: &progress.moved,
            }
            .write_all(bytes)
        });
        match written {
            // The run ends as a filter's does: quietly, with 141.
            Err(error) if target == Stream::Stdout && error.kind() == io::ErrorKind::BrokenPipe => {
                Err(error)
            }
            Err(error) => {
                failed[index] = Some(error);
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    });
    let [stdout_failed, stderr_failed] = failed;
    match (written, stdout_failed, stderr_failed) {
        (Err(error), _, _) | (Ok(()), Some(error), _) => Err(CopyFailed {
            stream: Stream::Stdout,
            error,
        }),
        (Ok(()), None, Some(error)) => Err(CopyFailed {
            stream: Stream::Stderr,
            error,
        }),
        (Ok(()), None, None) => Ok(()),
    }
}

/// `retry`'s own handle on `stream` (stdout or stderr).
fn own_stream(stream: Stream) -> io::Result<OwnStream> {
    match stream {
        Stream::Stdout => OwnStream::on(io::stdout().as_fd()),
        _ => OwnStream::on(io::stderr().as_fd()),
    }
}

/// A writer that counts what it wrote.
struct Counted<'a, W> {
    out: W,
    moved: &'a AtomicU64,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.out.write(bytes)?;
        self.moved.fetch_add(written as u64, Ordering::Relaxed);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::outcome::Limit;

    const EARLIER: OutputOf = OutputOf::EarlierAttempt {
        attempt: 2,
        end: AttemptEnd::Exited(1),
    };

    #[test]
    fn the_final_attempts_output_goes_to_its_own_streams_and_an_earlier_ones_as_the_flag_says() {
        for failed_output in [
            FailedOutput::Pass,
            FailedOutput::Drop,
            FailedOutput::OnGiveUp,
        ] {
            for output_of in [OutputOf::FinalAttempt, OutputOf::GaveUp] {
                let own = Disposal::Written(Route::Own);
                assert_eq!(disposal(failed_output, false, output_of), own);
            }
            assert_eq!(
                disposal(failed_output, true, OutputOf::FinalAttempt),
                Disposal::Written(Route::Own)
            );
        }
        assert_eq!(
            disposal(FailedOutput::Pass, false, EARLIER),
            Disposal::Written(Route::Stderr)
        );
        assert_eq!(
            disposal(FailedOutput::Drop, false, EARLIER),
            Disposal::Dropped
        );
        let timed_out = OutputOf::EarlierAttempt {
            attempt: 7,
            end: AttemptEnd::TimedOut(Limit::Attempt),
        };
        assert_eq!(
            disposal(FailedOutput::OnGiveUp, true, timed_out),
            Disposal::Kept {
                attempt: 7,
                end: AttemptEnd::TimedOut(Limit::Attempt)
            }
        );
    }

    #[test]
    fn stdout_passed_on_only_from_a_success_goes_to_stderr_when_the_run_gives_up() {
        for failed_output in [
            FailedOutput::Pass,
            FailedOutput::Drop,
            FailedOutput::OnGiveUp,
        ] {
            assert_eq!(
                disposal(failed_output, true, OutputOf::GaveUp),
                Disposal::Written(Route::Stderr)
            );
        }
    }

    #[test]
    fn kept_output_goes_out_whole_at_the_give_up_while_flowing_at_a_signal_and_else_is_forgotten() {
        let on_give_up = FailedOutput::OnGiveUp;
        assert_eq!(
            settle_wait(Settle::GaveUp, on_give_up),
            Some(ReaderWait::Whole)
        );
        assert_eq!(
            settle_wait(Settle::Interrupted, on_give_up),
            Some(ReaderWait::WhileFlowing)
        );
        assert_eq!(settle_wait(Settle::Succeeded, on_give_up), None);
        for failed_output in [FailedOutput::Pass, FailedOutput::Drop] {
            for settle in [Settle::GaveUp, Settle::Interrupted, Settle::Succeeded] {
                assert_eq!(settle_wait(settle, failed_output), None);
            }
        }
    }
}
