//! `retry`: run a command until it succeeds, with backoff and jitter between attempts.
//!
//! `run` wires the pieces: argv -> `Cli` -> `Settings` -> driver (with the real runner and
//! clock) -> `RunEnd` -> exit status. Each module's own doc says what it owns.

pub mod backoff;
pub mod cli;
pub mod clock;
pub mod config;
pub mod driver;
pub mod dryrun;
mod fleet;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod input;
pub mod interpreter;
mod lines;
mod outcome;
pub mod parse;
mod plumbing;
mod predicate;
mod report;
mod runner;
pub mod settings;
pub mod signals;
mod spool;
mod stdio;
mod text;

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::rc::Rc;

use anyhow::{anyhow, bail};

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::backoff::Delays;
use crate::cli::Cli;
use crate::cli::StateLocation;
use crate::clock::RealClock;
use crate::config::ConfigFile;
use crate::fleet::file::{FileStore, OpenError};
use crate::fleet::redis::RedisStore;
use crate::fleet::{Fleet, Gate, NoLimits, StateStore};
use crate::outcome::{MISUSE, RunEnd};
use crate::plumbing::OwnStream;
use crate::predicate::{Matches, Verdict};
use crate::report::{Reporter, Terminal};
use crate::runner::Runner;
use crate::settings::Settings;
use crate::settings::StateAction;
use crate::signals::Events;

/// How `retry` ends: with a status, or by re-raising a signal it received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Status(u8),
    Signal(i32),
}

impl Exit {
    pub fn exit(self) -> ! {
        match self {
            Exit::Status(status) => std::process::exit(i32::from(status)),
            Exit::Signal(signal) => signals::exit_by(signal),
        }
    }
}

pub fn run(args: impl IntoIterator<Item = OsString>) -> Exit {
    prepare_process();
    #[cfg(debug_assertions)]
    inject_panic();
    let args: Vec<OsString> = args.into_iter().collect();
    // One parse of the command line serves the settings and, with a config file, which keys
    // the command line sets.
    let parsed = Cli::command()
        .try_get_matches_from(&args)
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => return clap_exit(&error, &args),
    };
    let cli = match with_config_file(cli, &args, &matches) {
        Ok(cli) => cli,
        Err(error) => return misuse(&format!("{error:#}")),
    };
    let settings = match Settings::resolve(cli) {
        Ok(settings) => settings,
        Err(error) => return misuse(&format!("{error:#}")),
    };
    if settings.dry_run {
        return print_stdout(&(dryrun::plan(&settings) + &start_note(&settings)));
    }
    let store = match open_state(&settings) {
        Ok(store) => store,
        Err(line) => return misuse(&line),
    };
    if let Some(action) = settings.state_action {
        return act_on_state(&settings, store, action);
    }
    let events = match Events::listen() {
        Ok(events) => Rc::new(events),
        Err(error) => return misuse(&format!("{error:#}")),
    };
    let seed = settings.seed.unwrap_or_else(os_seed);
    let mut delays = Delays::new(settings.schedule.clone(), StdRng::seed_from_u64(seed));
    let mut reporter = Reporter::new(
        settings.verbosity,
        settings.log_format,
        Terminal::detect(),
        Box::new(signals::Stderr::new(Rc::clone(&events))),
    );
    runner::adopt_orphans();
    let mut runner = Runner::new(&settings, &events);
    let mut clock = RealClock::new(&events);
    let mut gate: Box<dyn Gate> = match store {
        None => Box::new(NoLimits),
        Some(store) => Box::new(Fleet::new(settings.fleet.clone(), store, entropy())),
    };
    match driver::drive(
        &settings,
        seed,
        &mut runner,
        &mut clock,
        &mut delays,
        gate.as_mut(),
        &mut reporter,
    ) {
        RunEnd::Interrupted(signal) => Exit::Signal(signal),
        end => match runner.hand_over() {
            Ok(()) => Exit::Status(end.exit_status(settings.fail_exit)),
            Err(signal) => Exit::Signal(signal),
        },
    }
}

