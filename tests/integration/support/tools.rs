//! What a test needs of the machine beyond `retry` (root, a namespace, man, Debian's package, a
//! pseudo-terminal), and the one rule for when it is not there: fail in CI, skip elsewhere with
//! the reason printed (`missing`).
//!
//! It runs other programs, never `retry` straight: a test that runs `retry` through one of
//! them gives it the builder's words (`Retry::command_under`) or its clean environment.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::builder::Retry;
use super::wait::BOUND;

/// Says that a test cannot check `what` for want of `tool`. In CI (`CI` set and not empty),
/// where `.ci/run` installs every such tool, that fails the test; elsewhere the test is skipped
/// with this reason printed.
pub fn missing(tool: &str, what: &str) {
    let in_ci = std::env::var_os("CI").is_some_and(|value| !value.is_empty());
    assert!(
        !in_ci,
        "{tool} is needed to check {what}, and CI must have it"
    );
    eprintln!("skipped: {tool} is not here, so {what} is not checked");
}

/// Whether the tests run as root, which `what` needs (to give a file to another user, to
/// chroot); when they do not, says so through `missing`, and the test returns.
pub fn root(what: &str) -> bool {
    // SAFETY: geteuid(2) cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        missing("root", what);
    }
    root
}

/// A loopback port free when asked, for a server a test starts (`redis-server`, node_exporter):
/// free only until someone takes it, so a server that then fails to bind is started again on
/// another.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a loopback port")
        .local_addr()
        .expect("its address")
        .port()
}

/// Debian's own `retry` package (minfrin/retry), fetched with `apt-get download` into `dir`
/// (never installed); `None` (outside CI) when it cannot be fetched, for `what`.
pub fn debians_package(dir: &Path, what: &str) -> Option<PathBuf> {
    let fetched = std::process::Command::new("apt-get")
        .args(["download", "retry"])
        .current_dir(dir)
        .output();
    let package = fs::read_dir(dir)
        .expect("a readable directory")
        .map(|entry| entry.expect("an entry").path())
        .find(|path| path.extension().is_some_and(|e| e == "deb"));
    if package.is_none() {
        missing("apt-get download retry", &format!("{what} ({fetched:?})"));
    }
    package
}

/// `man --warnings -l PAGE` at 80 columns and without formatting; `None` (outside CI) when
/// there is no man to render `what`.
pub fn render_man(page: &Path, what: &str) -> Option<std::process::Output> {
    let output = std::process::Command::new("man")
        .args(["--warnings", "-l"])
        .arg(page)
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "0")
        .output();
    if output.is_err() {
        missing("man", what);
    }
    output.ok()
}

/// The words that start a command in a PID namespace of its own, where it is PID 1 (root, or
/// user namespaces), as the wrapper of `Retry::command_under`; `None` (outside CI) where there
/// is none.
pub fn pid_namespace() -> Option<&'static [&'static str]> {
    const NAMESPACE: &[&str] = &["unshare", "--pid", "--fork", "--mount-proc"];
    let usable = std::process::Command::new(NAMESPACE[0])
        .args(&NAMESPACE[1..])
        .arg("true")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !usable {
        missing("a PID namespace (unshare --pid)", "retry as PID 1");
        return None;
    }
    Some(NAMESPACE)
}

/// The words of `sh -c SETUP && exec retry ARGS` in a mount namespace of its own, as the
/// wrapper of `Retry::command_under`: root's, else one inside a user namespace, where a user
/// may mount too; `None` (outside CI, said as needed for `what`) where this machine gives
/// neither.
pub fn mount_namespace(setup: &str, what: &str) -> Option<Vec<String>> {
    let flags: [&[&str]; 2] = [&["--mount"], &["--map-root-user", "--mount"]];
    let Some(flags) = flags.into_iter().find(|flags| {
        let status = std::process::Command::new("unshare")
            .args(*flags)
            .arg("true")
            .stderr(Stdio::null())
            .status();
        status.is_ok_and(|status| status.success())
    }) else {
        missing("a mount namespace (unshare --mount)", what);
        return None;
    };
    let script = format!("{setup} && exec \"$0\" \"$@\"");
    let shell = ["sh", "-c", &script];
    let words = ["unshare"].iter().chain(flags).chain(&shell);
    Some(words.map(|word| word.to_string()).collect())
}

/// Runs `sh -c script ARGS` in a private mount namespace (where a test may mount a tmpfs and make
/// device nodes without touching the real ones) and returns its output; `None`, said by
/// `missing` as needing what `what` names, when the script cannot run there (exit 99: no root,
/// no `unshare`, no mount). A script exits 0 when it ran, whatever it found. It runs as `r`'s
/// runs do (`Retry::std_command_of`); a script that runs `retry` is given it as `$0`.
pub fn in_mount_namespace(
    r: &Retry,
    script: &str,
    args: &[&std::ffi::OsStr],
    what: &str,
) -> Option<std::process::Output> {
    let output = r
        .std_command_of("unshare")
        .args(["--mount", "sh", "-c", script, "sh"])
        .args(args)
        .output()
        .ok()?;
    if output.status.code() != Some(0) {
        missing("root in a mount namespace (unshare --mount, mknod)", what);
        return None;
    }
    Some(output)
}

/// Drives a program under a pseudo-terminal: for each step, waits until the screen shows its
/// text (or the program ends), then types its keys; then reads until the program ends.
const PTY_DRIVER: &str = r#"
import json, os, pty, select, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
screen = b""
def read_until(text, seconds):
    global screen
    end = time.monotonic() + seconds
    while (text is None or text not in screen) and time.monotonic() < end:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return True
            if not data:
                return True
            screen += data
    return text is not None and text in screen
def give_up(why):
    # Said on the screen, so that a test that fails says which step never came.
    global screen
    screen += ("\n[pty driver: %s]\n" % why).encode()
    os.kill(pid, signal.SIGKILL)
for wait_for, keys in json.loads(sys.argv[1]):
    if not read_until(wait_for.encode(), 20):
        give_up("never saw %r" % wait_for)
        break
    os.write(fd, keys.encode())
else:
    if not read_until(None, 20):
        give_up("the program did not end within 20 s")
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(screen)
print("\nstatus", os.waitstatus_to_exitcode(status))
"#;

/// Runs `argv` under a pseudo-terminal as `r`'s runs start (`Retry::std_command_of`), typing each step's
/// keys once the screen shows its text. Returns the screen, then a last line `status N` (N
/// negative for a signal); `None` when `argv[0]` is not installed.
pub fn under_pty(
    r: &Retry,
    argv: &[&str],
    steps: &[(&str, &str)],
    env: &[(&str, &str)],
) -> Option<String> {
    let program = std::process::Command::new(argv[0])
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if program.is_err() {
        return None;
    }
    let steps = serde_json::to_string(steps).unwrap();
    let mut command = r.std_command_of("python3");
    command.args(["-c", PTY_DRIVER, &steps]).args(argv);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut command = assert_cmd::Command::from_std(command);
    command.timeout(BOUND + BOUND);
    let output = command.output().expect("python3");
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}
