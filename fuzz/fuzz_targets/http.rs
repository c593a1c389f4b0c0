//! What `--http` reads of an attempt's output: no panic on any bytes, in any chunks; a status
//! is 100 to 599 and comes from a line with `HTTP/`; the sieve passes every line the exact
//! readers accept; a hinted wait is never shorter than the schedule's delay nor than the hint
//! (cut to `--retry-after-max`).
#![no_main]

use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use retry::fuzzing::{custom_hint, hinted_wait, http_line, sieved_lines};

fuzz_target!(|input: (&[u8], u8, u32, [u64; 4])| {
    let (output, chunk, now_secs, [delay, hint, most, spread]) = input;
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::from(now_secs));
    let sieved = sieved_lines(output, usize::from(chunk));
    for raw in output.split(|&b| b == b'\n') {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let (status, hint) = http_line(line, now);
        if let Some(status) = status {
            assert!((100..=599).contains(&status), "{status}");
            assert!(line.windows(5).any(|w| w == b"HTTP/"), "{line:?}");
        }
        if let Some(Some(wait)) = hint {
            let value = String::from_utf8_lossy(line);
            let value = value.split_once(':').map_or("", |(_, v)| v.trim());
            if let Ok(seconds) = value.parse::<u64>() {
                assert_eq!(wait, Duration::from_secs(seconds), "{line:?}");
            }
        }
        if status.is_some() || hint.is_some() {
            assert!(
                sieved.iter().any(|s| s == line),
                "the sieve dropped {line:?}"
            );
        }
    }
    let _ = custom_hint(output);
    let [delay, hint, most, spread] = [delay, hint, most, spread].map(Duration::from_millis);
    let wait = hinted_wait(delay, hint, most, spread);
    assert!(wait >= delay && wait >= hint.min(most), "{wait:?}");
});