/// For the contention benchmark (`examples/state_contention.rs`) only: runs `count`
/// transactions on the budget `name` in the state directory `dir`, each as a run's first attempt
/// does it (open the store, lock, load, count one, store), and returns the first attempts the
/// record then holds. Each transaction opens the store afresh, as each run does.
#[doc(hidden)]
pub fn bench_state_transactions(
    dir: &std::path::Path,
    name: &str,
    count: u64,
) -> Result<u64, String> {
    use crate::fleet::BudgetPolicy;
    let policy = BudgetPolicy {
        ratio: 0.1,
        floor: 10,
        window: std::time::Duration::from_secs(3600),
    };
    let mut firsts = 0;
    for _ in 0..count {
        let mut store = FileStore::open(dir, &[name]).map_err(|error| format!("{error:?}"))?;
        (firsts, _) = store
            .transact(name, &mut |record, now| {
                record.budget.first_attempt(now, &policy);
                record.budget.view(now, &policy).firsts
            })
            .map_err(|error| error.0)?;
    }
    Ok(firsts)
}

/// The store of the budget and breaker the run names (`None` when it names neither), or the
/// line that says why the state may not be used (misuse). A state that cannot be used for any
/// other reason is a store that fails open.
fn open_state(settings: &Settings) -> Result<Option<StateStore>, String> {
    let fleet = &settings.fleet;
    if !fleet.any() {
        return Ok(None);
    }
    let location = match &settings.state {
        Some(location) => Some(location.clone()),
        None => match non_empty_env("RETRY_STATE") {
            Some(value) => {
                let value = value
                    .into_string()
                    .map_err(|_| "$RETRY_STATE is not valid UTF-8".to_string())?;
                Some(cli::parse_state(&value).map_err(|reason| format!("$RETRY_STATE: {reason}"))?)
            }
            None => default_state_dir().map(StateLocation::Directory),
        },
    };
    let names = fleet.names();
    let opened = match location {
        Some(StateLocation::Directory(dir)) => FileStore::open(&dir, &names).map(StateStore::Ready),
        Some(StateLocation::Redis(url)) => RedisStore::open(&url)
            .map(StateStore::Redis)
            .map_err(OpenError::Unavailable),
        None => Err(OpenError::Unavailable(
            "no state directory: set $XDG_STATE_HOME or $HOME, or give --state".into(),
        )),
    };
    match opened {
        Ok(store) => Ok(Some(store)),
        Err(OpenError::Unsafe(line)) => Err(line),
        Err(OpenError::Unavailable(reason)) => Ok(Some(StateStore::Unavailable(reason))),
    }
}

/// `$XDG_STATE_HOME/retry`, else `~/.local/state/retry`. A relative value is ignored, as for
/// the config file.
fn default_state_dir() -> Option<PathBuf> {
    Some(xdg_base("XDG_STATE_HOME", ".local/state")?.join("retry"))
}

/// The XDG base directory `key` names, else `~/fallback`. A relative value is ignored (the XDG
/// rule, applied to `HOME` too): it would read from the current directory.
fn xdg_base(key: &str, fallback: &str) -> Option<PathBuf> {
    let absolute = |key| {
        non_empty_env(key)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute(key).or_else(|| Some(absolute("HOME")?.join(fallback)))
}

/// `--show-state` or `--reset-state`: prints the state (or that it was reset) on stdout and
/// exits 0; a state that cannot be read exits 1 with one line.
fn act_on_state(settings: &Settings, store: Option<StateStore>, action: StateAction) -> Exit {
    let Some(mut store) = store else {
        unreachable!("a state action needs a name")
    };
    let result = match action {
        StateAction::Show => fleet::show(&settings.fleet, &mut store).map(|(budget, breaker)| {
            report::fleet_state(settings.log_format, budget.as_ref(), breaker.as_ref())
        }),
        StateAction::Reset => fleet::reset(&settings.fleet, &mut store)
            .map(|()| report::fleet_reset(settings.log_format, &settings.fleet)),
    };
    match result {
        Ok(text) => print_stdout(&text),
        Err(fleet::StoreError(reason)) => {
            let _ = writeln!(
                io::stderr(),
                "retry: state unavailable ({})",
                text::one_line(&reason)
            );
            Exit::Status(1)
        }
    }
}

/// For `--dry-run`: what a run would say of a COMMAND that cannot be started, and what would
/// follow; empty when it can be, as far as can be seen without starting it.
fn start_note(settings: &Settings) -> String {
    let Some(program) = settings.command.first() else {
        return String::new();
    };
    let Some((end, error)) = runner::start_problem(program) else {
        return String::new();
    };
    let then = match settings.judge.judge(end, Matches::default()) {
        Verdict::Retry => format!("every attempt would fail so, with status {}", end.status()),
        _ => format!(
            "a run would end at once with status {}",
            RunEnd::Failed { last: Some(end) }.exit_status(settings.fail_exit)
        ),
    };
    format!(
        "note: {}\nnote: {then}\n",
        report::cannot_start(program, end, &error)
    )
}

/// What `retry` needs of the Rust runtime's start-up, which main.rs skips: SIGPIPE ignored (see
/// signals.rs), and descriptors 0, 1 and 2 open, so that no file `retry` opens later lands there
/// and is taken for stdin, stdout or stderr (/dev/null fills a closed one, as std would). And a
/// panic, on any thread, ends `retry` with status 125 and one line, as `timeout(1)` does when it
/// fails itself: never by a signal or a status that would read as the command's own end.
fn prepare_process() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|text| text.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let place = info.location().map_or(String::new(), |at| {
            format!(" at {}:{}", at.file(), at.line())
        });
        let _ = writeln!(
            io::stderr(),
            "retry: internal error: {}{place}; this is a bug in retry",
            text::one_line(&what)
        );
        std::process::exit(i32::from(MISUSE));
    }));
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: called before any thread exists; three valid pollfds and no timeout; open(2) with
    // a valid C string. Descriptors are taken lowest first, so each open fills the lowest closed
    // one.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        if libc::poll(fds.as_mut_ptr(), 3, 0) < 0 {
            return;
        }
        for fd in fds {
            if fd.revents & libc::POLLNVAL != 0 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
}

