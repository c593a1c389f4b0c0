//! The README's recipes, run from their own text with stand-ins for the real tools.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

const README: &str = include_str!("../../README.md");

/// The words of the `retry` command line on the README line containing `marker`.
fn recipe(marker: &str) -> Vec<String> {
    let line = README
        .lines()
        .find(|line| line.contains(marker) && line.contains("retry"))
        .unwrap_or_else(|| panic!("no README line with {marker:?}"));
    if let Some((_, array)) = line.split_once("ENTRYPOINT [") {
        // A Dockerfile's exec form: ["retry", "--restart", ..., "--"]
        let words: Vec<String> = serde_json::from_str(&format!("[{array}")).unwrap();
        return words.into_iter().skip(1).collect();
    }
    if let Some(array) = line.split_once("command: [") {
        // A YAML flow sequence: [retry, --forever, ..., "5432"]
        return array
            .1
            .trim_end_matches(']')
            .split(',')
            .map(|w| w.trim().trim_matches('"').to_string())
            .skip(1)
            .collect();
    }
    let at = line.find("retry --").expect("a retry command");
    line[at..]
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// A stand-in tool in `bin/` that fails with `code` until its `runs` reach `fail_times`, then
/// succeeds; it records its runs in `NAME.runs`.
fn stand_in(r: &Retry, name: &str, fail_times: u32, code: u8) {
    let runs = r.path(&format!("{name}.runs"));
    r.write_with_mode(
        &format!("bin/{name}"),
        format!(
            "#!/bin/sh\nn=$(cat '{runs}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{runs}'\n[ $n -gt {fail_times} ] || exit {code}\nexit 0\n",
            runs = runs.display()
        ),
        0o755,
    );
}

/// How many times the stand-in `name` ran. Read while it may be writing its count (`echo $n >
/// FILE` empties the file before it writes), an empty file counts as none yet.
fn runs(r: &Retry, name: &str) -> u32 {
    std::fs::read_to_string(r.path(&format!("{name}.runs")))
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0)
}

fn run(r: &Retry, words: &[String], env: &[(&str, String)]) -> std::process::Output {
    let mut command = r.std_command();
    command.args(words);
    for (key, value) in env {
        command.env(key, value);
    }
    run_as_recipe(r, &mut command)
}

/// Runs `command`, one of `r`'s (in its directory, with a home of its own, no config and no
/// stdin), with the stand-ins first on PATH.
fn run_as_recipe(r: &Retry, command: &mut Command) -> std::process::Output {
    command.env("PATH", format!("{}:/usr/bin:/bin", r.path("bin").display()));
    command.output().unwrap()
}

