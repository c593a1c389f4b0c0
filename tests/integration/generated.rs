//! The shell completions and the man page are generated from the one clap definition and
//! committed; this test fails when they are stale. Rewrite them with:
//!
//!     UPDATE_GENERATED=1 cargo nextest run generated

use std::path::Path;

use clap::CommandFactory;
use clap_complete::{Shell, generate};
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};
use retry::cli::Cli;

use crate::support::{missing, render_man};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn completions() -> Vec<(String, Vec<u8>)> {
    [
        (Shell::Bash, "completions/retry.bash"),
        (Shell::Zsh, "completions/_retry"),
        (Shell::Fish, "completions/retry.fish"),
        (Shell::PowerShell, "completions/_retry.ps1"),
        (Shell::Elvish, "completions/retry.elv"),
    ]
    .into_iter()
    .map(|(shell, path)| {
        let mut out = Vec::new();
        generate(shell, &mut Cli::command(), "retry", &mut out);
        match shell {
            Shell::Bash => out.extend_from_slice(bash_command_completion().as_bytes()),
            Shell::Fish => out = fish_with_command_completion(&out),
            Shell::Zsh => out = zsh_with_command_completion(&out),
            Shell::Elvish => out = elvish_with_command_completion(&out),
            _ => {}
        }
        (path.to_string(), out)
    })
    .collect()
}

/// The options that take a value, each spelling: `-r`, `--retries`, ...
fn options_with_values() -> Vec<String> {
    let command = Cli::command();
    let mut with_values = Vec::new();
    for arg in command.get_arguments() {
        if !arg.get_action().takes_values() || arg.is_positional() {
            continue;
        }
        with_values.extend(arg.get_short().map(|short| format!("-{short}")));
        with_values.extend(arg.get_long().map(|long| format!("--{long}")));
    }
    with_values
}

/// A regular expression for a cluster of short options whose last letter takes the next word
/// as its value (`-qr 3`): letters that take none, then one that does.
fn short_cluster_taking_a_value() -> String {
    let mut command = Cli::command();
    command.build();
    let (mut flags, mut valued) = (String::new(), String::new());
    for arg in command.get_arguments() {
        if let Some(short) = arg.get_short() {
            if arg.get_action().takes_values() {
                valued.push(short);
            } else {
                flags.push(short);
            }
        }
    }
    format!("^-[{flags}]*[{valued}]$")
}

/// clap's fish completion knows `retry`'s options but not that COMMAND is a command of its
/// own: its lines now hold only before COMMAND, and from COMMAND on the words complete as
/// that command's own (fish's `__fish_complete_subcommand`, as for sudo).
fn fish_with_command_completion(clap_lines: &[u8]) -> Vec<u8> {
    let clap_lines = String::from_utf8(clap_lines.to_vec()).unwrap();
    let before_command = "complete -c retry -n 'not __fish_retry_command >/dev/null' ";
    let mut out = clap_lines.replace("complete -c retry ", before_command);
    let with_values = options_with_values().join(" ");
    let cluster = short_cluster_taking_a_value();
    out.push_str(&format!(
        r#"
# COMMAND and its arguments complete as that command would: __fish_retry_command prints the
# words from COMMAND on (the one under the cursor last), or fails before COMMAND.
function __fish_retry_command
    set -l words (commandline -opc)
    set -e words[1]
    while set -q words[1]
        if string match -qr -- '{cluster}' $words[1]
            set -e words[1..2]
            continue
        end
        switch $words[1]
            case --
                set -e words[1]
                break
            case {with_values}
                set -e words[1..2]
                continue
            case '-*'
                set -e words[1]
                continue
        end
        break
    end
    set -l current (commandline -ct)
    if not set -q words[1]
        # The word under the cursor: an option, an option's value, or COMMAND itself.
        set -l before (commandline -opc)[-1]
        if string match -q -- '-*' $current; and test "$before" != --
            return 1
        end
        if contains -- $before {with_values}; or string match -qr -- '{cluster}' $before
            return 1
        end
    end
    printf '%s
' $words $current
end
complete -c retry -n '__fish_retry_command >/dev/null' -f -a '(__fish_complete_subcommand --commandline (__fish_retry_command))'
"#
    ));
    out.into_bytes()
}

