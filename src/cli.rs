//! The command line as typed: clap's derive definition, whose doc comments are also the help
//! text, the man page and the completions.
//!
//! Values are parsed and checked here (see `parse`), but defaults are not applied: a flag left out
//! is `None`, so that a configuration file can fill it in. `config` turns this into `Settings`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::{ArgAction, Parser, ValueHint};

use crate::backoff::{Backoff, Jitter};
use crate::debian;
use crate::fleet::{self, StateLocation};
use crate::lines::Pattern;
use crate::parse::{self, CodeSet, RetryCodes};

/// The version with the package's name (`retry 0.1.0 (retry-exec)`): Debian's unrelated `retry`
/// may be on the same PATH, and `retry --version` is how a user tells which one runs.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CARGO_PKG_NAME"), ")");

/// How to start, on the first screen of `-h` and `--help`, before the options; within 80
/// columns, and each line can be pasted as it is (a `#` begins a comment in every shell).
const EXAMPLES: &str = "\
Examples:
  retry --attempts 3 -- curl -fsS https://example.com  # 3 tries, backing off
  retry --until-stdout Running -- kubectl get pod web  # until it says Running
  retry --forever --max-time 10s -- pg_isready -h db   # give up after 10s
  retry --timeout 30s -- ./fetch.sh                    # 30s per attempt
  retry --dry-run --attempts 5 --base 2s               # only show the plan
  retry -q --failed-output on-give-up -- ./backup.sh   # silent unless it fails";

/// The end of `--help`.
const MORE_EXAMPLES: &str = "\
More examples:
  retry -- curl -fsS https://example.com/health
  retry --base 1s --max 64s --max-time 5m -- curl -fsS https://example.com/health
  retry --attempts 3 --timeout 10s --retry-on-exit 1,75-78 -- ./deploy.sh
  retry --forever --max-time 2m --backoff constant --base 2s -- pg_isready -h db
  retry --until-stdout Running --max-time 5m -- kubectl get pod web
  retry --dry-run --base 500ms --seed 7
";

/// What each attempt reads as stdin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StdinMode {
    /// Rewind a regular file before each attempt; pass anything else through untouched
    Auto,
    /// Capture stdin and give every attempt the same bytes from the start
    Replay,
    /// Pass stdin through untouched, never rewinding
    Inherit,
    /// Every attempt reads /dev/null
    Null,
}

/// What becomes of the output of attempts that failed and were followed by another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FailedOutput {
    /// Let it through as it comes
    #[default]
    Pass,
    /// Hold each attempt's output; keep only the final attempt's
    Drop,
    /// Hold it; write it to stderr before the final attempt's if the run gives up, drop it if
    /// the run succeeds
    OnGiveUp,
}

/// How `retry` writes its own messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Lines for people, prefixed `retry:`
    #[default]
    Text,
    /// One JSON object per line per event, for log pipelines
    Json,
}

/// How `--report` writes the run's summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// One JSON object, with each attempt's detail; the file is replaced
    #[default]
    Json,
    /// name=value lines appended to the file, as $GITHUB_OUTPUT takes them
    Github,
}

