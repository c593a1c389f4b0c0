//! Malformed values and combinations: exit 125, one line on stderr naming the flag, no panic.

use predicates::prelude::*;

use crate::support::*;

fn misuse(args: &[&str], names: &str) {
    retry()
        .args(args)
        .args(["true"])
        .assert()
        .misuse(names)
        .stdout("");
}

#[test]
fn malformed_durations() {
    for flag in [
        "--max-time",
        "--timeout",
        "--kill-after",
        "--base",
        "--max",
        "--splay",
    ] {
        for value in [
            "",
            "-1",
            "-1s",
            "nan",
            "inf",
            "1e3",
            "abc",
            "1x",
            "1..5",
            "99999999999999999999999",
            "5 s s",
        ] {
            misuse(&[flag, value], flag);
        }
        // The `--flag=value` spelling too.
        misuse(&[&format!("{flag}=oops")], flag);
    }
}

/// A duration in the wrong case is a slip the message corrects, and every duration error names
/// the units people use. `M` is months to humantime and minutes to many: it is refused, not
/// read as a month.
#[test]
fn a_duration_error_lists_the_units_and_corrects_the_case() {
    for (flag, value, fix) in [
        ("--base", "1S", "'1s'"),
        ("--max-time", "500MS", "'500ms'"),
        ("--timeout", "2H", "'2h'"),
        ("--splay", "1M30S", "'1m30s'"),
    ] {
        misuse(&[flag, value], &format!("did you mean {fix}?"));
        misuse(&[flag, value], "units: ms, s, m, h");
    }
    for (value, fix) in [("1M", "'1m'"), ("2M", "'2m'")] {
        misuse(&["--max-time", value], "ambiguous");
        misuse(&["--max-time", value], &format!("did you mean {fix}?"));
    }
    for value in ["1x", "abc", "10 parsecs"] {
        misuse(&["--base", value], "units: ms, s, m, h");
    }
    // A number left without its unit is said to be that, not an unknown unit ''.
    misuse(&["--timeout", "1m30"], "no unit after the last number, 30");
}

#[test]
fn malformed_counts() {
    for flag in ["--retries", "--attempts", "--seed", "--consecutive"] {
        for value in ["", "x", "-1", "1.5", "99999999999999999999999"] {
            misuse(&[flag, value], flag);
        }
    }
    misuse(&["--attempts", "0"], "--attempts");
    misuse(&["--consecutive", "0"], "--consecutive");
}

#[test]
fn malformed_code_lists() {
    for flag in ["--retry-on-exit", "--stop-on-exit"] {
        for value in ["", ",", "1,", "256", "-1", "5-3", "a", "1-2-3", "1.5"] {
            misuse(&[flag, value], flag);
        }
    }
    for value in ["256", "-1", "x", ""] {
        misuse(&["--fail-exit", value], "--fail-exit");
    }
    // A retry limit needs a number, and only --retry-on-exit takes one.
    for value in ["137@", "1,137@", "137@x", "137@-1", "@2", "137@1.5"] {
        misuse(&["--retry-on-exit", value], "--retry-on-exit");
    }
    misuse(&["--stop-on-exit", "2,3@1"], "only --retry-on-exit takes");
}

#[test]
fn malformed_signals() {
    for value in ["", "0", "999", "FOO", "SIGFOO", "-9"] {
        misuse(&["--kill-signal", value], "--kill-signal");
    }
}

#[test]
fn malformed_schedule_kinds() {
    for value in ["", "random", "1.5", "-0.2", "+", "+x", "2", "2e-1"] {
        misuse(&["--jitter", value], "--jitter");
    }
    for value in ["", "quadratic", "EXP"] {
        misuse(&["--backoff", value], "--backoff");
    }
    for value in ["", "0.5", "0", "-2", "nan", "inf", "x", "1e3"] {
        misuse(&["--multiplier", value], "--multiplier");
    }
}

