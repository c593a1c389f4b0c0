//! The configuration file: `[defaults]` and `[profile.NAME]` tables whose keys are the long
//! flag names, turned into command-line arguments.
//!
//! There is one definition of the settings, the clap command: a key is valid exactly when it is
//! a configurable flag, and its value is checked by that flag's own parser. So a new flag is a new
//! key with nothing else to write, and the file can never accept what the command line refuses.
//!
//! Pure: this module takes the file's name and text (and the home directory a path's `~` stands
//! for), never a path to open. Discovery and reading are in `config_file.rs`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use clap::CommandFactory;
use clap::parser::ValueSource;
use toml::de::{DeTable, DeValue};

use crate::cli::Cli;
use crate::debian;
use crate::dirs::{home_expanded, home_expanded_text};
use crate::parse::suggestion;
use crate::settings::HookKind;

/// Flags that are about this invocation, not about how to retry: they have no key.
const NOT_KEYS: &[&str] = &[
    "help",
    "version",
    "config",
    "profile",
    "dry-run",
    "show-state",
    "reset-state",
];

/// Keys that spell one setting several ways: a layer that sets one replaces the others from
/// lower layers, and one table may not set two of them.
const GROUPS: &[&[&str]] = &[&["retries", "attempts", "forever"], &["quiet", "verbose"]];

/// Keys that give one setting two ways: the delay schedule as a list or as the curve's keys
/// (which go together), the time limit as a list or as one value. A layer that sets one side
/// replaces the other side of lower layers, and one table may not set both; the last word says
/// why.
const RIVALS: &[(&str, &[&str], &str)] = &[
    (
        "delays",
        &["backoff", "base", "multiplier"],
        "a list of delays replaces the backoff curve",
    ),
    (
        "timeouts",
        &["timeout"],
        "a list of time limits replaces the one limit",
    ),
];

/// Every key a configuration file accepts, in the order of `--help`.
pub fn keys() -> Vec<String> {
    keys_of(&Cli::command())
}

fn keys_of(command: &clap::Command) -> Vec<String> {
    command
        .get_arguments()
        .filter_map(|arg| arg.get_long())
        // Debian's options are for command lines written for Debian's tool: a file written
        // for this one says the same in its own keys.
        .filter(|long| !NOT_KEYS.contains(long) && !debian::OPTIONS.contains(long))
        .map(str::to_string)
        .collect()
}

/// One key of one table, spelled as command-line arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyArgs {
    key: String,
    /// `["--base", "1s"]`, `["--invert"]`, or nothing for a flag set to false.
    args: Vec<OsString>,
    /// Where the key is written in the file, as a byte offset.
    key_offset: usize,
    /// `FILE:LINE` of the value, for a key that takes one.
    value_at: Option<String>,
    /// The table it is in: `[defaults]`, `[profile.NAME]`.
    table: String,
}

/// The keys whose value is a path `retry` writes: there, as in git's and ssh's files, a
/// leading `~` is the home directory, which no shell expands in a file (and `./~` would
/// otherwise be made wherever the run starts).
const PATH_KEYS: &[&str] = &["state", "metrics-file", "report"];

impl KeyArgs {
    /// The entry's arguments, with a path's leading `~` (alone or before `/`) read as `home`.
    fn arguments(&self, home: Option<&Path>) -> Result<Vec<OsString>, ConfigError> {
        let [flag, value] = self.args.as_slice() else {
            return Ok(self.args.clone());
        };
        if !PATH_KEYS.contains(&self.key.as_str()) {
            return Ok(self.args.clone());
        }
        let context = format!(
            "{}: key '{}' in {}",
            self.value_at.as_deref().unwrap_or_default(),
            self.key,
            self.table
        );
        let expanded = if self.key == "state" {
            home_expanded_text(value, home)
        } else {
            home_expanded(value, home)
        };
        let expanded = expanded.map_err(|why| ConfigError(format!("{context}: {why}")))?;
        Ok(vec![flag.clone(), expanded])
    }
}

/// What a key's value is, beyond what its flag's parser checks. Named here, key by key, and
/// never read off the help text, so that a change of wording cannot change what a file may
/// hold (a test holds this list to the flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueKind {
    /// A list of exit codes: an array, or a string like `"1,75-78"`.
    Codes,
    /// A list of durations: an array of strings and numbers, a string like `"0,2s,30s"`, or
    /// one number.
    Durations,
    /// Text only (a pattern, a command): a number there is a slip.
    Text,
    /// A string or a number.
    Scalar,
}

/// The keys whose value is a list of exit codes.
const CODE_KEYS: &[&str] = &["retry-on-exit", "stop-on-exit"];

/// The keys whose value is a pattern.
const PATTERN_KEYS: &[&str] = &[
    "until-stdout",
    "until-stderr",
    "retry-if-stdout",
    "retry-if-stderr",
    "stop-if-stdout",
    "stop-if-stderr",
    "retry-after-stdout",
    "retry-after-stderr",
];

impl ValueKind {
    fn of(key: &str) -> ValueKind {
        if CODE_KEYS.contains(&key) {
            ValueKind::Codes
        } else if ["delays", "timeouts"].contains(&key) {
            ValueKind::Durations
        } else if PATTERN_KEYS.contains(&key) || is_hook_key(key) {
            ValueKind::Text
        } else {
            ValueKind::Scalar
        }
    }
}

