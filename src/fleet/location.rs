//! Where the fleet state lives, as written (`--state`, `$RETRY_STATE`, the config file's
//! `state`): a directory, or the URL of a Redis server or Cluster. Only the form is read here,
//! so that a wrong one is misuse before anything runs: what the client makes of a URL is
//! `redis`'s, and the directory is `file`'s to open.
//!
//! A leaf of `fleet`: `cli` parses `--state` with it, and so `fleet` names nothing of `cli`.

use std::path::PathBuf;

use crate::parse;

/// Where the fleet state lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateLocation {
    Directory(PathBuf),
    /// A Redis server (`redis://`, `rediss://`, `unix://`), as written.
    Redis(String),
}

/// What `--state` may be, for the messages that refuse it.
const STATE_FORMS: &str = "the state is a directory, a Redis server (redis://, rediss://, unix://) or a Redis Cluster (redis+cluster://, rediss+cluster://)";

/// `--state`: a directory, or the URL of a Redis server. Any other scheme is misuse, and so is
/// a known scheme without its `//` (`redis:host:6379`), which would otherwise be a directory of
/// that name, and each host its own budget. (`./redis:x` is that directory.)
pub(crate) fn parse(text: &str) -> Result<StateLocation, String> {
    if text.is_empty() {
        return Err("empty state location; expected a directory".into());
    }
    if let Some((scheme, rest)) = text.split_once(':')
        && matches!(
            scheme.to_ascii_lowercase().as_str(),
            "redis" | "rediss" | "unix" | "redis+cluster" | "rediss+cluster"
        )
        && !rest.starts_with("//")
    {
        // The rest is not shown: it may hold a password.
        return Err(format!(
            "a state that starts '{scheme}:' without '//' is not a URL; {STATE_FORMS} (write ./{scheme}:... for a directory)"
        ));
    }
    match text.split_once("://") {
        Some(("redis" | "rediss" | "unix", _)) => Ok(StateLocation::Redis(text.to_string())),
        Some(("redis+cluster" | "rediss+cluster", rest)) => {
            cluster_nodes(rest)?;
            Ok(StateLocation::Redis(text.to_string()))
        }
        Some((scheme, _)) => Err(format!("unknown state scheme '{scheme}'; {STATE_FORMS}")),
        None => match parse::unexpanded_tilde(text.as_bytes()) {
            Some(reason) => Err(reason),
            None => Ok(StateLocation::Directory(PathBuf::from(text))),
        },
    }
}

/// The seed nodes of a `redis+cluster://` URL (what follows the scheme): `host:port` pairs
/// separated by commas, after an optional `[user]:password@` that all of them share. A list
/// with no host, or a host without a port, is misuse.
pub(crate) fn cluster_nodes(rest: &str) -> Result<Vec<String>, String> {
    // The credentials end at the last `@`: a password may hold `@`, `/` or `,`; no host does.
    // Unless that `@` is in a query (`?password=a@b`): then at the last one before it, if any.
    let query = rest.find('?').unwrap_or(rest.len());
    let readings = [
        rest.rsplit_once('@').map_or(rest, |(_, hosts)| hosts),
        rest[..query].rfind('@').map_or(rest, |at| &rest[at + 1..]),
    ];
    let nodes = |after_credentials: &str| -> Result<Vec<String>, String> {
        // The hosts end where a path or a query begins (`?password=` may follow them).
        let hosts = after_credentials.split(['/', '?']).next().unwrap_or("");
        if hosts.is_empty() {
            return Err(
                "a Redis Cluster URL names no host; expected redis+cluster://host:port[,host:port...]"
                    .into(),
            );
        }
        hosts
            .split(',')
            .map(|node| match node.rsplit_once(':') {
                Some((host, port))
                    if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) =>
                {
                    Ok(node.to_string())
                }
                _ if node.is_empty() => Err(
                    "a Redis Cluster URL has an empty host in its list; expected host:port[,host:port...]"
                        .to_string(),
                ),
                _ => Err(format!(
                    "the Redis Cluster node '{node}' has no port; each node is host:port"
                )),
            })
            .collect()
    };
    nodes(readings[0]).or_else(|error| nodes(readings[1]).map_err(|_| error))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `~` that reaches `retry` was not expanded by a shell: as a directory it would be made
    /// in the current directory. Anything after the first byte is the path's own.
    #[test]
    fn a_leading_tilde_is_refused() {
        for text in ["~", "~/x", "~bob", "~bob/x", "~~"] {
            assert!(parse(text).is_err(), "{text}");
        }
        for text in ["./~", "a~", "a/~/b", "/~"] {
            assert!(
                matches!(parse(text), Ok(StateLocation::Directory(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn cluster_credentials_end_at_the_last_at_sign_outside_a_query() {
        let nodes = |rest: &str| cluster_nodes(rest);
        assert_eq!(
            nodes("u:p@ss/x@a:1,b:2"),
            Ok(vec!["a:1".into(), "b:2".into()])
        );
        assert_eq!(
            nodes("a:1,b:2/?password=Tr0ub4dor@horse-battery"),
            Ok(vec!["a:1".into(), "b:2".into()])
        );
        assert_eq!(nodes("u:pw@a:1?password=x@y"), Ok(vec!["a:1".into()]));
        assert!(nodes("u:pw@a").is_err());
        assert!(nodes("").is_err());
    }
}