#[test]
fn a_bad_choice_lists_the_possible_values() {
    retry()
        .args(["--log-format", "xml", "true"])
        .assert()
        .code(125)
        .stderr("retry: invalid value 'xml' for '--log-format <FORMAT>' [possible values: text, json]\n");
    misuse(
        &["--stdin", "sometimes"],
        "[possible values: auto, replay, inherit, null]",
    );
    misuse(
        &["--backoff", "quadratic"],
        "[possible values: exponential, constant",
    );
}

/// A value, flag or name with a line break in it stays on the one line, escaped, and the line
/// still names the flag.
#[test]
fn a_line_break_in_bad_input_stays_on_the_line() {
    misuse(&["--base", "1\n2"], "'1\\n2' for '--base <DUR>'");
    misuse(&["--until-stdout", "(\n"], "--until-stdout");
    misuse(&["--stdin", "a\nb"], "'a\\nb' for '--stdin <MODE>'");
    misuse(&["--ba\nse", "1"], "'--ba\\nse'");
    // Said whole and escaped, never cut at the break nor stripped of what looks like an escape.
    misuse(
        &["--retry-on-exit", "1,a\nb"],
        "'1,a\\nb' for '--retry-on-exit <CODES>': invalid exit code 'a\\nb'",
    );
    misuse(
        &["--kill-signal", "\x1bx"],
        "invalid value '\\x1bx' for '--kill-signal <SIG>': unknown signal '\\x1bx';",
    );
    misuse(
        &["--until-stdout", "x\x1b]0;T\x07("],
        "'x\\x1b]0;T\\x07(' for '--until-stdout <REGEX>'",
    );
    misuse(
        &["--config", "no\nsuch.toml"],
        "cannot read config file $'no\\nsuch.toml'",
    );
}

/// A value that is not UTF-8 where text is expected names its option; clap alone names none.
#[test]
fn a_value_that_is_not_utf8_names_its_option() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let not_utf8 = OsStr::from_bytes(b"ab\xffc");
    let r = retry();
    for flag in ["--on-retry", "--profile", "--until-stderr", "--base"] {
        let hint = if flag == "--until-stderr" {
            "; a pattern matches any byte written as (?-u:\\xFF)"
        } else {
            ""
        };
        r.command()
            .arg(flag)
            .arg(not_utf8)
            .arg("true")
            .assert()
            .code(125)
            .stderr(format!(
                "retry: invalid value for '{flag}': it is not valid UTF-8{hint}\n"
            ));
    }
    // COMMAND's own words may be any bytes.
    r.command()
        .args(["--", "printf", "%s"])
        .arg(not_utf8)
        .assert()
        .success()
        .stdout(predicate::eq(b"ab\xffc" as &[u8]));
    // RETRY_PROFILE cannot name a profile when it is not UTF-8.
    let config = r.write("config.toml", "[profile.x]\nretries = 1\n");
    r.command()
        .env("RETRY_CONFIG", &config)
        .env("RETRY_PROFILE", not_utf8)
        .arg("true")
        .assert()
        .misuse("$RETRY_PROFILE 'ab\u{fffd}c' is not valid UTF-8");
}

/// A near miss of a flag or a value names what was probably meant, on the same line.
#[test]
fn a_near_miss_suggests_the_flag_or_value() {
    retry()
        .args(["--retires", "3", "true"])
        .assert()
        .code(125)
        .stderr("retry: unexpected argument '--retires' found; did you mean '--retries'?\n");
    misuse(&["--stdin", "replya"], "did you mean 'replay'?");
    misuse(&["--log-format", "jsno"], "did you mean 'json'?");
}

