//! The release artifacts that `packaging/dist` leaves in `target/dist/`, checked where they will
//! be used: the tarball's static binary in an empty root laid out as `packaging/Dockerfile` lays
//! out its image (no loader, no libc, no /etc), the .deb in private dpkg roots beside Debian's
//! own `retry` (never on this machine, whose Debian `retry` the benchmarks compare against),
//! lintian, the man page and the bash completion as the .deb installs them. The arm64 tarball
//! and .deb are held to the same layout, and their binary run under `qemu-aarch64-static`.
//!
//! `.ci/run` builds the artifacts before the tests; elsewhere, without them or without root (for
//! chroot), each test says why it is skipped.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use predicates::prelude::*;
use tempfile::TempDir;

use crate::redis;
use crate::support::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const NAME: &str = env!("CARGO_PKG_NAME");
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The artifacts of one architecture that `packaging/dist` builds.
struct Arch {
    triple: &'static str,
    /// Debian's name for it.
    deb_arch: &'static str,
    /// What runs its binary on this x86-64 machine: nothing (it runs natively), or qemu-user.
    emulator: Option<&'static str>,
}

const X86_64: Arch = Arch {
    triple: "x86_64-unknown-linux-gnu",
    deb_arch: "amd64",
    emulator: None,
};

const ARM64: Arch = Arch {
    triple: "aarch64-unknown-linux-gnu",
    deb_arch: "arm64",
    emulator: Some("qemu-aarch64-static"),
};

impl Arch {
    fn tarball_top(&self) -> String {
        format!("{NAME}-{VERSION}-{}", self.triple)
    }

    fn deb_name(&self) -> String {
        format!("{NAME}_{VERSION}-1_{}.deb", self.deb_arch)
    }

    /// `target/dist/` when it holds this version's artifacts for this architecture; `None`
    /// (outside CI) when it does not.
    fn dist(&self, what: &str) -> Option<PathBuf> {
        // Cargo's `retry` is target/debug/retry, beside dist/ whatever the target dir.
        let target = Path::new(env!("CARGO_BIN_EXE_retry")).parent()?.parent()?;
        let dist = target.join("dist");
        let built = [format!("{}.tar.gz", self.tarball_top()), self.deb_name()]
            .iter()
            .all(|file| dist.join(file).is_file());
        if built {
            Some(dist)
        } else {
            missing(
                &format!("packaging/dist's {} artifacts", self.deb_arch),
                what,
            );
            None
        }
    }

    /// `dist`, for a test that needs root (and for arm64, qemu-user) too; `None` (outside CI)
    /// without either.
    fn dist_as_root(&self, what: &str) -> Option<PathBuf> {
        let dist = self.dist(what)?;
        (root_user(what) && self.emulator_path(what).is_some()).then_some(dist)
    }

    /// The emulator's path here, or the empty path for a native binary; `None` (outside CI) when
    /// the emulator is not installed.
    fn emulator_path(&self, what: &str) -> Option<PathBuf> {
        let Some(emulator) = self.emulator else {
            return Some(PathBuf::new());
        };
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join(emulator))
            .find(|path| path.is_file());
        if found.is_none() {
            missing(emulator, what);
        }
        found
    }

    /// The words that run `binary` (a path inside `root`) there: the binary alone, or after the
    /// emulator, copied into `root` (it is static) as binfmt_misc's fix-binary mode would
    /// bring it along.
    fn runs_in(&self, root: &Path, binary: &str) -> Vec<String> {
        let Some(emulator) = self.emulator else {
            return vec![binary.to_string()];
        };
        let inside = root.join(emulator);
        if !inside.exists() {
            let here = self.emulator_path("the emulator").expect("the emulator");
            fs::copy(here, &inside).unwrap();
        }
        vec![format!("/{emulator}"), binary.to_string()]
    }
}

fn deb_name() -> String {
    X86_64.deb_name()
}

fn dist(what: &str) -> Option<PathBuf> {
    X86_64.dist(what)
}

fn dist_as_root(what: &str) -> Option<PathBuf> {
    X86_64.dist_as_root(what)
}

fn root_user(what: &str) -> bool {
    root(&format!("{what} (chroot and dpkg --root)"))
}