/// Whether `key`'s value is a command that `retry` runs (a hook): a file that sets one must be
/// the user's own (`hooks_refused`). Named by the hooks themselves, so no change to the help
/// text can turn that check off.
fn is_hook_key(key: &str) -> bool {
    HookKind::ALL
        .iter()
        .any(|kind| kind.flag().strip_prefix("--") == Some(key))
}

/// A validated configuration file.
#[derive(Debug, Default)]
pub struct ConfigFile {
    name: String,
    defaults: Vec<KeyArgs>,
    profiles: BTreeMap<String, Vec<KeyArgs>>,
    /// Some table sets a hook.
    hooks: bool,
}

/// A problem with the file, already worded as one line: `FILE:LINE: key 'KEY': what is wrong`.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl ConfigFile {
    /// The file's bytes as text. TOML is UTF-8; a stray byte (a file saved as Latin-1) is named
    /// by its line.
    pub fn text(name: &str, bytes: Vec<u8>) -> Result<String, ConfigError> {
        String::from_utf8(bytes).map_err(|error| {
            let valid = error.utf8_error().valid_up_to();
            ConfigError(format!(
                "{name}:{}: not UTF-8 text (byte {:#04x}); a TOML file must be UTF-8",
                line_of_bytes(error.as_bytes(), valid),
                error.as_bytes()[valid]
            ))
        })
    }

    /// Parses and validates the whole file, every profile included.
    pub fn parse(name: &str, text: &str) -> Result<ConfigFile, ConfigError> {
        let at = |offset: usize| format!("{name}:{}", line_of(text, offset));
        let document = DeTable::parse(text).map_err(|error| {
            let line = error.span().map_or(1, |span| line_of(text, span.start));
            let message = error
                .message()
                .lines()
                .next()
                .unwrap_or("invalid TOML")
                .trim();
            ConfigError(format!("{name}:{line}: TOML syntax error: {message}"))
        })?;
        let mut command = Cli::command();
        command.build();
        let keys = keys_of(&command);
        let mut file = ConfigFile {
            name: name.to_string(),
            ..ConfigFile::default()
        };
        for (top, value) in document.get_ref() {
            let where_ = at(top.span().start);
            match (top.get_ref().as_ref(), value.get_ref()) {
                ("defaults", DeValue::Table(table)) => {
                    file.defaults = table_entries(&mut command, table, "[defaults]", &keys, &at)?;
                }
                ("profile", DeValue::Table(profiles)) => {
                    for (profile, table) in profiles {
                        let label = format!("[profile.{}]", profile.get_ref());
                        let DeValue::Table(table) = table.get_ref() else {
                            return Err(ConfigError(format!(
                                "{}: {label} must be a table of settings",
                                at(profile.span().start)
                            )));
                        };
                        let entries = table_entries(&mut command, table, &label, &keys, &at)?;
                        file.profiles.insert(profile.get_ref().to_string(), entries);
                    }
                }
                ("defaults" | "profile", _) => {
                    return Err(ConfigError(format!(
                        "{where_}: '{}' must be a table",
                        top.get_ref()
                    )));
                }
                (other, _) => {
                    let hint = suggestion(other, &["defaults", "profile"])
                        .or_else(|| {
                            keys.iter()
                                .any(|k| k == other)
                                .then(|| "put it under [defaults] or [profile.NAME]".to_string())
                        })
                        .map_or(String::new(), |hint| format!("; {hint}"));
                    return Err(ConfigError(format!(
                        "{where_}: unknown key '{other}': the file holds [defaults] and [profile.NAME] tables{hint}"
                    )));
                }
            }
        }
        file.hooks = file
            .defaults
            .iter()
            .chain(file.profiles.values().flatten())
            .any(|entry| is_hook_key(&entry.key));
        Ok(file)
    }

    /// The arguments the file contributes for `profile`, ahead of the command line's own: the
    /// profile's settings over `[defaults]`, minus whatever `cli_keys` (keys given on the command
    /// line) replace; `home` is what a path's leading `~` stands for.
    pub fn arguments(
        &self,
        profile: Option<&str>,
        cli_keys: &[String],
        home: Option<&Path>,
    ) -> Result<Vec<OsString>, ConfigError> {
        let mut merged: Vec<KeyArgs> = self.defaults.clone();
        if let Some(profile) = profile {
            let entries = self.profiles.get(profile).ok_or_else(|| {
                let names: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
                let hint = match suggestion(profile, &names) {
                    Some(near) => format!("; {near}"),
                    None if names.is_empty() => "; the file has no [profile.NAME] table".into(),
                    None => {
                        let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
                        format!("; the file has {}", quoted.join(", "))
                    }
                };
                ConfigError(format!(
                    "{}: profile '{profile}' not found{hint}",
                    self.name
                ))
            })?;
            for entry in entries {
                merged.retain(|kept| !replaces(&entry.key, &kept.key));
                merged.push(entry.clone());
            }
        }
        merged.retain(|entry| !cli_keys.iter().any(|key| replaces(key, &entry.key)));
        let mut arguments = Vec::new();
        for entry in &merged {
            arguments.extend(entry.arguments(home)?);
        }
        Ok(arguments)
    }

    /// Whether any table, selected or not, sets a hook: a command that `retry` will run.
    pub fn has_hooks(&self) -> bool {
        self.hooks
    }
}

