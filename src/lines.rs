//! Line-by-line matching of an output stream as it arrives, in bounded memory.
//!
//! A line is the bytes before `\n`, without one trailing `\r`; a final line without `\n` counts;
//! a lone `\r` does not end a line. Bytes need not be UTF-8. A line longer than `WINDOW` is
//! matched on its first `WINDOW` bytes and on its last (where the final word after a progress
//! bar's `\r` updates lands); a match in between is not seen, however the line arrives.
//!
//! Speed: complete lines are searched a whole chunk at a time with a multi-line form of each
//! pattern, and only a candidate match is checked again against its own line with the pattern as
//! written. So the cost per byte is the regex engine's scan, not a call per line.
//!
//! Pure: bytes in, match flags out. Nothing here reads a pipe or writes a stream.

use std::ops::ControlFlow;

use memchr::{memchr, memrchr};
use regex_automata::meta::{self, Regex};
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind};

/// How much of a long line is matched at each end: the longest prefix kept while a line is
/// still incomplete, and the most of its end kept past that.
pub(crate) const WINDOW: usize = 64 * 1024;

/// One pattern, compiled twice: as written for single lines, and with `^`/`$` at line
/// boundaries for whole chunks.
#[derive(Clone, Debug)]
pub struct Pattern {
    line: Regex,
    chunk: Regex,
}

impl Pattern {
    pub fn new(pattern: &str) -> Result<Pattern, String> {
        Ok(Pattern {
            line: compile(pattern, Anchors::Line)?,
            chunk: compile(pattern, Anchors::EveryLine)?,
        })
    }

    fn matches_line(&self, line: &[u8]) -> bool {
        self.line.is_match(strip_cr(line))
    }

    /// Whether the start of a long line matches: `head` is its first bytes and one more, that
    /// one only context (so `$` and `\b` see that the line goes on).
    fn matches_head(&self, head: &[u8]) -> bool {
        self.line
            .is_match(Input::new(head).range(..head.len().saturating_sub(1)))
    }

    /// Whether the end of a long line matches: `tail` is its last bytes, the first of them
    /// only context (so `^` and `\b` see that this is not where the line starts).
    fn matches_tail(&self, tail: &[u8]) -> bool {
        let tail = strip_cr(tail);
        !tail.is_empty() && self.line.is_match(Input::new(tail).range(1..))
    }

    /// Whether a line longer than `WINDOW`, all of it at hand, matches on its two windows, as
    /// it would have had it arrived in pieces: the answer must not depend on how the output
    /// happened to be read.
    fn matches_long_line(&self, line: &[u8]) -> bool {
        self.matches_head(&line[..=WINDOW]) || self.matches_tail(&line[line.len() - (WINDOW + 1)..])
    }

    /// Whether any complete line of `region` (which ends with `\n`) matches.
    fn matches_region(&self, region: &[u8]) -> bool {
        let mut matched = false;
        self.each_matching_line(region, &mut |_| {
            matched = true;
            ControlFlow::Break(())
        });
        matched
    }

    /// Hands each complete line of `region` that matches to `each` (without its `\r`, and a
    /// line longer than `WINDOW` cut to its first `WINDOW` bytes), in order, until it breaks.
    fn each_matching_line(&self, region: &[u8], each: &mut dyn FnMut(&[u8]) -> ControlFlow<()>) {
        let mut from = 0;
        while from < region.len() {
            let Some(found) = self.chunk.find(Input::new(region).range(from..)) else {
                return;
            };
            let start = found.start();
            if start >= region.len() {
                // An empty match after the final `\n`: no line starts there.
                return;
            }
            let line_start = memrchr(b'\n', &region[..start]).map_or(0, |i| i + 1);
            let line_end = memchr(b'\n', &region[start..]).map_or(region.len(), |i| start + i);
            let line = &region[line_start..line_end];
            let matched = if line.len() > WINDOW {
                self.matches_long_line(line)
            } else {
                self.matches_line(line)
            };
            if matched && each(strip_cr(&line[..line.len().min(WINDOW)])).is_break() {
                return;
            }
            from = line_end + 1;
        }
    }

