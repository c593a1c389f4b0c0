//! HTTP-aware retries: `--stop-if-*`, `--http` against a real curl and a loopback server that
//! counts its requests, `Retry-After` and custom hints, and their bounds.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use predicates::prelude::*;

use crate::support::*;

/// A loopback HTTP/1.1 server: for each path, the responses it gives in turn (the last one
/// again once they run out), and every request it received (path, instant).
struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<(String, Instant)>>>,
}

/// One response: status line and headers (without the blank line), then an empty body.
fn response(head: &str) -> String {
    format!("{head}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

fn serve(routes: &[(&str, &[&str])]) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().unwrap().port();
    let routes: Vec<(String, Vec<String>)> = routes
        .iter()
        .map(|(path, heads)| {
            (
                path.to_string(),
                heads.iter().map(|h| response(h)).collect(),
            )
        })
        .collect();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // The rest of the head, up to its blank line.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() != "" {
                line.clear();
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .to_string();
            let count = {
                let mut seen = seen.lock().unwrap();
                seen.push((path.clone(), Instant::now()));
                seen.iter().filter(|(p, _)| *p == path).count()
            };
            let reply = routes
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, replies)| replies[(count - 1).min(replies.len() - 1)].clone())
                .unwrap_or_else(|| response("HTTP/1.1 500 No Route"));
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    Server { port, requests }
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn requests(&self) -> Vec<(String, Instant)> {
        self.requests.lock().unwrap().clone()
    }

    fn count(&self) -> usize {
        self.requests().len()
    }
}

/// Whether curl is here; outside CI a test without it is skipped, saying so.
fn have_curl() -> bool {
    let found = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        missing("curl", "retrying a real HTTP client");
    }
    found
}

#[test]
fn a_503_is_retried_until_the_200() {
    if !have_curl() {
        return;
    }
    let server = serve(&[(
        "/",
        &["HTTP/1.1 503 Service Unavailable", "HTTP/1.1 200 OK"],
    )]);
    retry()
        .args(["--http", "--base", "10ms", "--", "curl", "-sS", "-D", "-"])
        .args([server.url("/")])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("(exit 0; HTTP 503)"));
    assert_eq!(server.count(), 2);
}

/// A 404 is final: one request. Without `-f` curl exits 0, so the run ends with 1; with `-f`
/// it exits 22, and the run with that.
#[test]
fn a_404_is_final_with_or_without_f() {
    if !have_curl() {
        return;
    }
    for (flags, status) in [(&["-sS"][..], 1), (&["-fsS"][..], 22)] {
        let server = serve(&[("/", &["HTTP/1.1 404 Not Found"])]);
        retry()
            .args(["--http", "--base", "10ms", "--", "curl", "-D", "-"])
            .args(flags)
            .args([server.url("/")])
            .assert()
            .code(status)
            .stderr(predicate::str::contains("permanent failure, HTTP 404"));
        assert_eq!(server.count(), 1, "{flags:?}");
    }
}

/// The gap between the first two requests the server saw.
fn gap(server: &Server) -> Duration {
    let requests = server.requests();
    assert!(requests.len() >= 2, "{requests:?}");
    requests[1].1 - requests[0].1
}

#[test]
fn a_429_waits_as_long_as_retry_after_asks_in_seconds() {
    if !have_curl() {
        return;
    }
    let server = serve(&[(
        "/",
        &[
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2",
            "HTTP/1.1 200 OK",
        ],
    )]);
    retry()
        .args(["--http", "--base", "10ms", "--max", "10ms"])
        .args(["--", "curl", "-sS", "-D", "-"])
        .args([server.url("/")])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(", as Retry-After asked"));
    let gap = gap(&server);
    assert!(gap >= Duration::from_secs(2), "{gap:?}");
    assert!(gap < Duration::from_secs(10), "{gap:?}");
}

#[test]
fn a_429_waits_until_the_http_date_it_gives() {
    if !have_curl() {
        return;
    }
    // Three seconds ahead, to the whole second: however slow the machine, the wait is more
    // than one second.
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3));
    let head = format!("HTTP/1.1 429 Too Many Requests\r\nRetry-After: {date}");
    let server = serve(&[("/", &[head.as_str(), "HTTP/1.1 200 OK"])]);
    retry()
        .args(["--http", "--base", "10ms", "--", "curl", "-sS", "-D", "-"])
        .args([server.url("/")])
        .assert()
        .code(0);
    let gap = gap(&server);
    assert!(gap >= Duration::from_secs(1), "{gap:?}");
    assert!(gap < Duration::from_secs(10), "{gap:?}");
}