/// clap's zsh completion hands COMMAND and its words to `_cmdambivalent`, but zsh's
/// `_arguments` leaves a `--` that directly follows `retry` among those words, and then
/// `retry -- gi` completes nothing: a wrapper drops that `--` first.
fn zsh_with_command_completion(clap_lines: &[u8]) -> Vec<u8> {
    let clap_lines = String::from_utf8(clap_lines.to_vec()).unwrap();
    let wrapper = r#"(( $+functions[_retry_command_line] )) ||
_retry_command_line() {
    if [[ $words[1] == -- ]]; then
        shift words
        (( CURRENT-- ))
    fi
    _cmdambivalent
}

if [ "$funcstack[1]" = "_retry" ]; then"#;
    let out = clap_lines
        .replace(":_cmdambivalent' \\", ":_retry_command_line' \\")
        .replace("if [ \"$funcstack[1]\" = \"_retry\" ]; then", wrapper);
    assert_ne!(out, clap_lines, "clap's zsh script changed its shape");
    out.into_bytes()
}

/// clap's elvish completion knows `retry`'s options but not that COMMAND is a command of its
/// own (past COMMAND it fails with "no such key"): it becomes `retry-options`, used before
/// COMMAND, and from COMMAND on the words complete as that command's own
/// (`edit:complete-sudo`, as for sudo).
fn elvish_with_command_completion(clap_lines: &[u8]) -> Vec<u8> {
    let clap_lines = String::from_utf8(clap_lines.to_vec()).unwrap();
    let clap_completer = "set edit:completion:arg-completer[retry] = {|@words|";
    assert!(
        clap_lines.contains(clap_completer),
        "clap's elvish script changed its shape"
    );
    let mut out = clap_lines.replace(clap_completer, "var retry-options~ = {|@words|");
    let with_values: Vec<String> = options_with_values()
        .iter()
        .map(|option| format!("'{option}'"))
        .collect();
    out.push_str(&format!(
        r#"
use re

# COMMAND and its arguments complete as that command would: after `--`, or from the first word
# that is not an option or an option's value.
set edit:completion:arg-completer[retry] = {{|@words|
    var with-values = [{with_values}]
    var i = 1
    var last = (- (count $words) 1)
    while (< $i $last) {{
        var word = $words[$i]
        if (eq $word --) {{
            set i = (+ $i 1)
            break
        }} elif (or (has-value $with-values $word) (re:match '{cluster}' $word)) {{
            set i = (+ $i 2)
        }} elif (str:has-prefix $word -) {{
            set i = (+ $i 1)
        }} else {{
            break
        }}
    }}
    if (> $i $last) {{
        # The word under the cursor is an option's value.
    }} elif (and (str:has-prefix $words[$i] -) (not-eq $words[(- $i 1)] --)) {{
        retry-options $@words
    }} else {{
        # complete-sudo skips its first word, as it would skip `sudo`.
        var command-line = $words[(- $i 1)..]
        edit:complete-sudo $@command-line
    }}
}}
"#,
        with_values = with_values.join(" "),
        cluster = short_cluster_taking_a_value(),
    ));
    out.into_bytes()
}