    /// The first capture group of the pattern in `line`, else its whole match.
    pub(crate) fn capture<'l>(&self, line: &'l [u8]) -> Option<&'l [u8]> {
        let mut captures = self.line.create_captures();
        self.line.captures(Input::new(line), &mut captures);
        let span = captures
            .get_group(1)
            .or_else(|| captures.get_match().map(|found| found.span()))?;
        line.get(span.range())
    }
}

/// A pattern compiled as `regex::bytes::Regex` compiles it (the same syntax, the same limits),
/// on the engine beneath that crate, which can match a window of a line while its look-around
/// (`^`, `$`, `\b`) sees the bytes just outside.
/// What `^` and `$` match: the ends of the one line searched, or the ends of every line in a
/// chunk of several (with `\r\n` as a line end).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Anchors {
    Line,
    EveryLine,
}

fn compile(pattern: &str, anchors: Anchors) -> Result<Regex, String> {
    let multi_line = anchors == Anchors::EveryLine;
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .match_kind(MatchKind::LeftmostFirst)
                .utf8_empty(false)
                .nfa_size_limit(Some(10 << 20))
                .hybrid_cache_capacity(2 << 20),
        )
        .syntax(
            syntax::Config::new()
                .utf8(false)
                .multi_line(multi_line)
                .crlf(multi_line),
        )
        .build(pattern)
        .map_err(|error| {
            let reason = match (error.syntax_error(), error.size_limit()) {
                // The parser's message spans lines, the pattern and a caret; keep its last,
                // the reason.
                (Some(syntax), _) => syntax
                    .to_string()
                    .lines()
                    .rev()
                    .map(str::trim)
                    .find(|line| !line.is_empty())
                    .unwrap_or("")
                    .trim_start_matches("error: ")
                    .to_string(),
                (None, Some(limit)) => {
                    format!("compiled regex exceeds size limit of {limit} bytes")
                }
                (None, None) => error.to_string(),
            };
            format!("invalid regex '{pattern}': {reason}")
        })
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The patterns that read one stream, and whether each has matched a line yet; and the
/// collectors, patterns whose every matching line is handed over (the last of which counts).
#[derive(Debug)]
pub(crate) struct LineMatcher {
    patterns: Vec<Pattern>,
    matched: Vec<bool>,
    collectors: Vec<Pattern>,
    /// The start of the current, incomplete line: at most `WINDOW + 1` bytes of it, the last
    /// only there to tell the pattern that the first `WINDOW` are not the whole line.
    partial: Vec<u8>,
    /// What came of the current line past `partial`: its last `WINDOW + 1` bytes at least, and
    /// at most twice that (trimmed in bulk).
    overflow: Vec<u8>,
}

impl LineMatcher {
    pub(crate) fn new(patterns: Vec<Pattern>, collectors: Vec<Pattern>) -> LineMatcher {
        let matched = vec![false; patterns.len()];
        LineMatcher {
            patterns,
            matched,
            collectors,
            partial: Vec::new(),
            overflow: Vec::new(),
        }
    }

    /// Whether pattern `index` (in the order given) matched a line.
    pub(crate) fn matched(&self, index: usize) -> bool {
        self.matched[index]
    }

    /// Whether nothing is left to look for.
    fn done(&self) -> bool {
        self.matched.iter().all(|&m| m) && self.collectors.is_empty()
    }