fn run(program: &str, args: &[&str]) -> Output {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn unpack_tarball(arch: &Arch, dist: &Path) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tarball = dist.join(format!("{}.tar.gz", arch.tarball_top()));
    run(
        "tar",
        &[
            "-xzf",
            tarball.to_str().unwrap(),
            "-C",
            dir.path().to_str().unwrap(),
        ],
    );
    let top = dir.path().join(arch.tarball_top());
    (dir, top)
}

/// An empty directory with only what `packaging/Dockerfile` puts in its image: the Dockerfile's
/// `COPY` lines applied to `arch`'s unpacked tarball, its one base `FROM scratch`. Returns the
/// root and the `ENTRYPOINT`.
fn image_root(arch: &Arch, dist: &Path) -> (TempDir, Vec<String>) {
    let dockerfile = fs::read_to_string(Path::new(ROOT).join("packaging/Dockerfile")).unwrap();
    let (_unpacked, context) = unpack_tarball(arch, dist);
    let root = tempfile::tempdir().unwrap();
    let mut entrypoint = Vec::new();
    let mut from = Vec::new();
    for line in dockerfile.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (instruction, rest) = line.split_once(' ').expect("an instruction and its words");
        match instruction {
            "FROM" => from.push(rest.to_string()),
            "COPY" => {
                let words: Vec<&str> = rest.split_whitespace().collect();
                let [source, destination] = words[..] else {
                    panic!("COPY of one file: {line}");
                };
                let destination = destination.strip_prefix('/').expect("an absolute path");
                let target = root.path().join(destination);
                fs::create_dir_all(target.parent().unwrap()).unwrap();
                fs::copy(context.join(source), &target).unwrap();
            }
            "ENTRYPOINT" => {
                entrypoint = serde_json::from_str(rest).expect("ENTRYPOINT in exec form");
            }
            other => panic!("the test follows FROM, COPY and ENTRYPOINT only, not {other}"),
        }
    }
    assert_eq!(from, ["scratch"], "an image of the binary alone");
    assert!(!entrypoint.is_empty(), "an ENTRYPOINT");
    (root, entrypoint)
}

/// `chroot ROOT ENTRYPOINT ARGS` with only `env` in the environment (so chroot is named by its
/// path: no PATH is left to look it up in).
fn in_root(
    root: &Path,
    entrypoint: &[String],
    args: &[&str],
    env: &[(&str, &str)],
) -> assert_cmd::Command {
    let chroot = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("chroot"))
        .find(|path| path.is_file())
        .expect("chroot (coreutils)");
    let mut command = assert_cmd::Command::new(chroot);
    command
        .arg(root)
        .args(entrypoint)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .timeout(BOUND);
    command
}

#[test]
fn cargo_package_ships_the_licences_man_page_and_completions() {
    let output = Command::new(env!("CARGO"))
        .args(["package", "--locked", "--list", "--allow-dirty"])
        .current_dir(ROOT)
        .output()
        .expect("cargo");
    assert!(output.status.success(), "{output:?}");
    let listed = text(&output);
    let files: Vec<&str> = listed.lines().collect();
    for file in [
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "man/retry.1",
        "completions/retry.bash",
        "completions/_retry",
        "completions/retry.fish",
        "completions/retry.elv",
        "completions/_retry.ps1",
        "README.md",
        "Cargo.lock",
        "src/main.rs",
        "src/fleet/decide.lua",
    ] {
        assert!(files.contains(&file), "{file} is not in {files:?}");
    }
    assert!(
        !files
            .iter()
            .any(|f| f.starts_with("tests/") || f.starts_with(".ci/")),
        "the tests stay in the repository: {files:?}"
    );
}

#[test]
fn the_tarball_holds_one_folder_of_the_binary_manual_completions_and_licences() {
    tarball_holds_one_folder_of_the_binary_manual_completions_and_licences(&X86_64);
}

#[test]
fn the_arm64_tarball_holds_the_same_files() {
    tarball_holds_one_folder_of_the_binary_manual_completions_and_licences(&ARM64);
}

