//! Running a hook (`--on-retry`, `--on-failure`, `--on-success`) to its end, and the values an
//! `--on-retry` hook hands to the attempts after it: the private file it writes them to
//! (`RETRY_ENV_FILE`), read back once it has ended. The hook is started by `spawn` and waited
//! for by `supervise`; how it ended is only logged, never judged.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::time::Instant;

use super::spawn::{self, RunVars};
use super::stragglers::Lookout;
use super::supervise::Supervisor;
use super::target::SignalTarget;
use super::warnings::Warnings;
use crate::driver::{HookSpec, Interrupted};
use crate::files;
use crate::hook_values::{self, HookValues};
use crate::log::{Event, Logger};
use crate::outcome::{AttemptEnd, Limit};
use crate::reaper::reap_orphans;
use crate::settings::HookKind;
use crate::start;

/// What the hooks of a run hand on, and where.
#[derive(Default)]
pub(super) struct HookValueStore {
    /// What `--on-retry` hooks handed on to later attempts.
    pub(super) values: HookValues,
    /// The directory of the files `--on-retry` hooks write values to, once made: private (mode
    /// 0700), so that no other user can put a file at a name a hook freed (in a shared `/tmp`,
    /// with `LD_PRELOAD=` in it for the attempts). Removed, with all in it, when the run ends.
    values_dir: Option<tempfile::TempDir>,
}

impl HookValueStore {
    /// Runs `hook` to its end, under the run's deadline, as `supervisor` ends children;
    /// `lookout` tells what it leaves behind. `Err` holds a shutdown signal received meanwhile.
    pub(super) fn run(
        &mut self,
        hook: &HookSpec<'_>,
        supervisor: &Supervisor<'_>,
        lookout: Lookout<'_>,
        warnings: &mut Warnings,
        logger: &mut Logger,
    ) -> Result<AttemptEnd, Interrupted> {
        let started = Instant::now();
        // Removed when it goes out of scope, once read (or not, when a signal ends the run).
        let values_file = match hook.kind {
            HookKind::Retry => self.values_file(warnings, logger),
            _ => None,
        };
        let vars = RunVars::of_hook(hook, values_file.as_deref());
        let mut child = match spawn::spawn_hook(hook.command, &vars) {
            Ok(child) => child,
            Err(error) => return Ok(start::failure(&error, OsStr::new("sh")).0),
        };
        let target = SignalTarget::Group(child.id() as libc::pid_t);
        let deadline = hook.deadline.map(|at| (at, Limit::Run));
        // A hook's stdin is /dev/null: only one that opens the terminal itself can be stopped
        // for it, and its deadline (if any) still applies.
        let supervised =
            supervisor.supervise(&mut child, target, deadline, started, &mut |_| {}, lookout);
        reap_orphans(None);
        if let Some(path) = values_file {
            if supervised.interrupted.is_none() {
                self.take_hook_values(&path, logger);
            }
            // A directory the hook made in its place is the hook's, under a name no one else
            // could know: it goes too (the file itself goes with `path`).
            if std::fs::symlink_metadata(&path).is_ok_and(|found| found.is_dir()) {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
        match supervised.interrupted {
            Some(signal) => Err(Interrupted(signal)),
            None => Ok(supervised.end()),
        }
    }

    /// A private empty file for the `--on-retry` hook to write values to (`RETRY_ENV_FILE`):
    /// mode 0600, under a name no one can foresee, in the run's private directory in the
    /// temporary directory (made at the first hook). One that cannot be made is said once, and
    /// the hook runs without it.
    fn values_file(
        &mut self,
        warnings: &mut Warnings,
        logger: &mut Logger,
    ) -> Option<tempfile::TempPath> {
        use std::os::unix::fs::PermissionsExt;
        let dir = crate::dirs::temp_dir();
        let made = match self.values_dir.take() {
            Some(made) => Ok(made),
            None => tempfile::Builder::new()
                .prefix("retry-env-")
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir_in(&dir),
        };
        let file = made.and_then(|made| {
            let file = tempfile::Builder::new().prefix("env-").tempfile_in(&made);
            self.values_dir = Some(made);
            file
        });
        match file {
            Ok(file) => Some(file.into_temp_path()),
            Err(error) => {
                let error = format!(
                    "cannot make it in {}: {}",
                    crate::text::path(&dir),
                    crate::text::plain_error(&error)
                );
                warnings.say_once(
                    logger,
                    Event::HookValuesSkipped {
                        line: None,
                        error: &error,
                        count: 0,
                    },
                );
                None
            }
        }
    }

    /// Reads the values the hook wrote to `path` for the attempts after it, saying once what
    /// was skipped. Only a regular file of the user's is read (the hook may write it in place
    /// or move one over it), and at most 64 KiB of it; a hook that removed the file handed on
    /// nothing.
    fn take_hook_values(&mut self, path: &Path, logger: &mut Logger) {
        let mut text = match files::read_bounded(path, hook_values::MOST_READ + 1) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return,
            Err(error) => {
                let error = crate::text::plain_error(&error);
                logger.emit(&Event::HookValuesSkipped {
                    line: None,
                    error: &error,
                    count: 0,
                });
                return;
            }
        };
        let cut = text.len() as u64 > hook_values::MOST_READ;
        text.truncate(hook_values::MOST_READ as usize);
        if let Some(skipped) = self.values.take(&text, cut) {
            logger.emit(&Event::HookValuesSkipped {
                line: Some(skipped.line),
                error: skipped.why,
                count: skipped.count,
            });
        }
    }
}
