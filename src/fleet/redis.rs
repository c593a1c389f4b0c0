//! Budgets and breakers in Redis, for a fleet that spans hosts: each decision is one call of
//! `decide.lua` (by its hash, loaded when the server does not have it), atomic and timed by the
//! server's clock, so hosts need not agree on the time. Keys are `retry:{NAME}:budget` and
//! `retry:{NAME}:breaker` (the name in braces: one Redis Cluster slot), and expire once idle.
//!
//! One connection per run, made only when a budget or breaker is named, with short time-outs:
//! a server that is down, silent or refuses us makes the run fail open, well within a second.
//! The connection lives on a thread of its own, so that a server that answers without end
//! (byte by byte, or a flood) holds a decision no longer than the second either: the run fails
//! open, and the connection's sockets are shut, which ends what the thread was reading.
//! The password in a URL is never said: `shown_url` rebuilds a URL from what the client reads
//! of it, with `***` for the password.

use std::os::fd::RawFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use redis::cluster::ClusterConnection;
use redis::{Connection, ConnectionLike, Script, Value};

use super::location::{ClusterParts, cluster_parts};
use super::rules::{
    Admission, BreakerRecord, BudgetPolicy, BudgetView, Op, Outcome, Probe, Reply, Transition,
    millis,
};
use super::store::{Applied, Store, StoreError};
use crate::text::{percent_decoded, redact_urls};

/// The reply codes of `decide.lua`, named as the script names them (a test holds the two to
/// each other). A code that is none of these is an answer that cannot be read: the run fails
/// open and says so, never taking it for open or closed.
mod code {
    /// `admit`: the attempt may go.
    pub(super) const ADMIT_GO: i64 = 0;
    /// `admit`: the attempt may go, as the breaker's probe.
    pub(super) const ADMIT_PROBE: i64 = 1;
    /// `admit`: the breaker is open.
    pub(super) const ADMIT_OPEN: i64 = 2;
    /// `record`: the breaker did not change state.
    pub(super) const BREAKER_KEPT: i64 = 0;
    pub(super) const BREAKER_OPENED: i64 = 1;
    pub(super) const BREAKER_REOPENED: i64 = 2;
    pub(super) const BREAKER_CLOSED: i64 = 3;
}

/// How long each part of talking to Redis may take.
#[derive(Clone, Copy, Debug)]
struct Waits {
    /// Connecting (and each reply of the handshake: AUTH, SELECT).
    connect: Duration,
    /// Each reply.
    reply: Duration,
    /// Opening a cluster in all, whatever the number of seeds.
    cluster_open: Duration,
    /// Opening one server in all, the handshake's replies included.
    open: Duration,
    /// Opening and then any one decision together: past it, the run fails open.
    all: Duration,
    /// How much memory may grow while an answer comes (see `answer_within`).
    flood_most: u64,
}

/// Every run's: a store that is down, silent or flooding delays a run by a second at most.
const BOUNDED: Waits = Waits {
    connect: Duration::from_millis(400),
    reply: Duration::from_millis(400),
    cluster_open: Duration::from_millis(800),
    open: Duration::from_millis(600),
    all: Duration::from_secs(1),
    flood_most: 32 * 1024 * 1024,
};

pub(crate) struct RedisStore {
    /// To the thread that holds the connection: a decision to take.
    decisions: mpsc::Sender<(String, Op)>,
    /// From it: what each decision gave.
    answers: mpsc::Receiver<Result<Applied, StoreError>>,
    /// How long a decision may take: what opening left of `Waits::all`.
    decision_wait: Duration,
    /// How much memory may grow while a decision comes.
    flood_most: u64,
    /// The sockets (by inode) that talked to a server before the store opened: not its own.
    others_sockets: Vec<u64>,
    /// The URL as it may be shown.
    shown: String,
}

/// One server's connection, or a cluster's (which follows the slot of each name's keys).
enum Link {
    Server(Connection),
    Cluster(Box<ClusterConnection>),
}

impl Link {
    fn connection(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Link::Server(connection) => connection,
            Link::Cluster(connection) => connection.as_mut(),
        }
    }
}

impl RedisStore {
    /// Connects to the server (or the cluster) at `url`; the reason, with the URL redacted,
    /// when it cannot.
    pub(crate) fn open(url: &str) -> Result<RedisStore, String> {
        Self::open_with(url, BOUNDED)
    }