/// clap's bash completion knows `retry`'s options but not that COMMAND is a command of its
/// own: this wrapper, generated from the same definition, completes COMMAND and its
/// arguments as that command would (bash-completion's `_command_offset`, as for sudo and
/// timeout; else command names, then files), after `--` or from the first word that is not
/// an option or an option's value.
fn bash_command_completion() -> String {
    let with_values = options_with_values();
    format!(
        r#"
# COMMAND and its arguments complete as that command would.
_retry_command() {{
    local i=1
    while ((i < COMP_CWORD)); do
        if [[ "${{COMP_WORDS[i]}}" =~ {cluster} ]]; then
            # Short options whose last takes the next word as its value (-qr 3).
            [[ "${{COMP_WORDS[i + 1]}}" == = ]] && ((i++))
            ((i += 2))
            continue
        fi
        case "${{COMP_WORDS[i]}}" in
            --)
                ((i++))
                break
                ;;
            {with_values})
                # Its value follows, after an `=` that bash splits off as a word of its own.
                [[ "${{COMP_WORDS[i + 1]}}" == = ]] && ((i++))
                ((i++))
                ;;
            -*) ;;
            *) break ;;
        esac
        ((i++))
    done
    # Past the cursor: it is on an option's value. At it: an option, unless after `--`.
    if ((i > COMP_CWORD)) || [[ "${{COMP_WORDS[i]}}" == -* && "${{COMP_WORDS[i - 1]}}" != -- ]]; then
        _retry "$@"
    elif declare -F _command_offset >/dev/null; then
        _command_offset "$i"
    elif ((i == COMP_CWORD)); then
        COMPREPLY=($(compgen -c -- "${{COMP_WORDS[i]}}"))
    else
        COMPREPLY=($(compgen -f -- "${{COMP_WORDS[COMP_CWORD]}}"))
    fi
}}
complete -F _retry_command -o bashdefault -o default retry
"#,
        with_values = with_values.join("|"),
        cluster = short_cluster_taking_a_value(),
    )
}

/// The man page: the sections generated from the command-line definition, then the
/// hand-written ones of `man/sections.toml`.
fn man_page() -> Vec<u8> {
    let man = Man::new(Cli::command()).manual("User Commands");
    let mut out = Vec::new();
    man.render_title(&mut out).unwrap();
    man.render_name_section(&mut out).unwrap();
    man.render_synopsis_section(&mut out).unwrap();
    man.render_description_section(&mut out).unwrap();
    man.render_options_section(&mut out).unwrap();
    let source = std::fs::read_to_string(Path::new(ROOT).join("man/sections.toml")).unwrap();
    let table: toml::Table = source.parse().expect("man/sections.toml is TOML");
    let pairs = |section: &toml::Table, key: &str| -> Vec<(String, String)> {
        section.get(key).map_or_else(Vec::new, |list| {
            let list = list.as_array().expect("a list");
            list.iter()
                .map(|pair| match pair.as_array().map(Vec::as_slice) {
                    Some([first, second]) => (
                        first.as_str().unwrap().to_string(),
                        second.as_str().unwrap().to_string(),
                    ),
                    _ => panic!("{key}: a pair of strings, not {pair}"),
                })
                .collect()
        })
    };
    for section in table["section"].as_array().expect("[[section]] tables") {
        let section = section.as_table().unwrap();
        let mut roff = Roff::new();
        roff.control("SH", [section["title"].as_str().unwrap()]);
        for (tag, text) in pairs(section, "items") {
            roff.control("TP", []).text([bold(tag)]).text([roman(text)]);
        }
        for (what, example) in pairs(section, "examples") {
            roff.control("PP", []).text([roman(what)]);
            roff.control("IP", []).text([italic(example)]);
        }
        if let Some(after) = section.get("after") {
            roff.control("PP", [])
                .text([roman(after.as_str().unwrap())]);
        }
        roff.to_writer(&mut out).unwrap();
    }
    man.render_version_section(&mut out).unwrap();
    out
}

#[test]
fn completions_and_man_page_are_current() {
    let mut files = completions();
    files.push(("man/retry.1".to_string(), man_page()));
    let update = std::env::var_os("UPDATE_GENERATED").is_some();
    let mut stale = Vec::new();
    for (path, content) in files {
        let full = Path::new(ROOT).join(&path);
        if update {
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, &content).unwrap();
        } else if std::fs::read(&full).ok().as_deref() != Some(content.as_slice()) {
            stale.push(path);
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files {stale:?}: run UPDATE_GENERATED=1 cargo nextest run generated"
    );
}

