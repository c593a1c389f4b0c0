//! Text helpers for every message `retry` writes: quoting, one-line escaping, OS errors without
//! their number, commands as a shell would read them back, short human durations.
//!
//! A leaf: it knows nothing of attempts, processes or settings, so every layer may use it.

use std::ffi::{OsStr, OsString};
use std::io;
use std::time::Duration;

/// The text of an OS error without its number: "Permission denied", not "Permission denied
/// (os error 13)".
pub(crate) fn plain_error(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// `word` quoted for a message, as a shell would read it back: in single quotes, or in
/// `$'...'` with escapes when it holds control characters or bytes that are not UTF-8, so that
/// no name a user or a neighbour chose can move the cursor or retitle the terminal.
pub(crate) fn quote(word: &OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = word.as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(char::is_control) => {
            format!("'{}'", text.replace('\'', r"'\''"))
        }
        _ => ansi_c_quoted(bytes),
    }
}

/// A file's name for a message, as coreutils shows one: bare when that is safe, else in single
/// quotes, or in `$'...'` when it holds control characters or bytes that are not UTF-8, so a
/// name a neighbour chose cannot move the cursor or retitle the terminal.
pub(crate) fn path(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    shell_word(path.as_os_str().as_bytes())
}

/// The command as a shell would take it back, word by word: bare where that is safe, else in
/// single quotes, or in `$'...'` with escapes when it holds control characters (so it stays on
/// one line) or bytes that are not UTF-8 (`\xff`, as bash writes them).
pub(crate) fn shell_words(command: &[OsString]) -> String {
    use std::os::unix::ffi::OsStrExt;
    let words: Vec<String> = command
        .iter()
        .map(|word| shell_word(word.as_bytes()))
        .collect();
    words.join(" ")
}

fn shell_word(word: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(word) else {
        return ansi_c_quoted(word);
    };
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        return text.to_string();
    }
    if !text.chars().any(char::is_control) {
        return format!("'{}'", text.replace('\'', r"'\''"));
    }
    ansi_c_quoted(word)
}

/// `$'...'`: every byte of `word` back, on one line of printable text.
fn ansi_c_quoted(word: &[u8]) -> String {
    let mut quoted = String::from("$'");
    for chunk in word.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\'' || c == '\\' {
                quoted.push('\\');
                quoted.push(c);
            } else {
                push_escaped(&mut quoted, c);
            }
        }
        for byte in chunk.invalid() {
            quoted.push_str(&format!(r"\x{byte:02x}"));
        }
    }
    quoted.push('\'');
    quoted
}

/// `c`, or its escape as bash's `$'...'` writes it when it is a control character.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str(r"\n"),
        '\t' => out.push_str(r"\t"),
        '\r' => out.push_str(r"\r"),
        c if c.is_control() && u32::from(c) < 0x80 => {
            out.push_str(&format!(r"\x{:02x}", u32::from(c)));
        }
        c if c.is_control() => out.push_str(&format!(r"\u{:04x}", u32::from(c))),
        c => out.push(c),
    }
}

/// `text` with its control characters escaped as `$'...'` would write them (`\n`, `\r`,
/// `\x1b`): every message `retry` writes passes through here, so that a name or value it
/// quotes can neither break the message's one line nor drive the terminal.
pub(crate) fn one_line(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut line = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut line, c);
    }
    line
}

/// A short human form: `0s`, `40ns`, `850µs`, `250ms`, `1.5s`, `1m30s`, `2h`, `3d4h`.
pub(crate) fn human(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    // A wait that is not zero never reads as zero.
    if d < Duration::from_micros(1) {
        return format!("{}ns", d.as_nanos());
    }
    if d < Duration::from_millis(1) {
        return format!("{}µs", d.as_micros());
    }
    if d < Duration::from_secs(1) {
        return format!("{}ms", trim_decimals(d.as_secs_f64() * 1000.0, 1));
    }
    if d < Duration::from_secs(60) {
        return format!("{}s", trim_decimals(d.as_secs_f64(), 3));
    }
    let total = d.as_secs();
    let (days, hours, minutes, seconds) = (
        total / 86_400,
        total / 3600 % 24,
        total / 60 % 60,
        total % 60,
    );
    let mut out = String::new();
    for (value, unit) in [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")] {
        if value > 0 {
            out += &format!("{value}{unit}");
        }
    }
    out
}