/// Why a file may not give hooks (`None`: it may), from its mode and owner and the user
/// running `retry`: a file of commands that someone else can write is someone else's commands. As ssh(1) asks of
/// its config: a regular file owned by the user or root, and not writable by others (group
/// write is allowed: many systems give each user a group of their own). Pipes are the user's.
pub fn hooks_refused(mode: u32, owner: u32, user: u32) -> Option<String> {
    const REGULAR: u32 = 0o100_000;
    const TYPE: u32 = 0o170_000;
    if mode & TYPE != REGULAR {
        return None;
    }
    if mode & 0o002 != 0 {
        return Some(format!("others can write it (mode {:04o})", mode & 0o7777));
    }
    (owner != user && owner != 0).then(|| format!("it belongs to another user (uid {owner})"))
}

/// The keys given on the command line, from clap's view of it (`matches`, its parse).
pub fn command_line_keys(matches: &clap::ArgMatches) -> Vec<String> {
    Cli::command()
        .get_arguments()
        .filter(|arg| matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine))
        .filter_map(|arg| arg.get_long())
        .flat_map(|long| std::iter::once(long.to_string()).chain(debian::keys_replaced(long)))
        .collect()
}

/// Whether setting `key` replaces a lower layer's `other`: the same key, one of its group, or
/// its rival.
fn replaces(key: &str, other: &str) -> bool {
    key == other
        || GROUPS
            .iter()
            .any(|group| group.contains(&key) && group.contains(&other))
        || rivals(key, other).is_some()
}

/// Why `key` and `other` give one setting two incompatible ways (`delays` and `base`), if
/// they do.
fn rivals(key: &str, other: &str) -> Option<&'static str> {
    RIVALS.iter().find_map(|(one, many, why)| {
        ((*one == key && many.contains(&other)) || (*one == other && many.contains(&key)))
            .then_some(*why)
    })
}

/// The entries of one table (`label`), each checked: a known key, one spelling of a setting,
/// a value of the right type that the flag's own parser accepts. `command` is `Cli`'s, built
/// once for the whole file (building it for each key cost about a millisecond per run with a
/// full file).
fn table_entries(
    command: &mut clap::Command,
    table: &DeTable<'_>,
    label: &str,
    keys: &[String],
    at: &dyn Fn(usize) -> String,
) -> Result<Vec<KeyArgs>, ConfigError> {
    let mut entries = Vec::new();
    for (key, value) in table {
        let name = key.get_ref().as_ref();
        check_known(
            name,
            keys,
            &format!("{}: unknown key '{name}' in {label}", at(key.span().start)),
        )?;
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(name))
            .expect("every key is a flag");
        let value_at = at(value.span().start);
        let context = format!("{value_at}: key '{name}' in {label}");
        let args = entry_args(arg, name, value.get_ref(), &context)?;
        let takes_value = arg.get_action().takes_values();
        entries.push(KeyArgs {
            key: name.to_string(),
            args,
            key_offset: key.span().start,
            value_at: takes_value.then_some(value_at),
            table: label.to_string(),
        });
    }
    check_one_spelling(&entries, label, at)?;
    check_values(command, &entries, label)?;
    Ok(entries)
}

/// Fails for a key that is no setting, with what was likely meant.
fn check_known(name: &str, keys: &[String], unknown: &str) -> Result<(), ConfigError> {
    if keys.iter().any(|k| k == name) {
        return Ok(());
    }
    let hint = if NOT_KEYS.contains(&name) {
        format!(": --{name} is about one invocation, so it is given on the command line only")
    } else if debian::OPTIONS.contains(&name) {
        let own = debian::keys_replaced(name);
        let own = match own.as_slice() {
            [key] => format!("; write '{key}' here"),
            _ => "; write 'retry-on-exit', 'until-stdout' or 'invert' here".to_string(),
        };
        format!(": --{name} is Debian's retry's option, given on the command line only{own}")
    } else {
        // The flag another tool's word means, when it is a key, else the nearest key.
        crate::cli::meant_flag(&format!("--{name}"))
            .and_then(|flag| keys.iter().find(|key| flag == format!("--{key}")))
            .map(|key| format!("did you mean '{key}'?"))
            .or_else(|| suggestion(name, &keys.iter().map(String::as_str).collect::<Vec<_>>()))
            .map_or(String::new(), |hint| format!("; {hint}"))
    };
    Err(ConfigError(format!("{unknown}{hint}")))
}

