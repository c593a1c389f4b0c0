//! Resolved settings: the parsed command line with every default applied and every cross-flag
//! rule checked. No clock, and two looks past the command line, each so that a bad value is
//! misuse before the run (in `--dry-run` too) rather than a failure in it: `state_location`
//! reads `$RETRY_STATE` (and `$HOME`, for its `~`) when no `--state` is given, and
//! `in_a_directory` asks the file system whether the directories of `--metrics-file` and
//! `--report` exist. Nothing else of the environment or the file system is read here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};

use crate::backoff::{Backoff, ETHERNET_ATTEMPTS, Jitter, Schedule};
use crate::cli::{Cli, FailedOutput, LogFormat, ReportFormat, StdinMode};
use crate::debian::{self, Criteria, Times};
use crate::ending::Ending;
use crate::fleet::{BreakerPolicy, BudgetPolicy, FleetSettings, StateLocation};
use crate::http::HttpLines;
use crate::lines::Pattern;
use crate::outcome::AttemptEnd;
use crate::parse::{CodeLimit, DelayList, TimeoutList};
use crate::predicate::Judge;
use crate::text;

pub const DEFAULT_RETRIES: u64 = 5;
pub const DEFAULT_KILL_AFTER: Duration = Duration::from_secs(2);
pub const DEFAULT_BASE: Duration = Duration::from_secs(1);
pub const DEFAULT_MAX: Duration = Duration::from_secs(30);
pub const DEFAULT_MULTIPLIER: f64 = 2.0;
pub const DEFAULT_RETRY_AFTER_MAX: Duration = Duration::from_secs(300);
pub const DEFAULT_BUDGET_RATIO: f64 = 0.1;
pub const DEFAULT_BUDGET_FLOOR: (u64, Duration) = (10, Duration::from_secs(60));
pub const DEFAULT_BREAKER_THRESHOLD: u64 = 5;
pub const DEFAULT_BREAKER_COOLDOWN: Duration = Duration::from_secs(60);

/// What `--keep-max` is unless given: 1 MiB of each earlier attempt's output.
const KEEP_MAX: u64 = 1024 * 1024;

/// Ordered: each level says everything the one before it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// What reads one output stream: the patterns, and the HTTP lines looked for.
#[derive(Clone, Debug, Default)]
pub struct OutputRules {
    pub until: Option<Pattern>,
    pub retry_if: Option<Pattern>,
    pub stop_if: Option<Pattern>,
    /// `--retry-after-stdout` or `--retry-after-stderr`.
    pub hint: Option<Pattern>,
    pub http: HttpLines,
}

impl OutputRules {
    /// Whether anything reads this stream, so that it must be piped.
    pub fn any(&self) -> bool {
        self.until.is_some()
            || self.retry_if.is_some()
            || self.stop_if.is_some()
            || self.hint.is_some()
            || self.http.any()
    }
}

/// Commands run through `sh -c` at points of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hooks {
    pub on_retry: Option<String>,
    pub on_failure: Option<String>,
    pub on_success: Option<String>,
}

impl Hooks {
    /// The command of the hook of `kind`, if one is set.
    pub fn command(&self, kind: HookKind) -> Option<&str> {
        match kind {
            HookKind::Retry => self.on_retry.as_deref(),
            HookKind::Failure => self.on_failure.as_deref(),
            HookKind::Success => self.on_success.as_deref(),
        }
    }
}

/// Which hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookKind {
    Retry,
    Failure,
    Success,
}

impl HookKind {
    pub const ALL: [HookKind; 3] = [HookKind::Retry, HookKind::Failure, HookKind::Success];

    pub fn flag(self) -> &'static str {
        match self {
            HookKind::Retry => "--on-retry",
            HookKind::Failure => "--on-failure",
            HookKind::Success => "--on-success",
        }
    }
}

/// The time limit of each attempt (`--timeout`, or the list of `--timeouts`): attempt n gets
/// entry n, and the last entry repeats; 0 is no limit. Empty: no attempt has one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeouts(Vec<Duration>);

impl Timeouts {
    fn of_cli(cli: &Cli) -> Timeouts {
        match (&cli.timeouts, cli.timeout) {
            (Some(TimeoutList(list)), _) => Timeouts(list.clone()),
            (None, Some(one)) => Timeouts(vec![one]),
            (None, None) => Timeouts::default(),
        }
    }

