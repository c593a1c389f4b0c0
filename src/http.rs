//! What an HTTP client prints, read as a server's answer: status lines (`HTTP/1.1 503 ...`), the
//! verdict a status adds under `--http`, `Retry-After` values, and the wait a hint asks for.
//!
//! Pure: lines in, statuses and durations out. The wall clock is a parameter.

use std::time::{Duration, Instant, SystemTime};

use crate::parse;

/// What a final HTTP status says of an attempt under `--http`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StatusClass {
    /// 408, 429, 500, 502, 503, 504: the statuses `curl --retry` treats as transient. Counts as
    /// a `--retry-if-*` match.
    Retryable,
    /// Any other 4xx or 5xx: retrying cannot help. Counts as a `--stop-if-*` match.
    Permanent,
    /// 1xx (never final), 2xx, 3xx: nothing to add; the exit code decides.
    Neutral,
}

impl StatusClass {
    pub(crate) fn of(status: u16) -> StatusClass {
        match status {
            408 | 429 | 500 | 502 | 503 | 504 => StatusClass::Retryable,
            400..=599 => StatusClass::Permanent,
            _ => StatusClass::Neutral,
        }
    }
}

/// Every line that may be an HTTP status line or a `Retry-After` header matches this pattern:
/// a sieve of plain literals, which the regex engine finds with its vector search, so that a
/// long body costs one scan at the speed of any literal pattern; `HttpFindings` then reads each
/// line it passes exactly. (Anchored at the line's start, with the optional blanks, it had no literal
/// to search for and cost six times as much: BENCHMARKS.md.)
pub(crate) const SIEVE: &str = r"HTTP/|(?i:retry-after:)";

/// The line's text after what clients put before a response line or header: `< ` (curl `-v`)
/// or blanks (wget `-S`).
fn unprefixed(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"< ").unwrap_or(line);
    let blanks = line
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    &line[blanks..]
}

/// The status of an HTTP status line, such as `HTTP/1.1 503 Service Unavailable`, `HTTP/2 429`
/// or `< HTTP/1.1 200 OK`: `HTTP/`, a version, a space and three digits (then a space or the
/// end). Interim 1xx lines count too; the caller skips them.
pub(crate) fn status_line(line: &[u8]) -> Option<u16> {
    let rest = unprefixed(line).strip_prefix(b"HTTP/")?;
    let version_len = rest
        .iter()
        .take_while(|&&b| b.is_ascii_digit() || b == b'.')
        .count();
    if version_len == 0 || !rest[0].is_ascii_digit() {
        return None;
    }
    let rest = rest[version_len..].strip_prefix(b" ")?;
    let (digits, after) = rest.split_at_checked(3)?;
    if !digits.iter().all(u8::is_ascii_digit) || after.first().is_some_and(|&b| b != b' ') {
        return None;
    }
    let status = digits
        .iter()
        .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    (100..=599).contains(&status).then_some(status)
}

/// The value of a `Retry-After:` header line (any case, after an optional `< ` or blanks),
/// trimmed; `None` for any other line.
pub(crate) fn retry_after_line(line: &[u8]) -> Option<&[u8]> {
    const NAME: &[u8] = b"retry-after:";
    let line = unprefixed(line);
    let (name, value) = line.split_at_checked(NAME.len())?;
    name.eq_ignore_ascii_case(NAME).then(|| value.trim_ascii())
}

/// Where a hint came from, for the message that says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HintSource {
    /// A `Retry-After` header line.
    RetryAfter,
    /// A `--retry-after-stdout` or `--retry-after-stderr` pattern.
    Command,
}

/// A wait a failed attempt asked for: a length, or a wall-clock time (an HTTP-date).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HintValue {
    After(Duration),
    At(SystemTime),
}

