//! Configuration files: discovery, precedence, errors.

use predicates::prelude::*;

use crate::support::*;

/// The "limits:" and "schedule:" lines of a dry run, which show the effective settings.
fn effective(r: &Retry, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = r.command();
    command.args(args).arg("--dry-run");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("limits:") || l.starts_with("schedule:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_xdg_default_is_read() {
    let r = retry();
    r.write("xdg/retry/config.toml", "[defaults]\nbase = \"7s\"\n");
    let xdg = r.path("xdg");
    assert!(effective(&r, &[], &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]).contains("base 7s"));
}

#[test]
fn home_dot_config_is_the_default_xdg() {
    let r = retry();
    r.write(
        "home/.config/retry/config.toml",
        "[defaults]\nbase = \"8s\"\n",
    );
    assert!(effective(&r, &[], &[]).contains("base 8s"));
}

/// A relative XDG_CONFIG_HOME or HOME would name the current directory's files: ignored.
#[test]
fn relative_config_homes_are_ignored() {
    let r = retry();
    r.write("retry/config.toml", "[defaults]\nbase = \"7s\"\n");
    r.write(
        "home/.config/retry/config.toml",
        "[defaults]\nbase = \"8s\"\n",
    );
    r.write(
        "rel/.config/retry/config.toml",
        "[defaults]\nbase = \"9s\"\n",
    );
    let plan = effective(&r, &[], &[("XDG_CONFIG_HOME", ".")]);
    assert!(plan.contains("base 8s"), "{plan}");
    let plan = effective(&r, &[], &[("XDG_CONFIG_HOME", "."), ("HOME", "rel")]);
    assert!(plan.contains("base 1s"), "{plan}");
}

#[test]
fn retry_config_beats_the_xdg_default_and_config_beats_both() {
    let r = retry();
    r.write(
        "home/.config/retry/config.toml",
        "[defaults]\nbase = \"8s\"\n",
    );
    let env_file = r.write("env.toml", "[defaults]\nbase = \"9s\"\n");
    assert!(
        effective(&r, &[], &[("RETRY_CONFIG", env_file.to_str().unwrap())]).contains("base 9s")
    );
    let flag_file = r.write("flag.toml", "[defaults]\nbase = \"10s\"\n");
    let flag = ["--config", flag_file.to_str().unwrap()];
    assert!(
        effective(&r, &flag, &[("RETRY_CONFIG", env_file.to_str().unwrap())]).contains("base 10s")
    );
}

/// An empty RETRY_CONFIG or RETRY_PROFILE counts as unset, as an empty CI does: a way to
/// turn either off for one run.
#[test]
fn empty_environment_values_count_as_unset() {
    let r = retry();
    r.write(
        "home/.config/retry/config.toml",
        "[defaults]\nbase = \"8s\"\n[profile.p]\nbase = \"3s\"\n",
    );
    assert!(effective(&r, &[], &[("RETRY_CONFIG", "")]).contains("base 8s"));
    assert!(effective(&r, &[], &[("RETRY_PROFILE", "p")]).contains("base 3s"));
    assert!(effective(&r, &[], &[("RETRY_PROFILE", "")]).contains("base 8s"));
}

#[test]
fn a_config_in_the_current_directory_is_ignored() {
    let r = retry();
    r.write("config.toml", "[defaults]\nbase = \"9s\"\n");
    r.write("retry/config.toml", "[defaults]\nbase = \"9s\"\n");
    r.write(".retry.toml", "[defaults]\nbase = \"9s\"\n");
    assert!(effective(&r, &[], &[]).contains("base 1s"));
}