#[test]
fn shell_script_download() {
    let words = recipe("curl -fsS -o artifact.tgz");
    let r = retry();
    stand_in(&r, "curl", 1, 7);
    let output = run(&r, &words, &[]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(runs(&r, "curl"), 2, "7 is retried");
    let r = retry();
    stand_in(&r, "curl", 5, 6);
    let output = run(&r, &words, &[]);
    assert_eq!(
        output.status.code(),
        Some(6),
        "6 (cannot resolve) is not retried"
    );
    assert_eq!(runs(&r, "curl"), 1);
}

/// A stand-in curl that prints, on its run n, the response head `heads[n - 1]` (the last one
/// again past the end) and exits 0, as `curl -sS -D -` does whatever the status.
fn http_stand_in(r: &Retry, heads: &[&str]) {
    let runs = r.path("curl.runs");
    let mut cases = String::new();
    for (index, head) in heads.iter().enumerate() {
        let pattern = if index + 1 == heads.len() {
            "*".to_string()
        } else {
            (index + 1).to_string()
        };
        cases += &format!("  {pattern}) printf '{head}\\r\\n\\r\\n' ;;\n");
    }
    r.write_with_mode(
        "bin/curl",
        format!(
            "#!/bin/sh\nn=$(cat '{runs}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{runs}'\ncase $n in\n{cases}esac\nexit 0\n",
            runs = runs.display()
        ),
        0o755,
    );
}

#[test]
fn api_call_stops_on_4xx_and_honours_429() {
    let words = recipe("curl -sS -D - -o items.json");
    let r = retry();
    http_stand_in(
        &r,
        &[
            "HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 1",
            "HTTP/1.1 200 OK",
        ],
    );
    let started = Instant::now();
    let output = run(&r, &words, &[]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(runs(&r, "curl"), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the 429 asked for a second"
    );
    let r = retry();
    http_stand_in(&r, &["HTTP/1.1 404 Not Found"]);
    let output = run(&r, &words, &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(runs(&r, "curl"), 1, "a 404 is not retried");
}

#[test]
fn github_actions_wait_for_the_api() {
    let words = recipe("run: retry --forever");
    let r = retry();
    stand_in(&r, "curl", 1, 7);
    let output = run(&r, &words, &[("CI", "true".into())]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(runs(&r, "curl"), 2);
}

/// The step's outputs land in `$GITHUB_OUTPUT` beside what earlier steps wrote, and read as
/// the later step's `steps.test.outputs.attempts` would.
#[test]
fn github_actions_step_outputs_say_how_many_attempts_it_took() {
    let r = retry();
    let outputs = r.write("github_output", "earlier=1\n");
    let words: Vec<String> = recipe("--report \"$GITHUB_OUTPUT\"")
        .into_iter()
        .map(|word| {
            // As the step's shell expands it.
            if word == "\"$GITHUB_OUTPUT\"" {
                outputs.display().to_string()
            } else {
                word
            }
        })
        .collect();
    assert!(README.contains("steps.test.outputs.attempts != '1'"));
    stand_in(&r, "make", 1, 2);
    let output = run(&r, &words, &[("CI", "true".into())]);
    assert!(output.status.success(), "{output:?}");
    let text = std::fs::read_to_string(&outputs).unwrap();
    let value = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
            .map(str::to_string)
    };
    assert_eq!(value("earlier").as_deref(), Some("1"));
    assert_eq!(value("attempts").as_deref(), Some("2"), "{text}");
    assert_eq!(value("outcome").as_deref(), Some("success"), "{text}");
}

/// Runs the README line holding `marker` as a shell runs it, with `retry` and the stand-ins
/// on PATH.
fn run_line(r: &Retry, marker: &str) -> std::process::Output {
    let line = README
        .lines()
        .find(|line| line.contains(marker) && line.starts_with("retry "))
        .unwrap_or_else(|| panic!("no README line with {marker:?}"));
    std::fs::create_dir_all(r.path("bin")).unwrap();
    std::os::unix::fs::symlink(BIN, r.path("bin/retry")).unwrap();
    // The line runs `retry` from PATH; the builder's own, as `$0`, is left unused.
    let mut command = r.std_command_under(&["sh", "-c", line]);
    run_as_recipe(r, &mut command)
}

/// A stand-in that records the value of `$variable` (or `unset`) in `NAME.seen` on each run,
/// and fails its first run.
fn recording_stand_in(r: &Retry, name: &str, variable: &str) {
    let seen = r.path(&format!("{name}.seen"));
    r.write_with_mode(
        &format!("bin/{name}"),
        format!(
            "#!/bin/sh\necho \"${{{variable}-unset}} $*\" >> '{seen}'\n[ $(wc -l < '{seen}') -gt 1 ]\n",
            seen = seen.display()
        ),
        0o755,
    );
}

#[test]
fn hook_values_switch_to_a_mirror_and_rerun_only_failures() {
    let r = retry();
    recording_stand_in(&r, "curl", "BASE");
    let output = run_line(&r, "BASE=https://mirror.example.com");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(r.path("curl.seen")).unwrap(),
        "unset -fsS -O https://example.com/pkg.tgz\n\
         https://mirror.example.com -fsS -O https://mirror.example.com/pkg.tgz\n"
    );
    let r = retry();
    recording_stand_in(&r, "npx", "JEST_ONLY");
    let output = run_line(&r, "JEST_ONLY=--onlyFailures");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(r.path("npx.seen")).unwrap(),
        "unset jest\n--onlyFailures jest --onlyFailures\n"
    );
}

#[test]
fn gitlab_smoke_test_logs_json() {
    let words = recipe("./smoke-test.sh");
    let r = retry();
    stand_in(&r, "smoke", 0, 1);
    r.write_with_mode("smoke-test.sh", "#!/bin/sh\nexec smoke\n", 0o755);
    let output = run(&r, &words, &[]);
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );
}

