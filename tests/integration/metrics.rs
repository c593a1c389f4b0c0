//! `--metrics-file`: the run's figures for node_exporter's textfile collector, checked by
//! Debian's `promtool` and read by a real `prometheus-node-exporter` on a loopback port.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::support::*;

/// The value of `name{job="JOB"}` in an exposition.
fn gauge(text: &str, name: &str, job: &str) -> Option<f64> {
    let sample = format!("{name}{{job=\"{job}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&sample))
        .map(|value| value.parse().unwrap())
}

/// Holds `file` to `promtool check metrics`, which reads the exposition from stdin.
fn promtool_accepts(file: &Path) {
    let Ok(output) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(fs::File::open(file).unwrap())
        .output()
    else {
        missing("promtool", "the metrics file's format");
        return;
    };
    assert!(
        output.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_success_then_a_give_up_keeps_the_last_success() {
    let r = retry();
    let file = r.path("backup.prom");
    let metrics = format!("--metrics-file={}", file.display());
    let before = now();
    r.command()
        .args([&metrics, "--metrics-job", "backup", "--", "true"])
        .assert()
        .code(0);
    promtool_accepts(&file);
    let first = read(&file);
    assert_eq!(gauge(&first, "retry_last_run_success", "backup"), Some(1.0));
    assert_eq!(
        gauge(&first, "retry_last_run_attempts", "backup"),
        Some(1.0)
    );
    assert_eq!(
        gauge(&first, "retry_last_run_exit_status", "backup"),
        Some(0.0)
    );
    let succeeded = gauge(&first, "retry_last_success_timestamp_seconds", "backup").unwrap();
    assert!(succeeded >= before && succeeded <= now());
    let start = gauge(&first, "retry_last_run_start_timestamp_seconds", "backup").unwrap();
    let end = gauge(&first, "retry_last_run_end_timestamp_seconds", "backup").unwrap();
    assert!(before <= start && start <= end);

    r.command()
        .args([
            &metrics,
            "--metrics-job",
            "backup",
            "--retries",
            "2",
            "--base",
            "10ms",
        ])
        .args(["--jitter", "none", "--fail-exit", "9", "--", "false"])
        .assert()
        .code(9);
    promtool_accepts(&file);
    let second = read(&file);
    assert_eq!(
        gauge(&second, "retry_last_run_success", "backup"),
        Some(0.0)
    );
    assert_eq!(
        gauge(&second, "retry_last_run_attempts", "backup"),
        Some(3.0)
    );
    assert_eq!(
        gauge(&second, "retry_last_run_exit_status", "backup"),
        Some(9.0)
    );
    assert!(gauge(&second, "retry_last_run_duration_seconds", "backup").unwrap() >= 0.03);
    assert_eq!(
        gauge(&second, "retry_last_success_timestamp_seconds", "backup"),
        Some(succeeded),
        "carried over"
    );
    for name in [
        "retry_last_run_start_timestamp_seconds",
        "retry_last_run_end_timestamp_seconds",
        "retry_last_run_duration_seconds",
        "retry_last_run_success",
        "retry_last_run_attempts",
        "retry_last_run_exit_status",
        "retry_last_success_timestamp_seconds",
    ] {
        assert!(second.contains(&format!("# HELP {name} ")), "{name}");
        assert!(second.contains(&format!("# TYPE {name} gauge\n")), "{name}");
    }
    let names: Vec<_> = fs::read_dir(r.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["backup.prom"], "no temporary file is left");
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn a_run_that_never_succeeded_has_no_last_success_and_the_job_is_the_command_by_default() {
    let r = retry();
    let file = r.path("m.prom");
    r.command()
        .args([format!("--metrics-file={}", file.display())])
        .args(["-r", "0", "/bin/false"])
        .assert()
        .code(1);
    promtool_accepts(&file);
    let text = read(&file);
    assert_eq!(gauge(&text, "retry_last_run_success", "false"), Some(0.0));
    assert!(!text.contains("retry_last_success_timestamp_seconds"));
}

/// Every run that made an attempt or that the breaker stopped writes the file: a command that
/// cannot be started (127), an open breaker (75), a signal to `retry` (143).
#[test]
fn the_file_is_written_for_every_ending() {
    let r = retry();
    let file = r.path("m.prom");
    let metrics = format!("--metrics-file={}", file.display());
    let status = |expected: f64| {
        let text = read(&file);
        promtool_accepts(&file);
        assert_eq!(
            gauge(&text, "retry_last_run_exit_status", "job"),
            Some(expected)
        );
        fs::remove_file(&file).unwrap();
    };
    r.command()
        .args([&metrics, "--metrics-job", "job", "no-such-command-here"])
        .assert()
        .code(127);
    status(127.0);

    let state = r.path("state");
    let state = format!("--state={}", state.display());
    let open = [
        &state,
        "--breaker",
        "b",
        "--breaker-threshold",
        "1",
        "-r",
        "0",
    ];
    r.command().args(open).args(["false"]).assert().code(1);
    r.command()
        .args(open)
        .args([&metrics, "--metrics-job", "job", "true"])
        .assert()
        .code(75);
    status(75.0);
    assert_eq!(
        gauge(&read_or_empty(&file), "retry_last_run_attempts", "job"),
        None
    );

    let interrupted = r.args([&metrics, "--metrics-job", "job", "-v", "--", "sleep", "30"]);
    let mut child = interrupted.spawn();
    wait_for_stderr(&mut child, "attempt 1/6 starting");
    let since = Instant::now();
    send(&child, libc::SIGTERM);
    assert_eq!(
        status_within(&mut child, since, Duration::from_secs(5)),
        143
    );
    let text = read(&file);
    assert_eq!(gauge(&text, "retry_last_run_attempts", "job"), Some(1.0));
    status(143.0);
}

/// Three successes, each restarted, then a failure that ends the run by the limit.
#[test]
fn a_restart_loop_writes_the_file_once_when_it_ends() {
    let r = retry();
    let file = r.path("worker.prom");
    let seen = r.path("seen");
    // Each success's hook notes whether a file was there already: none may be, until the end.
    let hook = format!(
        "test -e '{}' && echo written >>'{}'; true",
        file.display(),
        seen.display()
    );
    r.command()
        .args([
            "--restart",
            "--delays",
            "1ms",
            "-r",
            "0",
            "--on-success",
            &hook,
        ])
        .args([format!("--metrics-file={}", file.display())])
        .args(["--metrics-job", "worker"])
        .args(sh("[ $RETRY_ATTEMPT -le 3 ]"))
        .assert()
        .code(1);
    assert!(!seen.exists(), "written before the end: {}", read(&seen));
    let text = read(&file);
    promtool_accepts(&file);
    assert_eq!(gauge(&text, "retry_last_run_attempts", "worker"), Some(4.0));
    assert_eq!(gauge(&text, "retry_last_run_success", "worker"), Some(0.0));
    assert_eq!(
        gauge(&text, "retry_last_success_timestamp_seconds", "worker"),
        None,
        "the run as a whole never succeeded"
    );
}

fn read_or_empty(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn dry_run_show_state_and_misuse_write_nothing() {
    let r = retry();
    let file = r.path("m.prom");
    let metrics = format!("--metrics-file={}", file.display());
    r.command()
        .args([&metrics, "--dry-run", "true"])
        .assert()
        .code(0);
    let state = format!("--state={}", r.path("state").display());
    r.command()
        .args([&metrics, &state, "--show-state", "--budget", "b"])
        .assert()
        .code(0);
    r.command()
        .args([&metrics, "--jitter", "sideways", "true"])
        .assert()
        .misuse("--jitter");
    assert!(!file.exists());
}

#[test]
fn a_file_that_cannot_be_written_is_said_once_and_the_status_stands() {
    let r = retry();
    // A directory where the file should be: the rename over it fails.
    let taken = r.path("taken.prom");
    fs::create_dir(&taken).unwrap();
    let metrics = format!("--metrics-file={}", taken.display());
    r.command()
        .args([&metrics, "-r", "1", "--base", "1ms", "false"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("cannot write the metrics file")
                .count(1)
                .and(predicate::str::contains("the run's status stands")),
        );
    r.command().args([&metrics, "true"]).assert().code(0);
    r.command()
        .args([&metrics, "--quiet", "true"])
        .assert()
        .code(0)
        .stderr("");
    let output = r
        .command()
        .args([&metrics, "--log-format", "json", "true"])
        .output()
        .unwrap();
    let events = json_events(&output.stderr);
    let failed = events
        .iter()
        .find(|e| e["event"] == "metrics-failed")
        .unwrap();
    assert_eq!(failed["path"], taken.to_str().unwrap());
    let names: Vec<_> = fs::read_dir(r.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["taken.prom"], "no temporary file is left");
}

#[test]
fn misuse_of_the_metrics_flags() {
    let r = retry();
    for (args, names) in [
        (vec!["--metrics-job", ""], "--metrics-job"),
        (
            vec!["--metrics-file", "/no/such/directory/m.prom"],
            "there is no directory /no/such/directory",
        ),
    ] {
        retry().args(&args).args(["true"]).assert().misuse(names);
    }
    // A file in the current directory needs no directory named.
    let output = retry()
        .args(["--metrics-file", "here.prom", "true"])
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    drop(r);
}

#[test]
fn job_names_are_escaped_as_the_format_asks() {
    let r = retry();
    let file = r.path("m.prom");
    r.command()
        .args([format!("--metrics-file={}", file.display())])
        .args(["--metrics-job", "nightly \"db\" \\ backup", "true"])
        .assert()
        .code(0);
    promtool_accepts(&file);
    let text = read(&file);
    assert!(
        text.contains("retry_last_run_success{job=\"nightly \\\"db\\\" \\\\ backup\"} 1\n"),
        "{text}"
    );
}

/// GET /metrics from the exporter, or `None` while it does not answer yet.
fn scrape(port: u16) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(BOUND)).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

/// A real node_exporter with only its textfile collector, pointed at the directory that
/// `retry` writes to: after a success and then a give-up, a scrape shows the failure and the
/// earlier success's time.
#[test]
fn node_exporter_reads_the_file_over_http() {
    let r = retry();
    let collected = r.path("textfile");
    fs::create_dir(&collected).unwrap();
    let port = free_port();
    let exporter = [
        "prometheus-node-exporter",
        "/usr/bin/prometheus-node-exporter",
    ]
    .iter()
    .find_map(|program| {
        Command::new(program)
            .args([
                "--collector.disable-defaults",
                "--collector.textfile",
                &format!("--collector.textfile.directory={}", collected.display()),
                &format!("--web.listen-address=127.0.0.1:{port}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
    });
    let Some(exporter) = exporter else {
        missing(
            "prometheus-node-exporter",
            "a real scrape of the metrics file",
        );
        return;
    };
    let _stop = KillOnDrop(exporter.id() as i32);
    let file = collected.join("nightly.prom");
    let metrics = format!("--metrics-file={}", file.display());
    r.command()
        .args([&metrics, "--metrics-job", "nightly", "true"])
        .assert()
        .code(0);
    let succeeded = gauge(
        &read(&file),
        "retry_last_success_timestamp_seconds",
        "nightly",
    )
    .unwrap();
    r.command()
        .args([&metrics, "--metrics-job", "nightly", "-r", "0", "false"])
        .assert()
        .code(1);
    let mut body = String::new();
    eventually("node_exporter answers", || {
        scrape(port).is_some_and(|response| response.starts_with("HTTP/1.0 200"))
    });
    if let Some(response) = scrape(port) {
        body = response;
    }
    assert!(
        body.contains("retry_last_run_success{job=\"nightly\"} 0\n"),
        "{body}"
    );
    let scraped = body
        .lines()
        .find_map(|line| {
            line.strip_prefix("retry_last_success_timestamp_seconds{job=\"nightly\"} ")
        })
        .map(|value| value.parse::<f64>().unwrap());
    assert_eq!(scraped.map(|v| v.round()), Some(succeeded.round()));
    assert!(
        body.contains("node_textfile_scrape_error 0"),
        "the collector read the file without error"
    );
}

/// Runs `true` with `--metrics-file PATH`: the run ends with 0, said once that the file cannot
/// be written because it is not a regular file.
fn refused(path: &Path) {
    retry()
        .args([format!("--metrics-file={}", path.display())])
        .args(["true"])
        .assert()
        .code(0)
        .stderr(
            predicate::str::contains("cannot write the metrics file")
                .count(1)
                .and(predicate::str::contains("not a regular file")),
        );
}

/// Only a regular file is replaced: a FIFO (which no run may block on), a socket, a directory,
/// a symlink to any of them or to nothing are files that cannot be written, and stay what they
/// were; a symlink to a regular file is followed, and that file replaced.
#[test]
fn only_a_regular_file_is_replaced() {
    use std::os::unix::fs::{FileTypeExt, symlink};
    let r = retry();
    let fifo = r.path("fifo.prom");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let socket = r.path("socket.prom");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let directory = r.path("directory.prom");
    fs::create_dir(&directory).unwrap();
    for (path, is_it) in [
        (&fifo, FileTypeExt::is_fifo as fn(&fs::FileType) -> bool),
        (&socket, FileTypeExt::is_socket),
        (&directory, fs::FileType::is_dir),
    ] {
        refused(path);
        let link = r.path(&format!("link-to-{}", path.file_name().unwrap().display()));
        symlink(path, &link).unwrap();
        refused(&link);
        assert!(is_it(&fs::metadata(path).unwrap().file_type()), "{path:?}");
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
    let dangling = r.path("dangling.prom");
    symlink(r.path("nothing-here"), &dangling).unwrap();
    refused(&dangling);
    assert!(!r.path("nothing-here").exists());

    let real = r.path("real.prom");
    fs::write(&real, "earlier\n").unwrap();
    let link = r.path("link.prom");
    symlink(&real, &link).unwrap();
    r.command()
        .args([format!("--metrics-file={}", link.display())])
        .args(["--metrics-job", "linked", "true"])
        .assert()
        .code(0)
        .stderr("");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        gauge(&read(&real), "retry_last_run_success", "linked"),
        Some(1.0)
    );
    let left: Vec<_> = fs::read_dir(r.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// A device at PATH (here a null device made in a private mount namespace, never the real
/// `/dev`), or a symlink to one, is not replaced by a regular file: `/dev/null` turns a
/// configured metrics file off.
#[test]
fn a_device_is_never_replaced() {
    let r = retry();
    let at = r.dir.path().display();
    let script = format!(
        "mount -t tmpfs tmpfs '{at}' && mknod '{at}/null' c 1 3 && ln -s null '{at}/link' || exit 99
         for path in '{at}/null' '{at}/link'; do
           '{BIN}' --metrics-file \"$path\" true 2>> '{at}/said' || echo \"status $?\"
         done
         [ -c '{at}/null' ] && [ -L '{at}/link' ] && echo still a device
         grep -c 'not a regular file' '{at}/said'
         exit 0"
    );
    let Some(output) = in_mount_namespace(&r, &script, &[], "a device at the metrics file") else {
        return;
    };
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "still a device\n2\n"
    );
}

/// The temporary file's name cannot be foreseen, and a file of that shape made by someone else
/// (once, `.NAME.PID.tmp`) is never removed.
#[test]
fn a_file_at_the_temporary_name_is_left_alone() {
    let r = retry();
    let file = r.path("m.prom");
    let go = r.path("go");
    let r = r
        .args([format!("--metrics-file={}", file.display())])
        .args(sh(&format!(
            "while [ ! -e '{}' ]; do sleep 0.01; done",
            go.display()
        )));
    let mut child = r.spawn();
    let theirs = r.path(&format!(".m.prom.{}.tmp", child.id()));
    fs::write(&theirs, "theirs").unwrap();
    fs::write(&go, "").unwrap();
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    assert_eq!(read(&theirs), "theirs");
    assert_eq!(
        gauge(&read(&file), "retry_last_run_success", "sh"),
        Some(1.0)
    );
}

/// A symlink that another user put at PATH (in a shared directory), or anywhere along a chain
/// of symlinks from it, is not followed: the file it names is not theirs to choose. Nor is a
/// regular file of theirs read (for a last success of their making) or replaced. (Needs root,
/// to make a file another user's.)
#[test]
fn a_symlink_of_another_user_is_not_followed() {
    use std::os::unix::fs::symlink;
    if !root("a symlink of another user") {
        return;
    }
    let r = retry();
    let victim = r.path("victim");
    fs::write(&victim, "mine").unwrap();
    let link = r.path("job.prom");
    symlink(&victim, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
    refused(&link);
    assert_eq!(read(&victim), "mine");
    // Theirs in the middle of a chain of this user's.
    let mine = r.path("chain.prom");
    symlink(&link, &mine).unwrap();
    refused(&mine);
    assert_eq!(read(&victim), "mine");
    // A regular file of theirs, with a last success far in the future.
    let planted = r.path("planted.prom");
    let theirs = "retry_last_success_timestamp_seconds{job=\"true\"} 4102444800\n";
    fs::write(&planted, theirs).unwrap();
    std::os::unix::fs::lchown(&planted, Some(65534), None).unwrap();
    refused(&planted);
    assert_eq!(read(&planted), theirs);
}

/// `--metrics-file /dev/stdout` prints the figures after the command's output, through a file
/// as a shell redirects stdout to one (`>> log`), which keeps what it held: that file is not
/// read for a last success (what is behind a descriptor is none of `retry`'s to read), nor
/// replaced.
#[test]
fn a_metrics_file_naming_stdout_is_written_through_it() {
    let r = retry();
    let earlier = "retry_last_success_timestamp_seconds{job=\"sh\"} 12\n";
    let log = r.write("log", earlier);
    let stdout = fs::OpenOptions::new().append(true).open(&log).unwrap();
    let r = r
        .args(["--metrics-file", "/dev/stdout", "-r", "0"])
        .args(sh("echo the build log; exit 3"));
    let output = r
        .spawn_with(stdout, Stdio::piped())
        .wait_with_output()
        .unwrap();
    assert_eq!(shell_status(output.status), 3, "{output:?}");
    let text = read(&log);
    let written = text
        .strip_prefix(&format!("{earlier}the build log\n"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        gauge(written, "retry_last_run_exit_status", "sh"),
        Some(3.0)
    );
    assert_eq!(
        gauge(written, "retry_last_success_timestamp_seconds", "sh"),
        None,
        "{text}"
    );
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("metrics"),
        "{output:?}"
    );
}