/// For the tests of the panic hook, in debug builds only: `RETRY_INJECT_PANIC=main` panics
/// here, `thread` on a thread of its own.
#[cfg(debug_assertions)]
fn inject_panic() {
    match std::env::var("RETRY_INJECT_PANIC").as_deref() {
        Ok("main") => panic!("injected for a test"),
        Ok("thread") => {
            let _ = std::thread::spawn(|| panic!("injected on a thread for a test")).join();
            unreachable!("the panic hook ends the process");
        }
        _ => {}
    }
}

/// Layers the configuration file, if there is one, under the command line: its arguments come
/// first, so the command line's own win.
fn with_config_file(
    cli: Cli,
    args: &[OsString],
    matches: &clap::ArgMatches,
) -> anyhow::Result<Cli> {
    let profile = match (&cli.profile, non_empty_env("RETRY_PROFILE")) {
        (Some(profile), _) => Some(profile.clone()),
        (None, Some(profile)) => Some(profile.into_string().map_err(|profile| {
            anyhow!(
                "$RETRY_PROFILE '{}' is not valid UTF-8, so no profile can have that name",
                profile.to_string_lossy()
            )
        })?),
        (None, None) => None,
    };
    let Some(path) = config_path(&cli)? else {
        if let Some(profile) = profile {
            bail!(
                "profile '{profile}' requested but no config file found (--config, $RETRY_CONFIG, {})",
                default_config_path().map_or("$XDG_CONFIG_HOME/retry/config.toml".into(), |p| p
                    .display()
                    .to_string())
            );
        }
        return Ok(cli);
    };
    let name = path.display().to_string();
    let (bytes, metadata) = read_config(&path).map_err(|error| {
        anyhow!(
            "cannot read config file {name}: {}",
            text::plain_error(&error)
        )
    })?;
    let file = ConfigFile::parse(&name, &ConfigFile::text(&name, bytes)?)?;
    if file.has_hooks() {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: getuid(2) cannot fail.
        let user = unsafe { libc::getuid() };
        if let Some(why) = config::hooks_refused(metadata.mode(), metadata.uid(), user) {
            bail!(
                "{name}: its hooks are refused: {why}; a file that runs commands must be yours (or root's) and not writable by others"
            );
        }
    }
    let file_args = file.arguments(profile.as_deref(), &config::command_line_keys(matches))?;
    if file_args.is_empty() {
        return Ok(cli);
    }
    let layered: Vec<OsString> = args[..1]
        .iter()
        .cloned()
        .chain(file_args)
        .chain(args[1..].iter().cloned())
        .collect();
    Cli::try_parse_from(layered).map_err(|error| anyhow!("{name}: {}", config::clap_reason(&error)))
}