#[test]
fn precedence_for_a_duration_a_number_a_list_and_a_pattern() {
    let r = retry();
    let text = r#"
[defaults]
base = "2s"
retries = 3
retry-on-exit = [1, 2]
on-retry = "echo defaults"

[profile.p]
base = "3s"
retries = 4
retry-on-exit = "5"
on-retry = "echo profile"
"#;
    let file = r.write("c.toml", text);
    let config = file.to_str().unwrap();
    // defaults only
    let shown = effective(&r, &["--config", config], &[]);
    assert!(
        shown.contains("base 2s") && shown.contains("4 attempts"),
        "{shown}"
    );
    // profile over defaults
    let shown = effective(&r, &["--config", config, "--profile", "p"], &[]);
    assert!(
        shown.contains("base 3s") && shown.contains("5 attempts"),
        "{shown}"
    );
    // flag over profile, in either spelling of the limit
    let shown = effective(
        &r,
        &[
            "--config",
            config,
            "--profile",
            "p",
            "--base",
            "4s",
            "--attempts",
            "2",
        ],
        &[],
    );
    assert!(
        shown.contains("base 4s") && shown.contains("2 attempts"),
        "{shown}"
    );
    // RETRY_PROFILE selects a profile too
    let shown = effective(&r, &["--config", config], &[("RETRY_PROFILE", "p")]);
    assert!(shown.contains("base 3s"), "{shown}");

    // The list: exit 2 is retried under [defaults], not under the profile, nor with the flag.
    // A builder a run, for a count of runs of its own; the config file is read by its path.
    let run = |extra: &[&str]| {
        let r = retry()
            .args(["--config", config, "--base", "0", "--on-retry", "true"])
            .args(extra);
        let command = r.flaky_with(1, 2);
        let r = r.args(command);
        let status = r.command().output().unwrap().status.code();
        (status, r.runs())
    };
    assert_eq!(run(&[]), (Some(0), 2));
    assert_eq!(run(&["--profile", "p"]), (Some(2), 1));
    assert_eq!(
        run(&["--profile", "p", "--retry-on-exit", "2"]),
        (Some(0), 2)
    );

    // The pattern-like string: the hook's command from each layer.
    let hook_says = |extra: &[&str]| {
        let output = r
            .command()
            .args(["--config", config, "--base", "0", "-r", "1"])
            .args(["--retry-on-exit", "0-255"])
            .args(extra)
            .args(["false"])
            .output()
            .unwrap();
        String::from_utf8(output.stderr).unwrap()
    };
    let said = hook_says(&[]);
    assert!(said.contains("defaults"), "{said}");
    assert!(hook_says(&["--profile", "p"]).contains("profile"));
    assert!(hook_says(&["--profile", "p", "--on-retry", "echo flag"]).contains("flag"));
}

fn config_error(text: &str, extra: &[&str], expected: &[&str]) {
    let r = retry();
    let file = r.write("bad.toml", text);
    let (first, others) = expected.split_first().expect("what the line names");
    let mut assert = r
        .command()
        .args(["--config", file.to_str().unwrap()])
        .args(extra)
        .args(["true"])
        .assert()
        .misuse(first);
    for needle in others {
        assert = assert.stderr(predicate::str::contains(*needle));
    }
}

#[test]
fn errors_name_the_file_the_line_and_the_key() {
    config_error(
        "[defaults]\nbase = \"1s\"\nretires = 3\n",
        &[],
        &["bad.toml:3", "retires", "did you mean 'retries'"],
    );
    // A key that negates one is not led to it: `no-honor-retry-after` is its opposite.
    let r = retry();
    let file = r.write("bad.toml", "[defaults]\nno-honor-retry-after = true\n");
    r.command()
        .args(["--config", file.to_str().unwrap(), "true"])
        .assert()
        .misuse("no-honor-retry-after")
        .stderr(predicate::str::contains("did you mean").not());
    config_error(
        "[defaults]\n\nretries = \"lots\"\n",
        &[],
        &["bad.toml:3", "retries"],
    );
    config_error(
        "[defaults]\ninvert = 1\n",
        &[],
        &["bad.toml:2", "invert", "expected true or false"],
    );
    // A number where a command goes is a slip: it would run as `sh -c 5`.
    config_error(
        "[defaults]\non-failure = 5\n",
        &[],
        &[
            "bad.toml:2",
            "on-failure",
            "expected a string, found integer",
        ],
    );
    config_error(
        "[defaults]\nmax-time = \"-5s\"\n",
        &[],
        &["bad.toml:2", "max-time", "negative"],
    );
    config_error(
        "[defaults]\nretry-on-exit = [300]\n",
        &[],
        &["bad.toml:2", "retry-on-exit"],
    );
    config_error(
        "[defaults]\nbase = [\n",
        &[],
        &["bad.toml:", "TOML syntax error"],
    );
    config_error(
        "[profile.x]\nretries = 1\nforever = true\n",
        &[],
        &["bad.toml:", "forever", "retries"],
    );
    config_error(
        "[profile.x]\nretries = 1\n",
        &["--profile", "y"],
        &["bad.toml", "profile 'y' not found"],
    );
    config_error(
        "[profile.ok]\n[profile.bad]\njitter = \"wobbly\"\n",
        &["--profile", "ok"],
        &["bad.toml:3", "jitter"],
    );
}