/// The command-line arguments that a key's TOML value stands for, or why its type is wrong
/// (`context` says where: `FILE:LINE: key 'KEY' in TABLE`).
fn entry_args(
    arg: &clap::Arg,
    name: &str,
    value: &DeValue<'_>,
    context: &str,
) -> Result<Vec<OsString>, ConfigError> {
    let kind = ValueKind::of(name);
    let wrong_type = |expected: &str| {
        ConfigError(format!(
            "{context}: expected {expected}, found {}",
            value.type_str()
        ))
    };
    let flag = || OsString::from(format!("--{name}"));
    if !arg.get_action().takes_values() {
        return match value {
            DeValue::Boolean(true) => Ok(vec![flag()]),
            DeValue::Boolean(false) => Ok(Vec::new()),
            _ => Err(wrong_type("true or false")),
        };
    }
    let text = match value {
        DeValue::String(text) => {
            crate::text::note_secrets(text);
            text.to_string()
        }
        // A pattern or a command is text: a number there is a slip, not a pattern.
        _ if kind == ValueKind::Text => return Err(wrong_type("a string")),
        DeValue::Integer(number) => number.to_string(),
        DeValue::Float(number) => number.to_string(),
        DeValue::Array(items) if kind == ValueKind::Codes => {
            let mut codes = Vec::new();
            for item in items.iter() {
                match item.get_ref() {
                    DeValue::Integer(n) => codes.push(n.to_string()),
                    DeValue::String(s) => codes.push(s.to_string()),
                    other => {
                        return Err(ConfigError(format!(
                            "{context}: expected an array of exit codes, found an array \
                             holding a {}",
                            other.type_str()
                        )));
                    }
                }
            }
            codes.join(",")
        }
        _ if kind == ValueKind::Codes => {
            return Err(wrong_type(
                "a list of exit codes like [1, 75] or \"1,75-78\"",
            ));
        }
        DeValue::Array(items) if kind == ValueKind::Durations => {
            let mut delays = Vec::new();
            for item in items.iter() {
                match item.get_ref() {
                    DeValue::Integer(n) => delays.push(n.to_string()),
                    DeValue::Float(n) => delays.push(n.to_string()),
                    DeValue::String(s) => delays.push(s.to_string()),
                    other => {
                        return Err(ConfigError(format!(
                            "{context}: expected an array of durations, found an array \
                             holding a {}",
                            other.type_str()
                        )));
                    }
                }
            }
            // An empty array is an empty list, which the flag's parser refuses.
            delays.join(",")
        }
        _ => return Err(wrong_type("a string or a number")),
    };
    Ok(vec![flag(), text.into()])
}

/// Fails when one table sets a setting in two spellings (`retries` and `attempts`), pointing
/// at whichever was written last.
fn check_one_spelling(
    entries: &[KeyArgs],
    label: &str,
    at: &dyn Fn(usize) -> String,
) -> Result<(), ConfigError> {
    // The table comes sorted by key, not in the order written.
    let mut written: Vec<&KeyArgs> = entries.iter().collect();
    written.sort_by_key(|entry| entry.key_offset);
    for group in GROUPS {
        let set: Vec<&&KeyArgs> = written
            .iter()
            .filter(|entry| group.contains(&entry.key.as_str()))
            .collect();
        if let [first, second, ..] = set.as_slice() {
            return Err(ConfigError(format!(
                "{}: key '{}' in {label}: cannot be set together with '{}' (one spelling per table)",
                at(second.key_offset),
                second.key,
                first.key
            )));
        }
    }
    for (i, second) in written.iter().enumerate() {
        if let Some((first, why)) = written[..i]
            .iter()
            .find_map(|first| Some((first, rivals(&first.key, &second.key)?)))
        {
            return Err(ConfigError(format!(
                "{}: key '{}' in {label}: cannot be set together with '{}' ({why})",
                at(second.key_offset),
                second.key,
                first.key
            )));
        }
    }
    Ok(())
}

/// Checks every value by its flag's own parser, as on the command line: the whole table in one
/// parse, and only when that fails, key by key to name the culprit.
fn check_values(
    command: &mut clap::Command,
    entries: &[KeyArgs],
    label: &str,
) -> Result<(), ConfigError> {
    // A path's `~` is checked as expanded: the home it stands for is known only when the file
    // is used.
    let mut expanded = Vec::new();
    for entry in entries {
        expanded.push(entry.arguments(Some(Path::new("/")))?);
    }
    let all = expanded.iter().flatten().cloned();
    if command
        .try_get_matches_from_mut(std::iter::once("retry".into()).chain(all))
        .is_ok()
    {
        return Ok(());
    }
    for (entry, arguments) in entries.iter().zip(&expanded) {
        let Some(value_at) = &entry.value_at else {
            continue;
        };
        let line = std::iter::once("retry".into()).chain(arguments.iter().cloned());
        if let Err(error) = command.try_get_matches_from_mut(line) {
            return Err(ConfigError(format!(
                "{value_at}: key '{}' in {label}: {}",
                entry.key,
                clap_reason(&error)
            )));
        }
    }
    Ok(())
}