#[test]
fn the_man_page_renders_without_warnings() {
    let page = Path::new(ROOT).join("man/retry.1");
    let Some(output) = render_man(&page, "the rendering of the man page") else {
        return;
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "man warnings: {stderr}");
    // Bold and underline may come as overstrikes ("N\x08N"): keep the last of each pair.
    let raw = String::from_utf8_lossy(&output.stdout);
    let mut text = String::new();
    for c in raw.chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    for heading in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "EXIT STATUS",
        "SIGNALS",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
    ] {
        assert!(
            text.lines().any(|l| l.trim_end() == heading),
            "no {heading} section"
        );
    }
    assert!(text.contains("--until-stdout"), "options are listed");
}

/// Completion offers what a value can be: file names only for the files retry reads or writes
/// (`--config`, `--metrics-file`, `--report`), commands for the
/// hooks and COMMAND, the listed values where there is a list, and nothing for durations,
/// codes, patterns and numbers (where a file name would only mislead).
#[test]
fn completion_offers_file_names_only_where_a_file_goes() {
    use clap::ValueHint;
    let command = Cli::command();
    for arg in command.get_arguments() {
        // A value with a list completes from the list, whatever the hint.
        if !arg.get_action().takes_values() || !arg.get_possible_values().is_empty() {
            continue;
        }
        let name = arg.get_id().as_str();
        let hint = arg.get_value_hint();
        let expected = match name {
            "config" | "metrics_file" | "report" => ValueHint::FilePath,
            "state" => ValueHint::DirPath,
            "on_retry" | "on_failure" | "on_success" => ValueHint::CommandString,
            "command" => ValueHint::CommandWithArguments,
            _ => ValueHint::Other,
        };
        assert_eq!(hint, expected, "{name}");
    }
    let zsh = std::fs::read_to_string(Path::new(ROOT).join("completions/_retry")).unwrap();
    assert!(zsh.contains(":FILE:_files"), "--config completes files");
    assert!(
        zsh.contains(":_retry_command_line") && zsh.contains("    _cmdambivalent\n"),
        "COMMAND completes commands"
    );
    assert!(
        !zsh.contains(":DUR:_default"),
        "a duration completes no files"
    );
}