/// `value` with at most `places` decimals and no trailing zeros (truncated, so a wait never
/// reads longer than it is).
fn trim_decimals(value: f64, places: i32) -> String {
    let scale = 10f64.powi(places);
    let truncated = (value * scale).floor() / scale;
    let text = format!("{truncated:.*}", places as usize);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// `text` with the password of every URL in it (`scheme://user:password@host`) replaced by
/// `***`, so that no message `retry` writes shows one.
pub(crate) fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let end = after
            .find(|c: char| c == '/' || c == '\'' || c == '"' || c.is_whitespace())
            .unwrap_or(after.len());
        let (authority, tail) = after.split_at(end);
        match authority.rsplit_once('@') {
            Some((user_info, host)) => {
                match user_info.split_once(':') {
                    Some((user, _)) => out.push_str(&format!("{user}:***@{host}")),
                    // A password given alone (`redis://secret@host`).
                    None => out.push_str(&format!("***@{host}")),
                }
            }
            None => out.push_str(authority),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The passwords of the Redis URLs this run was given, anywhere: its arguments,
/// `RETRY_STATE`, its config file (see `note_secrets`). A parser, a server or a library may
/// echo a URL in any shape; whatever the shape, no line `retry` writes shows them
/// (`without_secrets`).
static SECRETS: std::sync::Mutex<Secrets> = std::sync::Mutex::new(Secrets {
    words: Vec::new(),
    sorted: true,
});

struct Secrets {
    words: Vec<String>,
    /// The words are sorted, longest first (so that a piece never hides part of a longer
    /// secret), and without repeats: done once, when they are next used.
    sorted: bool,
}

/// The fewest characters a password (or a piece of one) has for `without_secrets` to hide it
/// wherever it appears: a shorter one would hide exit codes, counts and words of every message,
/// and is hidden only where a URL is shown (see `redact_urls` and the Redis store's own).
const SECRET_LEAST: usize = 4;

/// Remembers the passwords `word` may hold (see `secrets_in`), for `without_secrets`.
pub(crate) fn note_secrets(word: &str) {
    let found = secrets_in(word);
    if found.is_empty() {
        return;
    }
    let mut secrets = SECRETS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    secrets.words.extend(found);
    secrets.sorted = false;
}

/// The passwords a word that is a URL may hold, read as leniently as any parser might read
/// it: what lies between the scheme and the last `@` (after a `user:`), each `pass=` or
/// `password=` value of its query, each as written and %-decoded, and the pieces of each that
/// a parser could take apart (at `/ ? # @ : &`), so that a piece shown as a host or a port is
/// hidden too. A word that is an option with its value (`--state=URL`) is read for its value.
/// A URL is `scheme://...`, or a Redis scheme without its `//` (`redis:host`, which `--state`
/// refuses, but whose password is no less a password).
pub(crate) fn secrets_in(word: &str) -> Vec<String> {
    let value = match word.strip_prefix("--") {
        Some(option) => option.split_once('=').map_or("", |(_, value)| value),
        None => word,
    };
    let Some((scheme, rest)) = value.split_once(':') else {
        return Vec::new();
    };
    let redis = matches!(
        scheme.to_ascii_lowercase().as_str(),
        "redis" | "rediss" | "unix" | "redis+cluster" | "rediss+cluster"
    );
    let url = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        && rest.starts_with("//");
    if !redis && !url {
        return Vec::new();
    }
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let mut whole = Vec::new();
    if let Some((user_info, _)) = rest.rsplit_once('@') {
        whole.push(
            user_info
                .split_once(':')
                .map_or(user_info, |(_, password)| password),
        );
    }
    let query = rest.split_once('?').map_or("", |(_, query)| query);
    for part in query.split('&') {
        if let Some((key, password)) = part.split_once('=')
            && (key.eq_ignore_ascii_case("pass") || key.eq_ignore_ascii_case("password"))
        {
            whole.push(password);
        }
    }
    let mut found = Vec::new();
    for password in whole.into_iter().filter(|password| !password.is_empty()) {
        found.push(password.to_string());
        found.push(percent_decoded(password));
        // A byte that was not UTF-8 (read as U+FFFD) is shown as `\xff`: the pieces around it
        // are hidden then.
        found.extend(
            password
                .split(['/', '?', '#', '@', ':', '&', '\u{fffd}'])
                .map(str::to_string),
        );
    }
    found.retain(|secret| secret.chars().count() >= SECRET_LEAST);
    found.sort();
    found.dedup();
    found
}

/// `text` with each `%XX` read as the byte it stands for (lossily, should those not be UTF-8),
/// as the Redis client reads a URL's password.
pub(crate) fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes.get(at + 1..at + 3).and_then(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        });
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                at += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// `text` with every password `note_secrets` has seen replaced by `***`: as written, escaped
/// as `one_line` escapes it, as JSON escapes it, and inside a word quoted as `shell_words`
/// quotes one (`'\''`, or `$'...'`'s escapes). A password that is also a word of `retry`'s own
/// messages hides that word too: what is shown must never be the password.
pub(crate) fn without_secrets(text: &str) -> std::borrow::Cow<'_, str> {
    let mut secrets = SECRETS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if secrets.words.is_empty() {
        return text.into();
    }
    if !secrets.sorted {
        secrets
            .words
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.words.dedup();
        secrets.sorted = true;
    }
    let mut out = text.to_string();
    for secret in &secrets.words {
        let json = serde_json::to_string(secret).unwrap_or_default();
        let quoted = ansi_c_quoted(secret.as_bytes());
        let forms = [
            secret.clone(),
            one_line(secret),
            json.trim_matches('"').to_string(),
            secret.replace('\'', r"'\''"),
            quoted[2..quoted.len() - 1].to_string(),
        ];
        for shown in forms {
            if shown.chars().count() >= SECRET_LEAST {
                out = out.replace(&shown, "***");
            }
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ms;

    /// Splits `line` back into words as bash does for the three forms `shell_words` writes:
    /// bare, `'...'` and `$'...'`, with `\'` between them. `\xHH` is a byte, `\uHHHH` a
    /// character.
    fn read_back(line: &str) -> Vec<Vec<u8>> {
        fn push(word: &mut Vec<u8>, c: char) {
            word.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
        let mut words = Vec::new();
        let mut chars = line.chars().peekable();
        while chars.peek().is_some() {
            let mut word = Vec::new();
            while let Some(c) = chars.next_if(|&c| c != ' ') {
                match c {
                    '\'' => {
                        for c in chars.by_ref().take_while(|&c| c != '\'') {
                            push(&mut word, c);
                        }
                    }
                    '\\' => push(&mut word, chars.next().expect("escaped")),
                    '$' if chars.next_if_eq(&'\'').is_some() => loop {
                        match chars.next().expect("closed") {
                            '\'' => break,
                            '\\' => match chars.next().expect("escape") {
                                'n' => word.push(b'\n'),
                                't' => word.push(b'\t'),
                                'r' => word.push(b'\r'),
                                'x' => {
                                    let hex: String = chars.by_ref().take(2).collect();
                                    word.push(u8::from_str_radix(&hex, 16).unwrap());
                                }
                                'u' => {
                                    let hex: String = chars.by_ref().take(4).collect();
                                    let code = u32::from_str_radix(&hex, 16).unwrap();
                                    push(&mut word, char::from_u32(code).unwrap());
                                }
                                other => push(&mut word, other),
                            },
                            c => push(&mut word, c),
                        }
                    },
                    c => push(&mut word, c),
                }
            }
            chars.next_if_eq(&' ');
            words.push(word);
        }
        words
    }

    proptest::proptest! {
        #[test]
        fn shell_words_read_back_whole(words in proptest::collection::vec("(?s).*", 1..5)) {
            let command: Vec<OsString> = words.iter().map(OsString::from).collect();
            let line = shell_words(&command);
            proptest::prop_assert!(!line.chars().any(char::is_control));
            let words: Vec<Vec<u8>> = words.into_iter().map(String::into_bytes).collect();
            proptest::prop_assert_eq!(read_back(&line), words);
        }

        #[test]
        fn shell_words_read_back_any_bytes(
            words in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..16), 1..5)
        ) {
            use std::os::unix::ffi::OsStringExt;
            let command: Vec<OsString> = words.iter().cloned().map(OsString::from_vec).collect();
            let line = shell_words(&command);
            proptest::prop_assert!(!line.chars().any(char::is_control));
            proptest::prop_assert_eq!(read_back(&line), words);
        }

        #[test]
        fn one_line_leaves_no_control_character(text in ".*") {
            let line = one_line(&text);
            proptest::prop_assert!(!line.chars().any(char::is_control));
            if !text.chars().any(char::is_control) {
                proptest::prop_assert_eq!(line, text);
            }
        }
    }

    #[test]
    fn the_secrets_of_a_word_are_its_passwords_and_their_pieces() {
        let has = |word: &str, secret: &str| secrets_in(word).iter().any(|s| s == secret);
        assert!(has("redis://default:hunter2@10.0.0.5", "hunter2"));
        assert!(has("--state=redis://:my secret@h", "my secret"));
        assert!(has("redis:default:hunter2\t@10.0.0.5:6379", "hunter2\t"));
        assert!(has(
            "redis://admin:4711?Geheim@10.0.0.5:6379",
            "4711?Geheim"
        ));
        assert!(has("redis://admin:4711?Geheim@10.0.0.5:6379", "4711"));
        assert!(has(
            "redis+cluster://h:1/?password=Tr0ub4dor@horse-battery",
            "horse-battery"
        ));
        assert!(has("unix:///run/redis.sock?db=1&pass=tok%2Ben", "tok+en"));
        assert!(has("REDIS://u:p%40ss@h", "p@ss"));
        assert!(has("https://user:pw12@example.com", "pw12"));
        assert!(
            !has("https://user:pw1@example.com", "pw1"),
            "too short to hide everywhere"
        );
        assert!(has("https://u:pa\u{fffd}ssword@x", "ssword"));
        assert!(has("unix:///s?password=00042?Qz#x", "00042?Qz#x"));
        assert!(secrets_in("user:pw@example.com").is_empty());
        assert!(secrets_in("--budget=api").is_empty());
        assert!(secrets_in("redis://10.0.0.5:6379/0").is_empty());
    }

    #[test]
    fn a_secret_is_hidden_as_written_escaped_quoted_or_in_json_and_a_short_one_not_at_all() {
        note_secrets("redis://u:qu\"o\\te\u{1b}x@h");
        note_secrets("https://u:it'sQz@h");
        note_secrets("redis://u:zq1@h");
        assert_eq!(without_secrets("at qu\"o\\te\u{1b}x!"), "at ***!");
        assert_eq!(without_secrets(r#"at qu"o\te\x1bx!"#), "at ***!");
        assert_eq!(
            without_secrets(r#"{"at":"qu\"o\\te\u001bx"}"#),
            r#"{"at":"***"}"#
        );
        assert_eq!(without_secrets(r#"at $'qu"o\\te\x1bx'"#), "at $'***'");
        assert_eq!(without_secrets(r"at 'it'\''sQz'"), "at '***'");
        // Too short to hide everywhere: exit codes and counts stay whole.
        assert_eq!(
            without_secrets("exit zq1, attempt 11/12"),
            "exit zq1, attempt 11/12"
        );
    }

    #[test]
    fn a_path_is_bare_when_safe_and_quoted_as_bash_reads_it_back_otherwise() {
        use std::os::unix::ffi::OsStrExt;
        let shown = |bytes: &[u8]| path(std::path::Path::new(OsStr::from_bytes(bytes)));
        assert_eq!(
            shown(b"/var/lib/retry/api.state"),
            "/var/lib/retry/api.state"
        );
        assert_eq!(shown(b"/tmp/my dir/x"), "'/tmp/my dir/x'");
        assert_eq!(shown(b"it's"), r"'it'\''s'");
        assert_eq!(shown(b"a\nb\x1b]0;T\x07"), r"$'a\nb\x1b]0;T\x07'");
        assert_eq!(shown(b"caf\xe9"), r"$'caf\xe9'");
        assert_eq!(shown(b""), "''");
    }

    #[test]
    fn control_characters_are_escaped_to_keep_one_line() {
        assert_eq!(one_line("curl"), "curl");
        assert_eq!(one_line("a\rb\n\x1b[0m\tc"), "a\\rb\\n\\x1b[0m\\tc");
        assert_eq!(one_line("\u{9b}2J\u{7f}"), "\\u009b2J\\x7f");
        assert_eq!(one_line("naïve ✓"), "naïve ✓");
    }

    #[test]
    fn shell_words_read_back_as_the_same_words() {
        let words =
            |list: &[&str]| shell_words(&list.iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(
            words(&["curl", "-fsS", "https://x.test/a?b=1"]),
            "curl -fsS 'https://x.test/a?b=1'"
        );
        assert_eq!(words(&["sh", "-c", "echo a b"]), "sh -c 'echo a b'");
        assert_eq!(words(&["echo", ""]), "echo ''");
        assert_eq!(words(&["echo", "it's"]), r"echo 'it'\''s'");
        assert_eq!(words(&["printf", "a\tb\n"]), r"printf $'a\tb\n'");
        assert_eq!(words(&["x", "\u{1b}[31m'\\"]), r"x $'\x1b[31m\'\\'");
        assert_eq!(words(&["x", "\u{85}"]), r"x $'\u0085'");
        let not_utf8 = {
            use std::os::unix::ffi::OsStringExt;
            OsString::from_vec(b"caf\xe9 ok".to_vec())
        };
        assert_eq!(shell_words(&[not_utf8]), r"$'caf\xe9 ok'");
        assert_eq!(words(&["caf\u{e9}"]), "'caf\u{e9}'");
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::ZERO), "0s");
        assert_eq!(human(Duration::from_micros(850)), "850µs");
        assert_eq!(human(Duration::from_nanos(1)), "1ns");
        assert_eq!(human(Duration::from_nanos(999)), "999ns");
        // Each unit from its first whole one.
        assert_eq!(human(Duration::from_micros(1)), "1µs");
        assert_eq!(human(ms(1)), "1ms");
        assert_eq!(human(ms(1000)), "1s");
        assert_eq!(human(ms(60_000)), "1m");
        assert_eq!(human(ms(250)), "250ms");
        assert_eq!(human(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(human(ms(1500)), "1.5s");
        assert_eq!(human(ms(12_345)), "12.345s");
        assert_eq!(human(ms(90_000)), "1m30s");
        assert_eq!(human(ms(7_200_000)), "2h");
        assert_eq!(human(Duration::from_secs(86_400 * 3 + 3600 * 4)), "3d4h");
        assert_eq!(human(Duration::MAX), "213503982334601d7h15s");
    }

    #[test]
    fn os_errors_lose_their_number() {
        let error = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(plain_error(&error), "Permission denied");
        let custom = io::Error::other("pipe closed");
        assert_eq!(plain_error(&custom), "pipe closed");
    }

    #[test]
    fn passwords_in_urls_are_hidden() {
        for (text, shown) in [
            ("redis://:secret@host:6379/2", "redis://:***@host:6379/2"),
            ("redis://user:secret@host", "redis://user:***@host"),
            ("rediss://secret@host/0", "rediss://***@host/0"),
            ("redis://host:6379", "redis://host:6379"),
            ("unix:///run/redis.sock", "unix:///run/redis.sock"),
            (
                "invalid value 'http://u:pw@x' for '--state': bad; see http://a:b@c/d too",
                "invalid value 'http://u:***@x' for '--state': bad; see http://a:***@c/d too",
            ),
            ("no url here", "no url here"),
        ] {
            assert_eq!(redact_urls(text), shown);
        }
    }
}