/// Other tools' words and misspellings lead to the flag that does that here, or to none, never
/// to one of another meaning (clap's guess by spelling offered `--invert` for `--interval`,
/// `--seed` for `--sleep`, `--consecutive` for `--count`, `--max-time` for `--max-tries`).
#[test]
fn an_unknown_flag_suggests_the_one_meant_or_none() {
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
        ("--max-attempts", Some("--attempts")),
        ("--max-retries", Some("--retries")),
        ("--retry", Some("--retries")),
        ("--limit", None),
        ("-n", Some("--attempts")),
        ("-x", None),
        ("--deadline", Some("--max-time")),
        ("--factor", Some("--multiplier")),
        ("--silent", Some("--quiet")),
        ("--timout", Some("--timeout")),
        ("--max-tim", Some("--max-time")),
        ("--jiter", Some("--jitter")),
        ("--atempts=3", Some("--attempts")),
        ("--seconds", None),
        ("--no-retry-on-exit", None),
        ("--no-honor-retry-after", None),
        ("--unforever", None),
        ("--no-retry", None),
        ("--max-times", Some("--attempts")),
        ("--mes=hi", Some("--message")),
        // A slip in one of retry's own flags never leads to Debian's option beside it, which
        // would bring Debian's defaults with it.
        ("--delyas", Some("--delays")),
        ("--delas", Some("--delays")),
        ("--pslay", Some("--splay")),
        ("--hlp", Some("--help")),
        ("--plan", Some("--dry-run")),
        ("--name", Some("--label")),
        ("--time", None),
    ] {
        let word = unknown.split('=').next().unwrap();
        let expected = match meant {
            Some(flag) => {
                format!("retry: unexpected argument '{word}' found; did you mean '{flag}'?\n")
            }
            None => format!("retry: unexpected argument '{word}' found\n"),
        };
        retry()
            .args([unknown, "3", "true"])
            .assert()
            .code(125)
            .stdout("")
            .stderr(expected);
    }
}

#[test]
fn conflicting_flags() {
    misuse(&["--retries", "1", "--attempts", "2"], "--attempts");
    misuse(&["--forever", "--retries", "2"], "--forever");
    misuse(&["--forever", "--attempts", "2"], "--forever");
    misuse(&["--quiet", "--verbose"], "--quiet");
}

/// A list of delays replaces the backoff curve: naming both, or a jitter that draws from the
/// curve, is misuse, and so is a list with nothing in it or in one of its entries.
#[test]
fn a_list_of_delays_with_a_curve_or_an_empty_entry() {
    for curve in [
        ["--backoff", "linear"],
        ["--base", "1s"],
        ["--multiplier", "3"],
    ] {
        misuse(&[&["--delays", "1s,2s"][..], &curve].concat(), curve[0]);
    }
    misuse(&["--delays", "1s", "--backoff", "ethernet"], "--backoff");
    misuse(
        &["--delays", "1s", "--jitter", "decorrelated"],
        "--jitter decorrelated",
    );
    for empty in ["", "1s,,2s", "1s,", ",1s", " , "] {
        misuse(&["--delays", empty], "--delays");
    }
    misuse(&["--delays", "1s,soon"], "invalid duration 'soon'");
    misuse(&["--delays", "1s,-1s"], "negative duration");
}

#[test]
fn unknown_flags_and_missing_values() {
    misuse(&["--no-such-flag"], "--no-such-flag");
    retry().args(["--base"]).assert().misuse("--base");
}

#[test]
fn a_missing_command_is_misuse() {
    for args in [vec![], vec!["--retries", "2"], vec!["--"]] {
        retry().args(args).assert().misuse("no command");
    }
}