/// The most a config file may hold: far more than any real one, and a bound on what a path to
/// an endless source (`/dev/zero`, a pipe that never ends) may cost.
const CONFIG_LIMIT: u64 = 1024 * 1024;

/// Reads a config file, which may also be a pipe (`--config <(...)`), up to `CONFIG_LIMIT`,
/// with what the open file is (owner, mode: of the file read, not of a path looked up again).
fn read_config(path: &std::path::Path) -> io::Result<(Vec<u8>, std::fs::Metadata)> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    let mut bytes = Vec::new();
    file.take(CONFIG_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > CONFIG_LIMIT {
        return Err(io::Error::other("larger than 1 MiB"));
    }
    Ok((bytes, metadata))
}

/// `--config`, else `$RETRY_CONFIG` (both must exist), else the XDG default if it exists.
/// Never the current directory.
fn config_path(cli: &Cli) -> anyhow::Result<Option<PathBuf>> {
    if let Some(path) = cli
        .config
        .clone()
        .or_else(|| non_empty_env("RETRY_CONFIG").map(PathBuf::from))
    {
        return Ok(Some(path));
    }
    Ok(default_config_path().filter(|path| path.is_file()))
}

/// `$XDG_CONFIG_HOME/retry/config.toml`, else `~/.config/retry/config.toml`. A relative value
/// is ignored (the XDG rule, applied to `HOME` too): it would read from the current directory.
fn default_config_path() -> Option<PathBuf> {
    Some(
        xdg_base("XDG_CONFIG_HOME", ".config")?
            .join("retry")
            .join("config.toml"),
    )
}

fn non_empty_env(key: &str) -> Option<OsString> {
    std::env::var_os(key).filter(|value| !value.is_empty())
}

/// A seed from the OS, so that processes started together draw different delays. getrandom(2)
/// is called directly: one syscall, where a generic entropy source probes for it first (and in
/// a static build falls back to opening /dev/random).
///
/// 53 bits of it: the seed is logged (as a JSON number, and in `--verbose`) so that a run can
/// be replayed with `--seed`, and JSON readers that hold numbers as doubles (JavaScript, jq
/// 1.6, many log pipelines) keep integers exact only up to 2^53.
fn os_seed() -> u64 {
    const EXACT_IN_A_DOUBLE: u64 = (1 << 53) - 1;
    entropy() & EXACT_IN_A_DOUBLE
}

fn entropy() -> u64 {
    let mut seed = [0u8; 8];
    // SAFETY: the buffer is valid for its length; GRND_NONBLOCK never blocks at early boot.
    let filled = unsafe {
        libc::getrandom(
            seed.as_mut_ptr().cast::<libc::c_void>(),
            seed.len(),
            libc::GRND_NONBLOCK,
        )
    };
    if filled == seed.len() as isize {
        return u64::from_ne_bytes(seed);
    }
    // No entropy yet: the pid and the clock still differ between processes.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// Help and version go to stdout with status 0; every other clap error is misuse, said in one
/// line.
fn clap_exit(error: &clap::Error, args: &[OsString]) -> Exit {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            print_stdout(&error.render().to_string())
        }
        ErrorKind::InvalidUtf8 => {
            let flag = cli::option_with_non_utf8_value(args).unwrap_or_else(|| "an option".into());
            let hint = if flag.contains("stdout") || flag.contains("stderr") {
                "; a pattern matches any byte written as (?-u:\\xFF)"
            } else {
                ""
            };
            misuse(&format!(
                "invalid value for '{flag}': it is not valid UTF-8{hint}"
            ))
        }
        _ => misuse(&config::clap_reason(error)),
    }
}

fn misuse(message: &str) -> Exit {
    let message = text::redact_urls(message);
    let _ = writeln!(io::stderr(), "retry: {}", text::one_line(&message));
    Exit::Status(MISUSE)
}

/// Writes to stdout; a reader that has gone away ends `retry` quietly, like other filters.
fn print_stdout(text: &str) -> Exit {
    match OwnStream::on(io::stdout().as_fd())
        .and_then(|mut stdout| stdout.write_all(text.as_bytes()))
    {
        Ok(()) => Exit::Status(0),
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
            Exit::Status(RunEnd::BrokenPipe.exit_status(None))
        }
        Err(error) => misuse(&format!(
            "cannot write to stdout: {}",
            text::plain_error(&error)
        )),
    }
}