    /// Matches the lines that `chunk` completes; keeps its unfinished tail for later. Each line
    /// that a collector matches goes to `collected`, with the collector's index.
    pub(crate) fn feed(&mut self, chunk: &[u8], collected: &mut dyn FnMut(usize, &[u8])) {
        if self.done() {
            return;
        }
        let mut rest = chunk;
        if !self.partial.is_empty() {
            match memchr(b'\n', rest) {
                Some(end) => {
                    self.keep(&rest[..end]);
                    self.check_partial(collected);
                    rest = &rest[end + 1..];
                }
                None => {
                    self.keep(rest);
                    return;
                }
            }
        }
        match memrchr(b'\n', rest) {
            Some(last) => {
                let region = &rest[..=last];
                self.check(|pattern| pattern.matches_region(region));
                for (index, collector) in self.collectors.iter().enumerate() {
                    collector.each_matching_line(region, &mut |line| {
                        collected(index, line);
                        ControlFlow::Continue(())
                    });
                }
                self.keep(&rest[last + 1..]);
            }
            None => self.keep(rest),
        }
    }

    /// Matches the last line if it had no `\n`.
    pub(crate) fn finish(&mut self, collected: &mut dyn FnMut(usize, &[u8])) {
        if !self.partial.is_empty() && !self.done() {
            self.check_partial(collected);
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = (WINDOW + 1).saturating_sub(self.partial.len());
        let (head, past) = bytes.split_at(bytes.len().min(room));
        self.partial.extend_from_slice(head);
        if past.is_empty() {
            return;
        }
        let past = &past[past.len().saturating_sub(WINDOW + 1)..];
        if self.overflow.len() + past.len() > 2 * (WINDOW + 1) {
            let drop = (self.overflow.len() + past.len()).saturating_sub(WINDOW + 1);
            self.overflow.drain(..drop.min(self.overflow.len()));
        }
        self.overflow.extend_from_slice(past);
    }

    /// Matches the line kept so far, and empties it: its start, and its end if it was long.
    /// Collectors see its start only.
    fn check_partial(&mut self, collected: &mut dyn FnMut(usize, &[u8])) {
        let line = std::mem::take(&mut self.partial);
        let overflow = std::mem::take(&mut self.overflow);
        for (index, collector) in self.collectors.iter().enumerate() {
            if line.len() <= WINDOW && collector.matches_line(&line) {
                collected(index, strip_cr(&line));
            } else if line.len() > WINDOW && collector.matches_head(&line) {
                collected(index, &line[..WINDOW]);
            }
        }
        if line.len() <= WINDOW {
            self.check(|pattern| pattern.matches_line(&line));
        } else {
            self.check(|pattern| pattern.matches_head(&line));
            // The last WINDOW bytes and one before them, from the overflow and, when it is
            // short, from the end of the kept start.
            let from_line = (WINDOW + 1).saturating_sub(overflow.len()).min(line.len());
            let mut tail = line[line.len() - from_line..].to_vec();
            tail.extend_from_slice(&overflow[overflow.len().saturating_sub(WINDOW + 1)..]);
            self.check(|pattern| pattern.matches_tail(&tail));
        }
        // Keep the allocations for the next line.
        self.partial = line;
        self.partial.clear();
        self.overflow = overflow;
        self.overflow.clear();
    }

    /// Marks each pattern not yet matched that passes `test`.
    fn check(&mut self, test: impl Fn(&Pattern) -> bool) {
        for (pattern, matched) in self.patterns.iter().zip(&mut self.matched) {
            if !*matched && test(pattern) {
                *matched = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn matcher(patterns: &[&str]) -> LineMatcher {
        LineMatcher::new(
            patterns.iter().map(|p| Pattern::new(p).unwrap()).collect(),
            Vec::new(),
        )
    }

    /// Feeds `input` in pieces of `size` bytes and says whether pattern 0 matched.
    fn matches(pattern: &str, input: &[u8], size: usize) -> bool {
        let mut m = matcher(&[pattern]);
        for piece in input.chunks(size.max(1)) {
            m.feed(piece, &mut |_, _| {});
        }
        m.finish(&mut |_, _| {});
        m.matched(0)
    }

    /// The reference: split into lines, strip one `\r`, match each line.
    fn reference(pattern: &str, input: &[u8]) -> bool {
        let re = regex::bytes::Regex::new(pattern).unwrap();
        let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        if input.ends_with(b"\n") || input.is_empty() {
            lines.pop();
        }
        lines.iter().any(|line| {
            let line = &line[..line.len().min(WINDOW)];
            re.is_match(strip_cr(line))
        })
    }

    #[test]
    fn matches_whole_lines_only() {
        assert!(matches("^ready$", b"starting\nready\ndone\n", 4096));
        assert!(!matches("^ready$", b"not ready\nready now\n", 4096));
        assert!(!matches("a.b", b"a\nb\n", 4096), "no match across lines");
        assert!(
            !matches("a\\sb", b"a\nb\n", 4096),
            "\\s does not cross a newline"
        );
        assert!(
            !matches("a[^x]b", b"a\nb\n", 4096),
            "classes do not cross a newline"
        );
    }

    #[test]
    fn a_final_line_without_newline_counts() {
        assert!(matches("^done$", b"work\ndone", 4096));
        assert!(matches("^done$", b"done", 1));
    }

    #[test]
    fn one_trailing_cr_is_stripped() {
        assert!(matches("^ready$", b"ready\r\n", 4096));
        assert!(matches("^ready$", b"ready\r", 4096), "the last line too");
        assert!(!matches("^ready$", b"ready\r\r\n", 4096), "only one");
    }

    #[test]
    fn a_lone_cr_does_not_end_a_line() {
        assert!(!matches("^100%$", b"10%\r50%\r100%\n", 4096));
        assert!(matches("100%$", b"10%\r50%\r100%\n", 4096));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_matched() {
        assert!(matches("caf", b"\xfe\xffcaf\xff\n", 4096));
        assert!(matches("caf(?-u:\\xff)", b"\xfe\xffcaf\xff\n", 4096));
        assert!(matches("(?-u)^\\xff+$", b"\xff\xff\n", 2));
    }

    #[test]
    fn lines_split_across_chunks() {
        let input = b"first line\nthe quick brown fox\nlast";
        for size in 1..input.len() {
            assert!(matches("quick brown", input, size), "size {size}");
            assert!(matches("^last$", input, size), "size {size}");
        }
    }

    #[test]
    fn long_lines_are_matched_on_bounded_windows_at_both_ends() {
        let long = |middle: &[u8], end: &[u8]| {
            let mut line = vec![b'x'; WINDOW * 3];
            line.extend_from_slice(middle);
            line.extend(vec![b'y'; WINDOW * 2]);
            line.extend_from_slice(end);
            line
        };
        let mut m = matcher(&[
            "needle", "^x+$", "^x+", "y+done$", "^y+done", "\\bdone", "^x+\\b",
        ]);
        for piece in long(b"needle", b"done\r\n").chunks(1000) {
            m.feed(piece, &mut |_, _| {});
            assert!(m.partial.len() <= WINDOW + 1);
            assert!(m.overflow.len() <= 2 * (WINDOW + 1));
        }
        m.finish(&mut |_, _| {});
        assert!(!m.matched(0), "between the windows");
        assert!(!m.matched(1), "the first window does not end the line");
        assert!(m.matched(2), "the first window starts it");
        assert!(m.matched(3), "the last window, its \\r stripped");
        assert!(!m.matched(4), "the last window does not start the line");
        assert!(!m.matched(5), "\\b sees the byte before the last window");
        assert!(!m.matched(6), "\\b sees the byte after the first window");
        for size in [1, 7, 4096, WINDOW - 1, WINDOW + 1, WINDOW * 10] {
            let progress = [b"\rprogress 42%".repeat(20_000), b"\rDone\n".to_vec()].concat();
            assert!(matches("Done$", &progress, size), "size {size}");
            assert!(matches("^\\rprogress", &progress, size), "size {size}");
        }
        // A final line without a newline counts at its end too.
        assert!(matches("done$", &long(b"", b"done"), 4096));
        assert!(matches(
            "^needle",
            &[b"needle".as_slice(), &[b'y'; WINDOW * 2]].concat(),
            4096
        ));
    }

    /// A long line gets the same answer whether it arrives in one read or in many.
    #[test]
    fn a_long_line_is_matched_alike_however_it_arrives() {
        let mut line = vec![b'x'; 2 * WINDOW];
        line.extend_from_slice(b" needle ");
        line.extend(vec![b'y'; 2 * WINDOW]);
        line.push(b'\n');
        for pattern in ["needle", "^x+ needle", "x y"] {
            for size in [line.len(), WINDOW + 1, 4096] {
                assert!(
                    !matches(pattern, &line, size),
                    "{pattern} in pieces of {size}"
                );
            }
        }
        for pattern in ["^x{100}", "y{100}$", "^x+ needle y+$"] {
            for size in [line.len(), WINDOW + 1, 4096] {
                let expected = pattern != "^x+ needle y+$";
                assert_eq!(matches(pattern, &line, size), expected, "{pattern}, {size}");
            }
        }
    }

    /// The window is exactly the 64 KiB that the README and `--help` promise: a word is found
    /// when it lies wholly within a long line's first or last 64 KiB, and not one byte further
    /// in, however the line arrives; a line of exactly that length is an ordinary line.
    #[test]
    fn the_windows_end_exactly_where_documented() {
        const DOCUMENTED: usize = 64 * 1024;
        let line = |before: usize, after: usize| {
            [
                vec![b'x'; before],
                b"needle".to_vec(),
                vec![b'y'; after],
                b"\n".to_vec(),
            ]
            .concat()
        };
        let far = 2 * DOCUMENTED;
        for (before, after, expected) in [
            (DOCUMENTED - 6, far, true),
            (DOCUMENTED - 5, far, false),
            (far, DOCUMENTED - 6, true),
            (far, DOCUMENTED - 5, false),
            (DOCUMENTED - 6, 0, true),
            (0, DOCUMENTED - 6, true),
        ] {
            let input = line(before, after);
            for size in [input.len(), 4096, DOCUMENTED + 1] {
                assert_eq!(
                    matches("needle", &input, size),
                    expected,
                    "{before} before, {after} after, in pieces of {size}"
                );
            }
        }
        let exact = [b"a\n".as_slice(), &line(DOCUMENTED - 6, 0), b"b\n"].concat();
        assert!(matches("needle$", &exact, exact.len()));
    }

    /// A long line read in one piece, its newline in the next, is judged on its true last
    /// bytes: the byte before the last window is the line's own, not one from its start.
    #[test]
    fn a_long_line_read_before_its_newline_keeps_its_true_end() {
        let line = [vec![b'-'; WINDOW + 1], vec![b'y'; 3 * WINDOW]].concat();
        for pattern in ["\\by", "^y", "-y", "y$", "^-+$", "^-"] {
            let mut m = matcher(&[pattern]);
            m.feed(&line, &mut |_, _| {});
            m.feed(b"\n", &mut |_, _| {});
            m.finish(&mut |_, _| {});
            let whole = [line.as_slice(), b"\n"].concat();
            assert_eq!(
                m.matched(0),
                matches(pattern, &whole, whole.len()),
                "{pattern}"
            );
        }
    }

    /// A line just longer than the window, its end short of a second window: the tail is made
    /// up from the end of the kept start, and it is the line's true last bytes.
    #[test]
    fn a_line_just_past_the_window_is_judged_on_its_true_tail() {
        let line = [vec![b'a'; 11], b"-".to_vec(), vec![b'y'; WINDOW - 1]].concat();
        assert_eq!(line.len(), WINDOW + 11);
        let whole = [line.as_slice(), b"\n"].concat();
        assert!(matches("-y+$", &whole, whole.len()));
        for size in [line.len(), WINDOW + 1, 4096] {
            let mut m = matcher(&["-y+$"]);
            for piece in line.chunks(size) {
                m.feed(piece, &mut |_, _| {});
            }
            m.feed(b"\n", &mut |_, _| {});
            m.finish(&mut |_, _| {});
            assert!(m.matched(0), "in pieces of {size}");
        }
    }

    /// A pattern that can match the newline itself in the multi-line search must still move on
    /// to the next line, and judge each line on its own.
    #[test]
    fn a_candidate_match_on_a_newline_moves_on() {
        assert!(!matches("\\s", b"abc\ndef\n", 4096));
        assert!(matches("\\s", b"abc\nd f\n", 4096));
        assert!(!matches("c\\s*d", b"abc\ndef\n", 4096));
    }

    #[test]
    fn several_patterns() {
        let mut m = matcher(&["one", "two", "three"]);
        m.feed(b"two\nthree\n", &mut |_, _| {});
        m.finish(&mut |_, _| {});
        assert_eq!(
            (m.matched(0), m.matched(1), m.matched(2)),
            (false, true, true)
        );
    }

    #[test]
    fn anchors_work_in_the_middle_of_a_chunk() {
        assert!(matches("^b", b"a\nb\nc\n", 4096));
        assert!(matches("b$", b"a\nb\r\nc\n", 4096));
        assert!(!matches("^$x", b"\n\n", 4096));
        assert!(matches("^$", b"a\n\nb\n", 4096), "an empty line");
    }

    #[test]
    fn bad_patterns_are_one_line() {
        let error = Pattern::new("(unclosed").unwrap_err();
        assert_eq!(error, "invalid regex '(unclosed': unclosed group");
        assert!(!error.contains('\n'), "{error}");
        let error = Pattern::new("\\w{1000}{1000}").unwrap_err();
        assert!(
            error.ends_with("exceeds size limit of 10485760 bytes"),
            "{error}"
        );
    }

    proptest! {
        #[test]
        fn agrees_with_the_line_by_line_reference(
            lines in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'\r'), Just(b' '), Just(0xffu8)], 0..12),
                0..12,
            ),
            last_newline in any::<bool>(),
            size in 1usize..20,
            pattern in prop_oneof![
                Just("^a"), Just("b$"), Just("^$"), Just("a b"), Just("(?-u)\\xff"), Just("^ab$"),
                Just("a\\s*b"), Just("^[^a]*$"), Just("b\\r"),
            ],
        ) {
            let mut input = lines.join(&b'\n');
            if last_newline && !input.is_empty() {
                input.push(b'\n');
            }
            prop_assert_eq!(matches(pattern, &input, size), reference(pattern, &input), "{:?}", String::from_utf8_lossy(&input));
        }

        /// A word in a long line is found when it lies in the line's first or last `WINDOW`
        /// bytes, however the line arrives, and memory stays within its bounds.
        #[test]
        fn long_lines_match_at_both_ends(
            before in 0..3 * WINDOW,
            after in 0..3 * WINDOW,
            size in prop_oneof![64usize..4096, WINDOW - 8..WINDOW + 8, 2 * WINDOW..4 * WINDOW],
            ends_with_newline in any::<bool>(),
        ) {
            let mut line = vec![b'x'; before];
            line.extend_from_slice(b"needle");
            line.extend(vec![b'y'; after]);
            if ends_with_newline {
                line.push(b'\n');
            }
            let mut m = matcher(&["needle"]);
            let mut fed = 0;
            for piece in line.chunks(size) {
                m.feed(piece, &mut |_, _| {});
                fed += piece.len();
                prop_assert!(m.partial.len() <= WINDOW + 1);
                prop_assert!(m.overflow.len() <= 2 * (WINDOW + 1));
                if !(ends_with_newline && fed == line.len()) {
                    // The line's last bytes past its kept start, as many as the tail needs.
                    let past = fed.saturating_sub(WINDOW + 1);
                    prop_assert!(m.overflow.len() >= past.min(WINDOW + 1));
                    prop_assert!(m.overflow.len() <= past);
                }
            }
            m.finish(&mut |_, _| {});
            if before + 6 <= WINDOW || after + 6 <= WINDOW {
                prop_assert!(m.matched(0), "before {} after {} size {}", before, after, size);
            }
            // However the line was cut into reads, the answer is the one it gets whole.
            prop_assert_eq!(m.matched(0), matches("needle", &line, line.len()));
        }
    }

    /// Feeds `input` in pieces of `size` bytes to a collector of `pattern`; returns the lines
    /// it handed over.
    fn collected(pattern: &str, input: &[u8], size: usize) -> Vec<Vec<u8>> {
        let mut m = LineMatcher::new(Vec::new(), vec![Pattern::new(pattern).unwrap()]);
        let mut lines = Vec::new();
        let mut take = |index: usize, line: &[u8]| {
            assert_eq!(index, 0);
            lines.push(line.to_vec());
        };
        for piece in input.chunks(size.max(1)) {
            m.feed(piece, &mut take);
        }
        m.finish(&mut take);
        lines
    }

    #[test]
    fn a_collector_hands_over_every_matching_line_in_order() {
        let input =
            b"HTTP/1.1 301 Moved\r\nLocation: /b\r\n\r\nHTTP/1.1 503 No\r\nbody\nHTTP/2 200";
        let expected: Vec<Vec<u8>> = vec![
            b"HTTP/1.1 301 Moved".to_vec(),
            b"HTTP/1.1 503 No".to_vec(),
            b"HTTP/2 200".to_vec(),
        ];
        for size in [1, 2, 3, 7, 16, 4096] {
            assert_eq!(
                collected("^HTTP/", input, size),
                expected,
                "pieces of {size}"
            );
        }
    }

    #[test]
    fn a_collector_sees_the_start_of_a_long_line() {
        let mut input = b"Retry-After: 7 ".to_vec();
        input.extend(std::iter::repeat_n(b'x', 3 * WINDOW));
        input.extend_from_slice(b"\nRetry-After: 9\n");
        for size in [1000, 4096, input.len()] {
            let lines = collected("^Retry-After:", &input, size);
            assert_eq!(lines.len(), 2, "pieces of {size}");
            assert_eq!(lines[0].len(), WINDOW);
            assert!(lines[0].starts_with(b"Retry-After: 7 "));
            assert_eq!(lines[1], b"Retry-After: 9");
        }
    }

    #[test]
    fn a_capture_is_the_first_group_else_the_whole_match() {
        let grouped = Pattern::new(r"retry in ([0-9.]+)s").unwrap();
        assert_eq!(
            grouped.capture(b"rate limited: retry in 1.5s"),
            Some(&b"1.5"[..])
        );
        let whole = Pattern::new(r"[0-9]+m[0-9]+s").unwrap();
        assert_eq!(whole.capture(b"wait 1m30s please"), Some(&b"1m30s"[..]));
        assert_eq!(whole.capture(b"no wait"), None);
    }

    proptest! {
        /// However the output is cut into pieces, a collector hands over exactly the lines a
        /// line-by-line reading finds, in order.
        #[test]
        fn collected_lines_do_not_depend_on_the_pieces(
            lines in proptest::collection::vec("(HTTP/1.1 [0-9]{3} x|body [a-z]{0,8}|\r|)", 0..12),
            size in 1usize..40,
        ) {
            let input = lines.join("\n").into_bytes();
            let expected: Vec<Vec<u8>> = lines
                .iter()
                .map(|line| strip_cr(line.as_bytes()).to_vec())
                .filter(|line| line.starts_with(b"HTTP/"))
                .collect();
            prop_assert_eq!(collected("^HTTP/", &input, size), expected);
        }
    }
}
