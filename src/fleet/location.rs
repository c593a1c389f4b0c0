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

/// The environment variable that says where the state lives when `--state` does not.
pub(crate) const STATE_VARIABLE: &str = "RETRY_STATE";

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
            cluster_parts(rest)?;
            Ok(StateLocation::Redis(text.to_string()))
        }
        Some((scheme, _)) => Err(format!("unknown state scheme '{scheme}'; {STATE_FORMS}")),
        None => match parse::unexpanded_tilde(text.as_bytes()) {
            Some(reason) => Err(reason),
            None => Ok(StateLocation::Directory(PathBuf::from(text))),
        },
    }
}

/// A `redis+cluster://` URL after its scheme, read once for both `--state`'s check and the
/// seeds: `[user]:password@`, then `host:port` pairs separated by commas, then a path or a
/// query that every node shares (`/?password=`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ClusterParts<'a> {
    /// Up to and with the `@` that ends them; empty where there are none.
    pub(crate) credentials: &'a str,
    pub(crate) nodes: Vec<&'a str>,
    /// From the `/` or `?` that ends the hosts; empty where nothing follows them.
    pub(crate) tail: &'a str,
}

/// Reads `rest`, what follows `redis+cluster://`. A list with no host, or a host without a
/// port, is misuse.
pub(crate) fn cluster_parts(rest: &str) -> Result<ClusterParts<'_>, String> {
    // The credentials end at the last `@`: a password may hold `@`, `/` or `,`; no host does.
    // Unless that `@` is in a query (`?password=a@b`): then at the last one before it, if any.
    let query = rest.find('?').unwrap_or(rest.len());
    let after_last_at = |text: &str| text.rfind('@').map_or(0, |at| at + 1);
    let read = |hosts_start: usize| -> Result<ClusterParts<'_>, String> {
        let (credentials, after) = rest.split_at(hosts_start);
        // The hosts end where a path or a query begins.
        let hosts_end = after.find(['/', '?']).unwrap_or(after.len());
        let (hosts, tail) = after.split_at(hosts_end);
        Ok(ClusterParts {
            credentials,
            nodes: cluster_nodes(hosts)?,
            tail,
        })
    };
    read(after_last_at(rest))
        .or_else(|error| read(after_last_at(&rest[..query])).map_err(|_| error))
}

/// The `host:port` pairs of a cluster URL's `hosts`.
fn cluster_nodes(hosts: &str) -> Result<Vec<&str>, String> {
    if hosts.is_empty() {
        return Err(
            "a Redis Cluster URL names no host; expected redis+cluster://host:port[,host:port...]"
                .into(),
        );
    }
    hosts
        .split(',')
        .map(|node| match node.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
                Ok(node)
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

    /// Each reading: the credentials, the nodes and what follows them, which every node's
    /// URL gets (a password in the query too).
    #[test]
    fn cluster_credentials_end_at_the_last_at_sign_outside_a_query() {
        let parts = |credentials, nodes, tail| {
            Ok(ClusterParts {
                credentials,
                nodes,
                tail,
            })
        };
        let table = [
            ("a:1", parts("", vec!["a:1"], "")),
            (
                "u:p@ss/x@a:1,b:2",
                parts("u:p@ss/x@", vec!["a:1", "b:2"], ""),
            ),
            (
                "a:1,b:2/?password=Tr0ub4dor@horse-battery",
                parts("", vec!["a:1", "b:2"], "/?password=Tr0ub4dor@horse-battery"),
            ),
            (
                "u:pw@a:1?password=x@y",
                parts("u:pw@", vec!["a:1"], "?password=x@y"),
            ),
            (":p@b@h:6379/0", parts(":p@b@", vec!["h:6379"], "/0")),
        ];
        for (rest, expected) in table {
            assert_eq!(cluster_parts(rest), expected, "{rest}");
        }
        for bad in ["u:pw@a", "", "u:pw@", "a:1,", "a:0", "a:1,:2"] {
            assert!(cluster_parts(bad).is_err(), "{bad}");
        }
    }
}