fn tarball_holds_one_folder_of_the_binary_manual_completions_and_licences(arch: &Arch) {
    let Some(dist) = arch.dist("the tarball's contents") else {
        return;
    };
    let tarball = dist.join(format!("{}.tar.gz", arch.tarball_top()));
    let listing = text(&run("tar", &["-tzf", tarball.to_str().unwrap()]));
    let mut entries: Vec<&str> = listing.lines().collect();
    entries.sort_unstable();
    let top = arch.tarball_top();
    let expected: Vec<String> = [
        "",
        "CHANGELOG.md",
        "LICENSE-APACHE",
        "LICENSE-MIT",
        "README.md",
        "THIRD-PARTY",
        "completions/",
        "completions/_retry",
        "completions/_retry.ps1",
        "completions/retry.bash",
        "completions/retry.elv",
        "completions/retry.fish",
        "man/",
        "man/retry.1",
        "retry",
    ]
    .iter()
    .map(|entry| format!("{top}/{entry}"))
    .collect();
    assert_eq!(entries, expected);

    let (_dir, unpacked) = unpack_tarball(arch, &dist);
    for file in ["man/retry.1", "completions/retry.bash", "LICENSE-MIT"] {
        assert!(
            fs::read(unpacked.join(file)).unwrap() == fs::read(Path::new(ROOT).join(file)).unwrap(),
            "{file} is not as committed: run packaging/dist again"
        );
    }
    let third_party = fs::read_to_string(unpacked.join("THIRD-PARTY")).unwrap();
    for crate_name in ["clap ", "redis ", "ring ", "rustls "] {
        assert!(
            third_party.contains(&format!("\n  {crate_name}")),
            "{crate_name}is listed"
        );
    }
    assert!(
        !third_party.contains("\n  clap_derive ") && !third_party.contains("\n  proptest "),
        "proc-macros and dev-dependencies are not in the binary"
    );
    assert!(third_party.contains("GNU LESSER GENERAL PUBLIC LICENSE"));
    let libc = match arch.emulator {
        None => "Debian's libc6-dev ",
        Some(_) => "Debian's libc6-dev:arm64 ",
    };
    assert!(third_party.contains(libc), "the C library linked: {libc}");
}

#[test]
fn the_checksums_hold() {
    let Some(dist) = dist("SHA256SUMS") else {
        return;
    };
    let sums = fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    // Both architectures' artifacts when the arm64 ones were built (always in CI).
    let arches: Vec<&Arch> = [&X86_64, &ARM64]
        .into_iter()
        .filter(|arch| dist.join(arch.deb_name()).is_file())
        .collect();
    if arches.len() == 1 {
        missing("packaging/dist's arm64 artifacts", "SHA256SUMS of both");
    }
    assert_eq!(sums.lines().count(), 2 * arches.len(), "{sums}");
    let output = Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&dist)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let checked = text(&output);
    for arch in arches {
        assert!(checked.contains(&format!("{}.tar.gz: OK", arch.tarball_top())));
        assert!(checked.contains(&format!("{}: OK", arch.deb_name())));
    }
}

#[test]
fn the_image_binary_retries_in_an_empty_root() {
    image_binary_retries_in_an_empty_root(&X86_64);
}

/// The arm64 image's binary, with only `qemu-aarch64-static` added to the root to run it (and
/// the command it retries: itself again, under the same emulator).
#[test]
fn the_arm64_image_binary_retries_in_an_empty_root_under_qemu() {
    image_binary_retries_in_an_empty_root(&ARM64);
}

fn image_binary_retries_in_an_empty_root(arch: &Arch) {
    let Some(dist) = arch.dist_as_root("the binary in an empty root") else {
        return;
    };
    let (root, entrypoint) = image_root(arch, &dist);
    let mut files = Vec::new();
    for entry in walk(root.path()) {
        files.push(entry.strip_prefix(root.path()).unwrap().to_path_buf());
    }
    assert_eq!(files, [Path::new("usr/local/bin/retry")], "nothing else");
    let entrypoint = arch.runs_in(root.path(), &entrypoint[0]);
    let command_words = |args: &[&str]| -> Vec<String> {
        let mut words = vec!["--retries".to_string(), "1".into()];
        words.extend(args.iter().map(|arg| arg.to_string()));
        words.push("--".into());
        words.extend(entrypoint.iter().cloned());
        words
    };

    let once = command_words(&[]);
    let mut once: Vec<&str> = once.iter().map(String::as_str).collect();
    once.push("--version");
    in_root(root.path(), &entrypoint, &once, &[])
        .env("PATH", "/nonexistent")
        .assert()
        .code(0)
        .stdout(format!("retry {VERSION} ({NAME})\n"));

    // A command that fails (the binary misused exits 125) is run again after the wait.
    let twice = command_words(&["--base", "1ms"]);
    let mut twice: Vec<&str> = twice.iter().map(String::as_str).collect();
    twice.push("--no-such-flag");
    in_root(root.path(), &entrypoint, &twice, &[])
        .assert()
        .code(125)
        .stderr(
            predicate::str::contains("attempt 2/2 failed (exit 125)")
                .and(predicate::str::contains("'--no-such-flag'").count(2)),
        );
}