/// Run a command until it succeeds, with backoff and jitter between attempts.
///
/// retry runs COMMAND directly (PATH lookup, no shell), judges each attempt by its exit code or
/// by a pattern in its output, waits per the delay schedule, and tries again. It exits 0 once an
/// attempt succeeds, or with the last attempt's status once retries or time run out.
///
/// Everything after the first word that is not an option, or after --, belongs to COMMAND. Each
/// attempt runs in its own process group, so a timeout or a signal to retry reaches its whole
/// tree. Retry n waits a nominal delay d(n), capped at --max, then jittered: the default equal
/// jitter waits between d(n)/2 and d(n). Settings may also come from a TOML file
/// ($XDG_CONFIG_HOME/retry/config.toml, --config, --profile).
///
/// The command's stdin, stdout and stderr are retry's own, with nothing in between, unless a
/// pattern reads a stream, --hold-stdout holds stdout or --stdin replay replays stdin: that
/// stream is then a pipe (so tools that check for a terminal write as into a pipe), and every
/// byte still passes through unchanged. (--stdin null gives every attempt /dev/null.)
#[derive(Debug, Default, Parser)]
#[command(
    name = "retry",
    version = VERSION,
    about = "Run a command until it succeeds, with backoff and jitter between attempts.",
    override_usage = "retry [OPTIONS] [--] COMMAND [ARG]...",
    // clap's own template, with the examples (`before_help`) moved after the usage.
    help_template = "{about-with-newline}\n{usage-heading} {usage}\n\n{before-help}{all-args}{after-help}",
    before_help = EXAMPLES,
    after_help = "Use --help for details and more examples.",
    after_long_help = MORE_EXAMPLES,
    max_term_width = 100,
    args_override_self = true,
)]
pub struct Cli {
    /// Retries after the first attempt; 0 runs the command once [default: 5]
    #[arg(
        short,
        long,
        value_name = "N",
        value_hint = ValueHint::Other,
        allow_hyphen_values = true,
        value_parser = parse::count,
        help_heading = "Attempts and time limits"
    )]
    pub retries: Option<u64>,

    /// Total attempts, at least 1 (another spelling of --retries)
    #[arg(
        short,
        long,
        value_name = "N",
        value_hint = ValueHint::Other,
        allow_hyphen_values = true,
        conflicts_with = "retries",
        value_parser = parse::positive_count,
        help_heading = "Attempts and time limits"
    )]
    pub attempts: Option<u64>,

    /// Retry without an attempt limit (usually with --max-time)
    #[arg(
        long,
        conflicts_with_all = ["retries", "attempts"],
        help_heading = "Attempts and time limits"
    )]
    pub forever: bool,

    /// Deadline for the whole run, measured from start; 0 disables it [default: none]
    ///
    /// Retry keeps trying until then: no attempt starts after it, a wait after a failure that
    /// would cross it is cut short so that one last attempt starts in time (twice the longest
    /// attempt before the deadline, 100ms at least; no wait follows it), and an attempt still
    /// running at the deadline is terminated (status 124). A wait a server asked for is never
    /// cut: it ends the run. Output that a reader
    /// downstream has not taken by the deadline plus --kill-after is dropped, so retry ends by
    /// then whatever its readers do.
    #[arg(long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::duration, help_heading = "Attempts and time limits")]
    pub max_time: Option<Duration>,

    /// Time limit for one attempt; 0 disables it [default: none]
    ///
    /// On expiry the attempt's process group gets --kill-signal, its status is 124, and it
    /// counts as a retryable failure. It bounds the command's run; output the command has
    /// written is passed on however long a reader downstream takes (up to --max-time).
    #[arg(long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::duration, help_heading = "Attempts and time limits")]
    pub timeout: Option<Duration>,

    /// Time limits per attempt as a list: attempt n gets entry n
    ///
    /// A comma list of durations (5s,30s,2m); the last entry repeats, and 0 is no limit for
    /// that attempt. A first attempt that hangs is cut fast, a later one given room. Each limit
    /// is still cut to the time --max-time leaves. It replaces --timeout.
    #[arg(long, value_name = "LIST", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::timeouts, conflicts_with = "timeout", help_heading = "Attempts and time limits")]
    pub timeouts: Option<parse::TimeoutList>,

    /// An attempt that ran at least this long starts the schedule and the attempt limit afresh
    ///
    /// After a failed attempt that ran for DUR or longer, the next wait is the first delay
    /// again, and --retries and --attempts count the attempts after it: a long-running command
    /// that fails once a week does not inherit last week's back-off. --max-time still bounds
    /// the whole run.
    #[arg(long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::positive_duration, help_heading = "Attempts and time limits")]
    pub reset_after: Option<Duration>,

    /// Start the command again after a success, after the first delay
    ///
    /// The run then ends only by failures in a row past the attempt limit, --max-time, a
    /// permanent failure, the budget or breaker, or a signal; ended while waiting after a
    /// success, it exits 0. --on-success runs after every success.
    #[arg(long, conflicts_with_all = ["consecutive", "invert"], help_heading = "Attempts and time limits")]
    pub restart: bool,

    /// Grace between the terminating signal and SIGKILL [default: 2s]
    #[arg(long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::duration, help_heading = "Attempts and time limits")]
    pub kill_after: Option<Duration>,

    /// Signal that terminates an attempt: a name (TERM, SIGINT, RTMIN+1) or a number [default: TERM]
    #[arg(long, value_name = "SIG", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = Suggesting { parse: parse::signal, names: SIGNAL_NAMES }, hide_possible_values = true, help_heading = "Attempts and time limits")]
    pub kill_signal: Option<i32>,

    /// First nominal delay (for ethernet: the slot time) [default: 1s]
    ///
    /// Durations read like 250ms, 1s, 1m30s, 2h, or bare decimal seconds (1.5).
    #[arg(short, long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::duration, help_heading = "Delay schedule")]
    pub base: Option<Duration>,

    /// Cap on any single delay, after jitter too [default: 30s, or --base when larger]
    ///
    /// Only a --max that is given caps the entries of --delays: the default never shortens a
    /// delay written down.
    #[arg(long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::duration, help_heading = "Delay schedule")]
    pub max: Option<Duration>,

    /// Growth factor of exponential backoff, at least 1 [default: 2]
    #[arg(long, value_name = "F", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::multiplier, help_heading = "Delay schedule")]
    pub multiplier: Option<f64>,

    /// How the nominal delay grows [default: exponential]
    ///
    /// ethernet gives up after 16 attempts unless an attempt limit is given.
    #[arg(
        long,
        value_name = "KIND", value_hint = ValueHint::Other,
        allow_hyphen_values = true,
        help_heading = "Delay schedule"
    )]
    pub backoff: Option<Backoff>,

    /// The delays as a list, instead of a backoff curve: retry n waits entry n
    ///
    /// A comma list of durations (0,2s,5s,30s); the last entry repeats, and only a --max that
    /// is given caps them. It replaces --backoff, --base and --multiplier, and the jitter is none unless
    /// --jitter is given.
    #[arg(long, value_name = "LIST", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::delays, conflicts_with_all = ["backoff", "base", "multiplier"], help_heading = "Delay schedule")]
    pub delays: Option<parse::DelayList>,

    /// How delays are randomised [default: equal]
    ///
    /// none; full: uniform in [0, d]; equal: d/2 + uniform in [0, d/2]; decorrelated:
    /// min(max, uniform in [base, 3 * previous]); a factor such as 0.2: d * (1 ± 0.2); an addend
    /// such as +1s: d + uniform in [0, 1s].
    #[arg(long, value_name = "KIND", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = Suggesting { parse: parse::jitter, names: parse::JITTER_KINDS }, hide_possible_values = true, help_heading = "Delay schedule")]
    pub jitter: Option<Jitter>,

    /// Seed for the jitter, so the same flags give the same delays [default: from OS entropy]
    ///
    /// The same in every release of one minor version: the generator (SplitMix64) and the way
    /// its draws become delays are retry's own.
    #[arg(
        long,
        value_name = "N",
        value_hint = ValueHint::Other,
        allow_hyphen_values = true,
        value_parser = parse::count,
        help_heading = "Delay schedule"
    )]
    pub seed: Option<u64>,

    /// Wait a random time in [0, DUR] before the first attempt [default: none]
    #[arg(long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::duration, help_heading = "Delay schedule")]
    pub splay: Option<Duration>,

    /// Retry only these exit codes; any other failure ends the run (e.g. 1,75-78)
    ///
    /// CODE@N (or RANGE@N) allows at most N retries in the run after attempts that ended with
    /// that code (a range shares one count); once they are used, that code ends the run as a
    /// permanent failure: 1,137@1,75-78@3. @0 never retries it. Where two limits cover a code,
    /// the smaller holds.
    #[arg(long, value_name = "CODES", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::retry_codes, help_heading = "Success and failure")]
    pub retry_on_exit: Option<RetryCodes>,

    /// These exit codes end the run at once, as a permanent failure (e.g. 2,126-127)
    #[arg(long, value_name = "CODES", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::code_set, help_heading = "Success and failure")]
    pub stop_on_exit: Option<CodeSet>,

    /// The attempt succeeds exactly when a line of its stdout matches REGEX
    ///
    /// Its exit code is then not consulted. Patterns use the syntax of Rust's regex crate and are
    /// matched line by line on bytes while the output passes through untouched. A line ends at
    /// \n, without one trailing \r (a lone \r does not end it); a line longer than 64 KiB is
    /// matched on its first and last 64 KiB, where ^ and $ still mean the start and end of the
    /// whole line. What a background process of the attempt writes after the attempt has ended
    /// is passed on unjudged, after retry has ended too.
    #[arg(long, value_name = "REGEX", value_hint = ValueHint::Other, value_parser = Pattern::new, help_heading = "Success and failure")]
    pub until_stdout: Option<Pattern>,

    /// The attempt succeeds exactly when a line of its stderr matches REGEX
    #[arg(long, value_name = "REGEX", value_hint = ValueHint::Other, value_parser = Pattern::new, help_heading = "Success and failure")]
    pub until_stderr: Option<Pattern>,

    /// An attempt whose stdout has a line matching REGEX fails (retryably), even if it exited 0
    #[arg(long, value_name = "REGEX", value_hint = ValueHint::Other, value_parser = Pattern::new, help_heading = "Success and failure")]
    pub retry_if_stdout: Option<Pattern>,

    /// An attempt whose stderr has a line matching REGEX fails (retryably), even if it exited 0
    #[arg(long, value_name = "REGEX", value_hint = ValueHint::Other, value_parser = Pattern::new, help_heading = "Success and failure")]
    pub retry_if_stderr: Option<Pattern>,

    /// An attempt whose stdout has a line matching REGEX fails for good: the run ends at once
    ///
    /// Checked first, with --stop-on-exit: a match ends the run whatever the exit code (1 if
    /// the attempt exited 0), e.g. --stop-if-stderr 'Permission denied'.
    #[arg(long, value_name = "REGEX", value_hint = ValueHint::Other, value_parser = Pattern::new, help_heading = "Success and failure")]
    pub stop_if_stdout: Option<Pattern>,

    /// An attempt whose stderr has a line matching REGEX fails for good: the run ends at once
    #[arg(long, value_name = "REGEX", value_hint = ValueHint::Other, value_parser = Pattern::new, help_heading = "Success and failure")]
    pub stop_if_stderr: Option<Pattern>,

    /// Judge each attempt by the last HTTP status line it printed, and honour Retry-After
    ///
    /// For an HTTP client that prints the response's head: curl -i, -D - or -v, wget -S,
    /// http --print=hb. A status line reads HTTP/, a version, a space and three digits, after
    /// an optional "< " or blanks; interim 1xx lines are skipped, and the last one (after
    /// redirects) counts. 408, 429, 500, 502, 503 and 504 make the attempt a retryable failure
    /// whatever its exit code; any other 4xx or 5xx a permanent one; 2xx, 3xx or no status line
    /// (no connection) leave it to the exit code. Reads both stdout and stderr.
    #[arg(long, help_heading = "HTTP responses and server hints")]
    pub http: bool,

    /// A Retry-After header printed by a failed attempt sets the least wait before the next
    ///
    /// The value is delay-seconds or an HTTP-date, read from a header line on stdout or stderr
    /// (curl -D /dev/stderr, -i or -v). The wait is then the larger of the schedule's delay and
    /// the hint plus a random spread of up to a tenth of it (at least up to 1s); --max does
    /// not cut it, --retry-after-max does. Implied by --http.
    #[arg(long, help_heading = "HTTP responses and server hints")]
    pub honor_retry_after: bool,

    /// A hint in the command's own format on stdout: the first group of REGEX (else the match)
    ///
    /// The last matching line of a failed attempt sets the least wait before the next, as
    /// Retry-After does: seconds, decimal seconds (1.5) or a duration (1m30s), e.g.
    /// --retry-after-stderr 'retry in ([0-9.]+)s'. A value that is none of these is ignored.
    #[arg(long, value_name = "REGEX", value_hint = ValueHint::Other, value_parser = Pattern::new, help_heading = "HTTP responses and server hints")]
    pub retry_after_stdout: Option<Pattern>,

    /// A hint in the command's own format on stderr: the first group of REGEX (else the match)
    #[arg(long, value_name = "REGEX", value_hint = ValueHint::Other, value_parser = Pattern::new, help_heading = "HTTP responses and server hints")]
    pub retry_after_stderr: Option<Pattern>,

    /// The longest wait a hint may ask for; a longer hint is cut to it [default: 5m]
    #[arg(long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::duration, help_heading = "HTTP responses and server hints")]
    pub retry_after_max: Option<Duration>,

    /// Swap success and failure: retry until COMMAND fails
    #[arg(long, help_heading = "Success and failure")]
    pub invert: bool,

    /// Succeed only after N successful attempts in a row [default: 1]
    #[arg(
        long,
        value_name = "N",
        value_hint = ValueHint::Other,
        allow_hyphen_values = true,
        value_parser = parse::positive_count,
        help_heading = "Success and failure"
    )]
    pub consecutive: Option<u64>,

    /// Exit with N instead of the failed run's status (e.g. 1 for Docker's HEALTHCHECK)
    #[arg(long, value_name = "N", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::exit_code, help_heading = "Success and failure")]
    pub fail_exit: Option<u8>,

    /// Run CMD through `sh -c` before each retry's wait
    ///
    /// Its environment has RETRY_ATTEMPT (the attempt that just failed), RETRY_MAX_ATTEMPTS,
    /// RETRY_LAST_EXIT (its status), RETRY_NEXT_DELAY_MS and RETRY_ENV_FILE: KEY=VALUE lines it
    /// writes to that file are set in the environment of every later attempt (RETRY_ names
    /// refused). A hook's failure is reported and never changes retry's exit status; its stdin
    /// is /dev/null and its stdout goes to retry's stderr.
    #[arg(long, value_name = "CMD", value_hint = ValueHint::CommandString, help_heading = "Hooks")]
    pub on_retry: Option<String>,

    /// Run CMD through `sh -c` once when retry gives up
    #[arg(long, value_name = "CMD", value_hint = ValueHint::CommandString, help_heading = "Hooks")]
    pub on_failure: Option<String>,

    /// Run CMD through `sh -c` once when the run succeeds
    #[arg(long, value_name = "CMD", value_hint = ValueHint::CommandString, help_heading = "Hooks")]
    pub on_success: Option<String>,

    /// Read settings from FILE instead of $RETRY_CONFIG or $XDG_CONFIG_HOME/retry/config.toml
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, help_heading = "Configuration")]
    pub config: Option<PathBuf>,

    /// Apply [profile.NAME] of the config file over its [defaults] [env: RETRY_PROFILE]
    #[arg(long, value_name = "NAME", value_hint = ValueHint::Other, help_heading = "Configuration")]
    pub profile: Option<String>,

    /// What each attempt reads on stdin [default: auto]
    ///
    /// auto rewinds a regular file before each attempt and passes a pipe, socket or terminal
    /// through untouched (later attempts then see only what is left); replay captures stdin and
    /// gives every attempt the same bytes from the start; inherit never rewinds; null gives
    /// /dev/null. A stream closed when retry starts (<&-, >&-) is /dev/null to the command.
    #[arg(long, value_name = "MODE", help_heading = "Input and output")]
    pub stdin: Option<StdinMode>,

    /// Hold each attempt's stdout until it ends: only the final attempt's goes to stdout, the
    /// others' to stderr
    ///
    /// Held output past 4 MiB spills to a private temporary file. What a background process of
    /// an attempt writes once that attempt's output has gone out goes to stderr as it comes.
    #[arg(long, help_heading = "Input and output")]
    pub hold_stdout: bool,

    /// What becomes of the output of failed attempts that another follows [default: pass]
    ///
    /// pass lets it through as it comes. drop and on-give-up hold each attempt's stdout and
    /// stderr together, in the order they come, until it ends (as --hold-stdout does, spilling
    /// to a private temporary file): the final attempt's goes to stdout and stderr byte for
    /// byte, and the earlier attempts' is dropped, or under on-give-up written to stderr before
    /// the final attempt's when the run gives up, in attempt order, each attempt's behind one
    /// line (retry: output of attempt 2 (exit 1):) that --quiet keeps. Patterns and --http still
    /// read the output as it comes. Not with --hold-stdout.
    #[arg(long, value_name = "MODE", help_heading = "Reports for cron and CI")]
    pub failed_output: Option<FailedOutput>,

    /// Under --failed-output on-give-up, the most kept of each earlier attempt's output
    /// [default: 1M]
    ///
    /// Its first and last SIZE/2 bytes, with one line between them saying how many were left
    /// out (retry: [51234567 bytes of attempt 2 left out]); 0 keeps it whole. SIZE is bytes, or
    /// a number with K, M or G (powers of 1024).
    #[arg(long, value_name = "SIZE", value_hint = ValueHint::Other, value_parser = parse::size, help_heading = "Reports for cron and CI")]
    pub keep_max: Option<u64>,

    /// When the run ends, write its figures to PATH in the Prometheus text format
    ///
    /// For node_exporter's textfile collector: the start and end, the duration, success, the
    /// attempts, retry's exit status and the time of the last success (kept from the file's
    /// earlier content when this run did not succeed), each a gauge labelled job="NAME". The
    /// file is replaced atomically, and only a regular file is: a device, a FIFO, a socket or a
    /// directory at PATH (or a symlink to one) is a file that cannot be written, so /dev/null
    /// turns a configured metrics file off; a symlink to a regular file replaces that file, and
    /// another user's symlink or file is never followed, read or replaced. One of retry's own
    /// descriptors (/dev/stdout, /dev/stderr, /dev/fd/N) takes the figures after the command's
    /// output, and is never read. A file that cannot be written is said once and never changes
    /// the exit status.
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath, value_parser = written_path(), help_heading = "Reports for cron and CI")]
    pub metrics_file: Option<PathBuf>,

    /// When the run ends, write a summary of it to FILE
    ///
    /// The attempts made, the retries, retry's exit status, the last attempt's, the outcome
    /// (success, exhausted, max-time, permanent, budget, breaker, signal, broken-pipe) and the
    /// time taken; as JSON, also each attempt's end, duration and the wait after it. Written
    /// once, also when a signal ends retry, and only to a regular file (or a new one), never
    /// through a device, a FIFO or another user's symlink; but one of retry's own descriptors
    /// (/dev/stdout, /dev/stderr, /dev/fd/N) takes it after the command's output, the file
    /// behind left as it is. A report that cannot be written is said once and never changes the
    /// exit status.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, value_parser = written_path(), help_heading = "Reports for cron and CI")]
    pub report: Option<PathBuf>,

    /// The --report's format [default: json]
    ///
    /// json replaces FILE atomically with one object; github appends name=value lines
    /// (attempts, retries, exit_status, last_exit, outcome, elapsed_ms), never replacing what
    /// earlier steps wrote: retry --report "$GITHUB_OUTPUT" --report-format github -- make test
    #[arg(long, value_name = "FORMAT", help_heading = "Reports for cron and CI")]
    pub report_format: Option<ReportFormat>,

    /// The job label of the metrics [default: the command's file name]
    #[arg(long, value_name = "NAME", value_hint = ValueHint::Other, value_parser = parse::metrics_job, help_heading = "Reports for cron and CI")]
    pub metrics_job: Option<String>,

    /// Keep the attempt in retry's own process group, for commands that read the terminal
    ///
    /// Then only the attempt itself, not its children, is signalled on timeout. Without it, an
    /// attempt that reads the terminal is stopped by the kernel (SIGTTIN), and retry says so.
    /// Either way, Ctrl-Z stops the attempt together with retry, and fg or bg continues both,
    /// and Ctrl-C reaches the attempt once.
    #[arg(long, help_heading = "Processes")]
    pub foreground: bool,

    /// Name the command by TEXT in every line retry writes about the run
    ///
    /// retry: TEXT: attempt 2/3 failed ...; in JSON events, a "label" field. For a log that
    /// holds several runs, or a command whose words say little (sh -c '...').
    #[arg(long, value_name = "TEXT", value_hint = ValueHint::Other, conflicts_with = "message", help_heading = "Output")]
    pub label: Option<String>,

    /// Print only retry's own errors
    #[arg(short, long, conflicts_with = "verbose", help_heading = "Output")]
    pub quiet: bool,

    /// Say more: each attempt's start, the seed, the success
    ///
    /// Also the splay drawn, and each SIGUSR1 or SIGUSR2 passed on to the attempt.
    #[arg(short, long, action = ArgAction::SetTrue, help_heading = "Output")]
    pub verbose: bool,

    /// Format of retry's own messages: text, or json (one object per line per event)
    /// [default: text]
    ///
    /// Either way they go to stderr, shared with the command's own stderr: a log reader keeps
    /// the lines that parse as JSON objects with an "event" field. Misuse (exit 125) is one text
    /// line in either format: it is found before the settings, this one among them, are known.
    #[arg(long, value_name = "FORMAT", help_heading = "Output")]
    pub log_format: Option<LogFormat>,

    /// Take retries from the retry budget NAME, shared by every run that names it
    ///
    /// A run's first attempt is never held back, and earns --budget-ratio; every later attempt
    /// spends 1. A retry needs a balance of at least 1: floor + ratio x first attempts - retries,
    /// counted over the floor's window. When the budget cannot pay, the run ends at once with
    /// the last attempt's status. NAME is 1 to 64 of A-Z a-z 0-9 . _ -
    #[arg(long, value_name = "NAME", value_hint = ValueHint::Other, value_parser = parse::fleet_name, help_heading = "Fleet limits")]
    pub budget: Option<String>,

    /// Retries each first attempt earns, from 0 to 1 [default: 0.1]
    #[arg(long, value_name = "F", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::ratio, help_heading = "Fleet limits")]
    pub budget_ratio: Option<f64>,

    /// Retries allowed per DUR whatever the traffic; DUR is also the budget's window [default: 10/1m]
    #[arg(long, value_name = "N/DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::budget_floor, help_heading = "Fleet limits")]
    pub budget_floor: Option<(u64, Duration)>,

    /// Stop running the command while the circuit breaker NAME is open
    ///
    /// Every attempt of every run that names it is recorded: a success closes it, a retryable
    /// failure counts one more in a row, and --breaker-threshold in a row open it for
    /// --breaker-cooldown. While open, no attempt starts: a run that has run none ends with 75
    /// (EX_TEMPFAIL), one that was retrying with its last status. Then one probe attempt at a
    /// time may go; its failure opens the breaker again for twice as long (up to 16 times).
    #[arg(long, value_name = "NAME", value_hint = ValueHint::Other, value_parser = parse::fleet_name, help_heading = "Fleet limits")]
    pub breaker: Option<String>,

    /// Failed attempts in a row, across every run, that open the breaker [default: 5]
    #[arg(long, value_name = "N", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::positive_count, help_heading = "Fleet limits")]
    pub breaker_threshold: Option<u64>,

    /// How long the breaker stays open before a probe may go [default: 1m]
    #[arg(long, value_name = "DUR", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::duration, help_heading = "Fleet limits")]
    pub breaker_cooldown: Option<Duration>,

    /// Where budgets and breakers live: a directory, or a Redis server [default: $XDG_STATE_HOME/retry]
    ///
    /// Also $RETRY_STATE. Without either, $XDG_STATE_HOME/retry when that is set and absolute,
    /// else ~/.local/state/retry. One file per name; a directory or file that others can write
    /// or own, or one reached through a directory anyone may rearrange (writable by others
    /// without the sticky bit) or through another user's symlink, is refused. For a fleet of hosts: redis://[[user]:password@]host[:port][/db], rediss://
    /// (TLS) or unix:///path/to/redis.sock, or a Redis Cluster:
    /// redis+cluster://[[user]:password@]host:port[,host:port...] (rediss+cluster:// for TLS). A
    /// password is never printed; $RETRY_STATE keeps it out of ps. When the state cannot be used, the run goes on without budget and breaker,
    /// and says so once.
    #[arg(long, value_name = "DIR|URL", value_hint = ValueHint::DirPath, value_parser = fleet::parse_state, help_heading = "Fleet limits")]
    pub state: Option<StateLocation>,

    /// Print the state of the budget and breaker named, and exit (COMMAND optional)
    #[arg(long, help_heading = "Fleet limits")]
    pub show_state: bool,

    /// Reset the budget and breaker named (a full budget, a closed breaker), and exit
    #[arg(long, help_heading = "Fleet limits")]
    pub reset_state: bool,

    /// Print the planned schedule and exit without running anything
    ///
    /// Per retry: the nominal delay, the jitter range, the elapsed time counting waits, where
    /// --max-time would end the run, and a bar chart; with --seed, the delays that seed draws.
    /// With --timeout too, how many attempts start at the least when each runs its full
    /// --timeout. A COMMAND that cannot be started (not found, not executable, its interpreter
    /// missing) is said to be, as a run would say it, with what the run would then do.
    #[arg(long, help_heading = "Output")]
    pub dry_run: bool,

    /// N attempts in all (--attempts N); -1 is no limit
    ///
    /// Any of -t, -d, -u, -w and -m makes the command line one written for Debian's retry
    /// (minfrin/retry), which this one replaces: what it leaves unsaid is then Debian's (no
    /// attempt limit, waits of 10s without jitter, stdout passed on once, from the attempt
    /// that met the criteria, and stdin replayed to every attempt), unless given here or in
    /// the config file. On the command line only.
    #[arg(short = 't', long = "times", value_name = "N", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = debian::times, conflicts_with_all = ["retries", "attempts", "forever"], help_heading = "Debian's retry command line")]
    pub times: Option<debian::Times>,

    /// The delays in seconds, the last repeated (--delays LIST)
    #[arg(short = 'd', long = "delay", value_name = "LIST", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = parse::delays, conflicts_with_all = ["delays", "backoff", "base", "multiplier"], help_heading = "Debian's retry command line")]
    pub delay: Option<parse::DelayList>,

    /// Repeat until one of the comma-separated criteria holds
    ///
    /// success or true (exit 0), fail or false (any other status), a status N or a range
    /// N-M, or the start of a word (s, fa). retry then exits with the last attempt's status
    /// however the run ends (124 and 128 + N keep their meaning). A command that cannot be
    /// started is retried only when a criterion names its status (-w 127).
    #[arg(short = 'u', long = "until", value_name = "CRITERIA", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = debian::criteria, conflicts_with_all = debian::VERDICT_FLAGS, help_heading = "Debian's retry command line")]
    pub until: Option<debian::Criteria>,

    /// Repeat while one of the comma-separated criteria holds
    #[arg(short = 'w', long = "while", value_name = "CRITERIA", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = debian::criteria, conflicts_with_all = debian::VERDICT_FLAGS, conflicts_with = "until", help_heading = "Debian's retry command line")]
    pub while_: Option<debian::Criteria>,

    /// Name the command by TEXT in retry's lines (--label TEXT)
    // Any bytes, as Debian's takes them (a Latin-1 script's name): what is not UTF-8 is shown
    // as U+FFFD.
    #[arg(short = 'm', long = "message", value_name = "TEXT", value_hint = ValueHint::Other, allow_hyphen_values = true, value_parser = clap::builder::OsStringValueParser::new().map(|text| text.to_string_lossy().into_owned()), help_heading = "Debian's retry command line")]
    pub message: Option<String>,

    /// The command to run, and its arguments
    ///
    /// Run directly, found on PATH, never through a shell (use sh -c '...' for one). Its words
    /// may hold any bytes; the options before it take text, and a value that is not UTF-8 is
    /// misuse (125).
    #[arg(
        value_name = "COMMAND",
        value_hint = ValueHint::CommandWithArguments,
        trailing_var_arg = true,
        num_args = 1..,
    )]
    pub command: Vec<OsString>,
}