/// A clap error in one line: its first line, plus the possible values when clap lists them
/// on a line of their own, and the flag or value clap suggests, if any.
pub fn clap_reason(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let context = |kind| match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.as_str()),
        _ => None,
    };
    // A value a parser refused: said from its parts, not from clap's rendering, which drops
    // what looks like a terminal escape and whose line a line break in the value would cut.
    // A state that does not parse is never echoed: a password may be anywhere in it.
    if error.kind() == ErrorKind::ValueValidation
        && let (Some(arg), Some(value)) = (
            context(ContextKind::InvalidArg),
            context(ContextKind::InvalidValue),
        )
    {
        let why = std::error::Error::source(error).map_or_else(String::new, |why| why.to_string());
        return if arg.starts_with("--state") {
            format!("invalid value for '{arg}': {why}")
        } else {
            format!("invalid value '{value}' for '{arg}': {why}")
        };
    }
    let mut rendered = error.render().to_string();
    // A value or flag with a control character is escaped where it is quoted, before the
    // message is cut to its first line; the rendering took out what looked like a terminal
    // escape, and the escaped word has it back.
    for kind in [ContextKind::InvalidValue, ContextKind::InvalidArg] {
        if let Some(word) = context(kind)
            && word.chars().any(char::is_control)
        {
            let as_rendered = clap::builder::StyledStr::from(word.to_string()).to_string();
            rendered = rendered.replace(
                &format!("'{as_rendered}'"),
                &format!("'{}'", crate::text::one_line(word)),
            );
        }
    }
    if let (Some(arg), Some(value)) = (
        context(ContextKind::InvalidArg),
        context(ContextKind::InvalidValue),
    ) && arg.starts_with("--state")
    {
        let as_rendered = clap::builder::StyledStr::from(value.to_string()).to_string();
        for shown in [value.to_string(), as_rendered, crate::text::one_line(value)] {
            rendered =
                rendered.replace(&format!("invalid value '{shown}' for"), "invalid value for");
        }
    }
    let first = rendered.lines().next().unwrap_or("invalid value");
    let mut reason = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if let Some(values) = rendered
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("[possible values:"))
    {
        reason = format!("{reason} {values}");
    }
    let suggested = match (error.kind(), context(ContextKind::InvalidArg)) {
        // Clap's guess goes by spelling alone, and offers flags of another meaning
        // (`--interval` for `--invert`): `retry` knows the words of other tools.
        (ErrorKind::UnknownArgument, Some(unknown)) => crate::cli::meant_flag(unknown),
        _ => [ContextKind::SuggestedArg, ContextKind::SuggestedValue]
            .into_iter()
            .find_map(|kind| match error.get(kind)? {
                // Clap words only subcommand suggestions as a list, and `retry` has none.
                ContextValue::String(suggested) => Some(suggested.clone()),
                _ => None,
            }),
    };
    if let Some(suggested) = suggested {
        reason = format!("{reason}; did you mean '{suggested}'?");
    }
    reason
}

fn line_of(text: &str, offset: usize) -> usize {
    line_of_bytes(text.as_bytes(), offset)
}