/// What `readelf` says of the shipped binary of `arch`: its header, program headers and dynamic
/// section; `None` (outside CI) without the artifacts.
fn readelf_of_shipped(arch: &Arch) -> Option<String> {
    let dist = arch.dist("the shipped binary's ELF headers")?;
    let (_dir, unpacked) = unpack_tarball(arch, &dist);
    let binary = unpacked.join("retry");
    Some(text(&run(
        "readelf",
        &["--wide", "-h", "-l", "-d", binary.to_str().unwrap()],
    )))
}

/// The x86-64 binary is a static-pie: no loader (no PT_INTERP, no DT_NEEDED), position
/// independent (ET_DYN, so ASLR applies), with its relocations packed (DT_RELR).
#[test]
fn the_x86_64_binary_is_a_static_pie_with_packed_relocations() {
    let Some(elf) = readelf_of_shipped(&X86_64) else {
        return;
    };
    assert!(elf.contains("Advanced Micro Devices X86-64"), "{elf}");
    assert!(
        elf.contains("DYN (Position-Independent Executable file)"),
        "{elf}"
    );
    assert!(
        !elf.contains("INTERP") && !elf.contains("(NEEDED)"),
        "{elf}"
    );
    assert!(elf.contains("(RELR)"), "packed relocations: {elf}");
}

/// The arm64 binary is a static-pie for AArch64 too (packaging/static-pie-link: rustc's target
/// offers none), without DT_RELR: binutils 2.40's aarch64 linker ignores
/// `-z pack-relative-relocs`.
#[test]
fn the_arm64_binary_is_a_static_pie() {
    let Some(elf) = readelf_of_shipped(&ARM64) else {
        return;
    };
    assert!(elf.contains("AArch64"), "{elf}");
    assert!(
        elf.contains("DYN (Position-Independent Executable file)"),
        "{elf}"
    );
    assert!(
        !elf.contains("INTERP") && !elf.contains("(NEEDED)"),
        "{elf}"
    );
}

/// The version line of the glibc linked into `arch`'s shipped binary (`GNU C Library (Debian
/// GLIBC 2.36-9+deb12u14)`).
fn glibc_in_shipped(arch: &Arch) -> Option<String> {
    let dist = arch.dist("the glibc in the shipped binary")?;
    let (_dir, unpacked) = unpack_tarball(arch, &dist);
    let binary = fs::read(unpacked.join("retry")).unwrap();
    let marker = b"GNU C Library (";
    let at = binary
        .windows(marker.len())
        .position(|window| window == marker)
        .expect("the binary names its C library");
    let end = binary[at..].iter().position(|&b| b == b')').unwrap();
    Some(String::from_utf8_lossy(&binary[at..at + end + 1]).into_owned())
}