    fn open_with(url: &str, waits: Waits) -> Result<RedisStore, String> {
        let started = Instant::now();
        let others_sockets: Vec<u64> = server_sockets()
            .into_iter()
            .map(|(_, inode)| inode)
            .collect();
        let shown = shown_url(url);
        let connection = connect(url, waits, &shown, &others_sockets)?;
        let (decisions, to_take) = mpsc::channel::<(String, Op)>();
        let (answer, answers) = mpsc::channel();
        let decider = Decider {
            connection,
            script: Script::new(include_str!("decide.lua")),
            shown: shown.clone(),
        };
        std::thread::Builder::new()
            .name("redis".into())
            .spawn(move || {
                let mut decider = decider;
                for (name, op) in to_take {
                    if answer.send(decider.apply(&name, &op)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|error| format!("Redis at {shown}: {error}"))?;
        Ok(RedisStore {
            decisions,
            answers,
            decision_wait: waits.all.saturating_sub(started.elapsed()),
            flood_most: waits.flood_most,
            others_sockets,
            shown,
        })
    }
}

/// The connection to the server or cluster at `url` (shown as `shown`), within `waits`; the
/// sockets of `others` were there before it.
fn connect(url: &str, waits: Waits, shown: &str, others: &[u64]) -> Result<Link, String> {
    let unreachable = |error: redis::RedisError| format!("Redis at {shown}: {}", said(&error, url));
    let Some(seeds) = cluster_seeds(url) else {
        let client = redis::Client::open(url).map_err(unreachable)?;
        // Connecting is a connect and then a reply for each step of the handshake (HELLO,
        // AUTH, SELECT), each with its own wait: `open` bounds them all.
        let connection = within(waits.open, waits.flood_most, shown, others, move || {
            client.get_connection_with_timeout(waits.connect)
        })?
        .map_err(unreachable)?;
        connection
            .set_read_timeout(Some(waits.reply))
            .and_then(|()| connection.set_write_timeout(Some(waits.reply)))
            .map_err(unreachable)?;
        return Ok(Link::Server(connection));
    };
    let seeds = seeds?;
    // The client tries the seeds one after another, each with a connect and two replies, each
    // wait at least 50 ms: many silent seeds would add up past any bound: `cluster_open`
    // bounds them all, whatever the number of seeds.
    let wait =
        (waits.cluster_open / (3 * seeds.len().max(1) as u32)).max(Duration::from_millis(50));
    let client = redis::cluster::ClusterClient::builder(seeds)
        .connection_timeout(wait)
        .response_timeout(wait)
        // No request is sent again: a redirection that the slots read at connect did not
        // foresee (a failover under way) fails open, and the next run reads the slots afresh.
        .retries(0)
        .build()
        .map_err(unreachable)?;
    let connection = within(
        waits.cluster_open,
        waits.flood_most,
        shown,
        others,
        move || client.get_connection(),
    )?
    .map_err(unreachable)?;
    Ok(Link::Cluster(Box::new(connection)))
}

/// Shuts the sockets that talk to a server but those of `others` (by inode): the store's, so
/// that a thread reading a server that answers without end stops, and holds no more memory
/// than it read.
fn shut_sockets_but(others: &[u64]) {
    for (fd, inode) in server_sockets() {
        if !others.contains(&inode) {
            // SAFETY: shutdown(2) on a socket of this process; it closes nothing.
            unsafe {
                libc::shutdown(fd, libc::SHUT_RDWR);
            }
        }
    }
}

/// The sockets of this process that talk to a server, a TCP one or a Unix socket's (a pair of
/// `retry`'s own has no peer address), with their inodes.
fn server_sockets() -> Vec<(RawFd, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .filter_map(|fd| {
            // SAFETY: fstat(2), getsockopt(2) and getpeername(2) into zeroed values of the
            // sizes given, on a descriptor number that may since have closed (then they fail).
            unsafe {
                let mut stat: libc::stat = std::mem::zeroed();
                if libc::fstat(fd, &mut stat) != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFSOCK
                {
                    return None;
                }
                let mut domain: libc::c_int = 0;
                let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
                let option = (&raw mut domain).cast();
                if libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_DOMAIN, option, &mut len) != 0 {
                    return None;
                }
                let talks = match domain {
                    libc::AF_INET | libc::AF_INET6 => true,
                    libc::AF_UNIX => {
                        let mut peer: libc::sockaddr_un = std::mem::zeroed();
                        let mut len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                        libc::getpeername(fd, (&raw mut peer).cast(), &mut len) == 0
                            && len as usize > std::mem::size_of::<libc::sa_family_t>()
                    }
                    _ => false,
                };
                talks.then_some((fd, stat.st_ino))
            }
        })
        .collect()
}

/// The connection and the script, on the thread of their own.
struct Decider {
    connection: Link,
    script: Script,
    shown: String,
}

/// Runs `connect` on a thread of its own and waits for it `wait` in all, while memory grows by
/// no more than `flood_most`: past that, the run fails open (the reason names `shown`), and the
/// sockets that talk to a server but those of `others` are shut, so the thread left behind
/// reads no more.
fn within<T: Send + 'static>(
    wait: Duration,
    flood_most: u64,
    shown: &str,
    others: &[u64],
    connect: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (sender, connected) = mpsc::channel();
    std::thread::Builder::new()
        .name("redis-open".into())
        .spawn(move || {
            let _ = sender.send(connect());
        })
        .map_err(|error| format!("Redis at {shown}: {error}"))?;
    answer_within(&connected, wait, flood_most, others)
        .map_err(|why| format!("Redis at {shown}: {}", why.unwrap_or("no answer")))
}

/// What `answers` gives within `wait`. Past it, or once memory has grown by more than
/// `flood_most`, more than any answer could while it comes (a server that floods is cut as one
/// that never ends is), the
/// sockets that talk to a server but those of `others` are shut, so the thread left behind
/// reads no more, and the reason is given; `Err(None)` when the sender has gone.
fn answer_within<T>(
    answers: &mpsc::Receiver<T>,
    wait: Duration,
    flood_most: u64,
    others: &[u64],
) -> Result<T, Option<&'static str>> {
    let until = Instant::now() + wait;
    let resident = resident_bytes();
    let why = loop {
        let left = until.saturating_duration_since(Instant::now());
        match answers.recv_timeout(left.min(FLOOD_CHECK)) {
            Ok(answer) => return Ok(answer),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(None),
            Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => {
                break "no whole answer within the second";
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if resident_bytes().saturating_sub(resident) > flood_most {
                    break "an answer larger than any retry asks for";
                }
            }
        }
    };
    shut_sockets_but(others);
    Err(Some(why))
}