    /// The limit of attempt `attempt` (1-based), if it has one.
    pub fn of(&self, attempt: u64) -> Option<Duration> {
        let index = usize::try_from(attempt.saturating_sub(1)).unwrap_or(usize::MAX);
        self.0
            .get(index)
            .or(self.0.last())
            .copied()
            .filter(|limit| !limit.is_zero())
    }

    /// The longest any attempt may run, when every attempt has a limit.
    pub fn longest(&self) -> Option<Duration> {
        if self.0.is_empty() || self.0.iter().any(Duration::is_zero) {
            return None;
        }
        self.0.iter().copied().max()
    }

    /// The list as given (one entry for `--timeout`).
    pub fn list(&self) -> &[Duration] {
        &self.0
    }

    /// Whether the attempts' limits differ (a list that changes).
    pub fn vary(&self) -> bool {
        self.0.windows(2).any(|pair| pair[0] != pair[1])
    }
}

/// What `--show-state` and `--reset-state` ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateAction {
    Show,
    Reset,
}

#[derive(Clone, Debug)]
pub struct Settings {
    /// Total attempts; `None` when unlimited.
    pub max_attempts: Option<u64>,
    pub max_time: Option<Duration>,
    pub timeouts: Timeouts,
    pub kill_after: Duration,
    pub kill_signal: i32,
    pub schedule: Schedule,
    pub seed: Option<u64>,
    pub splay: Duration,
    pub judge: Judge,
    pub stdout_rules: OutputRules,
    pub stderr_rules: OutputRules,
    /// The longest wait a hint may ask for (`--retry-after-max`).
    pub retry_after_max: Duration,
    /// The budget and breaker named, with this run's policies.
    pub fleet: FleetSettings,
    /// `--state`, else `RETRY_STATE`, when given (else the default, found when the state is
    /// opened).
    pub state: Option<StateLocation>,
    /// `--show-state` or `--reset-state`: act on the state and exit.
    pub state_action: Option<StateAction>,
    pub consecutive: u64,
    /// The `CODE@N` limits of `--retry-on-exit`.
    pub code_limits: Vec<CodeLimit>,
    /// `--reset-after`: a failed attempt that ran this long starts the schedule and the limit
    /// afresh.
    pub reset_after: Option<Duration>,
    /// `--restart`: a success starts the command again.
    pub restart: bool,
    pub fail_exit: Option<u8>,
    pub foreground: bool,
    pub stdin: StdinMode,
    pub hold_stdout: bool,
    /// Under `hold_stdout`, the stdout of the final attempt of a run that did not succeed goes
    /// to stderr too (Debian's "once and once only": stdout holds only an answer).
    pub stdout_once: bool,
    /// What becomes of failed attempts' output.
    pub failed_output: FailedOutput,
    /// `--keep-max`: the most kept of each earlier attempt's output; 0 keeps it whole.
    pub keep_max: u64,
    /// `--metrics-file` and the job it labels.
    pub metrics: Option<MetricsTarget>,
    /// `--report`: where the run's summary goes, and in which format.
    pub report: Option<(PathBuf, ReportFormat)>,
    pub hooks: Hooks,
    pub verbosity: Verbosity,
    pub log_format: LogFormat,
    /// `--label` or `-m`: the name `retry`'s lines give the command.
    pub label: Option<String>,
    pub dry_run: bool,
    pub command: Vec<OsString>,
}