fn line_of_bytes(text: &[u8], offset: usize) -> usize {
    text[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(file: &ConfigFile, profile: Option<&str>, cli: &[&str]) -> Vec<String> {
        let cli: Vec<String> = cli.iter().map(|s| s.to_string()).collect();
        file.arguments(profile, &cli, Some(Path::new("/home/u")))
            .unwrap()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    fn error(text: &str) -> String {
        ConfigFile::parse("cfg.toml", text).unwrap_err().0
    }

    #[test]
    fn a_hook_in_any_table_counts() {
        let parse = |text: &str| ConfigFile::parse("cfg.toml", text).unwrap();
        assert!(!parse("[defaults]\nretries = 2\n[profile.x]\nbase = 1\n").has_hooks());
        assert!(parse("[defaults]\non-retry = \"true\"\n").has_hooks());
        assert!(parse("[profile.unused]\non-success = \"true\"\n").has_hooks());
        for kind in HookKind::ALL {
            let key = kind.flag().trim_start_matches("--");
            assert!(parse(&format!("[defaults]\n{key} = \"true\"\n")).has_hooks());
        }
    }

    /// Which keys are hooks is named by the hooks, not read off `--help`: with every hook's
    /// value placeholder renamed, each is still a hook, and no other key is one.
    #[test]
    fn a_changed_placeholder_cannot_turn_the_hook_check_off() {
        let mut command = Cli::command();
        for kind in HookKind::ALL {
            let key = kind.flag().trim_start_matches("--");
            let id = key.replace('-', "_");
            command = command.mut_arg(id, |arg| arg.value_name("SCRIPT"));
        }
        let hooks: Vec<&str> = keys_of(&command)
            .iter()
            .filter(|key| is_hook_key(key))
            .map(|key| {
                let arg = command
                    .get_arguments()
                    .find(|arg| arg.get_long() == Some(key))
                    .unwrap();
                assert_eq!(arg.get_value_names().unwrap(), ["SCRIPT"]);
                arg.get_long().unwrap()
            })
            .collect();
        assert_eq!(hooks, ["on-retry", "on-failure", "on-success"]);
    }

    /// The value kinds named in this module match the flags as `--help` shows them, so a new
    /// flag that takes codes, a pattern or a command cannot be left out of the lists.
    #[test]
    fn value_kinds_agree_with_the_flags() {
        for arg in Cli::command().get_arguments() {
            let (Some(key), Some(names)) = (arg.get_long(), arg.get_value_names()) else {
                continue;
            };
            if debian::OPTIONS.contains(&key) {
                continue;
            }
            let expected = match names[0].as_str() {
                "CODES" => ValueKind::Codes,
                "LIST" => ValueKind::Durations,
                "REGEX" | "CMD" => ValueKind::Text,
                _ => ValueKind::Scalar,
            };
            assert_eq!(ValueKind::of(key), expected, "--{key}");
            assert_eq!(is_hook_key(key), names[0] == "CMD", "--{key}");
        }
    }

    #[test]
    fn hooks_come_only_from_a_file_others_cannot_write() {
        const FILE: u32 = 0o100_000;
        assert_eq!(hooks_refused(FILE | 0o644, 1000, 1000), None);
        assert_eq!(
            hooks_refused(FILE | 0o600, 0, 1000),
            None,
            "root's own file"
        );
        assert_eq!(
            hooks_refused(FILE | 0o664, 1000, 1000),
            None,
            "a group of one's own"
        );
        assert_eq!(
            hooks_refused(FILE | 0o666, 1000, 1000).as_deref(),
            Some("others can write it (mode 0666)")
        );
        assert_eq!(
            hooks_refused(FILE | 0o644, 1000, 0).as_deref(),
            Some("it belongs to another user (uid 1000)"),
            "root running a user's file"
        );
        assert_eq!(hooks_refused(0o010_666, 1000, 0), None, "a pipe");
    }

    #[test]
    fn keys_are_the_long_flags() {
        let keys = keys();
        for key in [
            "retries",
            "base",
            "retry-on-exit",
            "on-retry",
            "invert",
            "kill-signal",
        ] {
            assert!(keys.iter().any(|k| k == key), "{key}");
        }
        for not_key in NOT_KEYS.iter().chain(debian::OPTIONS) {
            assert!(!keys.iter().any(|k| k == not_key), "{not_key}");
        }
        assert!(keys.iter().any(|k| k == "label"));
    }

    #[test]
    fn delays_are_an_array_a_comma_string_or_one_number() {
        let delays = |value: &str| {
            let file = ConfigFile::parse("cfg.toml", &format!("[defaults]\ndelays = {value}\n"));
            args(&file.unwrap(), None, &[])
        };
        assert_eq!(
            delays(r#"["0", 2, 0.5, "30s"]"#),
            ["--delays", "0,2,0.5,30s"]
        );
        assert_eq!(delays(r#""0,2s, 30s""#), ["--delays", "0,2s, 30s"]);
        assert_eq!(delays("3"), ["--delays", "3"]);
        assert_eq!(
            error("[defaults]\ndelays = [\"1s\", true]\n"),
            "cfg.toml:2: key 'delays' in [defaults]: expected an array of durations, found an \
             array holding a boolean"
        );
        assert!(
            error("[defaults]\ndelays = []\n").contains("empty list of delays"),
            "an empty array is an empty list"
        );
    }

    /// A list of delays and the curve's keys are two ways to give one schedule: never both in
    /// one table, and a higher layer's replaces a lower layer's, whichever way it is given.
    #[test]
    fn a_list_of_delays_and_the_backoff_curve_replace_each_other() {
        for key in ["backoff = \"linear\"", "base = \"1s\"", "multiplier = 3"] {
            assert_eq!(
                error(&format!("[profile.p]\n{key}\ndelays = \"1s\"\n")),
                "cfg.toml:3: key 'delays' in [profile.p]: cannot be set together with '{}' (a \
                 list of delays replaces the backoff curve)"
                    .replace("{}", key.split(' ').next().unwrap())
            );
        }
        let file = ConfigFile::parse(
            "cfg.toml",
            "[defaults]\nbackoff = \"linear\"\nbase = \"2s\"\nmax = \"9s\"\n\
             [profile.list]\ndelays = \"1s,5s\"\n[profile.curve]\nmultiplier = 3\n",
        )
        .unwrap();
        assert_eq!(
            args(&file, Some("list"), &[]),
            ["--max", "9s", "--delays", "1s,5s"]
        );
        assert_eq!(
            args(&file, Some("curve"), &[]),
            [
                "--backoff",
                "linear",
                "--base",
                "2s",
                "--max",
                "9s",
                "--multiplier",
                "3"
            ]
        );
        assert_eq!(args(&file, None, &["delays"]), ["--max", "9s"]);
        let listed = ConfigFile::parse("cfg.toml", "[defaults]\ndelays = \"1s\"\n").unwrap();
        assert!(args(&listed, None, &["base"]).is_empty());
        assert_eq!(args(&listed, None, &["jitter"]), ["--delays", "1s"]);
    }

    /// `timeouts` is a list as `delays` is, and the one `timeout` and the list replace each
    /// other as the schedule's two forms do.
    #[test]
    fn a_list_of_time_limits_and_the_one_limit_replace_each_other() {
        let timeouts = |value: &str| {
            let file = ConfigFile::parse("cfg.toml", &format!("[defaults]\ntimeouts = {value}\n"));
            args(&file.unwrap(), None, &[])
        };
        assert_eq!(timeouts(r#"["5s", 30, "0"]"#), ["--timeouts", "5s,30,0"]);
        assert_eq!(timeouts(r#""5s, 2m""#), ["--timeouts", "5s, 2m"]);
        assert!(error("[defaults]\ntimeouts = []\n").contains("empty list of timeouts"));
        assert_eq!(
            error("[defaults]\ntimeout = \"1s\"\ntimeouts = \"1s\"\n"),
            "cfg.toml:3: key 'timeouts' in [defaults]: cannot be set together with 'timeout' (a \
             list of time limits replaces the one limit)"
        );
        let file = ConfigFile::parse(
            "cfg.toml",
            "[defaults]\ntimeout = \"9s\"\n[profile.list]\ntimeouts = \"1s,5s\"\n",
        )
        .unwrap();
        assert_eq!(args(&file, Some("list"), &[]), ["--timeouts", "1s,5s"]);
        assert!(args(&file, None, &["timeouts"]).is_empty());
    }

    /// `~` and `~/` begin a path in `$HOME` for the keys that are paths, and nowhere else.
    #[test]
    fn a_paths_tilde_is_home() {
        let file = ConfigFile::parse(
            "cfg.toml",
            r#"
            [defaults]
            report = "~/r.json"
            metrics-file = "~"
            state = "~/"
            until-stdout = "~/x"
            [profile.plain]
            report = "a/~/b"
            "#,
        )
        .unwrap();
        assert_eq!(
            args(&file, None, &[]),
            [
                "--metrics-file",
                "/home/u",
                "--report",
                "/home/u/r.json",
                "--state",
                "/home/u/",
                "--until-stdout",
                "~/x"
            ]
        );
        let rooted = file.arguments(None, &[], Some(Path::new("/"))).unwrap();
        assert_eq!(rooted[1], "/");
        assert_eq!(rooted[3], "/r.json", "no // from a home of /");
        assert!(
            args(&file, Some("plain"), &[]).contains(&"a/~/b".to_string()),
            "only a leading ~ is the home"
        );
        let no_home = file.arguments(None, &[], None).unwrap_err().0;
        assert!(no_home.contains("$HOME is unset"), "{no_home}");
        assert!(no_home.starts_with("cfg.toml:"), "{no_home}");
        let other_user = error("[profile.bob]\nreport = \"~bob/r\"\n");
        assert!(
            other_user.starts_with("cfg.toml:2:") && other_user.contains("not ~USER"),
            "{other_user}"
        );
        // A file that does not use the key at all needs no home.
        let unused = ConfigFile::parse("cfg.toml", "[defaults]\nbase = \"1s\"\n").unwrap();
        assert!(unused.arguments(None, &[], None).is_ok());
    }

    #[test]
    fn natural_types_become_arguments() {
        let file = ConfigFile::parse(
            "cfg.toml",
            r#"
            [defaults]
            base = "1s"
            retries = 8
            multiplier = 1.5
            jitter = 0.2
            invert = true
            foreground = false
            retry-on-exit = [1, 75, "80-82"]
            stop-on-exit = "2,3"
            "#,
        )
        .unwrap();
        assert_eq!(
            args(&file, None, &[]),
            [
                "--base",
                "1s",
                "--invert",
                "--jitter",
                "0.2",
                "--multiplier",
                "1.5",
                "--retries",
                "8",
                "--retry-on-exit",
                "1,75,80-82",
                "--stop-on-exit",
                "2,3"
            ]
        );
    }

    #[test]
    fn precedence_profile_over_defaults_and_command_line_over_both() {
        let file = ConfigFile::parse(
            "cfg.toml",
            r#"
            [defaults]
            base = "1s"
            retries = 3
            max = "10s"
            [profile.ci]
            base = "5s"
            attempts = 2
            "#,
        )
        .unwrap();
        assert_eq!(
            args(&file, Some("ci"), &[]),
            ["--max", "10s", "--attempts", "2", "--base", "5s"]
        );
        assert_eq!(
            args(&file, Some("ci"), &["base", "forever"]),
            ["--max", "10s"]
        );
        assert_eq!(
            args(&file, None, &["attempts"]),
            ["--base", "1s", "--max", "10s"]
        );
    }

    #[test]
    fn a_false_flag_in_a_profile_replaces_a_true_default() {
        let file = ConfigFile::parse(
            "cfg.toml",
            "[defaults]\ninvert = true\n[profile.p]\ninvert = false\n",
        )
        .unwrap();
        assert_eq!(args(&file, Some("p"), &[]), Vec::<String>::new());
        assert_eq!(args(&file, None, &[]), ["--invert"]);
    }

    /// An unknown key from another tool's vocabulary names the key meant, as a flag would;
    /// one of Debian's options names this tool's key for it.
    #[test]
    fn an_unknown_key_suggests_the_one_meant() {
        for (key, hint) in [
            ("interval", "; did you mean 'delays'?"),
            ("sleep", "; did you mean 'delays'?"),
            ("max-tries", "; did you mean 'attempts'?"),
            ("count", "; did you mean 'attempts'?"),
            ("backoff-max", "; did you mean 'max'?"),
            (
                "times",
                ": --times is Debian's retry's option, given on the command line only; write 'attempts' here",
            ),
        ] {
            assert_eq!(
                error(&format!("[defaults]\n{key} = 1\n")),
                format!("cfg.toml:2: unknown key '{key}' in [defaults]{hint}")
            );
        }
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_key() {
        assert_eq!(
            error("[defaults]\nbase = \"1s\"\nretires = 3\n"),
            "cfg.toml:3: unknown key 'retires' in [defaults]; did you mean 'retries'?"
        );
        let wrong_type = error("[defaults]\n\nretries = \"many\"\n");
        assert!(
            wrong_type.starts_with("cfg.toml:3: key 'retries' in [defaults]: invalid value 'many'"),
            "{wrong_type}"
        );
        assert_eq!(
            error("[defaults]\ninvert = \"yes\"\n"),
            "cfg.toml:2: key 'invert' in [defaults]: expected true or false, found string"
        );
        assert_eq!(
            error("[profile.x]\nbase = true\n"),
            "cfg.toml:2: key 'base' in [profile.x]: expected a string or a number, found boolean"
        );
        let bad = error("[profile.x]\n\n\nbase = \"-1s\"\n");
        assert!(
            bad.starts_with("cfg.toml:4: key 'base' in [profile.x]:"),
            "{bad}"
        );
        assert!(bad.contains("negative duration"), "{bad}");
        assert_eq!(
            error("[defaults]\nretry-on-exit = [true]\n"),
            "cfg.toml:2: key 'retry-on-exit' in [defaults]: expected an array of exit codes, found an array holding a boolean"
        );
        assert_eq!(
            error("[defaults]\non-retry = 5\n"),
            "cfg.toml:2: key 'on-retry' in [defaults]: expected a string, found integer"
        );
        assert_eq!(
            error("[defaults]\nuntil-stdout = 1.5\n"),
            "cfg.toml:2: key 'until-stdout' in [defaults]: expected a string, found float"
        );
        let both = error("[defaults]\nretries = 1\nattempts = 2\n");
        assert!(
            both.starts_with(
                "cfg.toml:3: key 'attempts' in [defaults]: cannot be set together with 'retries'"
            ),
            "{both}"
        );
        let syntax = error("[defaults]\nbase = \n");
        assert!(
            syntax.starts_with("cfg.toml:2: TOML syntax error:"),
            "{syntax}"
        );
        assert!(!syntax.contains('\n'));
        let top = error("retries = 3\n");
        assert_eq!(
            top,
            "cfg.toml:1: unknown key 'retries': the file holds [defaults] and [profile.NAME] tables; put it under [defaults] or [profile.NAME]"
        );
        assert!(error("[default]\n").contains("did you mean 'defaults'?"));
        assert_eq!(
            error("colour = 1\n"),
            "cfg.toml:1: unknown key 'colour': the file holds [defaults] and [profile.NAME] tables"
        );
        assert_eq!(
            error("[defaults]\nbase = [\"1s\"]\n"),
            "cfg.toml:2: key 'base' in [defaults]: expected a string or a number, found array"
        );
        assert_eq!(
            error("[defaults]\nretry-on-exit = { a = 1 }\n"),
            "cfg.toml:2: key 'retry-on-exit' in [defaults]: expected a list of exit codes like [1, 75] or \"1,75-78\", found table"
        );
    }

    #[test]
    fn a_flag_for_one_invocation_is_no_key() {
        for key in ["config", "profile", "dry-run", "help", "version"] {
            assert_eq!(
                error(&format!("[defaults]\n{key} = true\n")),
                format!(
                    "cfg.toml:2: unknown key '{key}' in [defaults]: --{key} is about one invocation, so it is given on the command line only"
                )
            );
        }
    }

    #[test]
    fn every_profile_is_validated() {
        let text = "[profile.a]\nbase = \"1s\"\n[profile.b]\nbase = \"soon\"\n";
        assert!(error(text).starts_with("cfg.toml:4: key 'base' in [profile.b]"));
    }

    #[test]
    fn a_missing_profile_names_the_file_and_the_profile() {
        let file = ConfigFile::parse("cfg.toml", "[profile.nightly]\nretries = 1\n").unwrap();
        assert_eq!(
            file.arguments(Some("nightli"), &[], None).unwrap_err().0,
            "cfg.toml: profile 'nightli' not found; did you mean 'nightly'?"
        );
    }

    #[test]
    fn a_missing_profile_with_no_near_name_lists_those_there_are() {
        let file = ConfigFile::parse("cfg.toml", "[profile.ci]\n[profile.nightly]\n").unwrap();
        assert_eq!(
            file.arguments(Some("api"), &[], None).unwrap_err().0,
            "cfg.toml: profile 'api' not found; the file has 'ci', 'nightly'"
        );
        let file = ConfigFile::parse("cfg.toml", "[defaults]\nretries = 1\n").unwrap();
        assert_eq!(
            file.arguments(Some("api"), &[], None).unwrap_err().0,
            "cfg.toml: profile 'api' not found; the file has no [profile.NAME] table"
        );
    }

    #[test]
    fn command_line_keys_are_seen() {
        let argv: Vec<OsString> = [
            "retry", "--base", "1s", "-r", "2", "--invert", "ls", "--max", "3",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let matches = Cli::command().try_get_matches_from(argv).unwrap();
        assert_eq!(command_line_keys(&matches), ["retries", "base", "invert"]);
    }

    const EXAMPLE: &str = include_str!("../config.example.toml");

    #[test]
    fn the_example_file_loads_with_every_profile() {
        let file = ConfigFile::parse("config.example.toml", EXAMPLE).unwrap();
        assert!(!file.defaults.is_empty());
        for profile in ["api", "nightly", "ci"] {
            let args = file.arguments(Some(profile), &[], None).unwrap();
            let argv = std::iter::once(OsString::from("retry")).chain(args);
            Cli::command().try_get_matches_from(argv).unwrap();
        }
    }

    #[test]
    fn the_example_file_documents_every_key() {
        for key in keys() {
            let documented = EXAMPLE.lines().any(|line| {
                let line = line.trim_start_matches('#').trim_start();
                line.strip_prefix(key.as_str())
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            });
            assert!(
                documented,
                "config.example.toml has no line for the key '{key}'"
            );
        }
    }
}
