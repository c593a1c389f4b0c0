//! Every path `retry` opens (the config file, the state and lock files, the metrics file, the
//! spools' directory) found to be something else: a FIFO, a device, a socket, a symlink to one
//! of those. `retry` neither hangs on any of them nor writes through any of them.

use std::process::Stdio;

use crate::support::*;

/// Lays out one of each kind of file in a tmpfs of a private mount namespace (a device may be
/// made there, never in the real `/dev`), runs `retry` with each in each place, and prints one
/// line per run (`ROLE KIND STATUS`; 137 is a run killed after 20 s: a hang) and one per file
/// still of its kind at the end.
const SCRIPT: &str = r#"
set -u
root=$1; retry=$2
mount -t tmpfs tmpfs "$root" || exit 99
cd "$root" || exit 99
mkdir -m 700 kinds
mkfifo kinds/fifo
mknod kinds/null c 1 3 || exit 99
mknod kinds/zero c 1 5 || exit 99
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' kinds/socket
for kind in fifo null zero socket; do ln -s "$root/kinds/$kind" "kinds/link-to-$kind"; done
run() {
  role=$1; kind=$2; shift 2
  timeout -s KILL 20 "$@" > "out-$role-$kind" 2>&1 < /dev/null
  echo "$role $kind $?"
}
for kind in fifo null zero socket link-to-fifo link-to-null link-to-zero link-to-socket; do
  run config "$kind" "$retry" --config "kinds/$kind" true
  run metrics "$kind" "$retry" --metrics-file "kinds/$kind" true
  for file in state lock; do
    mkdir -m 700 "$file-$kind"
    ln "kinds/$kind" "$file-$kind/b.$file" 2>/dev/null || cp -a "kinds/$kind" "$file-$kind/b.$file"
    run "$file" "$kind" "$retry" --state "$file-$kind" --budget b --breaker b -r 0 -- echo RAN
    grep -q '^RAN$' "out-$file-$kind" || echo "$file $kind did not run the command"
  done
  run spools "$kind" env TMPDIR="$root/kinds/$kind" "$retry" --hold-stdout -r 0 -- sh -c 'head -c 5000000 /dev/zero | wc -c'
  grep -q '^5000000$' "out-spools-$kind" || echo "spools $kind lost output"
done
[ -p kinds/fifo ] && [ -c kinds/null ] && [ -c kinds/zero ] && [ -S kinds/socket ] && echo "kinds intact"
for kind in fifo null zero socket; do [ -L "kinds/link-to-$kind" ] || echo "link-to-$kind replaced"; done
for file in state lock; do
  [ -p "$file-fifo/b.$file" ] && [ -c "$file-null/b.$file" ] && [ -S "$file-socket/b.$file" ] && echo "$file files intact"
done
exit 0
"#;

#[test]
fn no_path_that_is_not_a_regular_file_hangs_retry_or_is_written_through() {
    let r = retry();
    let args = [r.dir.path().as_os_str(), std::ffi::OsStr::new(BIN)];
    let Some(output) = in_mount_namespace(&r, SCRIPT, &args, "paths that are not regular files")
    else {
        return;
    };
    let said = String::from_utf8_lossy(&output.stdout);
    let mut runs = 0;
    for line in said.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        if let [role, kind, status] = words[..]
            && let Ok(status) = status.parse::<i32>()
        {
            runs += 1;
            assert_ne!(status, 137, "{role} as {kind} hung: {said}");
            let expected: &[i32] = match role {
                // A config file that is not one may be refused (a socket, a device past the
                // bound), never waited on.
                "config" => &[0, 125],
                _ => &[0],
            };
            assert!(
                expected.contains(&status),
                "{role} as {kind}: {status}: {said}"
            );
        }
    }
    assert_eq!(runs, 8 * 5, "{said}");
    for line in ["kinds intact", "state files intact", "lock files intact"] {
        assert!(said.contains(line), "{said}");
    }
    assert!(
        !said.contains("did not run")
            && !said.contains("lost output")
            && !said.contains("replaced"),
        "{said}"
    );
}