impl Settings {
    pub fn resolve(mut cli: Cli) -> Result<Settings> {
        let debian = debian::defaults(given(&cli));
        let backoff = cli.backoff.unwrap_or(Backoff::Exponential);
        let max_attempts = max_attempts(&cli, &debian, backoff);
        let fleet = fleet_settings(&cli);
        let state_action = state_action(&cli, &fleet)?;
        let state = state_location(&cli)?;
        let metrics = metrics_target(&cli)?;
        let report = report_target(&cli)?;
        let failed_output = failed_output(&cli)?;
        // Debian's -d is --delays; without either (nor a curve), its 10s waits.
        cli.delays = cli
            .delays
            .take()
            .or(cli.delay.take())
            .or(debian.delays.map(DelayList));
        let criteria = criteria(cli.until.take(), cli.while_.take());
        command_given(&cli, state_action.is_some())?;
        let schedule = schedule(&cli, backoff)?;
        let judge = judge(&cli, criteria);
        let (stdout_rules, stderr_rules) = output_rules(&mut cli);
        Ok(Settings {
            max_attempts,
            // 0 disables a limit, as in timeout(1).
            max_time: cli.max_time.filter(|d| !d.is_zero()),
            timeouts: Timeouts::of_cli(&cli),
            kill_after: cli.kill_after.unwrap_or(DEFAULT_KILL_AFTER),
            kill_signal: cli.kill_signal.unwrap_or(libc::SIGTERM),
            schedule,
            seed: cli.seed,
            splay: cli.splay.unwrap_or(Duration::ZERO),
            judge,
            stdout_rules,
            stderr_rules,
            retry_after_max: cli.retry_after_max.unwrap_or(DEFAULT_RETRY_AFTER_MAX),
            fleet,
            state,
            state_action,
            consecutive: cli.consecutive.unwrap_or(1),
            code_limits: cli
                .retry_on_exit
                .as_ref()
                .map_or_else(Vec::new, |list| list.limits.clone()),
            reset_after: cli.reset_after,
            restart: cli.restart,
            fail_exit: cli.fail_exit,
            foreground: cli.foreground,
            stdin: cli.stdin.unwrap_or(if debian.stdin_replay {
                StdinMode::Replay
            } else {
                StdinMode::Auto
            }),
            hold_stdout: cli.hold_stdout || debian.stdout_once,
            stdout_once: debian.stdout_once,
            failed_output,
            keep_max: cli.keep_max.unwrap_or(KEEP_MAX),
            metrics,
            report,
            hooks: Hooks {
                on_retry: cli.on_retry,
                on_failure: cli.on_failure,
                on_success: cli.on_success,
            },
            verbosity: match (cli.quiet, cli.verbose) {
                (true, _) => Verbosity::Quiet,
                (false, true) => Verbosity::Verbose,
                (false, false) => Verbosity::Normal,
            },
            log_format: cli.log_format.unwrap_or_default(),
            label: cli.label.or(cli.message).filter(|label| !label.is_empty()),
            dry_run: cli.dry_run,
            command: cli.command,
        })
    }

    /// `retry`'s exit status for a run that ended so, whose last attempt ended with `last`,
    /// with `fail_exit` replacing a given-up run's: under Debian's `-u`/`-w`, the last
    /// attempt's status however the run ends (Debian's rule); else `Ending`'s own.
    pub(crate) fn exit_status(
        &self,
        ending: Ending,
        last: Option<AttemptEnd>,
        fail_exit: Option<u8>,
    ) -> u8 {
        if self.judge.criteria.is_none() {
            return ending.exit_status(last, fail_exit);
        }
        match (ending, last) {
            (Ending::Success, Some(last)) => last.status(),
            (ending, Some(last)) if ending.gave_up() => fail_exit.unwrap_or(last.status()),
            _ => ending.exit_status(last, fail_exit),
        }
    }
}

/// How many attempts in all (`None`: no limit): `--retries`, `--attempts` and `--forever`,
/// Debian's `-t`, and the default of the curve.
fn max_attempts(cli: &Cli, debian: &debian::Defaults, backoff: Backoff) -> Option<u64> {
    match (cli.retries, cli.attempts, cli.forever) {
        _ if debian.forever => None,
        (_, _, true) => None,
        (Some(retries), _, _) => Some(retries.saturating_add(1)),
        (None, Some(attempts), _) => Some(attempts),
        (None, None, false) if cli.times == Some(Times::Unlimited) => None,
        (None, None, false) if let Some(Times::Attempts(n)) = cli.times => Some(n),
        (None, None, false) if backoff == Backoff::Ethernet => Some(ETHERNET_ATTEMPTS),
        (None, None, false) => Some(DEFAULT_RETRIES + 1),
    }
}

/// Where the state lives: `--state` (or the config file's), else `$RETRY_STATE`, read here
/// (with `$HOME` for its `~`) as `--state` is, so that a bad one is misuse in `--dry-run` too.
fn state_location(cli: &Cli) -> Result<Option<StateLocation>> {
    if let Some(state) = &cli.state {
        return Ok(Some(state.clone()));
    }
    let Some(value) = crate::dirs::non_empty_env(crate::fleet::STATE_VARIABLE) else {
        return Ok(None);
    };
    // No shell expands a `~` that reaches the environment this way (a CI file's `env:`, a
    // unit's `Environment=`): it is read as one would.
    let value = crate::dirs::home_expanded_text(&value, crate::dirs::home().as_deref())
        .map_err(|why| anyhow::anyhow!("$RETRY_STATE: {why}"))?
        .into_string()
        .map_err(|_| anyhow::anyhow!("$RETRY_STATE is not valid UTF-8"))?;
    crate::fleet::parse_state(&value)
        .map(Some)
        .map_err(|reason| anyhow::anyhow!("$RETRY_STATE: {reason}"))
}