#[test]
fn crontab_line_in_cron_like_conditions() {
    let mut words = recipe("0 3 * * * retry");
    // Scale the five-minute splay down; everything else as written.
    let splay = words.iter().position(|w| w == "--splay").unwrap();
    words[splay + 1] = "50ms".into();
    let r = retry();
    stand_in(&r, "backup.sh", 1, 1);
    let target = words
        .iter()
        .position(|w| w == "/usr/local/bin/backup.sh")
        .unwrap();
    words[target] = r.path("bin/backup.sh").to_str().unwrap().to_string();
    // cron: an empty environment and stdin from /dev/null.
    let output = r.std_command().args(&words).env_clear().output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        output.stdout.is_empty() && output.stderr.is_empty(),
        "nothing for cron to mail"
    );
    assert_eq!(runs(&r, "backup.sh"), 2);
}

/// The fleet recipe: jobs that fail trip the shared breaker after five failed attempts in a
/// row, and the next job does not run the command at all (75); the budget stays within its
/// floor. The state lives under `$HOME`.
#[test]
fn crontab_fleet_recipe_backs_off_as_one() {
    let mut words = recipe("*/5 * * * * retry");
    let splay = words.iter().position(|w| w == "--splay").unwrap();
    words[splay + 1] = "10ms".into();
    // The schedule's own waits (1s, 2s, ...) scaled down too.
    words.splice(0..0, ["--base".to_string(), "1ms".to_string()]);
    let r = retry();
    stand_in(&r, "sync-billing.sh", 99, 1);
    let target = words
        .iter()
        .position(|w| w == "/usr/local/bin/sync-billing.sh")
        .unwrap();
    words[target] = r.path("bin/sync-billing.sh").to_str().unwrap().to_string();
    let output = run(&r, &words, &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(
        runs(&r, "sync-billing.sh"),
        5,
        "the breaker opened at the fifth"
    );
    let output = run(&r, &words, &[]);
    assert_eq!(output.status.code(), Some(75), "{output:?}");
    assert_eq!(runs(&r, "sync-billing.sh"), 5, "the next job ran nothing");
    assert!(r.path("home/.local/state/retry/billing-api.state").exists());
}

#[test]
fn docker_healthcheck_gives_only_0_or_1() {
    let words = recipe("HEALTHCHECK");
    let r = retry();
    stand_in(&r, "curl", 0, 0);
    assert_eq!(run(&r, &words, &[]).status.code(), Some(0), "healthy");
    // The three checks wait out their back-off side by side.
    let checks: Vec<_> = [7, 22, 2]
        .map(|code| {
            let words = words.clone();
            std::thread::spawn(move || {
                let r = retry();
                stand_in(&r, "curl", 10, code);
                (code, run(&r, &words, &[]))
            })
        })
        .into_iter()
        .collect();
    for check in checks {
        let (code, output) = check.join().unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "curl {code} is unhealthy, never 2"
        );
        assert!(output.stderr.is_empty(), "--quiet");
    }
}

