//! JSON events, the terminal (colour, countdown), and help text.

use predicates::prelude::*;
use serde_json::Value;

use crate::support::*;

fn events(args: &[&str]) -> Vec<Value> {
    let output = retry()
        .args(["--log-format", "json", "--stdin", "null"])
        .args(args)
        .command()
        .output()
        .unwrap();
    String::from_utf8(output.stderr)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}

fn names(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

/// In a log, a command that cannot be started still ends its attempt and its run: the line of
/// text says both at once, a log pipeline counts `attempt` and `give-up` events.
#[test]
fn json_ends_the_attempt_and_the_run_of_a_command_that_cannot_start() {
    let events = events(&["no-such-command-here"]);
    assert_eq!(
        names(&events),
        [
            "start",
            "attempt-start",
            "cannot-start",
            "attempt",
            "give-up"
        ]
    );
    assert_eq!(events[3]["exit_code"], 127);
    assert_eq!(events[3]["outcome"], "failure");
    assert_eq!(events[3]["reason"], events[2]["error"]);
    assert!(events[3]["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert_eq!(events[4]["reason"], "permanent");
    assert_eq!(events[4]["exit_code"], 127);
    retry()
        .args(["no-such-command-here"])
        .assert()
        .code(127)
        .stderr(
            predicate::str::contains("cannot run").and(predicate::str::contains("giving up").not()),
        )
        .stderr(predicate::str::is_match("\\A[^\\n]*\\n\\z").unwrap());
}

/// Misuse is found before the log format is known: one text line in either format.
#[test]
fn misuse_is_one_text_line_under_json_too() {
    let r = retry();
    let config = r.write(
        "config.toml",
        "[defaults]\nlog-format = \"json\"\nbase = \"x\"\n",
    );
    for args in [
        vec!["--log-format", "json", "--base", "x", "true"],
        vec!["--config", config.to_str().unwrap(), "true"],
    ] {
        r.command().args(args).assert().misuse("'x'");
    }
}

#[test]
fn json_events_of_a_failing_run() {
    let events = events(&[
        "-r", "1", "--base", "5ms", "--jitter", "none", "sh", "-c", "exit 3",
    ]);
    assert_eq!(
        names(&events),
        [
            "start",
            "attempt-start",
            "attempt",
            "retry",
            "attempt-start",
            "attempt",
            "give-up"
        ]
    );
    let attempt = &events[2];
    assert_eq!(attempt["attempt"], 1);
    assert_eq!(attempt["max_attempts"], 2);
    assert_eq!(attempt["exit_code"], 3);
    assert_eq!(attempt["signal"], Value::Null);
    assert_eq!(attempt["timed_out"], false);
    assert_eq!(attempt["outcome"], "failure");
    assert!(attempt["duration_ms"].is_u64());
    assert_eq!(events[3]["delay_ms"].as_f64(), Some(5.0));
    assert_eq!(events[6]["reason"], "exhausted");
    assert_eq!(events[6]["exit_code"], 3);
    assert!(events[6]["duration_ms"].is_u64());
    for event in &events {
        let time = event["time"].as_str().unwrap();
        assert!(humantime::parse_rfc3339(time).is_ok(), "{time}");
    }
}

#[test]
fn json_events_of_a_succeeding_run_and_a_signal_death() {
    let events = events(&[
        "-r",
        "1",
        "--base",
        "0",
        "sh",
        "-c",
        "[ $RETRY_ATTEMPT = 2 ] || kill -KILL $$",
    ]);
    assert_eq!(
        names(&events),
        [
            "start",
            "attempt-start",
            "attempt",
            "retry",
            "attempt-start",
            "attempt",
            "success"
        ]
    );
    assert_eq!(events[2]["signal"], "SIGKILL");
    assert_eq!(events[2]["exit_code"], 137);
    assert_eq!(events[5]["outcome"], "success");
    assert_eq!(events[6]["attempt"], 2);
    let timed_out = self::events(&["-r", "0", "--timeout", "50ms", "sleep", "5"]);
    assert_eq!(timed_out[2]["timed_out"], true);
    assert_eq!(timed_out[2]["exit_code"], 124);
}

#[test]
fn json_has_no_give_up_after_sigpipe() {
    let events = events(&["sh", "-c", "kill -PIPE $$"]);
    assert!(!names(&events).contains(&"give-up"), "{events:?}");
}

#[test]
fn json_field_types_are_stable() {
    let events = events(&[
        "-r",
        "2",
        "--base",
        "1ms",
        "--splay",
        "2ms",
        "--timeout",
        "100ms",
        "sh",
        "-c",
        "case $RETRY_ATTEMPT in 1) exit 2;; 2) kill -TERM $$;; *) sleep 5;; esac",
    ]);
    // Every delay, the splay's included, is a number with a fraction (`734.512`), never an
    // integer in one event and a float in another.
    let delays: Vec<&Value> = events.iter().filter_map(|e| e.get("delay_ms")).collect();
    assert_eq!(delays.len(), 3, "a splay and two retries: {events:?}");
    assert!(delays.iter().all(|d| d.is_f64()), "{delays:?}");
    for event in events.iter().filter(|e| e["event"] == "attempt") {
        assert!(event["attempt"].is_u64());
        assert!(event["exit_code"].is_u64());
        assert!(event["signal"].is_null() || event["signal"].is_string());
        assert!(event["timed_out"].is_boolean());
        assert!(event["duration_ms"].is_u64());
        assert!(event["outcome"].is_string());
    }
}

/// The seed `retry` draws is logged so that a run can be replayed with `--seed`: it must stay
/// exact in JSON readers that hold numbers as doubles. (Three runs: a full 64-bit seed would
/// pass by chance once in 2^33.)
#[test]
fn the_drawn_seed_is_exact_in_any_json_reader() {
    for _ in 0..3 {
        let events = events(&["-r", "0", "true"]);
        let seed = events[0]["seed"].as_u64().expect("a seed");
        assert!(seed < 1 << 53, "{seed}");
    }
}

#[test]
fn a_failed_spill_is_an_event() {
    let output = retry()
        .args(["--log-format", "json", "--hold-stdout", "-r", "0"])
        .args(["head", "-c", "5000000", "/dev/zero"])
        .command_under(&["env", "TMPDIR=/no-such-dir-for-retry"])
        .output()
        .unwrap();
    assert_eq!(output.stdout.len(), 5_000_000);
    let spill: Value = String::from_utf8(output.stderr)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["event"] == "spill-failed")
        .expect("a spill-failed event");
    assert_eq!(spill["stream"], "stdout");
    assert!(
        spill["error"]
            .as_str()
            .is_some_and(|error| error.contains("/no-such-dir-for-retry")),
        "{spill}"
    );
}

#[test]
fn a_key_has_one_type_in_every_event() {
    // The reference's promise (docs/reference.md): field types never change from one event to the next (null stands in
    // where a value is absent). Runs that produce every event but `interrupted`, `stdin-warning`
    // and `terminal-stop`, whose fields (`signal`, `exit_code`, `message`, `attempt`) others
    // share.
    let runs: [&[&str]; 6] = [
        &[
            "-r",
            "2",
            "--base",
            "1ms",
            "--splay",
            "1ms",
            "--timeout",
            "100ms",
            "sh",
            "-c",
            "case $RETRY_ATTEMPT in 1) exit 2;; 2) kill -TERM $$;; *) sleep 5;; esac",
        ],
        &["-r", "1", "--base", "0", "--on-retry", "exit 3", "false"],
        &["--consecutive", "2", "--base", "0", "true"],
        &["no-such-command-for-retry"],
        &["--until-stdout", "ready", "-r", "0", "echo", "not yet"],
        &[
            "-r",
            "2",
            "--base",
            "1ms",
            "--honor-retry-after",
            "sh",
            "-c",
            "case $RETRY_ATTEMPT in 1) echo 'Retry-After: 0';; *) echo 'Retry-After: soon';; esac; exit 1",
        ],
    ];
    let kind = |value: &Value| match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "fraction",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let mut seen: std::collections::BTreeMap<String, (&str, String)> = Default::default();
    let mut names_seen = std::collections::BTreeSet::new();
    for args in runs {
        for event in events(args) {
            let name = event["event"].as_str().expect("event name").to_string();
            names_seen.insert(name.clone());
            for (key, value) in event.as_object().expect("object") {
                if value.is_null() {
                    continue;
                }
                let this = kind(value);
                let (first, where_) = seen.entry(key.clone()).or_insert((this, name.clone()));
                assert_eq!(
                    *first, this,
                    "{key} is {first} in {where_} but {this} in {name}"
                );
            }
        }
    }
    for name in [
        "start",
        "splay",
        "attempt-start",
        "attempt",
        "retry",
        "give-up",
        "success",
        "cannot-start",
        "hook-failed",
    ] {
        assert!(
            names_seen.contains(name),
            "{name} not produced: {names_seen:?}"
        );
    }
}

/// Whether `--max-time` passed during an attempt or would have passed during the next wait,
/// the event says `max-time` (the text line tells the two apart).
#[test]
fn json_give_up_at_max_time_either_way() {
    for (args, status) in [
        (
            &["--forever", "--max-time", "100ms", "--base", "1s", "false"][..],
            1,
        ),
        (&["--forever", "--max-time", "50ms", "sleep", "1"][..], 124),
    ] {
        let events = events(args);
        let give_up = events.last().expect("events");
        assert_eq!(give_up["event"], "give-up", "{events:?}");
        assert_eq!(give_up["reason"], "max-time");
        assert_eq!(give_up["exit_code"], status);
    }
}

#[test]
fn a_success_short_of_the_streak_has_every_attempt_field() {
    let events = events(&["--consecutive", "2", "--base", "0", "true"]);
    let attempts: Vec<&Value> = events.iter().filter(|e| e["event"] == "attempt").collect();
    assert_eq!(attempts.len(), 2, "{events:?}");
    let keys = |event: &Value| -> Vec<String> {
        let mut keys: Vec<String> = event.as_object().expect("object").keys().cloned().collect();
        keys.retain(|k| k != "streak" && k != "needed");
        keys.sort();
        keys
    };
    assert_eq!(keys(attempts[0]), keys(attempts[1]));
    assert_eq!(attempts[0]["streak"], 1);
    assert_eq!(attempts[0]["needed"], 2);
    assert_eq!(attempts[0]["exit_code"], 0);
    assert!(attempts[0]["duration_ms"].is_u64());
}

#[test]
fn quiet_json_says_nothing() {
    assert!(events(&["-q", "-r", "1", "--base", "0", "false"]).is_empty());
}

#[test]
fn no_escape_bytes_when_stderr_is_not_a_terminal() {
    retry()
        .args([
            "-r", "1", "--base", "1100ms", "--jitter", "none", "--stdin", "null", "false",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("\u{1b}").not())
        .stderr(predicate::str::contains("\r").not());
}

/// A run under a terminal starts as the builder's runs do: in the test's directory, with
/// `$HOME` below it, so a developer's own config file (`quiet = true`, say) never reaches it.
#[test]
fn a_terminal_run_starts_in_the_tests_directory_and_home() {
    let r = retry();
    let screen = under_pty(&r, &["sh", "-c", "pwd; echo \"home=$HOME\""], &[], &[]).expect("sh");
    let dir = r.dir.path().display().to_string();
    assert!(screen.contains(&format!("{dir}\r\n")), "{screen}");
    assert!(screen.contains(&format!("home={dir}/home")), "{screen}");
}

/// Runs `retry ARGS` (words as a shell reads them) under a pseudo-terminal, with extra
/// environment.
fn under_terminal(args: &str, env: &[(&str, &str)]) -> String {
    under_pty(
        &retry(),
        &["sh", "-c", &format!("'{BIN}' {args}")],
        &[],
        env,
    )
    .expect("sh")
}

const LONG_WAIT: &str = "-r 1 --base 2100ms --jitter none --stdin null false";

/// The countdown's updates on a screen, each the time left as it was drawn (`2s`, `1s`, or
/// `900ms` when a loaded machine woke the countdown late).
fn countdown(screen: &str) -> Vec<&str> {
    screen
        .split("\rretry: next attempt in ")
        .skip(1)
        .filter_map(|rest| rest.split_once("...").map(|(left, _)| left))
        .filter(|left| left.len() <= 8 && left.ends_with('s'))
        .collect()
}

#[test]
fn a_terminal_gets_colour_and_a_countdown_that_is_erased() {
    let screen = under_terminal(LONG_WAIT, &[("TERM", "xterm")]);
    assert!(
        screen.contains("\u{1b}[1;33mretry:\u{1b}[0m attempt 1/2 failed"),
        "{screen:?}"
    );
    // Drawn at the start, and again at least once as the wait goes by.
    let drawn = countdown(&screen);
    assert!(drawn.len() >= 2 && drawn[0].starts_with('2'), "{screen:?}");
    let erased = screen.find("...\r   ").expect("the countdown is erased");
    let next = screen.find("attempt 2/2 failed").unwrap();
    assert!(erased < next, "erased before the next attempt's line");
}

#[test]
fn no_countdown_in_ci_and_no_escapes_with_no_color() {
    // The three terminals wait out their 2 s side by side.
    let [in_ci, no_color, both_empty] = [
        &[("CI", "true")][..],
        &[("NO_COLOR", "1")],
        &[("NO_COLOR", ""), ("CI", "")],
    ]
    .map(|env| std::thread::spawn(move || under_terminal(LONG_WAIT, env)))
    .map(|screen| screen.join().unwrap());
    assert!(countdown(&in_ci).is_empty(), "{in_ci:?}");
    assert!(!no_color.contains('\u{1b}'), "{no_color:?}");
    assert!(
        countdown(&no_color).len() >= 2,
        "the countdown stays: {no_color:?}"
    );
    // NO_COLOR counts when set at all; CI only when set and not empty.
    assert!(!both_empty.contains('\u{1b}'), "{both_empty:?}");
    assert!(countdown(&both_empty).len() >= 2, "{both_empty:?}");
}

/// A terminal that says it cannot draw (`TERM=dumb`: Emacs' shell, some CI consoles), or says
/// nothing (`TERM` empty, as git reads it), gets no colour, as with `NO_COLOR`; the same line
/// on an able terminal has it.
#[test]
fn a_dumb_terminal_gets_no_colour() {
    let args = "-r 0 --stdin null false";
    let [dumb, empty, able] = [("TERM", "dumb"), ("TERM", ""), ("TERM", "xterm")]
        .map(|term| std::thread::spawn(move || under_terminal(args, &[term])))
        .map(|screen| screen.join().unwrap());
    for plain in [&dumb, &empty] {
        assert!(plain.contains("retry: attempt 1/1 failed"), "{plain:?}");
        assert!(!plain.contains('\u{1b}'), "{plain:?}");
    }
    assert!(able.contains("\u{1b}[1;31mretry:\u{1b}[0m"), "{able:?}");
}

/// A command that reads the terminal from its own process group is stopped by the kernel
/// (SIGTTIN) and would wait there silently; `retry` says so and names `--foreground`. (The
/// second is for the shell to start and read, however loaded the machine.)
const READS_THE_TERMINAL: &str = "-r 0 --timeout 1s sh -c 'read line'";

#[test]
fn an_attempt_stopped_for_reading_the_terminal_is_reported() {
    // The four terminals time out side by side.
    let [plain, foreground, quiet, json] = [
        ("", &[("NO_COLOR", "1")][..]),
        ("--foreground ", &[]),
        ("--quiet ", &[]),
        ("--log-format json ", &[]),
    ]
    .map(|(flags, env)| {
        std::thread::spawn(move || under_terminal(&format!("{flags}{READS_THE_TERMINAL}"), env))
    })
    .map(|screen| screen.join().unwrap());
    assert!(
        plain.contains("retry: attempt 1 is stopped (SIGTTIN)"),
        "{plain:?}"
    );
    assert!(plain.contains("use --foreground"), "{plain:?}");
    assert!(plain.contains("failed (timed out)"), "{plain:?}");
    assert!(!foreground.contains("is stopped"), "{foreground:?}");
    assert!(foreground.contains("failed (timed out)"), "{foreground:?}");
    assert!(!quiet.contains("is stopped"), "{quiet:?}");
    let stop = json
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim_end()).ok())
        .find(|event| event["event"] == "terminal-stop")
        .unwrap_or_else(|| panic!("no terminal-stop event: {json:?}"));
    assert_eq!(stop["attempt"], 1);
    assert_eq!(stop["signal"], "SIGTTIN");
}

/// A wait that ends past what the clock can count shows no countdown, and a signal still
/// ends it. The attempt leaves behind, in a session of its own, a process that sends
/// SIGTERM to `retry` once it waits.
#[test]
fn a_wait_past_the_clocks_range_waits_for_a_signal() {
    let killer = r"setsid sh -c 'sleep 0.3; kill -TERM \$1' sh \$PPID & exit 1";
    let screen = under_terminal(
        &format!("-r 1 --jitter none --base 500000000000y --max 500000000000y sh -c \"{killer}\""),
        &[("NO_COLOR", "1")],
    );
    assert!(screen.contains("attempt 1/2 failed"), "{screen:?}");
    assert!(screen.contains("retry: stopped by SIGTERM"), "{screen:?}");
    assert!(!screen.contains("panicked"), "{screen:?}");
}

#[test]
fn no_countdown_for_short_waits() {
    let screen = under_terminal("-r 1 --base 300ms --jitter none --stdin null false", &[]);
    assert!(!screen.contains("..."), "{screen:?}");
}

/// The examples under `header` in a help text: the indented lines up to the next blank line,
/// each without its `# comment`. Each must be a valid command line (none quotes a word): its
/// plan can be drawn.
fn valid_examples(help: &str, header: &str) -> usize {
    let start = help.find(&format!("\n{header}\n")).expect(header) + header.len() + 2;
    let examples: Vec<&str> = help[start..]
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.split(" #").next().unwrap().trim())
        .collect();
    for example in &examples {
        let words: Vec<&str> = example.split_whitespace().collect();
        assert_eq!(words[0], "retry", "{example}");
        retry()
            .args(["--dry-run"])
            .args(&words[1..])
            .assert()
            .code(0);
    }
    examples.len()
}