/// Hooks run commands: a file that others can write would run their commands. Its other
/// settings are harmless, and a file of one's own is fine.
#[test]
fn hooks_come_only_from_a_file_others_cannot_write() {
    let r = retry();
    let hooks = r.write_with_mode(
        "hooks.toml",
        "[defaults]\non-failure = \"echo from-the-hook\"\n",
        0o666,
    );
    let plain = r.write_with_mode("plain.toml", "[defaults]\nretries = 0\n", 0o666);
    r.command()
        .args(["--config", hooks.to_str().unwrap(), "-r", "0", "false"])
        .assert()
        .code(125)
        .stdout("")
        .stderr(format!(
            "retry: {}: its hooks are refused: others can write it (mode 0666); a file that runs \
             commands must be yours (or root's) and not writable by others\n",
            hooks.display()
        ));
    r.command()
        .args(["--config", plain.to_str().unwrap(), "false"])
        .assert()
        .code(1);
    std::fs::set_permissions(&hooks, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    r.command()
        .args(["--config", hooks.to_str().unwrap(), "-r", "0", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("from-the-hook"));
}

#[test]
fn an_unreadable_config_file_is_misuse() {
    retry()
        .args(["--config", "/nonexistent/retry.toml", "true"])
        .assert()
        .code(125)
        .stderr(
            "retry: cannot read config file /nonexistent/retry.toml: No such file or directory\n",
        );
    retry()
        .args(["true"])
        .command()
        .env("RETRY_CONFIG", "/nonexistent/env.toml")
        .assert()
        .misuse("/nonexistent/env.toml");
}

/// A file saved in another encoding is named by the line of its first stray byte.
#[test]
fn a_config_file_that_is_not_utf8_is_misuse_at_its_line() {
    let r = retry();
    let config = r.path("latin1.toml");
    std::fs::write(&config, b"[defaults]\nretries = 2\n# caf\xe9\n").unwrap();
    r.command()
        .arg("--config")
        .arg(&config)
        .arg("true")
        .assert()
        .code(125)
        .stderr(format!(
            "retry: {}:3: not UTF-8 text (byte 0xe9); a TOML file must be UTF-8\n",
            config.display()
        ));
}

/// A config path may be a pipe (`--config <(...)`), but an endless source is cut off at 1 MiB
/// rather than read until memory runs out.
#[test]
fn a_config_file_may_be_a_pipe_but_not_endless() {
    retry()
        .args(["--config", "/dev/zero", "true"])
        .assert()
        .code(125)
        .stderr("retry: cannot read config file /dev/zero: larger than 1 MiB\n");
    let r = retry();
    let script = "retry=$1; exec \"$retry\" --config /dev/stdin --dry-run --seed 1";
    r.command_under(&["sh", "-c", script, "sh"])
        .write_stdin("[defaults]\nretries = 2\n")
        .assert()
        .success()
        .stdout(predicate::str::contains("limits: 3 attempts"));
}

#[test]
fn a_profile_without_a_config_file_is_misuse() {
    retry()
        .args(["--profile", "ci", "true"])
        .assert()
        .misuse("profile 'ci'");
    retry()
        .args(["true"])
        .command()
        .env("RETRY_PROFILE", "ci")
        .assert()
        .misuse("profile 'ci'");
}

#[test]
fn the_example_config_works_for_real() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml");
    for profile in ["api", "nightly", "ci"] {
        retry()
            .args([
                "--config",
                example,
                "--profile",
                profile,
                "--dry-run",
                "true",
            ])
            .assert()
            .code(0);
    }
    retry()
        .args(["--config", example, "-r", "0", "true"])
        .assert()
        .code(0);
}

/// No shell reads a config file, so `~` there is the home directory, for each path `retry`
/// writes; a report, a metrics file and a state directory land under `$HOME`, not in a
/// directory named `~` wherever the run starts.
#[test]
fn a_paths_tilde_in_the_config_file_is_home() {
    let r = retry();
    let config = r.write(
        "c.toml",
        "[defaults]\nreport = \"~/r.json\"\nmetrics-file = \"~/m.prom\"\nstate = \"~/s\"\nbudget = \"b\"\n",
    );
    std::fs::create_dir_all(r.path("home")).unwrap();
    r.command()
        .args(["--config", config.to_str().unwrap(), "true"])
        .assert()
        .success()
        .stderr("");
    assert!(r.path("home/r.json").is_file(), "the report is in $HOME");
    assert!(r.path("home/m.prom").is_file(), "the metrics are in $HOME");
    assert!(r.path("home/s/b.state").is_file(), "the state is in $HOME");
    assert!(!r.path("~").exists(), "nothing named ~ was made");
}

#[test]
fn a_tilde_the_config_file_cannot_expand_is_misuse() {
    config_error(
        "[defaults]\nreport = \"~bob/r.json\"\n",
        &[],
        &["bad.toml:2", "not ~USER"],
    );
    let r = retry();
    let config = r.write("c.toml", "[defaults]\nstate = \"~/s\"\n");
    r.command()
        .env_remove("HOME")
        .args(["--config", config.to_str().unwrap(), "true"])
        .assert()
        .misuse("c.toml:2")
        .stderr(predicate::str::contains("$HOME is unset"));
    assert!(!r.path("~").exists());
}

/// The builder's runs start from an empty environment but `PATH` and `HOME`: nothing of the
/// developer's (`XDG_STATE_HOME`, which would hold the fleet's default state, `TMPDIR`,
/// `TERM`, a locale) reaches `retry` or its attempts unless a test gives it.
#[test]
fn a_test_run_gets_only_the_environment_the_builder_gives() {
    let r = retry();
    let output = r.command().args(["-r", "0", "env"]).output().expect("env");
    let names: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.to_string()))
        .filter(|name| !name.starts_with("RETRY_"))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"PATH".to_string()), "{names:?}");
    assert!(names.contains(&"HOME".to_string()), "{names:?}");
}