/// `--failed-output`, which `--hold-stdout` leaves no room for.
fn failed_output(cli: &Cli) -> Result<FailedOutput> {
    let failed_output = cli.failed_output.unwrap_or_default();
    if failed_output != FailedOutput::Pass && cli.hold_stdout {
        bail!(
            "--failed-output {} cannot be used with --hold-stdout: both decide where an \
             attempt's output goes",
            match failed_output {
                FailedOutput::Drop => "drop",
                _ => "on-give-up",
            }
        );
    }
    Ok(failed_output)
}

/// Debian's `-u` or `-w` criteria, said which.
fn criteria(until: Option<Criteria>, during: Option<Criteria>) -> Option<Criteria> {
    match (until, during) {
        (Some(until), _) => Some(Criteria {
            until: true,
            ..until
        }),
        (None, Some(during)) => Some(Criteria {
            until: false,
            ..during
        }),
        (None, None) => None,
    }
}

/// Refuses a command line without a command to run, unless it asks for none (`--dry-run`,
/// or an action on the state).
fn command_given(cli: &Cli, acts_on_state: bool) -> Result<()> {
    if cli.command.is_empty() && !cli.dry_run && !acts_on_state {
        bail!("no command given; usage: retry [OPTIONS] [--] COMMAND [ARG]...");
    }
    // `retry "$CMD"` with CMD unset or empty: no program has an empty name.
    if cli
        .command
        .first()
        .is_some_and(|program| program.is_empty())
    {
        bail!("the command is an empty word (''); name the program to run");
    }
    Ok(())
}

/// What makes an attempt's end a success, a retry or a stop.
fn judge(cli: &Cli, criteria: Option<Criteria>) -> Judge {
    Judge {
        retry_on_exit: cli.retry_on_exit.as_ref().map(|list| list.codes),
        stop_on_exit: cli.stop_on_exit,
        invert: cli.invert,
        has_until: cli.until_stdout.is_some() || cli.until_stderr.is_some(),
        http: cli.http,
        criteria,
    }
}

/// What reads stdout, and stderr: their patterns, taken out of `cli`, and the HTTP lines.
fn output_rules(cli: &mut Cli) -> (OutputRules, OutputRules) {
    // --http implies --honor-retry-after; both read either stream.
    let http = HttpLines {
        statuses: cli.http,
        retry_after: cli.http || cli.honor_retry_after,
    };
    let stdout = OutputRules {
        until: cli.until_stdout.take(),
        retry_if: cli.retry_if_stdout.take(),
        stop_if: cli.stop_if_stdout.take(),
        hint: cli.retry_after_stdout.take(),
        http,
    };
    let stderr = OutputRules {
        until: cli.until_stderr.take(),
        retry_if: cli.retry_if_stderr.take(),
        stop_if: cli.stop_if_stderr.take(),
        hint: cli.retry_after_stderr.take(),
        http,
    };
    (stdout, stderr)
}

/// What a command line gives (in any layer) among the settings Debian's defaults stand in for.
fn given(cli: &Cli) -> debian::ExplicitChoices {
    debian::ExplicitChoices {
        debian: cli.times.is_some()
            || cli.delay.is_some()
            || cli.until.is_some()
            || cli.while_.is_some()
            || cli.message.is_some(),
        limit: cli.times.is_some()
            || cli.retries.is_some()
            || cli.attempts.is_some()
            || cli.forever,
        ethernet: cli.backoff == Some(Backoff::Ethernet),
        schedule: cli.delay.is_some()
            || cli.delays.is_some()
            || cli.base.is_some()
            || cli.backoff.is_some()
            || cli.multiplier.is_some()
            || cli.jitter.is_some()
            || cli.max.is_some(),
        output: cli.hold_stdout || cli.failed_output.is_some(),
        stdin: cli.stdin.is_some(),
    }
}