/// For a `redis+cluster://` or `rediss+cluster://` URL, the URL of each seed node, with the
/// credentials the URL gives them all; `None` for any other URL.
fn cluster_seeds(url: &str) -> Option<Result<Vec<String>, String>> {
    let (scheme, rest) = url.split_once("://")?;
    let node_scheme = scheme.strip_suffix("+cluster")?;
    Some(cluster_parts(rest).map(|parts| {
        let ClusterParts {
            credentials,
            nodes,
            tail,
        } = parts;
        nodes
            .iter()
            .map(|node| format!("{node_scheme}://{credentials}{node}{tail}"))
            .collect()
    }))
}

/// The URL as `retry` may show it, rebuilt from what the client reads of it (the scheme, the
/// user, the host and port or the socket's path, the database), with `***` for a password,
/// whatever its bytes and wherever it was given (in the authority, `?pass=`, `?password=`). A
/// URL the client cannot read shows only its scheme: no piece of it is said.
pub(crate) fn shown_url(url: &str) -> String {
    use redis::IntoConnectionInfo;
    let Some((scheme, _)) = url.split_once("://") else {
        return "a Redis URL".into();
    };
    let shown = match cluster_seeds(url) {
        Some(seeds) => seeds.ok().and_then(|seeds| shown_cluster(scheme, &seeds)),
        None => url
            .into_connection_info()
            .ok()
            .and_then(|info| shown_server(scheme, &info)),
    };
    shown.unwrap_or_else(|| format!("{scheme}://(a URL the Redis client cannot read)"))
}

/// A cluster's URL as it may be shown, from its `seeds`: the credentials, then the hosts.
fn shown_cluster(scheme: &str, seeds: &[String]) -> Option<String> {
    use redis::{ConnectionAddr, IntoConnectionInfo};
    let infos: Vec<redis::ConnectionInfo> = seeds
        .iter()
        .map(|seed| seed.as_str().into_connection_info())
        .collect::<Result<_, _>>()
        .ok()?;
    let hosts: Vec<String> = infos
        .iter()
        .filter_map(|info| match info.addr() {
            ConnectionAddr::Tcp(name, port)
            | ConnectionAddr::TcpTls {
                host: name, port, ..
            } => Some(host_and_port(name, *port)),
            _ => None,
        })
        .collect();
    let credentials = infos.first().map(shown_credentials).unwrap_or_default();
    Some(format!("{scheme}://{credentials}{}", hosts.join(",")))
}

/// One server's URL as it may be shown, from what the client read of it (`info`).
fn shown_server(scheme: &str, info: &redis::ConnectionInfo) -> Option<String> {
    use redis::ConnectionAddr;
    let db = info.redis_settings().db();
    match info.addr() {
        ConnectionAddr::Tcp(name, port)
        | ConnectionAddr::TcpTls {
            host: name, port, ..
        } => {
            let path = if db == 0 {
                String::new()
            } else {
                format!("/{db}")
            };
            Some(format!(
                "{scheme}://{}{}{path}",
                shown_credentials(info),
                host_and_port(name, *port)
            ))
        }
        ConnectionAddr::Unix(path) => {
            let user = info
                .redis_settings()
                .username()
                .map_or(String::new(), |user| format!("&user={user}"));
            let password = if info.redis_settings().password().is_some() {
                "&pass=***"
            } else {
                ""
            };
            let query = format!("db={db}{user}{password}");
            Some(format!("unix://{}?{query}", path.display()))
        }
        _ => None,
    }
}

/// The user, and `***` for a password, as a URL's authority gives them (`user:***@`).
fn shown_credentials(info: &redis::ConnectionInfo) -> String {
    let settings = info.redis_settings();
    match (settings.username(), settings.password()) {
        (Some(user), Some(_)) => format!("{user}:***@"),
        (None, Some(_)) => ":***@".into(),
        (Some(user), None) => format!("{user}@"),
        (None, None) => String::new(),
    }
}