/// `--metrics-file` and `--report`: any path but an empty one (an unset variable's) or one
/// whose `~` no shell expanded.
fn written_path() -> impl TypedValueParser<Value = PathBuf> {
    clap::builder::OsStringValueParser::new().try_map(|value| {
        use std::os::unix::ffi::OsStrExt;
        if value.is_empty() {
            return Err("an empty path names no file".to_string());
        }
        match parse::unexpanded_tilde(value.as_bytes()) {
            Some(reason) => Err(reason),
            None => Ok(PathBuf::from(value)),
        }
    })
}

/// The option given a value that is not UTF-8, which clap reports without naming it. Only an
/// option's value can be: COMMAND's words are taken as they are.
pub fn option_with_non_utf8_value(args: &[OsString]) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let index = args.iter().skip(1).position(|arg| arg.to_str().is_none())? + 1;
    let arg = args[index].as_bytes();
    let flag = if let Some(long) = arg.strip_prefix(b"--") {
        let name = long.split(|&b| b == b'=').next().unwrap_or(long);
        format!("--{}", String::from_utf8_lossy(name))
    } else if let Some(short) = arg.strip_prefix(b"-")
        && let Some(&last) = short.iter().take_while(|b| b.is_ascii_alphabetic()).last()
    {
        format!("-{}", char::from(last))
    } else {
        args[index - 1].to_str()?.split('=').next()?.to_string()
    };
    Some(flag)
}