#[test]
fn a_later_flag_overrides_an_earlier_one() {
    retry()
        .args(["--retries", "9", "--retries", "0", "--base", "0", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("attempt 1/1 failed"));
}

/// A list of time limits replaces the one limit: naming both is misuse, and so is a list with
/// nothing in it or in one of its entries, on the command line or in a config file.
#[test]
fn a_list_of_time_limits_with_the_one_limit_or_an_empty_entry() {
    misuse(&["--timeouts", "1s,2s", "--timeout", "5s"], "--timeout");
    for empty in ["", "1s,,2s", "1s,", ",1s", " , "] {
        misuse(&["--timeouts", empty], "--timeouts");
    }
    misuse(&["--timeouts", "1s,soon"], "invalid duration 'soon'");
    misuse(&["--timeouts", "1s,-1s"], "negative duration");
    let r = retry();
    for (text, said) in [
        ("[defaults]\ntimeouts = []\n", "empty list of timeouts"),
        (
            "[defaults]\ntimeouts = \"1s,,2s\"\n",
            "entry 2 of '1s,,2s' is empty",
        ),
        (
            "[defaults]\ntimeouts = [\"1s\", true]\n",
            "expected an array of durations",
        ),
        (
            "[defaults]\ntimeout = \"1s\"\ntimeouts = [1]\n",
            "cannot be set together with 'timeout'",
        ),
    ] {
        let file = r.write("bad.toml", text);
        misuse(&["--config", file.to_str().unwrap()], said);
    }
}

/// An entry with a space inside is a comma forgotten (`1s 2s` would read as 3s): misuse.
#[test]
fn a_list_entry_with_a_space_inside() {
    for flag in ["--delays", "--timeouts"] {
        misuse(&[flag, "0.2s 0.3s"], "separate the entries with commas");
        misuse(&[flag, "1s, 2m 3s"], "entry 2");
    }
}

/// `--state=~/x` (or a quoted `~`) reaches `retry` unexpanded: taken as it is, it would make a
/// directory named `~` wherever the run starts. Refused instead, naming the way out; `./~` is
/// that directory, and a `~` further on is an ordinary character. An empty path (an unset
/// variable's) names no file.
#[test]
fn a_path_whose_tilde_no_shell_expanded_is_misuse() {
    for flag in ["--state", "--report", "--metrics-file"] {
        for value in ["~/x", "~", "~bob/x"] {
            let r = retry().args([&format!("{flag}={value}"), "--budget", "b", "true"]);
            r.assert()
                .misuse("was not expanded")
                .stderr(predicate::str::contains("$HOME"));
            assert!(!r.path("~").exists(), "{flag}={value} made ~");
        }
    }
    for flag in ["--report", "--metrics-file"] {
        misuse(&[&format!("{flag}=")], "an empty path names no file");
    }
    let r = retry().args(["--state", "./~", "--report", "a~b", "--budget", "b", "true"]);
    r.assert().success();
    assert!(r.path("~/b.state").is_file() && r.path("a~b").is_file());
}

/// `RETRY_STATE: ~/.cache/retry` in a CI file's `env:` or a unit's `Environment=` reaches
/// `retry` with no shell to expand it: read as one would, as the config file's is.
#[test]
fn retry_state_expands_its_tilde() {
    let r = retry().args(["--budget", "b", "true"]);
    std::fs::create_dir_all(r.path("home")).unwrap();
    r.command().env("RETRY_STATE", "~/s").assert().success();
    assert!(r.path("home/s/b.state").is_file(), "the state is in $HOME");
    assert!(!r.path("~").exists());
    for (home, says) in [(None, "$HOME is unset"), (Some("rel"), "$HOME is unset")] {
        let mut command = r.command();
        command.env("RETRY_STATE", "~/s");
        match home {
            Some(home) => command.env("HOME", home),
            None => command.env_remove("HOME"),
        };
        command
            .assert()
            .misuse("$RETRY_STATE")
            .stderr(predicate::str::contains(says));
    }
    r.command()
        .env("RETRY_STATE", "~bob/s")
        .assert()
        .misuse("not ~USER");
}

/// A report's or metrics file's directory that cannot be used is named with what stands in the
/// way, not called missing: a file, a loop of links, a path longer than the kernel takes.
#[test]
fn what_stands_in_the_way_of_a_files_directory_is_named() {
    let r = retry();
    r.write("file", "");
    std::os::unix::fs::symlink("loop", r.path("loop")).unwrap();
    let long = format!("{}x", "a/".repeat(2100));
    for (path, says) in [
        ("file/r.json", "/file is not a directory"),
        ("loop/r.json", "/loop: Too many levels of symbolic links"),
        (long.as_str(), "File name too long"),
    ] {
        for flag in ["--report", "--metrics-file"] {
            r.command()
                .args([flag, &r.path(path).to_string_lossy(), "true"])
                .assert()
                .misuse(says)
                .stderr(predicate::str::contains("there is no directory").not());
        }
    }
}