/// Both binaries link the same glibc, Debian's current one with its security fixes: the arm64
/// one from libc6-dev:arm64, not the cross compiler's own libc6-dev-arm64-cross (2.36-8 in
/// Debian 12, without the later fixes to the resolver a Redis host name goes through).
#[test]
fn both_binaries_link_the_same_glibc() {
    let (Some(x86_64), Some(arm64)) = (glibc_in_shipped(&X86_64), glibc_in_shipped(&ARM64)) else {
        return;
    };
    assert_eq!(arm64, x86_64);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// In the empty root, `localhost` and a name given by an /etc/hosts placed there resolve (the
/// static C library reads the file itself), so a Redis state works by name.
#[test]
fn the_image_binary_reaches_redis_by_name_from_its_own_etc_hosts() {
    let Some(dist) = dist_as_root("names in an empty root") else {
        return;
    };
    let Some(server) = redis::server(&[], false) else {
        return;
    };
    let (root, entrypoint) = image_root(&X86_64, &dist);
    fs::create_dir(root.path().join("etc")).unwrap();
    fs::write(
        root.path().join("etc/hosts"),
        "127.0.0.1 localhost\n127.0.0.1 cache.internal\n",
    )
    .unwrap();
    for (host, db) in [("localhost", 1), ("cache.internal", 2)] {
        let state = format!("--state=redis://{host}:{}/{db}", server.port);
        let mut command = in_root(
            root.path(),
            &entrypoint,
            &[
                &state,
                "--budget",
                "api",
                "--retries",
                "0",
                "--",
                &entrypoint[0],
                "--version",
            ],
            &[],
        );
        command.assert().code(0).stderr("");
        assert_eq!(
            server.command(db, &["EXISTS", "retry:{api}:budget"]),
            ":1",
            "the run through {host} kept its budget in Redis"
        );
    }
}

#[test]
fn the_image_binary_makes_its_state_directory_under_home() {
    let Some(dist) = dist_as_root("the state directory in an empty root") else {
        return;
    };
    let (root, entrypoint) = image_root(&X86_64, &dist);
    fs::create_dir_all(root.path().join("home/app")).unwrap();
    let mut command = in_root(
        root.path(),
        &entrypoint,
        &[
            "--budget",
            "api",
            "--retries",
            "0",
            "--",
            &entrypoint[0],
            "--version",
        ],
        &[("HOME", "/home/app")],
    );
    command.assert().code(0).stderr("");
    let state = root.path().join("home/app/.local/state/retry");
    let names: Vec<String> = fs::read_dir(&state)
        .unwrap_or_else(|e| panic!("{}: {e}", state.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|name| name.contains("api")),
        "the budget's record: {names:?}"
    );
}

/// A private dpkg root: an empty status file and the directories dpkg writes.
fn dpkg_root() -> TempDir {
    let root = tempfile::tempdir().unwrap();
    for dir in ["var/lib/dpkg/info", "var/lib/dpkg/updates"] {
        fs::create_dir_all(root.path().join(dir)).unwrap();
    }
    fs::write(root.path().join("var/lib/dpkg/status"), "").unwrap();
    root
}

fn dpkg(root: &Path, args: &[&str]) -> Output {
    let root_flag = format!("--root={}", root.display());
    let mut all = vec![root_flag.as_str(), "--log=/dev/null"];
    all.extend_from_slice(args);
    run("dpkg", &all)
}

fn deb_field(deb: &Path, field: &str) -> String {
    text(&run("dpkg-deb", &["--field", deb.to_str().unwrap(), field]))
        .trim()
        .to_string()
}

#[test]
fn the_deb_conflicts_with_and_replaces_debians_retry_without_providing_it() {
    deb_conflicts_with_and_replaces_debians_retry_without_providing_it(&X86_64);
}

#[test]
fn the_arm64_deb_has_the_same_fields_for_arm64() {
    deb_conflicts_with_and_replaces_debians_retry_without_providing_it(&ARM64);
}

fn deb_conflicts_with_and_replaces_debians_retry_without_providing_it(arch: &Arch) {
    let Some(dist) = arch.dist("the .deb's control fields") else {
        return;
    };
    let deb = dist.join(arch.deb_name());
    assert_eq!(deb_field(&deb, "Package"), NAME);
    assert_eq!(deb_field(&deb, "Architecture"), arch.deb_arch);
    assert_eq!(deb_field(&deb, "Version"), format!("{VERSION}-1"));
    assert_eq!(deb_field(&deb, "Conflicts"), "retry");
    assert_eq!(deb_field(&deb, "Replaces"), "retry");
    assert_eq!(
        deb_field(&deb, "Provides"),
        "",
        "its flags differ from Debian's retry"
    );
    assert_eq!(
        deb_field(&deb, "Depends"),
        "",
        "a static binary depends on nothing"
    );
}

#[test]
fn the_deb_installs_into_a_private_root_and_runs_there() {
    deb_installs_into_a_private_root_and_runs_there(&X86_64);
}

/// The arm64 .deb, installed with `--force-architecture` (this dpkg's is amd64), runs under
/// qemu in its root.
#[test]
fn the_arm64_deb_installs_into_a_private_root_and_runs_there_under_qemu() {
    deb_installs_into_a_private_root_and_runs_there(&ARM64);
}

fn deb_installs_into_a_private_root_and_runs_there(arch: &Arch) {
    let Some(dist) = arch.dist_as_root("the .deb in a private root") else {
        return;
    };
    let root = dpkg_root();
    let deb = dist.join(arch.deb_name());
    dpkg(
        root.path(),
        &["--force-architecture", "--install", deb.to_str().unwrap()],
    );
    let listed = text(&dpkg(root.path(), &["--listfiles", NAME]));
    let doc = format!("/usr/share/doc/{NAME}");
    for path in [
        "/usr/bin/retry",
        "/usr/share/man/man1/retry.1.gz",
        "/usr/share/bash-completion/completions/retry",
        "/usr/share/zsh/vendor-completions/_retry",
        "/usr/share/fish/vendor_completions.d/retry.fish",
        &format!("{doc}/copyright"),
        &format!("{doc}/changelog.Debian.gz"),
        &format!("{doc}/NEWS.Debian.gz"),
    ] {
        assert!(
            listed.lines().any(|line| line == path),
            "{path} in {listed}"
        );
    }
    // A host that had Debian's retry is told what changes, above all for a bare line.
    let news = text(&run(
        "zcat",
        &[root
            .path()
            .join(&doc[1..])
            .join("NEWS.Debian.gz")
            .to_str()
            .unwrap()],
    ));
    assert!(
        news.starts_with(&format!("{NAME} ({VERSION}-1) unstable;")),
        "{news}"
    );
    assert!(
        news.contains("no longer retries for ever every 10 seconds"),
        "{news}"
    );
    let copyright = fs::read_to_string(root.path().join(&doc[1..]).join("copyright")).unwrap();
    assert!(copyright.starts_with(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
    ));
    let retry = arch.runs_in(root.path(), "/usr/bin/retry");
    let mut args = vec!["--retries", "1", "--"];
    args.extend(retry.iter().map(String::as_str));
    args.push("--version");
    in_root(root.path(), &retry, &args, &[])
        .assert()
        .code(0)
        .stdout(format!("retry {VERSION} ({NAME})\n"));
}

/// `dpkg -i` of ours over Debian's real `retry` package (fetched with `apt-get download`, and
/// installed without its libc6, which a private root lacks) removes Debian's and leaves ours.
#[test]
fn the_deb_takes_the_place_of_debians_retry() {
    let Some(dist) = dist_as_root("the .deb over Debian's retry") else {
        return;
    };
    let download = tempfile::tempdir().unwrap();
    let Some(debian) = debians_package(download.path(), "the .deb over Debian's retry") else {
        return;
    };
    let root = dpkg_root();
    dpkg(
        root.path(),
        &["--force-depends", "--install", debian.to_str().unwrap()],
    );
    let theirs = fs::read(root.path().join("usr/bin/retry")).unwrap();
    assert_eq!(&theirs[1..4], b"ELF", "Debian's retry is in place first");

    let output = dpkg(
        root.path(),
        &["--install", dist.join(deb_name()).to_str().unwrap()],
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("will remove retry in favour of"),
        "{output:?}"
    );
    let status = text(&dpkg(root.path(), &["--status", NAME]));
    assert!(status.contains("Status: install ok installed"), "{status}");
    let theirs_now = Command::new("dpkg")
        .arg(format!("--root={}", root.path().display()))
        .args(["--status", "retry"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&theirs_now.stdout).contains("Status: deinstall ok config-files")
            || !theirs_now.status.success(),
        "Debian's retry is removed: {theirs_now:?}"
    );
    let mut command = in_root(
        root.path(),
        &["/usr/bin/retry".to_string()],
        &["--version"],
        &[],
    );
    command
        .assert()
        .code(0)
        .stdout(format!("retry {VERSION} ({NAME})\n"));
    let manual = text(&run(
        "zcat",
        &[root
            .path()
            .join("usr/share/man/man1/retry.1.gz")
            .to_str()
            .unwrap()],
    ));
    assert!(manual.contains(NAME), "the man page is ours");
}

/// lintian finds no error in the .deb, and every warning it would give is overridden in the
/// package with a comment that says why it is kept.
#[test]
fn lintian_finds_no_error_and_every_kept_warning_is_explained() {
    lintian_finds_no_error_and_every_kept_warning_is_explained_in(&X86_64);
}

#[test]
fn lintian_finds_no_error_in_the_arm64_deb_and_every_kept_warning_is_explained() {
    lintian_finds_no_error_and_every_kept_warning_is_explained_in(&ARM64);
}

/// An override may name the architectures it is for (`[amd64]: tag`); each must still be given
/// by lintian on the .deb of every architecture it names.
fn lintian_finds_no_error_and_every_kept_warning_is_explained_in(arch: &Arch) {
    let Some(dist) = arch.dist("the .deb under lintian") else {
        return;
    };
    let deb = dist.join(arch.deb_name());
    let lintian = |flags: &[&str]| {
        let output = Command::new("lintian").args(flags).arg(&deb).output();
        match output {
            Ok(output) => Some(text(&output)),
            Err(_) => {
                missing("lintian", "the .deb under lintian");
                None
            }
        }
    };
    let Some(unfiltered) = lintian(&["--pedantic", "--no-override"]) else {
        return;
    };
    let errors: Vec<&str> = unfiltered.lines().filter(|l| l.starts_with("E:")).collect();
    assert!(errors.is_empty(), "lintian errors: {errors:?}");
    let kept = lintian(&["--pedantic"]).unwrap();
    let flagged: Vec<&str> = kept
        .lines()
        .filter(|line| line.starts_with("E:") || line.starts_with("W:") || line.starts_with("I:"))
        .collect();
    assert!(flagged.is_empty(), "explain or fix: {flagged:?}");

    let overrides =
        fs::read_to_string(Path::new(ROOT).join("packaging/deb/lintian-overrides")).unwrap();
    let mut explained = false;
    for line in overrides.lines() {
        if line.starts_with('#') {
            explained = true;
        } else if !line.trim().is_empty() {
            assert!(explained, "no comment says why {line} is kept");
            explained = false;
            let (arches, rest) = match line.strip_prefix('[') {
                Some(qualified) => qualified.split_once("]:").expect("[ARCH...]: TAG"),
                None => (arch.deb_arch, line),
            };
            if !arches.split_whitespace().any(|name| name == arch.deb_arch) {
                continue;
            }
            let tag = rest.split_whitespace().next().unwrap();
            assert!(
                unfiltered.contains(&format!(": {tag}")),
                "{tag} is overridden but lintian no longer gives it: drop the override"
            );
        }
    }
}

/// The .deb's files, unpacked without installing.
fn deb_contents(dist: &Path) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    run(
        "dpkg-deb",
        &[
            "--extract",
            dist.join(deb_name()).to_str().unwrap(),
            dir.path().to_str().unwrap(),
        ],
    );
    dir
}

