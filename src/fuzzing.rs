//! Entry points for the fuzz targets in `fuzz/` into the parsers and rules the crate keeps to
//! itself: what an HTTP client prints, and a state file's record with the decisions taken on
//! it. Not an interface: nothing but the fuzz targets may use it.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use crate::fleet::rules::{BreakerPolicy, BudgetPolicy, Op, Outcome, Record};
use crate::http;
use crate::lines::{LineMatcher, Pattern};

/// What `--http` reads of one line: its status, if it is a status line (1xx included), and,
/// if it is a `Retry-After` header line, the wait its value asks for at `now` (`None` inside
/// for a value that is none of the accepted forms).
pub fn http_line(line: &[u8], now: SystemTime) -> (Option<u16>, Option<Option<Duration>>) {
    let status = http::status_line(line);
    let hint = http::retry_after_line(line)
        .map(|value| http::retry_after_value(value).map(|value| value.wait(now)));
    (status, hint)
}

/// The wait a `--retry-after-*` capture asks for.
pub fn custom_hint(value: &[u8]) -> Option<Duration> {
    http::custom_hint(value).map(|value| value.wait(SystemTime::UNIX_EPOCH))
}

/// The lines of `output` that reach the HTTP reader, when the output arrives in chunks of
/// `chunk` bytes (at least one): those the sieve lets through.
pub fn sieved_lines(output: &[u8], chunk: usize) -> Vec<Vec<u8>> {
    static SIEVE: OnceLock<Pattern> = OnceLock::new();
    let sieve = SIEVE.get_or_init(|| Pattern::new(http::SIEVE).expect("a valid pattern"));
    let mut matcher = LineMatcher::new(Vec::new(), vec![sieve.clone()]);
    let mut lines = Vec::new();
    let mut collected = |_: usize, line: &[u8]| lines.push(line.to_vec());
    for piece in output.chunks(chunk.max(1)) {
        matcher.feed(piece, &mut collected);
    }
    matcher.finish(&mut collected);
    lines
}

/// The wait after a failure whose attempt asked for `hint`, with the schedule's `delay`,
/// `--retry-after-max` `most`, and the spread drawn at `spread` (cut to its limit).
pub fn hinted_wait(delay: Duration, hint: Duration, most: Duration, spread: Duration) -> Duration {
    let limit = http::spread_limit(hint, most);
    http::hinted_wait(delay, hint, most, spread.min(limit))
}

/// A state file's text as the store reads it: the record it holds, rendered again; `None` when
/// it is corrupt.
pub fn read_state(text: &str) -> Option<String> {
    Record::parse(text).map(|record| record.render())
}

/// One decision, as the fuzz targets draw it: what it is (`kind`, any byte), when (the store's
/// time, in milliseconds), for which run (`id`), and the window or cooldown of that run's
/// policy in milliseconds (`span`).
pub type Decision = (u8, u64, u64, u64);

/// Takes `decisions` in turn on the record that `text` holds (a fresh one when it is corrupt),
/// and returns the record's text after each.
pub fn decide(text: &str, decisions: &[Decision]) -> Vec<String> {
    let mut record = Record::parse(text).unwrap_or_default();
    decisions
        .iter()
        .map(|&(kind, now, id, span)| {
            let budget = BudgetPolicy {
                ratio: f64::from(kind >> 4) / 15.0,
                floor: id % 20 + 1,
                window: Duration::from_millis(span),
            };
            let breaker = BreakerPolicy {
                threshold: u64::from(kind >> 5) + 1,
                cooldown: Duration::from_millis(span),
            };
            let outcome = [Outcome::Success, Outcome::Failure, Outcome::Nothing];
            let op = match kind % 8 {
                0 => Op::Admit {
                    id,
                    lease: span,
                    earn: (kind & 8 != 0).then_some(budget),
                },
                1 => Op::FirstAttempt(budget),
                2 => Op::Retry(budget),
                3 => Op::Record {
                    id,
                    outcome: outcome[usize::from(kind >> 3) % 3],
                    policy: breaker,
                },
                4 => Op::ShowBudget(budget),
                5 => Op::ShowBreaker,
                6 => Op::ResetBudget,
                _ => Op::ResetBreaker,
            };
            let _ = record.apply(&op, now);
            record.render()
        })
        .collect()
}