/// `host:port`, an IPv6 address in brackets.
fn host_and_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A Redis error in words, with the password of `url` taken out should it appear: the one the
/// client reads from the URL, and as the URL spells it. Only whole words are hidden, so a short
/// password does not garble the words around it (`WRONGPASS` stays whole for `pass`).
fn said(error: &redis::RedisError, url: &str) -> String {
    let mut text = redact_urls(&error.to_string());
    // A server that refuses a command quotes the start of its arguments (`with args beginning
    // with: '3' 'AUTH' 'user' 'pass...`), cut short where no whole word can be matched.
    if let Some(at) = text.find("with args beginning with:") {
        text.truncate(at);
        text.push_str("with arguments not shown");
    }
    for secret in secrets(url) {
        // As the server may quote it, its control bytes turned into spaces.
        let spaced: String = secret
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        text = hide_word(&text, &secret);
        text = hide_word(&text, &spaced);
    }
    text
}

/// The password of `url` in every spelling that may be quoted back: as the client reads it
/// (of the first seed, for a cluster), and as written in the authority or a `pass`/`password`
/// query, %-escaped or not.
fn secrets(url: &str) -> Vec<String> {
    use redis::IntoConnectionInfo;
    let mut found = Vec::new();
    let first = match cluster_seeds(url) {
        Some(Ok(seeds)) => seeds.into_iter().next(),
        Some(Err(_)) => None,
        None => Some(url.to_string()),
    };
    if let Some(info) = first.and_then(|url| url.as_str().into_connection_info().ok())
        && let Some(password) = info.redis_settings().password()
    {
        found.push(password.to_string());
    }
    if let Some(written) = password(url) {
        found.push(written.to_string());
        found.push(percent_decoded(written));
    }
    if let Some((_, query)) = url.split_once('?') {
        for pair in query.split('&') {
            if let Some(("pass" | "password", value)) = pair.split_once('=') {
                found.push(value.to_string());
                found.push(percent_decoded(value));
            }
        }
    }
    // As a URL writer would spell each: every byte escaped but letters and digits, or only
    // those the URL standard escapes in credentials.
    let spelled: Vec<String> = found
        .iter()
        .flat_map(|secret| {
            [
                escaped(secret, |byte| byte.is_ascii_alphanumeric()),
                escaped(secret, |byte| {
                    byte.is_ascii_graphic() && !b"\"#<>?`{}/:;=@[\\]^|%".contains(&byte)
                }),
            ]
        })
        .collect();
    found.extend(spelled);
    found.retain(|secret| !secret.is_empty());
    found.sort_unstable_by_key(|secret| std::cmp::Reverse(secret.len()));
    found.dedup();
    found
}