/// After a redirect, the final response's status counts: a redirect to a 503 is retried.
#[test]
fn a_redirect_to_a_503_is_judged_by_the_503() {
    if !have_curl() {
        return;
    }
    let server = serve(&[
        ("/", &["HTTP/1.1 302 Found\r\nLocation: /b"]),
        (
            "/b",
            &["HTTP/1.1 503 Service Unavailable", "HTTP/1.1 200 OK"],
        ),
    ]);
    retry()
        .args([
            "--http", "--base", "10ms", "--", "curl", "-sS", "-L", "-D", "-",
        ])
        .args([server.url("/")])
        .assert()
        .code(0);
    let paths: Vec<String> = server.requests().into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, ["/", "/b", "/", "/b"]);
}

/// `curl -v` prints the response's head on stderr, after `< `.
#[test]
fn the_verbose_form_on_stderr_is_read() {
    if !have_curl() {
        return;
    }
    let server = serve(&[(
        "/",
        &["HTTP/1.1 503 Service Unavailable", "HTTP/1.1 200 OK"],
    )]);
    retry()
        .args([
            "--http",
            "--base",
            "10ms",
            "--",
            "curl",
            "-sS",
            "-v",
            "-o",
            "/dev/null",
        ])
        .args([server.url("/")])
        .assert()
        .code(0);
    assert_eq!(server.count(), 2);
}

/// The body passes through untouched while the head is read.
#[test]
fn the_response_passes_through_byte_for_byte() {
    let r = retry().args(["--http", "-r", "0", "--"]);
    let script = "printf 'HTTP/1.1 200 OK\\r\\nX: y\\r\\n\\r\\n\\377body\\n'";
    r.args(sh(script)).assert().code(0).stdout(predicate::eq(
        &b"HTTP/1.1 200 OK\r\nX: y\r\n\r\n\xffbody\n"[..],
    ));
}

/// Each row of the verdict order with the HTTP flags, with a command that prints the status.
#[test]
fn every_verdict_row_with_http() {
    let status_then = |status: &str, exit: u8| {
        sh(&format!(
            "n=$(cat runs 2>/dev/null || echo 0); echo $((n+1)) > runs; echo 'HTTP/1.1 {status}'; exit {exit}"
        ))
    };
    let rows: &[(&[&str], &str, u8, i32, u32)] = &[
        // flags, status printed, exit code, retry's status, attempts
        (&["--http"], "503 x", 0, 1, 3),
        (&["--http"], "503 x", 22, 22, 3),
        (&["--http"], "404 x", 0, 1, 1),
        (&["--http"], "404 x", 22, 22, 1),
        (&["--http"], "200 OK", 0, 0, 1),
        (&["--http"], "301 x", 7, 7, 3),
        (&[], "503 x", 0, 0, 1),
        (&["--http", "--stop-on-exit", "22"], "503 x", 22, 22, 1),
        (&["--http", "--retry-on-exit", "22"], "503 x", 0, 1, 1),
        (
            &["--http", "--stop-if-stdout", "^HTTP/1.1 5"],
            "503 x",
            22,
            22,
            1,
        ),
    ];
    for &(flags, status, exit, expected, attempts) in rows {
        let r = retry()
            .args(["-r", "2", "--base", "1ms"])
            .args(flags)
            .args(["--"])
            .args(status_then(status, exit));
        r.assert().code(expected);
        let runs =
            std::fs::read_to_string(r.path("runs")).map_or(0, |s| s.trim().parse::<u32>().unwrap());
        assert_eq!(runs, attempts, "{flags:?} {status} exit {exit}");
    }
}

/// A stop pattern ends the run at once, even for an attempt that exited 0 (then with 1), and
/// says which rule stopped it.
#[test]
fn a_stop_pattern_ends_the_run_even_on_exit_0() {
    for (flag, redirect) in [("--stop-if-stdout", ""), ("--stop-if-stderr", " >&2")] {
        let r = retry().args(["-r", "3", "--base", "1ms", flag, "Permission denied"]);
        let command = r.flaky_with(9, 0);
        let mut script = command.last().unwrap().clone();
        script = format!("echo 'rsync: Permission denied'{redirect}; {script}");
        r.args(sh(&script))
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                "permanent failure, a --stop-if line matched",
            ));
    }
}