/// Where the run's figures go, and under which job label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsTarget {
    pub path: PathBuf,
    pub job: String,
}

/// `--metrics-file` with its job: `--metrics-job`, else the command's file name. The file's
/// directory must exist: a path that can never be written is misuse, found before the run.
fn metrics_target(cli: &Cli) -> Result<Option<MetricsTarget>> {
    let Some(path) = cli.metrics_file.clone() else {
        return Ok(None);
    };
    in_a_directory("--metrics-file", &path)?;
    let job = cli.metrics_job.clone().unwrap_or_else(|| {
        cli.command.first().map_or_else(String::new, |program| {
            Path::new(program)
                .file_name()
                .unwrap_or(program)
                .to_string_lossy()
                .into_owned()
        })
    });
    Ok(Some(MetricsTarget { path, job }))
}

/// `--report` with its format. As for `--metrics-file`, the file's directory must exist.
fn report_target(cli: &Cli) -> Result<Option<(PathBuf, ReportFormat)>> {
    let Some(path) = cli.report.clone() else {
        return Ok(None);
    };
    in_a_directory("--report", &path)?;
    Ok(Some((path, cli.report_format.unwrap_or_default())))
}

/// Refuses a file `path` for `flag` whose directory does not exist: it could never be written.
/// What stands in the way is named: nothing, something else than a directory, or the error
/// met on the way (a path too long, a directory that cannot be searched, a loop of links).
fn in_a_directory(flag: &str, path: &Path) -> Result<()> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let why = match std::fs::metadata(&directory) {
        Ok(found) if found.is_dir() => return Ok(()),
        Ok(_) => format!("{} is not a directory", text::path(&directory)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            format!("there is no directory {}", text::path(&directory))
        }
        Err(error) => format!(
            "cannot reach the directory {}: {}",
            text::path(&directory),
            text::plain_error(&error)
        ),
    };
    bail!("{flag} {}: {why}", text::path(path))
}

/// The delay schedule: a backoff curve, or the list `--delays` gives, whose jitter is none
/// unless asked for (a list says exactly what to wait).
fn schedule(cli: &Cli, backoff: Backoff) -> Result<Schedule> {
    let list = cli.delays.clone().map(|DelayList(list)| list);
    let jitter = match (&list, cli.jitter) {
        (Some(_), Some(Jitter::Decorrelated)) => bail!(
            "--jitter decorrelated cannot be used with --delays: it draws from --base and the \
             previous wait, and a list has neither; give another jitter or none"
        ),
        (_, Some(jitter)) => jitter,
        (Some(_), None) => Jitter::None,
        (None, None) => Jitter::Equal,
    };
    let base = cli.base.unwrap_or(DEFAULT_BASE);
    Ok(Schedule {
        backoff,
        jitter,
        base,
        max: match (cli.max, &list) {
            (Some(max), _) => max,
            // The default cap never shortens a delay someone wrote down.
            (None, Some(_)) => Duration::MAX,
            // Nor the first delay asked for: a base above it is the cap.
            (None, None) => DEFAULT_MAX.max(base),
        },
        multiplier: cli.multiplier.unwrap_or(DEFAULT_MULTIPLIER),
        list: list.unwrap_or_default(),
    })
}

/// `--show-state` or `--reset-state`, each only with a name to act on.
fn state_action(cli: &Cli, fleet: &FleetSettings) -> Result<Option<StateAction>> {
    let action = match (cli.show_state, cli.reset_state) {
        (true, true) => bail!("--show-state and --reset-state cannot be given together"),
        (true, false) => StateAction::Show,
        (false, true) => StateAction::Reset,
        (false, false) => return Ok(None),
    };
    if !fleet.any() {
        let flag = match action {
            StateAction::Show => "--show-state",
            StateAction::Reset => "--reset-state",
        };
        bail!("{flag} needs --budget or --breaker: the names whose state to act on");
    }
    Ok(Some(action))
}

