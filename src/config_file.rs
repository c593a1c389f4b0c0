//! Finding, reading and layering the configuration file: `--config`, `$RETRY_CONFIG` or the XDG
//! default, with the profile from `--profile` or `$RETRY_PROFILE`. What a file may hold and how
//! it becomes arguments is `config`'s, which never touches a file.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;

use anyhow::{anyhow, bail};
use clap::Parser;

use crate::cli::Cli;
use crate::config::{self, ConfigFile};
use crate::dirs::{non_empty_env, xdg_base};
use crate::text;

/// Layers the configuration file, if there is one, under the command line: its arguments come
/// first, so the command line's own win.
pub(crate) fn with_config_file(
    cli: Cli,
    args: &[OsString],
    matches: &clap::ArgMatches,
) -> anyhow::Result<Cli> {
    let profile = match (&cli.profile, non_empty_env("RETRY_PROFILE")) {
        (Some(profile), _) => Some(profile.clone()),
        (None, Some(profile)) => Some(profile.into_string().map_err(|profile| {
            anyhow!(
                "$RETRY_PROFILE '{}' is not valid UTF-8, so no profile can have that name",
                profile.to_string_lossy()
            )
        })?),
        (None, None) => None,
    };
    let Some(path) = config_path(&cli)? else {
        if let Some(profile) = profile {
            bail!(
                "profile '{profile}' requested but no config file found (--config, $RETRY_CONFIG, {})",
                default_config_path().map_or("$XDG_CONFIG_HOME/retry/config.toml".into(), |p| {
                    text::path(&p)
                })
            );
        }
        return Ok(cli);
    };
    let name = text::path(&path);
    let (bytes, metadata) = read_config(&path).map_err(|error| {
        anyhow!(
            "cannot read config file {name}: {}",
            text::plain_error(&error)
        )
    })?;
    let file = ConfigFile::parse(&name, &ConfigFile::text(&name, bytes)?)?;
    if file.has_hooks() {
        use std::os::unix::fs::MetadataExt;
        let user = rustix::process::getuid().as_raw();
        if let Some(why) = config::hooks_refused(metadata.mode(), metadata.uid(), user) {
            bail!(
                "{name}: its hooks are refused: {why}; a file that runs commands must be yours (or root's) and not writable by others"
            );
        }
    }
    let file_args = file.arguments(
        profile.as_deref(),
        &config::command_line_keys(matches),
        crate::dirs::home().as_deref(),
    )?;
    if file_args.is_empty() {
        return Ok(cli);
    }
    let layered: Vec<OsString> = args[..1]
        .iter()
        .cloned()
        .chain(file_args)
        .chain(args[1..].iter().cloned())
        .collect();
    Cli::try_parse_from(layered).map_err(|error| anyhow!("{name}: {}", config::clap_reason(&error)))
}

/// The most a config file may hold: far more than any real one, and a bound on what a path to
/// an endless source (`/dev/zero`, a pipe that never ends) may cost.
const CONFIG_LIMIT: u64 = 1024 * 1024;

/// Reads a config file, which may also be a pipe (`--config <(...)`), up to `CONFIG_LIMIT`,
/// with what the open file is (owner, mode: of the file read, not of a path looked up again).
/// The open does not block: a FIFO that no one writes (a path someone put there) reads as
/// empty instead of holding `retry` in `open`; once open, reads wait for a writer's bytes.
fn read_config(path: &std::path::Path) -> io::Result<(Vec<u8>, std::fs::Metadata)> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if let Ok(flags) = rustix::fs::fcntl_getfl(&file) {
        rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
    }
    let metadata = file.metadata()?;
    let mut bytes = Vec::new();
    file.take(CONFIG_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > CONFIG_LIMIT {
        return Err(io::Error::other("larger than 1 MiB"));
    }
    Ok((bytes, metadata))
}

/// `--config`, else `$RETRY_CONFIG` (both must exist), else the XDG default if it exists.
/// Never the current directory.
fn config_path(cli: &Cli) -> anyhow::Result<Option<PathBuf>> {
    if let Some(path) = cli
        .config
        .clone()
        .or_else(|| non_empty_env("RETRY_CONFIG").map(PathBuf::from))
    {
        return Ok(Some(path));
    }
    Ok(default_config_path().filter(|path| path.is_file()))
}

/// `$XDG_CONFIG_HOME/retry/config.toml`, else `~/.config/retry/config.toml`, as `xdg_base`
/// reads them.
fn default_config_path() -> Option<PathBuf> {
    Some(
        xdg_base("XDG_CONFIG_HOME", ".config")?
            .join("retry")
            .join("config.toml"),
    )
}