/// What bash completes for the words `line` (the last one under the cursor), with the
/// committed completion script, and with a stand-in for bash-completion's `_command_offset`
/// when `offset_helper`.
fn bash_completes(line: &[&str], offset_helper: bool) -> Vec<String> {
    let script = Path::new(ROOT).join("completions/retry.bash");
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let helper = if offset_helper {
        r#"_command_offset() { COMPREPLY=("offset:$1"); }"#
    } else {
        ""
    };
    let program = format!(
        r#"source '{}'
{helper}
COMP_WORDS=({})
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
compopt() {{ :; }}
_retry_command retry "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD - 1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        script.display(),
        words.join(" ")
    );
    let output = std::process::Command::new("bash")
        .args(["--norc", "-c", &program])
        .output()
        .expect("bash");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_the_command_as_that_command_would() {
    let offset = |line: &[&str]| bash_completes(line, true);
    assert_eq!(offset(&["retry", "--", "ec"]), ["offset:2"]);
    assert_eq!(offset(&["retry", "--base", "1s", "ec"]), ["offset:3"]);
    assert_eq!(offset(&["retry", "--base", "=", "1s", "ec"]), ["offset:4"]);
    assert_eq!(offset(&["retry", "-q", "curl", "-"]), ["offset:2"]);
    assert_eq!(offset(&["retry", "-qr", "3", "ec"]), ["offset:3"]);
    assert_eq!(offset(&["retry", "-r3", "ec"]), ["offset:2"]);
    assert_eq!(offset(&["retry", "-q", "--", "-x"]), ["offset:3"]);
    // Options and their values are still retry's.
    assert!(offset(&["retry", "--ba"]).contains(&"--base".to_string()));
    assert!(offset(&["retry", "-q", "--"]).contains(&"--quiet".to_string()));
    assert_eq!(
        offset(&["retry", "--stdin", ""]),
        ["auto", "replay", "inherit", "null"]
    );
    assert!(
        !offset(&["retry", "--base", ""])
            .iter()
            .any(|w| w.starts_with("offset:"))
    );
    // Without bash-completion: command names, then files.
    assert!(bash_completes(&["retry", "--", "ech"], false).contains(&"echo".to_string()));
    assert!(
        bash_completes(&["retry", "true", "Cargo.t"], false).contains(&"Cargo.toml".to_string())
    );
}

/// `--jitter` and `--kill-signal` take values no list holds (`0.2`, `+1s`, `9`), but their
/// named forms are offered.
#[test]
fn the_named_jitter_kinds_and_signals_are_offered() {
    let bash = |line: &[&str]| bash_completes(line, true);
    assert_eq!(
        bash(&["retry", "--jitter", ""]),
        ["none", "full", "equal", "decorrelated"]
    );
    assert_eq!(bash(&["retry", "--jitter", "de"]), ["decorrelated"]);
    assert_eq!(bash(&["retry", "--kill-signal", "U"]), ["USR1", "USR2"]);
    if let Some(fish) = fish_completes("retry --kill-signal ") {
        // fish sorts them.
        assert_eq!(fish, ["HUP", "INT", "KILL", "QUIT", "TERM", "USR1", "USR2"]);
    }
    // Other values still parse.
    crate::support::retry()
        .args(["--jitter", "+1s", "--kill-signal", "9", "--dry-run", "true"])
        .assert()
        .code(0);
}

/// What fish completes for `line`, with the committed completion script; `None` where fish is
/// not installed (`.ci/run` installs it).
fn fish_completes(line: &str) -> Option<Vec<String>> {
    let script = Path::new(ROOT).join("completions/retry.fish");
    let home = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("fish")
        .env("HOME", home.path())
        .env_remove("XDG_CONFIG_HOME")
        .args([
            "-c",
            &format!("source '{}'; complete -C '{line}'", script.display()),
        ])
        .output()
        .ok()?;
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    // Each line is a candidate, then a tab and its description.
    Some(
        text.lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect(),
    )
}

#[test]
fn fish_completes_the_command_as_that_command_would() {
    if fish_completes("retry --ba").is_none() {
        missing("fish", "its completion");
        return;
    }
    let complete = |line: &str| fish_completes(line).unwrap();
    assert_command_completion("fish", |lines| lines.iter().map(|l| complete(l)).collect());
    assert!(complete("retry --stdin ").contains(&"replay".to_string()));
    assert!(
        complete("retry -- ls --colo").contains(&"--color".to_string()),
        "the command's own options, from its own completion"
    );
    assert!(
        complete("retry --base=1s ls --col").contains(&"--color".to_string()),
        "past an --option=value"
    );
    assert!(
        !complete("retry -qr ").contains(&"echo".to_string()),
        "a short cluster's value is not COMMAND"
    );
}

/// What zsh completes for each of `lines` with the committed completion script, read from a
/// pseudo-terminal (`zpty`) with `compadd` wrapped to print each candidate as `<<word>>`;
/// `None` where zsh is not installed (`.ci/run` installs it).
fn zsh_completes(lines: &[&str]) -> Option<Vec<Vec<String>>> {
    // TAB completes the word, then prints \x01 after the candidates and empties the line; the
    // next line is typed only once that mark is read (zsh skips work when keys are waiting).
    // RE""ADY is typed so that the terminal's echo of the typing does not match READY.
    const DRIVER: &str = r#"
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PROMPT=; fpath=(${(q)1} \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z 'compadd() { local -a hits; builtin compadd -O hits "$@"; print -rl -- "<<${^hits[@]}>>"; builtin compadd "$@"; }'
zpty -w z 'complete-and-mark() { zle complete-word; print -rn -- $'"'"'\x01'"'"'; BUFFER=; }'
zpty -w z 'zle -N complete-and-mark; bindkey "^I" complete-and-mark; setopt nobeep; print RE""ADY'
zpty -r z ignored '*READY*' || exit 4
for line in "${@:2}"; do
    zpty -w -n z "$line"$'\t'
    zpty -r z out $'*\x01*' || exit 5
    print -r -- "$out"
done
zpty -d z
"#;
    let home = tempfile::tempdir().unwrap();
    let completions = Path::new(ROOT).join("completions");
    let mut command = assert_cmd::Command::new("zsh");
    command
        .env("HOME", home.path())
        .env("TERM", "dumb")
        .args(["-f", "-c", DRIVER, "zsh"])
        .arg(&completions)
        .args(lines)
        .timeout(crate::support::BOUND);
    let output = match command.output() {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => panic!("zsh: {error}"),
    };
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let answers: Vec<Vec<String>> = text
        .split('\u{1}')
        .take(lines.len())
        .map(|answer| {
            let mut words: Vec<String> = answer
                .split("<<")
                .skip(1)
                .filter_map(|rest| rest.split_once(">>").map(|(word, _)| word.to_string()))
                .collect();
            words.sort();
            words.dedup();
            words
        })
        .collect();
    assert_eq!(answers.len(), lines.len(), "{text}");
    Some(answers)
}

#[test]
fn zsh_completes_the_command_as_that_command_would() {
    let Some(stdin) = zsh_completes(&["retry --stdin "]) else {
        missing("zsh", "its completion");
        return;
    };
    assert_eq!(stdin[0], ["auto", "inherit", "null", "replay"]);
    let ls = zsh_completes(&["retry -- ls --colo"]).unwrap();
    assert!(
        ls[0].contains(&"--color".to_string()),
        "the command's own options, from its own completion: {ls:?}"
    );
    assert_command_completion("zsh", |lines| zsh_completes(lines).unwrap());
}

/// What elvish completes for each of `lines` with the committed completion script, filtered by
/// the word under the cursor as elvish's prefix matcher does; `None` where elvish is not
/// installed (`.ci/run` installs it). The completer needs elvish's line editor, so elvish runs
/// under a pseudo-terminal.
fn elvish_completes(lines: &[&str]) -> Option<Vec<Vec<String>>> {
    let r = crate::support::retry();
    let dir = &r.dir;
    let mut script = String::from(
        r#"use str
fn show {|@words|
    echo "\x01"
    $edit:completion:arg-completer[retry] $@words | each {|c|
        if (eq (kind-of $c) string) { echo "\x02"$c } else { echo "\x02"$c[stem] }
    }
}
"#,
    );
    for line in lines {
        let words: Vec<String> = line.split(' ').map(|w| format!("'{w}'")).collect();
        script.push_str(&format!("show {}\n", words.join(" ")));
    }
    let test = dir.path().join("test.elv");
    std::fs::write(&test, script).unwrap();
    let completions = Path::new(ROOT).join("completions/retry.elv");
    // File names are completed from the crate's root, as the other shells' tests do.
    let keys = format!(
        "cd '{ROOT}'\neval (slurp < '{}')\neval (slurp < '{}')\nexit\n",
        completions.display(),
        test.display()
    );
    let screen = crate::support::under_pty(
        &r,
        &["elvish", "-norc"],
        &[("", &keys)],
        &[("HOME", dir.path().to_str().unwrap()), ("TERM", "dumb")],
    )?;
    assert!(!screen.contains("Exception"), "{screen}");
    let answers: Vec<Vec<String>> = screen
        .split('\u{1}')
        .skip(1)
        .zip(lines)
        .map(|(answer, line)| {
            let under_cursor = line.rsplit(' ').next().unwrap();
            let mut words: Vec<String> = answer
                .lines()
                .filter_map(|l| l.strip_prefix('\u{2}'))
                .map(|w| w.trim_end().to_string())
                .filter(|w| w.starts_with(under_cursor))
                .collect();
            words.sort();
            words.dedup();
            words
        })
        .collect();
    assert_eq!(answers.len(), lines.len(), "{screen}");
    Some(answers)
}

#[test]
fn elvish_completes_the_command_as_that_command_would() {
    // clap's own script threw "no such key: 'retry;curl'" on the first; elvish_completes
    // fails on any exception.
    let Some(extra) = elvish_completes(&["retry curl -", "retry -q -- --bas"]) else {
        missing("elvish", "its completion");
        return;
    };
    assert!(
        extra[1].is_empty(),
        "no retry option after --: {:?}",
        extra[1]
    );
    assert_command_completion("elvish", |lines| elvish_completes(lines).unwrap());
}

/// How COMMAND completes in every shell the tests drive: `retry`'s own options before it, and
/// from it on (after `--`, or past the options and their values) as that command's own words.
/// Each case: the line (the last word under the cursor), a word, whether it is offered, why.
const COMMAND_COMPLETION: [(&str, &str, bool, &str); 9] = [
    ("retry --bas", "--base", true, "retry's own options"),
    (
        "retry ech",
        "echo",
        true,
        "COMMAND completes as a command name",
    ),
    ("retry -- ech", "echo", true, "right after --, too"),
    ("retry -q -- ech", "echo", true, "after options and --"),
    (
        "retry --base 1s ech",
        "echo",
        true,
        "past an option's value",
    ),
    (
        "retry -qr 3 ech",
        "echo",
        true,
        "past a short cluster's value",
    ),
    (
        "retry --base 1s ls Cargo.t",
        "Cargo.toml",
        true,
        "the command's own arguments",
    ),
    (
        "retry -q ls --bas",
        "--base",
        false,
        "no retry option inside COMMAND",
    ),
    (
        "retry --base ech",
        "echo",
        false,
        "an option's value is not COMMAND",
    ),
];

/// Checks `COMMAND_COMPLETION` against what `complete` offers for each line, in order.
fn assert_command_completion(shell: &str, complete: impl FnOnce(&[&str]) -> Vec<Vec<String>>) {
    let lines: Vec<&str> = COMMAND_COMPLETION.iter().map(|case| case.0).collect();
    let answers = complete(&lines);
    assert_eq!(answers.len(), lines.len(), "{shell}");
    for ((line, word, offered, why), answer) in COMMAND_COMPLETION.iter().zip(&answers) {
        assert_eq!(
            answer.contains(&word.to_string()),
            *offered,
            "{shell}, {line:?}: {why}; offered {answer:?}"
        );
    }
}

/// The flags the first column of the guide's table of options names, each with the short
/// form written beside it: `-r, --retries N`, `--until-stdout REGEX` / `--until-stderr REGEX`.
fn flags_in_the_guides_table() -> Vec<(String, Option<char>)> {
    let guide = std::fs::read_to_string(Path::new(ROOT).join("docs/guide.md")).unwrap();
    let start = guide
        .find("\n## The options\n")
        .expect("the guide's table of options");
    let mut flags = Vec::new();
    for row in guide[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
    {
        let first = row[1..].split(" | ").next().unwrap();
        for span in first.split('`').skip(1).step_by(2) {
            let mut short = None;
            for word in span.split([' ', ',']) {
                if let Some(long) = word.strip_prefix("--") {
                    flags.push((long.to_string(), short.take()));
                } else if let Some(letter) = word.strip_prefix('-') {
                    short = letter.chars().next();
                }
            }
        }
    }
    flags
}

/// The guide's table of options is held to the command-line definition, whatever flags it
/// grows: every long flag `--help` shows is in the table, with its short form if it has one,
/// and the table names no flag that `retry` does not have, nor a short form a flag does not
/// have. A hidden flag (`hide = true`) need not be listed, as `--help` does not list it; it
/// may be, being a flag.
#[test]
fn the_guides_table_of_options_lists_every_flag() {
    let mut command = Cli::command();
    command.build();
    let table = flags_in_the_guides_table();
    let mut wrong = Vec::new();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let shown = table.iter().find(|(name, _)| name == long);
        match shown {
            None if !arg.is_hide_set() => wrong.push(format!("--{long} is not in the table")),
            Some((_, short)) if *short != arg.get_short() => wrong.push(format!(
                "--{long}: the table gives {short:?} as its short form, retry {:?}",
                arg.get_short()
            )),
            _ => {}
        }
    }
    for (long, _) in &table {
        let known = command.get_arguments().any(|arg| {
            arg.get_long() == Some(long)
                || arg
                    .get_all_aliases()
                    .is_some_and(|aliases| aliases.contains(&long.as_str()))
        });
        if !known {
            wrong.push(format!(
                "the table lists --{long}, which retry does not have"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/guide.md, \"The options\": {wrong:#?}"
    );
}