/// The budget and breaker a run names, with its own policies, and how long its probe may hold
/// the breaker: its `--timeout` and grace, else the cooldown.
fn fleet_settings(cli: &Cli) -> FleetSettings {
    let (floor, window) = cli.budget_floor.unwrap_or(DEFAULT_BUDGET_FLOOR);
    let cooldown = cli.breaker_cooldown.unwrap_or(DEFAULT_BREAKER_COOLDOWN);
    let timeout = Timeouts::of_cli(cli).longest();
    let kill_after = cli.kill_after.unwrap_or(DEFAULT_KILL_AFTER);
    FleetSettings {
        budget: cli.budget.clone().map(|name| {
            let policy = BudgetPolicy {
                ratio: cli.budget_ratio.unwrap_or(DEFAULT_BUDGET_RATIO),
                floor,
                window,
            };
            (name, policy)
        }),
        breaker: cli.breaker.clone().map(|name| {
            let policy = BreakerPolicy {
                threshold: cli.breaker_threshold.unwrap_or(DEFAULT_BREAKER_THRESHOLD),
                cooldown,
            };
            (name, policy)
        }),
        probe_lease: timeout.map_or(cooldown, |timeout| timeout.saturating_add(kill_after)),
    }
}

#[cfg(test)]
impl Settings {
    /// The settings of the command line `retry ARGS...`, for tests: no config file is read.
    pub(crate) fn of_args(args: &[&str]) -> Settings {
        use clap::Parser;
        let cli = Cli::try_parse_from(["retry"].iter().chain(args)).unwrap();
        Settings::resolve(cli).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn defaults() {
        let s = Settings::of_args(&["true"]);
        assert_eq!(s.max_attempts, Some(6));
        assert_eq!(s.max_time, None);
        assert_eq!(s.timeouts.of(1), None);
        assert_eq!(s.kill_after, Duration::from_secs(2));
        assert_eq!(s.kill_signal, libc::SIGTERM);
        assert_eq!(s.schedule.backoff, Backoff::Exponential);
        assert_eq!(s.schedule.jitter, Jitter::Equal);
        assert_eq!(s.schedule.base, Duration::from_secs(1));
        assert_eq!(s.schedule.max, Duration::from_secs(30));
        // A base above the default cap is the cap.
        assert_eq!(
            Settings::of_args(&["--base", "1m", "true"]).schedule.max,
            Duration::from_secs(60)
        );
        // The default cap never shortens a list; a given one does.
        assert_eq!(
            Settings::of_args(&["--delays", "5m", "true"]).schedule.max,
            Duration::MAX
        );
        assert_eq!(
            Settings::of_args(&["--delays", "5m", "--max", "1m", "true"])
                .schedule
                .max,
            Duration::from_secs(60)
        );
        assert_eq!(s.schedule.multiplier, 2.0);
        assert_eq!(s.consecutive, 1);
        assert_eq!(s.verbosity, Verbosity::Normal);
    }

    #[test]
    fn attempt_limits() {
        assert_eq!(
            Settings::of_args(&["-r", "0", "true"]).max_attempts,
            Some(1)
        );
        assert_eq!(
            Settings::of_args(&["--attempts", "3", "true"]).max_attempts,
            Some(3)
        );
        assert_eq!(Settings::of_args(&["--forever", "true"]).max_attempts, None);
        assert_eq!(
            Settings::of_args(&["--retries", "18446744073709551615", "true"]).max_attempts,
            Some(u64::MAX)
        );
    }

    #[test]
    fn ethernet_gives_up_after_16_attempts_without_a_limit() {
        assert_eq!(
            Settings::of_args(&["--backoff", "ethernet", "true"]).max_attempts,
            Some(16)
        );
        assert_eq!(
            Settings::of_args(&["--backoff", "ethernet", "-r", "2", "true"]).max_attempts,
            Some(3)
        );
        assert_eq!(
            Settings::of_args(&["--backoff", "ethernet", "--forever", "true"]).max_attempts,
            None
        );
    }

    #[test]
    fn each_attempt_gets_its_entry_of_the_list_and_the_last_repeats() {
        let ms = Duration::from_millis;
        let s = Settings::of_args(&["--timeouts", "1s,0,5s", "true"]);
        let limits: Vec<_> = [1, 2, 3, 4, u64::MAX].map(|n| s.timeouts.of(n)).to_vec();
        assert_eq!(
            limits,
            [
                Some(ms(1000)),
                None,
                Some(ms(5000)),
                Some(ms(5000)),
                Some(ms(5000))
            ]
        );
        assert_eq!((s.timeouts.longest(), s.timeouts.vary()), (None, true));
        let s = Settings::of_args(&["--timeouts", "1s,3s", "true"]);
        assert_eq!(s.timeouts.longest(), Some(ms(3000)));
        let one = Settings::of_args(&["--timeout", "2s", "true"]);
        assert_eq!(
            (one.timeouts.of(9), one.timeouts.vary()),
            (Some(ms(2000)), false)
        );
        assert_eq!(Settings::of_args(&["true"]).timeouts.longest(), None);
    }

    #[test]
    fn zero_disables_time_limits() {
        let s = Settings::of_args(&["--timeout", "0", "--max-time", "0", "true"]);
        assert_eq!((s.timeouts.of(1), s.max_time), (None, None));
    }

    #[test]
    fn a_stream_is_read_exactly_when_a_pattern_names_it() {
        for (args, stdout, stderr, has_until) in [
            (&[][..], false, false, false),
            (&["--until-stdout", "x"][..], true, false, true),
            (&["--until-stderr", "x"][..], false, true, true),
            (&["--retry-if-stdout", "x"][..], true, false, false),
            (&["--retry-if-stderr", "x"][..], false, true, false),
            (
                &["--until-stdout", "x", "--retry-if-stdout", "y"][..],
                true,
                false,
                true,
            ),
        ] {
            let s = Settings::of_args(&[args, &["true"]].concat());
            assert_eq!(
                (
                    s.stdout_rules.any(),
                    s.stderr_rules.any(),
                    s.judge.has_until
                ),
                (stdout, stderr, has_until),
                "{args:?}"
            );
        }
    }

    /// Debian's defaults stand in only where a Debian command line leaves a setting unsaid.
    #[test]
    fn debians_command_line_has_debians_defaults() {
        let s = Settings::of_args(&["-u", "s", "true"]);
        assert_eq!(s.max_attempts, None);
        assert_eq!(s.schedule.list, [Duration::from_secs(10)]);
        assert_eq!(s.schedule.jitter, Jitter::None);
        assert!(s.hold_stdout && s.stdout_once);
        assert_eq!(s.stdin, StdinMode::Replay);
        let s = Settings::of_args(&[
            "-t",
            "3",
            "--base",
            "2s",
            "--stdin",
            "null",
            "--hold-stdout",
            "true",
        ]);
        assert_eq!(s.max_attempts, Some(3));
        assert!(s.schedule.list.is_empty() && s.schedule.jitter == Jitter::Equal);
        assert!(s.hold_stdout && !s.stdout_once);
        assert_eq!(s.stdin, StdinMode::Null);
        assert_eq!(Settings::of_args(&["-t", "-1", "true"]).max_attempts, None);
        let s = Settings::of_args(&["-d", "0,2", "-m", "x", "true"]);
        assert_eq!(s.schedule.list, [Duration::ZERO, Duration::from_secs(2)]);
        assert_eq!(s.label.as_deref(), Some("x"));
        let own = Settings::of_args(&["--label", "x", "true"]);
        assert_eq!((own.max_attempts, own.stdout_once), (Some(6), false));
        assert_eq!(Settings::of_args(&["-m", "", "true"]).label, None);
    }

    /// Under -u/-w the last attempt's status is the exit status however the run ends.
    #[test]
    fn under_criteria_the_last_attempts_status_is_retrys() {
        let debian = Settings::of_args(&["-w", "s", "true"]);
        let own = Settings::of_args(&["true"]);
        let zero = Some(AttemptEnd::Exited(0));
        assert_eq!(
            debian.exit_status(Ending::Success, Some(AttemptEnd::Exited(1)), None),
            1
        );
        assert_eq!(
            own.exit_status(Ending::Success, Some(AttemptEnd::Exited(1)), None),
            0
        );
        assert_eq!(debian.exit_status(Ending::Exhausted, zero, None), 0);
        assert_eq!(own.exit_status(Ending::Exhausted, zero, None), 1);
        assert_eq!(debian.exit_status(Ending::Exhausted, zero, Some(7)), 7);
        assert_eq!(
            debian.exit_status(Ending::Exhausted, Some(AttemptEnd::Signaled(9)), None),
            137
        );
        assert_eq!(debian.exit_status(Ending::Signal(15), zero, None), 143);
        assert_eq!(debian.exit_status(Ending::Breaker, None, None), 75);
    }

    #[test]
    fn a_command_is_required_except_for_a_dry_run() {
        let cli = Cli::try_parse_from(["retry"]).unwrap();
        assert!(Settings::resolve(cli).is_err());
        assert!(Settings::of_args(&["--dry-run"]).dry_run);
    }
}