/// A command's own hint: the wait is at least what it asked for, past `--max`.
#[test]
fn a_custom_hint_sets_the_least_wait_past_max() {
    let r = retry().args(["-r", "1", "--base", "1ms", "--max", "1ms"]);
    let r = r.args(["--retry-after-stderr", "retry in ([0-9.]+)s", "--"]);
    let started = Instant::now();
    r.args(sh("echo 'rate limited: retry in 0.4s' >&2; exit 1"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(", as the command asked"));
    assert!(started.elapsed() >= Duration::from_millis(400));
}

/// `--retry-after-max` cuts a long hint; `--max-time` ends a run whose hinted wait would cross
/// it at once, with the attempt's status.
#[test]
fn retry_after_max_cuts_and_max_time_ends_the_run() {
    let asks_an_hour = sh("echo 'Retry-After: 3600'; exit 3");
    let started = Instant::now();
    retry()
        .args(["-r", "1", "--base", "1ms", "--honor-retry-after"])
        .args(["--retry-after-max", "100ms", "--"])
        .args(&asks_an_hour)
        .assert()
        .code(3);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let started = Instant::now();
    retry()
        .args(["-r", "3", "--base", "1ms", "--honor-retry-after"])
        .args(["--max-time", "30s", "--"])
        .args(&asks_an_hour)
        .assert()
        .code(3)
        .stderr(predicate::str::contains("would start past --max-time"));
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A hint counts only after a failure: a successful attempt's hint keeps nobody waiting, and a
/// value that is no wait is ignored (`--verbose` says so).
#[test]
fn a_hint_after_success_or_a_garbage_hint_changes_nothing() {
    let started = Instant::now();
    retry()
        .args(["--honor-retry-after", "--"])
        .args(sh("echo 'Retry-After: 3600'; exit 0"))
        .assert()
        .code(0);
    assert!(started.elapsed() < Duration::from_secs(10));
    let started = Instant::now();
    retry()
        .args([
            "-v",
            "-r",
            "1",
            "--base",
            "1ms",
            "--honor-retry-after",
            "--",
        ])
        .args(sh("echo 'Retry-After: soon'; exit 1"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("'soon'").and(predicate::str::contains("ignored")));
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// `RETRY_NEXT_DELAY_MS` is the wait as it will be, hint included; the JSON `retry` event
/// carries the hint as read.
#[test]
fn the_hook_and_the_log_see_the_hinted_wait() {
    let r = retry().args(["-r", "1", "--base", "1ms", "--honor-retry-after"]);
    let file = r.path("next");
    let r = r
        .args(["--log-format", "json"])
        .args([
            "--on-retry",
            &format!("echo $RETRY_NEXT_DELAY_MS > '{}'", file.display()),
        ])
        .args(["--"])
        .args(sh("echo 'Retry-After: 1'; exit 1"));
    let output = r.command().output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let next: u64 = std::fs::read_to_string(&file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!((1000..=2000).contains(&next), "{next}");
    let retry_event = json_events(&output.stderr)
        .into_iter()
        .find(|event| event["event"] == "retry")
        .expect("a retry event");
    assert_eq!(retry_event["hint_ms"], 1000.0);
    let delay = retry_event["delay_ms"].as_f64().unwrap();
    assert!((delay - next as f64).abs() < 1.0, "{delay} vs {next}");
}

/// The spread is drawn from the seed: the same seed, the same hinted wait.
#[test]
fn a_seed_gives_the_same_spread() {
    let delay = |seed: &str| {
        let output = retry()
            .args([
                "-r",
                "1",
                "--base",
                "1ms",
                "--seed",
                seed,
                "--log-format",
                "json",
            ])
            .args(["--retry-after-stdout", "wait ([0-9.]+)", "--"])
            .args(sh("echo 'wait 0.05'; exit 1"))
            .command()
            .output()
            .unwrap();
        json_events(&output.stderr)
            .into_iter()
            .find(|event| event["event"] == "retry")
            .map(|event| event["delay_ms"].clone())
            .expect("a retry event")
    };
    assert_eq!(delay("7"), delay("7"));
}

#[test]
fn misuse_of_the_http_flags_names_the_flag() {
    for (args, flag) in [
        (&["--stop-if-stdout", "("][..], "--stop-if-stdout"),
        (&["--stop-if-stderr", "[z-a]"][..], "--stop-if-stderr"),
        (&["--retry-after-stdout", "("][..], "--retry-after-stdout"),
        (
            &["--retry-after-stderr", "a{99999999}"][..],
            "--retry-after-stderr",
        ),
        (&["--retry-after-max", "soon"][..], "--retry-after-max"),
        (&["--retry-after-max", "-1s"][..], "--retry-after-max"),
    ] {
        retry()
            .args(args)
            .args(["--", "true"])
            .assert()
            .misuse(flag);
    }
}

#[test]
fn dry_run_notes_that_hints_may_lengthen_waits() {
    retry()
        .args(["--dry-run", "--http", "--retry-after-max", "1m"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "may lengthen a wait after a failure, past --max, up to --retry-after-max 1m",
        ));
    retry()
        .args(["--dry-run"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("hints:").not());
}