impl HintValue {
    /// The wait it asks for at the wall-clock time `now`: a time already past asks for none.
    pub(crate) fn wait(self, now: SystemTime) -> Duration {
        match self {
            HintValue::After(wait) => wait,
            HintValue::At(at) => at.duration_since(now).unwrap_or(Duration::ZERO),
        }
    }
}

/// A `Retry-After` value: delay-seconds (digits), or an HTTP-date (IMF-fixdate, RFC 850 or
/// asctime). `None` for anything else.
pub(crate) fn retry_after_value(value: &[u8]) -> Option<HintValue> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        // More digits than a u64 holds is still a wait: the longest there is, cut later.
        let wait = text.parse().map_or(Duration::MAX, Duration::from_secs);
        return Some(HintValue::After(wait));
    }
    httpdate::parse_http_date(text).ok().map(HintValue::At)
}

/// The wait a custom hint (`--retry-after-stdout`'s capture) asks for: seconds, decimal
/// seconds, or a duration (`1m30s`). `None` for anything else.
pub(crate) fn custom_hint(value: &[u8]) -> Option<HintValue> {
    let text = std::str::from_utf8(value).ok()?;
    // A duration is never empty nor negative: `parse::duration` refuses both.
    parse::duration(text.trim()).ok().map(HintValue::After)
}

/// A hint, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hint {
    pub(crate) value: HintValue,
    pub(crate) source: HintSource,
}

/// What the lines of an attempt's output said of HTTP: its last final status, its last hint,
/// and the last hint value that was none of the accepted forms. Each is kept with the instant it
/// was read, so that what two streams said merges into the last of each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HttpFindings {
    pub(crate) status: Option<(Instant, u16)>,
    pub(crate) hint: Option<(Instant, Hint)>,
    pub(crate) ignored: Option<(Instant, String)>,
}

/// What of the HTTP lines to read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpLines {
    /// Status lines (`--http`).
    pub statuses: bool,
    /// `Retry-After` header lines (`--honor-retry-after`, implied by `--http`).
    pub retry_after: bool,
}

impl HttpLines {
    pub fn any(self) -> bool {
        self.statuses || self.retry_after
    }
}

/// The longest ignored value kept for `--verbose`.
const IGNORED_SHOWN: usize = 80;

impl HttpFindings {
    /// Reads a line that may be a status line or a `Retry-After` header, as `lines` says.
    /// Interim (1xx) statuses are skipped.
    pub(crate) fn read_http_line(&mut self, at: Instant, line: &[u8], lines: HttpLines) {
        if lines.statuses
            && let Some(status) = status_line(line)
            && status >= 200
        {
            self.status = Some((at, status));
        }
        if lines.retry_after
            && let Some(value) = retry_after_line(line)
        {
            self.read_value(at, value, retry_after_value(value), HintSource::RetryAfter);
        }
    }

    /// Reads the text a `--retry-after-*` pattern captured.
    pub(crate) fn read_custom_hint(&mut self, at: Instant, text: &[u8]) {
        self.read_value(at, text, custom_hint(text), HintSource::Command);
    }

    fn read_value(
        &mut self,
        at: Instant,
        raw: &[u8],
        value: Option<HintValue>,
        source: HintSource,
    ) {
        match value {
            Some(value) => self.hint = Some((at, Hint { value, source })),
            None => {
                let raw = &raw[..raw.len().min(IGNORED_SHOWN)];
                self.ignored = Some((at, String::from_utf8_lossy(raw).into_owned()));
            }
        }
    }

    /// Takes in what another stream said: the later of each.
    pub(crate) fn merge(&mut self, other: &HttpFindings) {
        fn later<T: Clone>(mine: &mut Option<(Instant, T)>, theirs: &Option<(Instant, T)>) {
            if let Some((at, value)) = theirs
                && mine.as_ref().is_none_or(|(mine, _)| at > mine)
            {
                *mine = Some((*at, value.clone()));
            }
        }
        later(&mut self.status, &other.status);
        later(&mut self.hint, &other.hint);
        later(&mut self.ignored, &other.ignored);
    }
}