#[test]
fn the_debs_man_page_renders() {
    let Some(dist) = dist("the .deb's man page") else {
        return;
    };
    let contents = deb_contents(&dist);
    let page = contents.path().join("usr/share/man/man1/retry.1.gz");
    let Some(output) = render_man(&page, "the .deb's man page") else {
        return;
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "{stderr}"
    );
    assert!(
        text(&output).contains("--max-time"),
        "the options are there"
    );
}

/// bash-completion loads /usr/share/bash-completion/completions/retry when `retry` is first
/// completed: the function it registers completes `--max-t` to `--max-time`.
#[test]
fn the_debs_bash_completion_completes_a_long_flag() {
    let Some(dist) = dist("the .deb's bash completion") else {
        return;
    };
    let contents = deb_contents(&dist);
    let script = contents
        .path()
        .join("usr/share/bash-completion/completions/retry");
    let program = format!(
        r#"source '{}'
function=$(complete -p retry | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
COMP_WORDS=(retry --max-t)
COMP_CWORD=1
COMP_LINE='retry --max-t'
COMP_POINT=${{#COMP_LINE}}
"$function" retry --max-t retry
printf '%s\n' "${{COMPREPLY[@]}}""#,
        script.display()
    );
    let output = Command::new("bash")
        .args(["--norc", "-c", &program])
        .output()
        .expect("bash");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        text(&output).split_whitespace().collect::<Vec<_>>(),
        ["--max-time"]
    );
}

/// The README's lines that install the man page and the completions from the unpacked tarball
/// put each where its reader looks: run as written (without `sudo`, into a private prefix, from
/// a folder laid out as the tarball is: the repository's `man/` and `completions/`, which
/// `the_tarball_holds_one_folder_of_the_binary_manual_completions_and_licences` holds the
/// tarball's to), man finds the page, zsh's compinit the function, fish the completions.
#[test]
fn the_readmes_install_lines_put_the_manual_and_completions_where_they_are_found() {
    const README: &str = include_str!("../../README.md");
    let block: Vec<&str> = README
        .lines()
        .skip_while(|line| *line != "    S=/usr/local/share")
        .take_while(|line| line.starts_with("    "))
        .collect();
    assert!(
        block.len() > 1,
        "no install lines starting S=/usr/local/share in the README"
    );
    let prefix = tempfile::tempdir().unwrap();
    let share = prefix.path().join("share");
    let script = format!(
        "T='{ROOT}'\nS='{}'\n{}",
        share.display(),
        block[1..]
            .iter()
            .map(|line| line.trim().strip_prefix("sudo ").unwrap_or(line.trim()))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let output = Command::new("sh").args(["-ec", &script]).output().unwrap();
    assert!(output.status.success(), "{script}\n{output:?}");
    for (installed, committed) in [
        ("man/man1/retry.1", "man/retry.1"),
        (
            "bash-completion/completions/retry",
            "completions/retry.bash",
        ),
        ("zsh/site-functions/_retry", "completions/_retry"),
        (
            "fish/vendor_completions.d/retry.fish",
            "completions/retry.fish",
        ),
    ] {
        assert_eq!(
            fs::read(share.join(installed)).ok(),
            fs::read(Path::new(ROOT).join(committed)).ok(),
            "{installed}"
        );
    }
    let run = |program: &str, args: &[&str], env: &[(&str, &Path)]| {
        let output = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .env("HOME", prefix.path())
            .env_remove("XDG_CONFIG_HOME")
            .output();
        match output {
            Ok(output) => Some(text(&output)),
            Err(_) => {
                missing(program, "that it finds what the README installs");
                None
            }
        }
    };
    let man = share.join("man");
    if let Some(found) = run("man", &["-M", man.to_str().unwrap(), "-w", "retry"], &[]) {
        assert_eq!(
            found.trim(),
            share.join("man/man1/retry.1").to_str().unwrap()
        );
    }
    let zsh = format!(
        "fpath=('{}/zsh/site-functions' $fpath); autoload -Uz compinit; compinit -u -d '{}/dump'; print -r -- ${{_comps[retry]}}",
        share.display(),
        prefix.path().display()
    );
    if let Some(function) = run("zsh", &["-f", "-c", &zsh], &[]) {
        assert_eq!(function.trim(), "_retry");
    }
    // fish loads a command's completions from its vendor folders once the command is on PATH.
    let path = format!(
        "{}:{}",
        Path::new(BIN).parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let fish = run(
        "fish",
        &["-c", "complete -C 'retry --attem'"],
        &[("XDG_DATA_DIRS", &share), ("PATH", Path::new(&path))],
    );
    if let Some(candidates) = fish {
        assert!(candidates.starts_with("--attempts\t"), "{candidates:?}");
    }
}

/// The release workflow's build runs other people's code (rustup's installer, apt, every crate's
/// build script): it gets a read-only token that its checkout does not keep, and only the job
/// that publishes may write.
#[test]
fn only_the_publishing_job_may_write() {
    let workflow =
        fs::read_to_string(Path::new(ROOT).join(".github/workflows/release.yml")).unwrap();
    let (top, jobs) = workflow.split_once("\njobs:\n").unwrap();
    assert!(top.ends_with("permissions:\n  contents: read"), "{top}");
    let (dist, release) = jobs.split_once("\n  release:\n").unwrap();
    assert!(!dist.contains("write"), "{dist}");
    assert!(release.contains("contents: write"), "{release}");
    let checkouts = workflow.matches("uses: actions/checkout@").count();
    assert_eq!(
        workflow.matches("persist-credentials: false").count(),
        checkouts,
        "every checkout drops its token"
    );
}