/// Flag names other retry tools, schedulers and HTTP clients use, each with the flag of this
/// `retry` that does that (without `--`), or none where the word means several things here
/// (`--limit`: of attempts, or of time?). Looked up before any nearness of spelling, which
/// would offer a flag of another meaning, even the opposite one (`--interval` is not
/// `--invert`, `--sleep` not `--seed`, `--max-tries` not `--max-time`).
const OTHER_TOOLS_FLAGS: &[(&str, Option<&str>)] = &[
    // A fixed wait between attempts: a list of one delay is exactly that.
    ("interval", Some("delays")),
    ("sleep", Some("delays")),
    ("wait", Some("delays")),
    ("pause", Some("delays")),
    ("every", Some("delays")),
    ("period", Some("delays")),
    ("retry-delay", Some("delays")),
    ("retry-interval", Some("delays")),
    ("retry-wait", Some("delays")),
    ("backoff-delay", Some("base")),
    ("initial-delay", Some("base")),
    ("initial-interval", Some("base")),
    ("min-delay", Some("base")),
    ("first-delay", Some("base")),
    ("backoff-max", Some("max")),
    ("max-backoff", Some("max")),
    ("max-delay", Some("max")),
    ("delay-max", Some("max")),
    ("max-wait", Some("max")),
    ("max-sleep", Some("max")),
    ("max-interval", Some("max")),
    ("backoff-factor", Some("multiplier")),
    ("factor", Some("multiplier")),
    ("exponent", Some("multiplier")),
    ("count", Some("attempts")),
    ("max-times", Some("attempts")),
    ("maxtimes", Some("attempts")),
    ("tries", Some("attempts")),
    ("try", Some("attempts")),
    ("max-tries", Some("attempts")),
    ("max-attempts", Some("attempts")),
    ("attempt", Some("attempts")),
    ("num-attempts", Some("attempts")),
    ("-n", Some("attempts")),
    ("max-retries", Some("retries")),
    ("max-retry", Some("retries")),
    ("retry", Some("retries")),
    ("retry-count", Some("retries")),
    ("num-retries", Some("retries")),
    ("limit", None),
    ("max", None),
    ("deadline", Some("max-time")),
    ("total-timeout", Some("max-time")),
    ("timeout-total", Some("max-time")),
    ("max-duration", Some("max-time")),
    ("retry-max-time", Some("max-time")),
    ("attempt-timeout", Some("timeout")),
    ("per-attempt-timeout", Some("timeout")),
    ("silent", Some("quiet")),
    ("-j", Some("jitter")),
    ("on-error", Some("on-failure")),
    ("on-fail", Some("on-failure")),
    ("retry-on", Some("retry-on-exit")),
    ("exit-codes", Some("retry-on-exit")),
    ("retry-codes", Some("retry-on-exit")),
    ("retry-on-exit-code", Some("retry-on-exit")),
    ("retry-on-exit-codes", Some("retry-on-exit")),
    ("stop-on-exit-code", Some("stop-on-exit")),
    ("stop-on-exit-codes", Some("stop-on-exit")),
    ("base-delay", Some("base")),
    ("exponential", Some("backoff")),
    ("json", Some("log-format")),
    ("maxtries", Some("attempts")),
    // A plan of the run, not a random start-up wait (--splay is one letter away).
    ("plan", Some("dry-run")),
    ("name", Some("label")),
    ("tag", Some("label")),
    ("replay", Some("stdin")),
    // A time for the run or for each attempt: which one is not for a guess to say, and
    // --times (one letter away) is a count.
    ("time", None),
];