/// `text` with every byte that `keep` refuses written `%XX`.
fn escaped(text: &str, keep: fn(u8) -> bool) -> String {
    text.bytes()
        .map(|byte| {
            if keep(byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}
/// `text` with every occurrence of `word` that no letter or digit touches replaced by `***`.
fn hide_word(text: &str, word: &str) -> String {
    if word.is_empty() {
        return text.to_string();
    }
    let touches = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back().or(out.chars().next_back());
        let after = rest[at + word.len()..].chars().next();
        out.push_str(&rest[..at]);
        if touches(before) || touches(after) {
            out.push_str(word);
        } else {
            out.push_str("***");
        }
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// The password as written in the URL's credentials: after the first `:` of what comes before
/// the last `@` (a password may hold `@` and `/`; a host holds neither).
fn password(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let user_info = rest.rsplit_once('@')?.0;
    Some(
        user_info
            .split_once(':')
            .map_or(user_info, |(_, password)| password),
    )
}

/// The arguments of `decide.lua` for `op`.
fn arguments(op: &Op) -> Vec<String> {
    let budget = |policy: &BudgetPolicy| {
        vec![
            policy.floor.to_string(),
            policy.ratio.to_string(),
            millis(policy.window).to_string(),
        ]
    };
    match op {
        Op::Admit { id, lease, earn } => {
            let mut args = vec!["admit".into(), id.to_string(), lease.to_string()];
            if let Some(policy) = earn {
                args.push(millis(policy.window).to_string());
            }
            args
        }
        Op::FirstAttempt(policy) => [vec!["first".into()], budget(policy)].concat(),
        Op::Retry(policy) => [vec!["retry".into()], budget(policy)].concat(),
        Op::Record {
            id,
            outcome,
            policy,
        } => vec![
            "record".into(),
            id.to_string(),
            match outcome {
                Outcome::Success => "success",
                Outcome::Failure => "failure",
                Outcome::Nothing => "nothing",
            }
            .into(),
            policy.threshold.to_string(),
            millis(policy.cooldown).to_string(),
        ],
        Op::ShowBudget(policy) => [vec!["show-budget".into()], budget(policy)].concat(),
        Op::ShowBreaker => vec!["show-breaker".into()],
        Op::ResetBudget => vec!["reset-budget".into()],
        Op::ResetBreaker => vec!["reset-breaker".into()],
    }
}

/// An integer of a reply: an integer, or digits (the script sends large numbers as text).
fn number(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        _ => None,
    }
}

/// A string of a reply (the script's `'-'` for none, and times, which it sends as text).
fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        _ => None,
    }
}

fn unsigned(value: &Value) -> Option<u64> {
    u64::try_from(number(value)?).ok()
}

/// The reply of `decide.lua` to `op`, as the rules give it.
fn reply(op: &Op, values: &[Value]) -> Option<Reply> {
    let at = |index: usize| values.get(index);
    Some(match op {
        Op::Admit { .. } => {
            let now = unsigned(at(2)?)?;
            let admission = match number(at(0)?)? {
                code::ADMIT_GO => Admission::Closed,
                code::ADMIT_PROBE => Admission::Probe,
                code::ADMIT_OPEN => Admission::Open {
                    next_probe: unsigned(at(1)?)?,
                },
                _ => return None,
            };
            Reply::Admitted { admission, now }
        }
        Op::FirstAttempt(_) | Op::ResetBudget | Op::ResetBreaker => Reply::Done,
        Op::Retry(_) => Reply::Paid {
            spent: match number(at(0)?)? {
                0 => false,
                1 => true,
                _ => return None,
            },
            balance: number(at(1)?)? as f64 / 1000.0,
        },
        Op::Record { .. } => {
            let until = unsigned(at(1)?)?;
            let transition = match number(at(0)?)? {
                code::BREAKER_KEPT => None,
                code::BREAKER_OPENED => Some(Transition::Opened { until }),
                code::BREAKER_REOPENED => Some(Transition::Reopened { until }),
                code::BREAKER_CLOSED => Some(Transition::Closed),
                _ => return None,
            };
            Reply::Recorded {
                transition,
                now: unsigned(at(2)?)?,
            }
        }
        Op::ShowBudget(_) => Reply::Budget(BudgetView {
            firsts: unsigned(at(0)?)?,
            retries: unsigned(at(1)?)?,
            balance: number(at(2)?)? as f64 / 1000.0,
        }),
        Op::ShowBreaker => {
            let open_until = text(at(1)?)?;
            let probe_id = text(at(3)?)?;
            let probe = match probe_id.as_str() {
                "-" => None,
                id => Some(Probe {
                    id: id.parse().ok()?,
                    until: unsigned(at(4)?)?,
                }),
            };
            Reply::Breaker {
                record: BreakerRecord {
                    failures: unsigned(at(0)?)?,
                    open_until: match open_until.as_str() {
                        "-" => None,
                        until => Some(until.parse().ok()?),
                    },
                    failed_probes: u32::try_from(unsigned(at(2)?)?).ok()?,
                    probe,
                },
                now: unsigned(at(5)?)?,
            }
        }
    })
}

impl Store for RedisStore {
    fn apply(&mut self, name: &str, op: &Op) -> Result<Applied, StoreError> {
        let gone = || StoreError(format!("Redis at {}: the connection ended", self.shown));
        self.decisions
            .send((name.to_string(), *op))
            .map_err(|_| gone())?;
        match answer_within(
            &self.answers,
            self.decision_wait,
            self.flood_most,
            &self.others_sockets,
        ) {
            Ok(answer) => answer,
            Err(None) => Err(gone()),
            Err(Some(why)) => Err(StoreError(format!("Redis at {}: {why}", self.shown))),
        }
    }
}

/// How often the wait for an answer looks at memory.
const FLOOD_CHECK: Duration = Duration::from_millis(10);

/// This process's resident memory, in bytes (0 when it cannot be read).
fn resident_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|statm| statm.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf(3) takes a plain integer.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages.saturating_mul(u64::try_from(page).unwrap_or(4096))
}