#[test]
fn docker_healthcheck_bounds_a_hanging_check_below_dockers_timeout() {
    let words = recipe("HEALTHCHECK");
    let r = retry();
    // A check that ignores SIGTERM too: only SIGKILL, after the grace, ends it.
    r.write_with_mode(
        "bin/curl",
        "#!/bin/sh\ntrap '' TERM\nexec sleep 60\n",
        0o755,
    );
    let started = Instant::now();
    let output = run(&r, &words, &[]);
    assert_eq!(output.status.code(), Some(1));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(8) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

#[test]
fn kubernetes_init_container_waits_for_the_database() {
    let words = recipe("command: [retry");
    assert_eq!(words.last().map(String::as_str), Some("5432"));
    let r = retry();
    stand_in(&r, "pg_isready", 2, 2);
    let output = run(&r, &words, &[]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(runs(&r, "pg_isready"), 3);
}

/// The container entrypoint: a worker that returns is started again, and `docker stop`'s
/// SIGTERM ends the run at once with 143.
#[test]
fn container_entrypoint_restarts_the_worker_and_ends_on_docker_stop() {
    let words = recipe("ENTRYPOINT [");
    assert_eq!(words.last().map(String::as_str), Some("--"));
    let r = retry();
    stand_in(&r, "worker", 0, 0);
    let mut command = r.std_command();
    command
        .args(&words)
        .arg("worker")
        .env("PATH", format!("{}:/usr/bin:/bin", r.path("bin").display()))
        .stderr(Stdio::null());
    let mut child = Running(command.spawn().unwrap());
    eventually("the worker is started again", || runs(&r, "worker") >= 2);
    send(&child.0, libc::SIGTERM);
    assert_eq!(
        status_within(&mut child.0, Instant::now(), Duration::from_secs(5)),
        143
    );
}

/// The cron recipe for mail and metrics: a run that a retry rescued mails nothing (the job here
/// says nothing when it works) and records a success; one that gives up mails every attempt's
/// output behind a line naming it, and records the failure.
#[test]
fn crontab_line_that_mails_only_a_give_up_and_writes_metrics() {
    for fails in [1, 10] {
        let mut words = recipe("--failed-output on-give-up --quiet --metrics-file");
        let r = retry();
        let runs = r.path("backup.runs");
        r.write_with_mode(
            "bin/backup.sh",
            format!(
                "#!/bin/sh\nn=$(cat '{runs}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{runs}'\n\
                 [ $n -gt {fails} ] && exit 0\necho \"dump $n failed\"; sleep 0.05; echo \"disk $n full\" >&2; exit 2\n",
                runs = runs.display()
            ),
            0o755,
        );
        let metrics = r.path("backup.prom");
        for word in words.iter_mut() {
            if word == "/usr/local/bin/backup.sh" {
                *word = r.path("bin/backup.sh").to_str().unwrap().to_string();
            } else if word.ends_with("backup.prom") {
                *word = metrics.to_str().unwrap().to_string();
            }
        }
        // The schedule as written waits seconds: scale it down. (The script pauses between its
        // streams, so that the order in which `retry` reads them is the order they were written.)
        let words = [&["--base".to_string(), "1ms".to_string()][..], &words].concat();
        let output = r.std_command().args(&words).env_clear().output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let text = std::fs::read_to_string(&metrics).unwrap();
        if fails == 1 {
            assert!(output.status.success(), "{output:?}");
            assert!(
                stdout.is_empty() && stderr.is_empty(),
                "nothing to mail: {output:?}"
            );
            assert!(
                text.contains("retry_last_run_success{job=\"backup\"} 1\n"),
                "{text}"
            );
        } else {
            assert_eq!(output.status.code(), Some(2));
            assert_eq!(stdout, "dump 6 failed\n", "the final attempt's stdout");
            assert!(
                stderr.starts_with(
                    "retry: output of attempt 1 (exit 2):\ndump 1 failed\ndisk 1 full\n"
                ),
                "{stderr}"
            );
            assert!(
                stderr.ends_with(
                    "retry: output of attempt 5 (exit 2):\ndump 5 failed\ndisk 5 full\ndisk 6 full\n"
                ),
                "the mail reads attempts 1 to 5, each behind its header, then the final one: \
                 {stderr}"
            );
            assert!(
                text.contains("retry_last_run_success{job=\"backup\"} 0\n"),
                "{text}"
            );
        }
    }
}