/// The wait after a failure whose attempt asked for `hint`: the larger of the schedule's
/// `delay` and the hint (cut to `most`) plus `spread`, which the caller draws uniformly from
/// `[0, spread_limit(hint)]`. Saturating.
pub(crate) fn hinted_wait(
    delay: Duration,
    hint: Duration,
    most: Duration,
    spread: Duration,
) -> Duration {
    delay.max(hint.min(most).saturating_add(spread))
}

/// The most a hinted wait is spread by, so that a fleet told the same time does not come back
/// on the same second: a tenth of the (cut) hint, and at least one second.
pub(crate) fn spread_limit(hint: Duration, most: Duration) -> Duration {
    (hint.min(most) / 10).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn status_lines_as_clients_print_them() {
        for (line, status) in [
            (&b"HTTP/1.1 503 Service Unavailable"[..], Some(503)),
            (b"HTTP/2 429", Some(429)),
            (b"HTTP/2 200 ", Some(200)),
            (b"< HTTP/1.1 200 OK", Some(200)),
            (b"  HTTP/1.1 404 Not Found", Some(404)),
            (b"\tHTTP/1.0 302 Found", Some(302)),
            (b"HTTP/3 100 Continue", Some(100)),
            (b"HTTP/1.1 5034 x", None),
            (b"HTTP/1.1 50", None),
            (b"HTTP/1.1  503", None),
            (b"HTTP/ 503", None),
            (b"HTTP/", None),
            (b"< HTTP/", None),
            (b"HTTP/.1 503", None),
            (b"HTTP/x 503", None),
            (b"http/1.1 503", None),
            (b"> GET / HTTP/1.1", None),
            (b"The HTTP/1.1 503 page", None),
            (b"HTTP/1.1 099 x", None),
            (b"HTTP/1.1 600 x", None),
            (b"", None),
        ] {
            assert_eq!(
                status_line(line),
                status,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn status_classes() {
        for status in [408, 429, 500, 502, 503, 504] {
            assert_eq!(StatusClass::of(status), StatusClass::Retryable, "{status}");
        }
        for status in [400, 401, 403, 404, 409, 410, 422, 499, 501, 505, 599] {
            assert_eq!(StatusClass::of(status), StatusClass::Permanent, "{status}");
        }
        for status in [100, 101, 200, 204, 301, 302, 304, 399] {
            assert_eq!(StatusClass::of(status), StatusClass::Neutral, "{status}");
        }
    }

    #[test]
    fn retry_after_header_lines() {
        assert_eq!(retry_after_line(b"Retry-After: 2"), Some(&b"2"[..]));
        assert_eq!(retry_after_line(b"retry-after:7  "), Some(&b"7"[..]));
        assert_eq!(retry_after_line(b"< RETRY-AFTER: 30"), Some(&b"30"[..]));
        assert_eq!(
            retry_after_line(b"  Retry-After: Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(&b"Sun, 06 Nov 1994 08:49:37 GMT"[..])
        );
        assert_eq!(retry_after_line(b"X-Retry-After: 2"), None);
        assert_eq!(retry_after_line(b"Retry-After 2"), None);
        assert_eq!(retry_after_line(b"Retry"), None);
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn retry_after_values() {
        let now = at(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let secs = |n| Some(Duration::from_secs(n));
        let retry_after_value =
            |value: &[u8], now| super::retry_after_value(value).map(|v| v.wait(now));
        assert_eq!(retry_after_value(b"2", now), secs(2));
        assert_eq!(retry_after_value(b"0", now), secs(0));
        assert_eq!(
            retry_after_value(b"99999999999999999999999", now),
            Some(Duration::MAX)
        );
        // The three forms of RFC 9110, 60 s ahead of now.
        for date in [
            &b"Sun, 06 Nov 1994 08:50:37 GMT"[..],
            b"Sunday, 06-Nov-94 08:50:37 GMT",
            b"Sun Nov  6 08:50:37 1994",
        ] {
            assert_eq!(
                retry_after_value(date, now),
                secs(60),
                "{}",
                String::from_utf8_lossy(date)
            );
        }
        assert_eq!(
            retry_after_value(b"Sun, 06 Nov 1994 08:00:00 GMT", now),
            secs(0),
            "a past date asks for no wait"
        );
        for garbage in [
            &b""[..],
            b"soon",
            b"-5",
            b"1.5",
            b"2s",
            b"Sun, 32 Nov 1994 08:49:37 GMT",
            b"\xff\xfe",
        ] {
            assert_eq!(
                retry_after_value(garbage, now),
                None,
                "{}",
                String::from_utf8_lossy(garbage)
            );
        }
    }

    #[test]
    fn custom_hints_take_seconds_decimals_and_durations() {
        let ms = |n| Some(HintValue::After(Duration::from_millis(n)));
        assert_eq!(custom_hint(b"3"), ms(3000));
        assert_eq!(custom_hint(b" 1.5 "), ms(1500));
        assert_eq!(custom_hint(b"1m30s"), ms(90_000));
        assert_eq!(custom_hint(b"250ms"), ms(250));
        for garbage in [
            &b""[..],
            b"  ",
            b"-1",
            b" -1s",
            b"-0",
            b"soon",
            b"1e3",
            b"\xff",
        ] {
            assert_eq!(custom_hint(garbage), None);
        }
    }

    #[test]
    fn a_hint_only_lengthens_and_the_cut_comes_before_the_spread() {
        let s = Duration::from_secs;
        assert_eq!(hinted_wait(s(8), s(2), s(300), s(1)), s(8), "never shorter");
        assert_eq!(hinted_wait(s(1), s(30), s(300), s(2)), s(32));
        assert_eq!(
            hinted_wait(s(1), s(3600), s(60), s(5)),
            s(65),
            "cut, then spread"
        );
        assert_eq!(
            hinted_wait(s(1), Duration::MAX, s(60), Duration::MAX),
            Duration::MAX
        );
        assert_eq!(spread_limit(s(30), s(300)), s(3));
        assert_eq!(spread_limit(s(2), s(300)), s(1), "at least a second");
        assert_eq!(
            spread_limit(s(3600), s(300)),
            s(30),
            "a tenth of the cut hint"
        );
    }

    #[test]
    fn the_last_final_status_and_the_last_valid_hint_are_heard() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let both = HttpLines {
            statuses: true,
            retry_after: true,
        };
        let mut stdout = HttpFindings::default();
        stdout.read_http_line(at(1), b"HTTP/1.1 302 Found", both);
        stdout.read_http_line(at(2), b"HTTP/1.1 100 Continue", both);
        stdout.read_http_line(at(3), b"Retry-After: 5", both);
        stdout.read_http_line(at(4), b"Retry-After: soon", both);
        assert_eq!(stdout.status, Some((at(1), 302)), "1xx is skipped");
        let five = Hint {
            value: HintValue::After(Duration::from_secs(5)),
            source: HintSource::RetryAfter,
        };
        assert_eq!(stdout.hint, Some((at(3), five)), "garbage is ignored");
        assert_eq!(stdout.ignored, Some((at(4), "soon".to_string())));
        let mut stderr = HttpFindings::default();
        stderr.read_http_line(at(5), b"< HTTP/2 503", both);
        stderr.read_custom_hint(at(0), b"9");
        let mut merged = stdout.clone();
        merged.merge(&stderr);
        assert_eq!(
            merged.status,
            Some((at(5), 503)),
            "the later stream's status"
        );
        assert_eq!(
            merged.hint,
            Some((at(3), five)),
            "the earlier custom hint loses"
        );
        stderr.read_custom_hint(at(6), b"9");
        merged.merge(&stderr);
        let nine = Hint {
            value: HintValue::After(Duration::from_secs(9)),
            source: HintSource::Command,
        };
        assert_eq!(
            merged.hint,
            Some((at(6), nine)),
            "the later custom hint wins"
        );
        let statuses_only = HttpLines {
            statuses: true,
            retry_after: false,
        };
        assert!(statuses_only.any() && both.any());
        let hints_only = HttpLines {
            statuses: false,
            retry_after: true,
        };
        assert!(hints_only.any() && !HttpLines::default().any());
        let mut seen = HttpFindings::default();
        seen.read_http_line(at(1), b"Retry-After: 5", statuses_only);
        assert_eq!(seen, HttpFindings::default());
    }

    proptest! {
        #[test]
        fn any_line_is_read_without_panic(line in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = status_line(&line);
            if let Some(value) = retry_after_line(&line) {
                let _ = retry_after_value(value).map(|v| v.wait(SystemTime::now()));
            }
            let _ = custom_hint(&line);
        }

        /// Every line the exact readers accept reaches them: the sieve in front lets it
        /// through, whatever its prefix, case and tail, and wherever the chunks of output cut.
        #[test]
        fn the_sieve_passes_every_line_the_readers_accept(
            prefix in "(< )?[ \t]{0,3}",
            head in "(HTTP/1\\.1 503|HTTP/2 200|[Rr][Ee][Tt][Rr][Yy]-[Aa][Ff][Tt][Ee][Rr]:)",
            tail in proptest::collection::vec(any::<u8>(), 0..40),
            before in proptest::collection::vec(any::<u8>(), 0..40),
            chunk in 1usize..50,
        ) {
            let mut line = [prefix.as_bytes(), head.as_bytes()].concat();
            line.extend(tail.iter().filter(|&&b| b != b'\n' && b != b'\r'));
            prop_assume!(status_line(&line).is_some() || retry_after_line(&line).is_some());
            let mut output = before;
            output.push(b'\n');
            output.extend(&line);
            output.extend(b"\r\nbody");
            let sieve = crate::lines::Pattern::new(SIEVE).unwrap();
            let mut matcher = crate::lines::LineMatcher::new(Vec::new(), vec![sieve]);
            let mut passed = Vec::new();
            for piece in output.chunks(chunk) {
                matcher.feed(piece, &mut |_, l| passed.push(l.to_vec()));
            }
            matcher.finish(&mut |_, l| passed.push(l.to_vec()));
            prop_assert!(passed.contains(&line), "{:?} not in {:?}", line, passed);
        }

        #[test]
        fn status_lines_read_back(version in "[0-9](\\.[0-9])?", status in 100u16..600, reason in "[ -~]{0,20}") {
            let line = format!("HTTP/{version} {status} {reason}");
            prop_assert_eq!(status_line(line.as_bytes()), Some(status));
            let verbose = format!("< {line}");
            prop_assert_eq!(status_line(verbose.as_bytes()), Some(status));
        }

        #[test]
        fn dates_give_the_time_left(ahead in 0u64..10_000_000, now in 0u64..4_000_000_000) {
            let date = httpdate::fmt_http_date(at(now + ahead));
            let value = retry_after_value(date.as_bytes()).unwrap();
            prop_assert_eq!(value.wait(at(now)), Duration::from_secs(ahead));
            prop_assert_eq!(value.wait(at(now + 2 * ahead)), Duration::ZERO);
        }

        #[test]
        fn hinted_waits_are_bounded(delay in any::<u64>(), hint in any::<u64>(), most in any::<u64>(), spread in any::<u64>()) {
            let d = Duration::from_nanos;
            let wait = hinted_wait(d(delay), d(hint), d(most), d(spread));
            prop_assert!(wait >= d(delay));
            prop_assert!(wait >= d(hint).min(d(most)));
            prop_assert!(wait <= d(delay).max(d(most).saturating_add(d(spread))));
        }
    }
}