/// A neighbour who swaps a directory on the way to a file of `retry`'s for a link of theirs
/// into the victim's directory, over and over (an atomic exchange, as fast as it goes), never
/// makes `retry` write there: each directory is held open as it is checked, and the next name
/// opened from it without following a link. Each run either refuses the link or writes into
/// the real directory. (Needs root, to make a link another user's.)
#[test]
fn a_directory_swapped_for_a_neighbours_link_mid_run_is_never_written_through() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::symlink;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    if !root("a symlink of another user") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let at = |name: &str| root.path().join(name);
    let victim = at("victim");
    std::fs::create_dir(&victim).unwrap();
    for name in ["out.json", "out.prom", "out.txt"] {
        std::fs::write(victim.join(name), "precious").unwrap();
    }
    std::fs::create_dir(at("shared")).unwrap();
    std::fs::create_dir(at("shared/dir")).unwrap();
    symlink(&victim, at("shared/link")).unwrap();
    std::os::unix::fs::lchown(at("shared/link"), Some(65534), None).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let dir = std::ffi::CString::new(at("shared/dir").as_os_str().as_bytes()).unwrap();
        let link = std::ffi::CString::new(at("shared/link").as_os_str().as_bytes()).unwrap();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: renameat2(2) of two NUL-terminated paths.
                let done = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        dir.as_ptr(),
                        libc::AT_FDCWD,
                        link.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
                swaps += 1;
            }
            swaps
        })
    };
    let through = at("shared/dir");
    let path = |name: &str| through.join(name).to_str().unwrap().to_string();
    let runs: [Vec<String>; 4] = [
        vec!["--report".into(), path("out.json")],
        vec![
            "--report".into(),
            path("out.txt"),
            "--report-format".into(),
            "github".into(),
        ],
        vec!["--metrics-file".into(), path("out.prom")],
        vec![
            "--state".into(),
            path("state"),
            "--budget".into(),
            "b".into(),
        ],
    ];
    let mut refused = 0;
    for _ in 0..40 {
        for args in &runs {
            let output = retry()
                .args(args)
                .args(["-r", "0", "true"])
                .command()
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            if stderr.contains("a symlink of another user") {
                refused += 1;
            } else {
                assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let mut left: Vec<String> = std::fs::read_dir(&victim)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["out.json", "out.prom", "out.txt"],
        "written through the link ({refused} of 160 runs refused it; {swaps} swaps)"
    );
    for name in ["out.json", "out.prom", "out.txt"] {
        assert_eq!(
            std::fs::read_to_string(victim.join(name)).unwrap(),
            "precious",
            "{name} written through the link ({refused} of 160 runs refused it; {swaps} swaps)"
        );
    }
}

/// Every file `retry` writes (the report in both formats, the metrics file) at a path that
/// names one of its own descriptors, by any of the names the kernel gives one or by a chain of
/// links to one, is written through that descriptor, after the command's output: the log a
/// shell redirected stdout to keeps its inode and what the command wrote.
#[test]
fn a_path_naming_a_descriptor_is_written_through_it() {
    use std::os::unix::fs::{MetadataExt, symlink};
    let r = retry();
    let (first, second) = (r.path("first"), r.path("second"));
    symlink("/dev/stdout", &second).unwrap();
    symlink(&second, &first).unwrap();
    let names = [
        "/dev/stdout",
        "/dev/fd/1",
        "/proc/self/fd/1",
        "/proc/thread-self/fd/1",
        first.to_str().unwrap(),
    ];
    let files: [(&[&str], &str); 3] = [
        (&["--report"], "\"outcome\":\"success\""),
        (
            &["--report-format", "github", "--report"],
            "\noutcome=success\n",
        ),
        (
            &["--metrics-file"],
            "\nretry_last_run_success{job=\"echo\"} 1\n",
        ),
    ];
    let log = r.path("build.log");
    for name in names {
        for (flag, written) in files {
            let stdout = std::fs::File::create(&log).unwrap();
            let inode = stdout.metadata().unwrap().ino();
            let output = r
                .std_command()
                .args(["-q"])
                .args(flag)
                .args([name, "--", "echo", "the build log"])
                .stdout(stdout)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
                .wait_with_output()
                .unwrap();
            let said = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(0), "{name} {flag:?}: {said}");
            assert_eq!(said, "", "{name} {flag:?}");
            let text = std::fs::read_to_string(&log).unwrap();
            assert!(
                text.starts_with("the build log\n") && text.contains(written),
                "{name} {flag:?}: {text}"
            );
            assert_eq!(std::fs::metadata(&log).unwrap().ino(), inode, "{name}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(r.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
}

/// A descriptor that was closed when `retry` started is a file that cannot be written, said
/// once, whatever `retry` opened at that number since (its own pipes, the state): nothing is
/// written there, nor at the name the kernel gives what `retry` opened (`pipe:[81]`, made as a
/// file in the current directory). 0 to 2, which `retry` opens on /dev/null when they are
/// closed, take the report silently.
#[test]
fn a_descriptor_closed_at_the_start_takes_nothing() {
    let r = retry();
    let state = r.path("state");
    for fd in 3..10 {
        for flag in ["--report", "--metrics-file"] {
            let script = format!(
                "cd \"$1\" && exec \"$0\" {flag} /dev/fd/{fd} --state \"$2\" --budget b -- true {fd}>&-"
            );
            // `$0` is the builder's `retry`.
            let output = r
                .std_command_under(&["sh", "-c", &script])
                .args([r.dir.path(), &state])
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(0), "{fd} {flag}: {said}");
            assert_eq!(said.lines().count(), 1, "{fd} {flag}: {said}");
            assert!(
                said.contains(&format!(
                    "/dev/fd/{fd}: it names descriptor {fd}, which was not open when retry started"
                )),
                "{fd} {flag}: {said}"
            );
            assert_eq!(String::from_utf8_lossy(&output.stdout), "", "{fd} {flag}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(r.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["state"], "{left:?}");
    for (stream, closed) in [("/dev/stdout", ">&-"), ("/dev/stderr", "2>&-")] {
        let output = r
            .std_command_under(&[
                "sh",
                "-c",
                &format!("exec \"$0\" --report \"$1\" -- true {closed}"),
            ])
            .arg(stream)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{stream}: {output:?}");
        assert_eq!(output.stderr, b"", "{stream}");
    }
}

/// In a PID namespace whose /proc is still its parent's (`unshare --pid --fork`, no
/// `--mount-proc`), /proc names `retry` by a pid getpid(2) does not give: `/dev/stdout` is
/// still its own descriptor, written through, the log behind it kept.
#[test]
fn a_descriptor_is_known_through_a_parents_proc() {
    use std::os::unix::fs::MetadataExt;
    let Some(namespace) = pid_namespace() else {
        return;
    };
    // The namespace's words without --mount-proc: /proc stays the parent's.
    let wrapper: Vec<&str> = namespace
        .iter()
        .copied()
        .filter(|word| *word != "--mount-proc")
        .collect();
    let r = retry();
    let log = r.path("build.log");
    std::fs::write(&log, "the build log\n").unwrap();
    let inode = std::fs::metadata(&log).unwrap().ino();
    let stdout = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let r = r.args(["-q", "--report", "/dev/stdout", "--", "echo", "cmd out"]);
    let mut child = r.spawn_under_with(&wrapper, stdout);
    assert_eq!(shell_status(wait_bounded(&mut child)), 0);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.starts_with("the build log\ncmd out\n{\"attempts\":1,"),
        "{text}"
    );
    assert_eq!(std::fs::metadata(&log).unwrap().ino(), inode);
}

/// A descriptor closed at the start stays "not open" whatever else `retry` holds: the report's
/// copy of stdout, made first, must not be taken for a metrics file's `/dev/fd/3`.
#[test]
fn a_closed_descriptor_is_not_one_retry_copied_there() {
    let output = retry()
        .args(["--report", "/dev/stdout", "--metrics-file", "/dev/fd/3"])
        .args(["--", "true"])
        .command()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("{\"attempts\":1,"), "{stdout}");
    assert!(!stdout.contains("retry_last_run"), "{stdout}");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("descriptor 3, which was not open"), "{said}");
}

/// `/proc/self/fd/01` is not descriptor 1 (the kernel reads no leading zero there): the report
/// is not written into the command's output.
#[test]
fn a_descriptor_number_with_a_leading_zero_is_no_descriptor() {
    let r = retry();
    let log = r.path("log");
    for path in ["/proc/self/fd/01", "/dev/fd/001"] {
        let stdout = std::fs::File::create(&log).unwrap();
        let output = r
            .std_command()
            .args(["-q", "--report", path, "--", "echo", "cmd out"])
            .stdout(stdout)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{path}");
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "cmd out\n",
            "{path}"
        );
    }
}