/// The flag (`--name`) that an unknown option (`--interval`, `--retires=3`, `-n`) most likely
/// meant: the word of another tool for one of ours, else a near spelling of one of ours (never
/// one of another meaning: see `OTHER_TOOLS_FLAGS`), else none.
pub fn meant_flag(unknown: &str) -> Option<String> {
    let word = unknown.split('=').next().unwrap_or(unknown);
    let name = word.strip_prefix("--").unwrap_or(word).to_ascii_lowercase();
    if let Some((_, meant)) = OTHER_TOOLS_FLAGS.iter().find(|(other, _)| *other == name) {
        return meant.map(|long| format!("--{long}"));
    }
    if !word.starts_with("--") {
        return None;
    }
    let command = <Cli as clap::CommandFactory>::command();
    // Debian's options last: a near spelling that is as close to one of `retry`'s own
    // (`--delas`: `--delays` or `--delay`) leads to that one, not to Debian's defaults.
    let (debians, own): (Vec<&str>, Vec<&str>) = command
        .get_arguments()
        .filter_map(|arg| arg.get_long())
        .chain(["help", "version"])
        .partition(|long| debian::OPTIONS.contains(long));
    let longs: Vec<&str> = own.into_iter().chain(debians).collect();
    // The start of one flag alone (`--mes`, as Debian's getopt would take it), else a near
    // spelling.
    let mut starting = longs
        .iter()
        .filter(|long| name.len() >= 3 && long.starts_with(&name));
    if let (Some(long), None) = (starting.next(), starting.next()) {
        return Some(format!("--{long}"));
    }
    parse::nearest(&name, &longs).map(|long| format!("--{long}"))
}

