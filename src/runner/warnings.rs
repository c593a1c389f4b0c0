//! The runner's warnings about streams that are said once a run: a spool that could not spill
//! to a file, a stream that could not be read or written, a values file that could not be
//! made. Each holds for the rest of the run, so a second saying would tell nothing. Knows which
//! were said, not why they came: the runner's parts find the failures and come here to say
//! them.

use crate::log::{Event, Logger};
use crate::stdio::Stream;

/// The warnings said already (see `say_once`): what failed, and for which stream.
#[derive(Default)]
pub(super) struct Warnings(Vec<(&'static str, Stream)>);

impl Warnings {
    /// Emits a warning about a stream the first time only: it holds for the rest of the run.
    pub(super) fn say_once(&mut self, logger: &mut Logger, warning: Event<'_>) {
        let key = match warning {
            Event::SpillFailed { stream, .. } => ("spill", stream),
            Event::WriteFailed { stream, .. } => ("write", stream),
            Event::ReadFailed { .. } => ("read", Stream::Stdin),
            Event::HookValuesSkipped { line: None, .. } => ("hook values", Stream::Stdin),
            _ => return logger.emit(&warning),
        };
        if !self.0.contains(&key) {
            self.0.push(key);
            logger.emit(&warning);
        }
    }

    /// Says, once each, that held or replayed data outgrew memory and stays there for want of
    /// a temporary file: `failures` are the spools that could not spill, and why.
    pub(super) fn say_spill_failures(
        &mut self,
        logger: &mut Logger,
        failures: Vec<(Stream, String)>,
    ) {
        for (stream, error) in failures {
            self.say_once(
                logger,
                Event::SpillFailed {
                    stream,
                    error: &error,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::{Read, Seek};

    use crate::cli::LogFormat;
    use crate::log::Terminal;
    use crate::settings::Verbosity;

    /// The lines said for `warnings`, each offered in turn to one `Warnings`.
    fn said(warnings: Vec<Event<'_>>) -> Vec<String> {
        let mut out = tempfile::tempfile().unwrap();
        let mut logger = Logger::new(
            Verbosity::Normal,
            LogFormat::Text,
            Terminal::default(),
            Box::new(out.try_clone().unwrap()),
        );
        let mut warned = Warnings::default();
        for warning in warnings {
            warned.say_once(&mut logger, warning);
        }
        drop(logger);
        let mut text = String::new();
        out.rewind().unwrap();
        out.read_to_string(&mut text).unwrap();
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_failure_is_said_once_for_each_stream_it_befalls() {
        let write = |stream, error| Event::WriteFailed { stream, error };
        let lines = said(vec![
            write(Stream::Stdout, "no space left"),
            write(Stream::Stdout, "no space left either"),
            write(Stream::Stderr, "no space left"),
            Event::SpillFailed {
                stream: Stream::Stdout,
                error: "read-only",
            },
            write(Stream::Stderr, "again"),
        ]);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("no space left"), "{lines:?}");
        assert!(
            !lines.iter().any(|line| line.contains("either")),
            "{lines:?}"
        );
        assert!(
            !lines.iter().any(|line| line.contains("again")),
            "{lines:?}"
        );
        assert!(lines[2].contains("read-only"), "{lines:?}");
    }

    #[test]
    fn a_skipped_line_of_hook_values_is_said_each_time_and_a_missing_file_once() {
        let skipped = |line, error| Event::HookValuesSkipped {
            line,
            error,
            count: 1,
        };
        let lines = said(vec![
            skipped(Some(2), "no equals sign"),
            skipped(Some(2), "no equals sign"),
            skipped(None, "cannot make it in /tmp"),
            skipped(None, "cannot make it in /tmp"),
            Event::ReadFailed { error: "bad stdin" },
            Event::ReadFailed { error: "bad stdin" },
        ]);
        assert_eq!(lines.len(), 4, "{lines:?}");
    }
}