impl Decider {
    fn apply(&mut self, name: &str, op: &Op) -> Result<Applied, StoreError> {
        let mut invocation = self.script.prepare_invoke();
        invocation
            .key(format!("retry:{{{name}}}:budget"))
            .key(format!("retry:{{{name}}}:breaker"));
        for argument in arguments(op) {
            invocation.arg(argument);
        }
        let values: Vec<Value> = invocation
            .invoke(self.connection.connection())
            .map_err(|error| StoreError(format!("Redis at {}: {error}", self.shown)))?;
        // The script ends every reply with the count of records it replaced.
        let read = values
            .split_last()
            .and_then(|(replaced, values)| Some((reply(op, values)?, unsigned(replaced)?)));
        let (reply, replaced) = read.ok_or_else(|| {
            // What it said, cut short: a server may answer anything, of any size.
            let mut said = format!("{values:?}");
            if let Some((at, _)) = said.char_indices().nth(200) {
                said.truncate(at);
                said.push_str("...");
            }
            StoreError(format!(
                "Redis at {}: an answer retry cannot read: {said}",
                self.shown
            ))
        })?;
        Ok(Applied {
            reply,
            replaced: replaced > 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_of_a_url_is_found_to_be_hidden() {
        assert_eq!(password("redis://:secret@host"), Some("secret"));
        assert_eq!(password("redis://user:pw@host/1"), Some("pw"));
        assert_eq!(password("redis://host"), None);
    }

    /// What a URL shows is rebuilt from what the client reads: every part but the password,
    /// whatever bytes the password holds and wherever it is given.
    #[test]
    fn a_shown_url_holds_every_part_but_the_password() {
        assert_eq!(shown_url("redis://:pw@host:1/2"), "redis://:***@host:1/2");
        assert_eq!(shown_url("redis://u:pw@host"), "redis://u:***@host:6379");
        assert_eq!(shown_url("rediss://host:7"), "rediss://host:7");
        assert_eq!(shown_url("redis://[::1]:7/0"), "redis://[::1]:7");
        assert_eq!(
            shown_url("unix:///run/r.sock?pass=pw&db=3"),
            "unix:///run/r.sock?db=3&pass=***"
        );
        assert_eq!(
            shown_url("redis+cluster://:p%40w%2Fd@a:1,b:2"),
            "redis+cluster://:***@a:1,b:2"
        );
        assert_eq!(
            shown_url("redis+cluster://:p@w/d@a:1,b:2"),
            "redis+cluster://(a URL the Redis client cannot read)"
        );
        assert_eq!(
            shown_url("redis://:hunter2/xyz@host:1"),
            "redis://(a URL the Redis client cannot read)"
        );
        let passwords = [
            "my pass",
            "hunter2/xyz",
            "tok+en/x=",
            "p@ss",
            "100%sure",
            "%41%2F",
            ":c:",
            "q'uote",
            "d\"q",
            "ünï",
            ";s,c",
            "#h",
            "?x=1&y",
            "b\\s",
            " s@/x",
        ];
        for password in passwords {
            let encoded: String = password
                .bytes()
                .map(|byte| match byte {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (byte as char).to_string(),
                    _ => format!("%{byte:02X}"),
                })
                .collect();
            for url in [
                format!("redis://:{password}@h:1/0"),
                format!("redis://user:{encoded}@h:1/0"),
                format!("rediss://:{encoded}@h:1"),
                format!("unix:///s.sock?pass={encoded}&db=2"),
                format!("unix:///s.sock?password={password}"),
                format!("redis+cluster://:{encoded}@h:1"),
                format!("redis+cluster://:{password}@h:1,g:2"),
            ] {
                let shown = shown_url(&url);
                for piece in [password, encoded.as_str()] {
                    let piece = piece.trim();
                    assert!(!shown.contains(piece), "{url}: {shown}");
                }
                let error = redis::RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "refused",
                    format!("{url} said {password} and {encoded}"),
                ));
                let text = said(&error, &url);
                assert!(!text.contains(password.trim()), "{url}: {text}");
                assert!(!text.contains(&encoded), "{url}: {text}");
            }
        }
    }

    #[test]
    fn a_cluster_url_names_each_seed_with_the_shared_credentials() {
        assert_eq!(
            cluster_seeds("redis+cluster://:pw@a:7000,b:7001"),
            Some(Ok(vec![
                "redis://:pw@a:7000".to_string(),
                "redis://:pw@b:7001".to_string()
            ]))
        );
        assert_eq!(
            cluster_seeds("rediss+cluster://h:1"),
            Some(Ok(vec!["rediss://h:1".to_string()]))
        );
        // What follows the hosts reaches every node (the client reads no password there, but a
        // database or a protocol); the credentials end before the hosts, not at a query's `@`.
        assert_eq!(
            cluster_seeds("redis+cluster://u:pw@a:1,b:2?password=x@y"),
            Some(Ok(vec![
                "redis://u:pw@a:1?password=x@y".to_string(),
                "redis://u:pw@b:2?password=x@y".to_string()
            ]))
        );
        assert!(cluster_seeds("redis+cluster://h").unwrap().is_err());
        assert_eq!(cluster_seeds("redis://h:1"), None);
    }

    /// The client's own words keep no password they may quote; with none, or an empty one,
    /// they are left as they are.
    #[test]
    fn a_password_in_the_clients_words_is_hidden() {
        let url = "redis://:hunter2@host:x";
        let error = redis::RedisError::from((
            redis::ErrorKind::InvalidClientConfig,
            "bad URL",
            format!("{url} (hunter2)"),
        ));
        let text = said(&error, url);
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains("bad URL") && text.contains(":***@host:x (***)"),
            "{text}"
        );
        assert_eq!(
            said(&error, "redis://host"),
            redact_urls(&error.to_string())
        );
        assert_eq!(
            said(&error, "redis://user:@host"),
            redact_urls(&error.to_string())
        );
    }

    /// A short password that is part of the server's words leaves them readable, and is
    /// still hidden wherever it stands alone, as given or percent-decoded.
    #[test]
    fn a_short_password_hides_only_whole_words() {
        let wrong = redis::RedisError::from((
            redis::ErrorKind::AuthenticationFailed,
            "WRONGPASS",
            "invalid username-password pair or user is disabled.".to_string(),
        ));
        let text = said(&wrong, "redis://:pass@host:1");
        assert_eq!(text, wrong.to_string());
        assert!(text.contains("WRONGPASS") && text.contains("username-password"));

        let quoted = redis::RedisError::from((
            redis::ErrorKind::InvalidClientConfig,
            "bad",
            "pass 'pass' p@ss,pass".to_string(),
        ));
        let text = said(&quoted, "redis://:pass@host:1");
        assert_eq!(text.matches("***").count(), 3, "{text}");
        let text = said(&quoted, "redis://:p%40ss@host:1");
        assert!(!text.contains("p@ss"), "{text}");
        assert!(text.contains("pass 'pass'"), "{text}");
    }