/// The first screen of `-h` (and of `--help`) tells how to start: examples right after the
/// usage, before the options, within 80 columns; `--help` ends with more.
#[test]
fn help_starts_with_examples_and_long_help_ends_with_more() {
    let help = |flag: &str| {
        let output = retry().args([flag]).command().output().unwrap();
        String::from_utf8(output.stdout).unwrap()
    };
    let (short, long) = (help("-h"), help("--help"));
    for help in [&short, &long] {
        let usage = help.find("\nUsage: ").expect("the usage");
        let examples = help.find("\nExamples:\n").expect("examples");
        let options = help.find("\nOptions:\n").expect("the options");
        assert!(usage < examples && examples < options, "{help}");
        assert!(valid_examples(help, "Examples:") >= 5, "{help}");
        let first = help[examples + 1..].split("\n\n").next().unwrap();
        assert!(first.lines().all(|line| line.len() < 80), "{first}");
    }
    assert!(valid_examples(&long, "More examples:") >= 3, "{long}");
    assert!(short.contains("\nUse --help for details and more examples.\n"));
    assert!(!short.contains("More examples:"));
    assert!(
        short.lines().count() * 2 < long.lines().count(),
        "{} vs {}",
        short.lines().count(),
        long.lines().count()
    );
}

/// The binary is an ordinary position-independent executable (ELF type ET_DYN), so the
/// platform's address-space randomisation applies to it: the link options of build.rs must
/// never trade that away.
#[test]
fn the_binary_is_position_independent() {
    let header = std::fs::read(BIN).expect("the binary");
    assert_eq!(&header[..4], b"\x7fELF");
    const ET_DYN: u16 = 3;
    let kind = u16::from_ne_bytes([header[16], header[17]]);
    assert_eq!(kind, ET_DYN, "ELF type {kind}");
}