/// The signals one would end an attempt with, for completion; any other name or number works.
const SIGNAL_NAMES: &[(&str, &str)] = &[
    ("TERM", "terminate (the default)"),
    ("INT", "interrupt, as Ctrl-C"),
    ("HUP", "hang up"),
    ("QUIT", "quit, and dump core by default"),
    ("KILL", "kill, with no chance to clean up"),
    ("USR1", "user-defined signal 1"),
    ("USR2", "user-defined signal 2"),
];

/// A value parser that is `parse`, but offers `names` (with their help) to shell completion:
/// the named forms of a value that takes others too (a jitter factor, a signal number), which
/// a fixed list of possible values would refuse.
#[derive(Clone)]
struct Suggesting<T> {
    parse: fn(&str) -> Result<T, String>,
    names: &'static [(&'static str, &'static str)],
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Suggesting<T> {
    type Value = T;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        self.parse.parse_ref(command, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.names
                .iter()
                .map(|&(name, help)| PossibleValue::new(name).help(help)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// A `~` no shell expanded is refused in every path the command line gives.
    #[test]
    fn a_leading_tilde_is_refused() {
        let parsed = |flag: &str| Cli::try_parse_from(["retry", flag, "~/r", "true"]).is_err();
        assert!(parsed("--report") && parsed("--metrics-file") && parsed("--state"));
    }

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn options_after_the_command_belong_to_it() {
        let cli = Cli::try_parse_from(["retry", "-r", "2", "ls", "-r", "--base", "x"]).unwrap();
        assert_eq!(cli.retries, Some(2));
        assert_eq!(cli.command, ["ls", "-r", "--base", "x"]);
    }

    #[test]
    fn double_dash_starts_the_command() {
        let cli = Cli::try_parse_from(["retry", "--", "--weird", "-x"]).unwrap();
        assert_eq!(cli.command, ["--weird", "-x"]);
    }

    #[test]
    fn the_option_with_a_non_utf8_value_is_found() {
        use std::os::unix::ffi::OsStringExt;
        let args = |words: &[&[u8]]| -> Vec<OsString> {
            words
                .iter()
                .map(|w| OsString::from_vec(w.to_vec()))
                .collect()
        };
        let culprit = |words: &[&[u8]]| option_with_non_utf8_value(&args(words));
        assert_eq!(
            culprit(&[b"retry", b"--on-retry", b"echo \xff", b"true"]),
            Some("--on-retry".into())
        );
        assert_eq!(
            culprit(&[b"retry", b"--until-stdout=\xff", b"true"]),
            Some("--until-stdout".into())
        );
        assert_eq!(culprit(&[b"retry", b"-qb\xff", b"true"]), Some("-b".into()));
        assert_eq!(
            culprit(&[b"retry", b"-b", b"\xff", b"true"]),
            Some("-b".into())
        );
        assert_eq!(culprit(&[b"retry", b"true"]), None);
    }

    /// Misspellings and other tools' words lead to the flag that does that here, or to none;
    /// never to a flag of another meaning.
    #[test]
    fn an_unknown_flag_suggests_the_one_meant() {
        for (unknown, meant) in [
            ("--interval", Some("--delays")),
            ("--sleep", Some("--delays")),
            ("--wait", Some("--delays")),
            ("--pause", Some("--delays")),
            ("--backoff-max", Some("--max")),
            ("--max-delay", Some("--max")),
            ("--count", Some("--attempts")),
            ("--tries", Some("--attempts")),
            ("--max-tries", Some("--attempts")),
            ("--max-retries", Some("--retries")),
            ("--retry", Some("--retries")),
            ("--limit", None),
            ("-n", Some("--attempts")),
            ("-x", None),
            ("--retires", Some("--retries")),
            ("--atempts=3", Some("--attempts")),
            ("--timout", Some("--timeout")),
            ("--max-tim", Some("--max-time")),
            ("--jiter", Some("--jitter")),
            ("--dealys", Some("--delays")),
            ("--seconds", None),
            ("--Interval", Some("--delays")),
            ("--deadline", Some("--max-time")),
            ("--factor", Some("--multiplier")),
            // Negations are never led to what they negate.
            ("--no-retry-on-exit", None),
            ("--no-stop-on-exit", None),
            ("--no-honor-retry-after", None),
            ("--no_honor_retry_after", None),
            ("--not-forever", None),
            ("--uninvert", None),
            ("--unforever", None),
            ("--no-until-stdout", None),
            ("--no-retry", None),
            ("--dont-invert", None),
            ("--untill", Some("--until")),
            // A count is not a deadline; the start of one flag is that flag.
            ("--max-times", Some("--attempts")),
            ("--maxtimes", Some("--attempts")),
            ("--mes=hi", Some("--message")),
            ("--forev", Some("--forever")),
            // A near spelling of one of retry's own is not led to Debian's option beside it;
            // a swap of two letters is one slip.
            ("--delyas", Some("--delays")),
            ("--delas", Some("--delays")),
            ("--delasy", Some("--delays")),
            ("--pslay", Some("--splay")),
            ("--hlp", Some("--help")),
            ("--hep", Some("--help")),
            ("--hlep", Some("--help")),
            ("--versoin", Some("--version")),
            ("--plan", Some("--dry-run")),
            ("--name", Some("--label")),
            ("--replay", Some("--stdin")),
            ("--time", None),
            ("--retry-on-exit-code", Some("--retry-on-exit")),
            ("--stop-on-exit-code", Some("--stop-on-exit")),
            ("--base-delay", Some("--base")),
            ("--exponential", Some("--backoff")),
            ("--json", Some("--log-format")),
            ("--maxtries", Some("--attempts")),
            ("--mesage", Some("--message")),
            ("--tims", Some("--times")),
        ] {
            assert_eq!(meant_flag(unknown).as_deref(), meant, "{unknown}");
        }
        // Every flag named exists.
        let command = Cli::command();
        for (_, meant) in OTHER_TOOLS_FLAGS {
            if let Some(long) = meant {
                assert!(
                    command.get_arguments().any(|a| a.get_long() == Some(long)),
                    "{long}"
                );
            }
        }
    }

    #[test]
    fn unknown_options_before_the_command_are_errors() {
        assert!(Cli::try_parse_from(["retry", "--bogus", "ls"]).is_err());
    }
}