    #[test]
    fn hidden_words_are_whole() {
        assert_eq!(hide_word("e else e", "e"), "*** else ***");
        assert_eq!(hide_word("ab", "ab"), "***");
        assert_eq!(hide_word("xab ab abx", "ab"), "xab *** abx");
        assert_eq!(hide_word("ééab ab", "ab"), "ééab ***");
        assert_eq!(hide_word("text", ""), "text");
        assert_eq!(percent_decoded("p%40ss%2"), "p@ss%2");
        assert_eq!(percent_decoded("%e2%82%ac"), "€");
        assert_eq!(percent_decoded("%zz"), "%zz");
    }

    /// A redis-server of the test's own on a Unix socket in a directory of its own (a free
    /// port picked ahead could be taken by another socket before the server binds it), stopped
    /// by its pid.
    struct Server {
        child: std::process::Child,
        dir: tempfile::TempDir,
    }

    impl Server {
        fn url(&self, db: u8) -> String {
            format!("unix://{}?db={db}", self.socket().display())
        }

        fn socket(&self) -> std::path::PathBuf {
            self.dir.path().join("redis.sock")
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Starts a server, or says why not: without redis-server a test fails in CI (`.ci/run`
    /// installs it) and is skipped elsewhere.
    fn server() -> Option<Server> {
        let dir = tempfile::tempdir().expect("a directory for the socket");
        let socket = dir.path().join("redis.sock");
        let spawned = std::process::Command::new("redis-server")
            .arg("--port")
            .arg("0")
            .arg("--unixsocket")
            .arg(&socket)
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn();
        let Ok(child) = spawned else {
            crate::test_support::skipped("redis-server is not here");
            return None;
        };
        let server = Server { child, dir };
        let started = std::time::Instant::now();
        while std::os::unix::net::UnixStream::connect(server.socket()).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(server)
    }

    /// The script's constants and reply codes are the ones `rules.rs` and this module use.
    #[test]
    fn the_script_and_the_rust_rules_share_their_constants() {
        let script = include_str!("decide.lua");
        let local = |name: &str| -> i64 {
            script
                .lines()
                .find_map(|line| line.strip_prefix(&format!("local {name} = ")))
                .unwrap_or_else(|| panic!("decide.lua has no local {name}"))
                .trim()
                .parse()
                .unwrap()
        };
        assert_eq!(local("SLICES"), super::super::rules::SLICES as i64);
        assert_eq!(
            local("MOST_DOUBLINGS"),
            i64::from(super::super::rules::MOST_DOUBLINGS)
        );
        for (name, value) in [
            ("ADMIT_GO", code::ADMIT_GO),
            ("ADMIT_PROBE", code::ADMIT_PROBE),
            ("ADMIT_OPEN", code::ADMIT_OPEN),
            ("BREAKER_KEPT", code::BREAKER_KEPT),
            ("BREAKER_OPENED", code::BREAKER_OPENED),
            ("BREAKER_REOPENED", code::BREAKER_REOPENED),
            ("BREAKER_CLOSED", code::BREAKER_CLOSED),
        ] {
            assert_eq!(local(name), value, "{name}");
        }
        // No bare code in a reply: each is sent by its name.
        for line in script.lines().filter(|line| line.contains("reply({")) {
            let first = line.split("reply({").nth(1).unwrap().trim_start();
            assert!(
                !first.starts_with(|c: char| c.is_ascii_digit()),
                "a bare code: {line}"
            );
        }
    }

    /// An unknown code is an answer that cannot be read, never open or closed.
    #[test]
    fn unknown_codes_are_not_read() {
        let id = 7;
        let admit = Op::Admit {
            id,
            lease: 1000,
            earn: None,
        };
        let values = |code: i64| [Value::Int(code), Value::Int(5), Value::Int(9)];
        assert!(reply(&admit, &values(code::ADMIT_OPEN)).is_some());
        assert!(reply(&admit, &values(3)).is_none());
        assert!(reply(&admit, &values(-1)).is_none());
        let policy = super::super::rules::BreakerPolicy {
            threshold: 5,
            cooldown: Duration::from_secs(60),
        };
        let record = Op::Record {
            id,
            outcome: Outcome::Failure,
            policy,
        };
        assert!(reply(&record, &values(code::BREAKER_CLOSED)).is_some());
        assert!(reply(&record, &values(4)).is_none());
        let retry = Op::Retry(BudgetPolicy {
            ratio: 0.1,
            floor: 10,
            window: Duration::from_secs(60),
        });
        assert!(reply(&retry, &[Value::Int(2), Value::Int(1000)]).is_none());
    }

    /// The Rust rules' reply, and what `decide.lua` answered, agree: the same decisions, the
    /// same times (the rules run at the time the server read), balances to the thousandth the
    /// script keeps.
    fn same(rust: &Reply, redis: &Reply) -> bool {
        let thousandths = |x: f64| (x * 1000.0).round() as i64;
        match (rust, redis) {
            (
                Reply::Paid {
                    spent: a,
                    balance: x,
                },
                Reply::Paid {
                    spent: b,
                    balance: y,
                },
            ) => a == b && thousandths(*x) == thousandths(*y),
            (Reply::Budget(a), Reply::Budget(b)) => {
                a.firsts == b.firsts
                    && a.retries == b.retries
                    && thousandths(a.balance) == thousandths(b.balance)
            }
            _ => rust == redis,
        }
    }

    fn op_strategy() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        let budget = BudgetPolicy {
            ratio: 0.5,
            floor: 2,
            // Long enough that every decision of a case falls in one window, whatever the
            // millisecond each store reads.
            window: Duration::from_secs(3600),
        };
        let breaker = (1u64..=3, prop_oneof![Just(0u64), Just(60_000u64)]).prop_map(
            |(threshold, cooldown)| super::super::rules::BreakerPolicy {
                threshold,
                cooldown: Duration::from_millis(cooldown),
            },
        );
        let outcome = prop_oneof![
            Just(Outcome::Success),
            Just(Outcome::Failure),
            Just(Outcome::Nothing)
        ];
        prop_oneof![
            (
                1u64..=3,
                prop_oneof![Just(0u64), Just(60_000u64)],
                any::<bool>()
            )
                .prop_map(move |(id, lease, earn)| Op::Admit {
                    id,
                    lease,
                    earn: earn.then_some(budget),
                }),
            Just(Op::FirstAttempt(budget)),
            Just(Op::Retry(budget)),
            (1u64..=3, outcome, breaker).prop_map(|(id, outcome, policy)| Op::Record {
                id,
                outcome,
                policy
            }),
            Just(Op::ShowBudget(budget)),
            Just(Op::ShowBreaker),
            Just(Op::ResetBudget),
            Just(Op::ResetBreaker),
        ]
    }

    /// Waits for tests of what the store decides, not of how soon it gives up: a loaded machine
    /// may hold a reply past a second (the bounds are tested against servers that never answer
    /// or flood, in the integration tests).
    const PATIENT: Waits = Waits {
        connect: Duration::from_secs(30),
        reply: Duration::from_secs(30),
        cluster_open: Duration::from_secs(30),
        open: Duration::from_secs(30),
        all: Duration::from_secs(60),
        flood_most: u64::MAX,
    };

    /// Random sequences of decisions, through the Rust rules and through `decide.lua` on a real
    /// Redis: every reply the same, so the two copies of the rules cannot drift apart.
    #[test]
    fn the_script_and_the_rules_answer_alike() {
        use proptest::prelude::*;
        use std::sync::atomic::{AtomicU64, Ordering};
        let Some(server) = server() else { return };
        let url = server.url(5);
        // proptest's closure is a `Fn`: the store and a connection of the test's own (for the
        // server's time) are lent through RefCells.
        let store = std::cell::RefCell::new(RedisStore::open_with(&url, PATIENT).unwrap());
        let clock = std::cell::RefCell::new(
            redis::Client::open(url.as_str())
                .unwrap()
                .get_connection()
                .unwrap(),
        );
        let case = AtomicU64::new(0);
        let config = ProptestConfig {
            cases: 48,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        proptest!(config, |(ops in proptest::collection::vec(op_strategy(), 1..40))| {
            let name = format!("differential-{}", case.fetch_add(1, Ordering::Relaxed));
            let mut rules = super::super::rules::Record::default();
            let mut store = store.borrow_mut();
            let time: Vec<String> = redis::cmd("TIME")
                .query(&mut *clock.borrow_mut())
                .unwrap();
            let mut now = time[0].parse::<u64>().unwrap() * 1000
                + time[1].parse::<u64>().unwrap() / 1000;
            let began = now;
            for op in &ops {
                let redis = store.apply(&name, op).unwrap();
                prop_assert!(!redis.replaced);
                if let Reply::Admitted { now: at, .. }
                | Reply::Recorded { now: at, .. }
                | Reply::Breaker { now: at, .. } = redis.reply
                {
                    now = at;
                }
                // Redis forgets an idle breaker (a second after its last write at the least),
                // the rules never do: a case that a loaded machine stretched toward that
                // second is compared up to there.
                if now >= began + 900 {
                    break;
                }
                let rust = rules.apply(op, now);
                prop_assert!(same(&rust, &redis.reply), "{op:?}: rules {rust:?}, script {:?}", redis.reply);
            }
        });
    }

    /// The Redis store takes the decisions the file store and the rules take, case by case.
    #[test]
    fn redis_passes_the_table_of_cases() {
        let Some(server) = server() else { return };
        let url = server.url(3);
        let mut store = RedisStore::open_with(&url, PATIENT).unwrap();
        assert_eq!(super::super::store::tests::scenarios(&mut store), 27);
    }
}
