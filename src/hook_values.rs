//! Values an `--on-retry` hook hands to the attempts after it: the `KEY=VALUE` lines it writes
//! to the file `RETRY_ENV_FILE` names, read and kept here. Pure: bytes in, pairs out.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// The most of one hook's file that is read: a hook's values are a few names, not a data file.
pub(crate) const MOST_READ: u64 = 64 * 1024;

/// The most all values kept may hold together (keys, values and `=`), well inside what exec
/// takes in an environment and in one string (128 KiB): a value past it would make every
/// later attempt fail to start.
pub(crate) const MOST_KEPT: usize = 64 * 1024;

/// The first line of a hook's file that was skipped, why, and how many were in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// 1-based.
    pub(crate) line: usize,
    pub(crate) why: &'static str,
    pub(crate) count: usize,
}

/// The values set so far, in the order their keys were first set; a later value for a key
/// replaces the earlier one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HookValues(Vec<(OsString, OsString)>);

impl HookValues {
    /// Takes the lines of one hook's file (`text`, all of it that was read; `cut` when there was
    /// more), keeping those that parse and fit; says which were skipped, if any were.
    pub(crate) fn take(&mut self, text: &[u8], cut: bool) -> Option<Skipped> {
        let mut skipped: Option<Skipped> = None;
        let mut skip = |line: usize, why: &'static str| match &mut skipped {
            Some(first) => first.count += 1,
            None => {
                skipped = Some(Skipped {
                    line,
                    why,
                    count: 1,
                })
            }
        };
        let lines: Vec<&[u8]> = text.split(|&byte| byte == b'\n').collect();
        for (index, line) in lines.iter().enumerate() {
            let number = index + 1;
            // What follows the last line feed of a file that was cut short is half a line.
            if cut && number == lines.len() {
                skip(number, "the file is longer than the 64 KiB read of it");
                break;
            }
            // A line ends before a `\r` at its end, as a file written on Windows has it.
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse(line) {
                Ok((key, value)) => {
                    if let Err(why) = self.set(key, value) {
                        skip(number, why);
                    }
                }
                Err(why) => skip(number, why),
            }
        }
        skipped
    }

    /// The values, for an attempt's environment.
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (&OsString, &OsString)> {
        self.0.iter().map(|(key, value)| (key, value))
    }

    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<(), &'static str> {
        let size = |key: &[u8], value: &[u8]| key.len() + value.len() + 1;
        let kept: usize = self
            .0
            .iter()
            .filter(|(held, _)| held.as_encoded_bytes() != key)
            .map(|(key, value)| size(key.as_encoded_bytes(), value.as_encoded_bytes()))
            .sum();
        if kept + size(key, value) > MOST_KEPT {
            return Err("the values would pass the 64 KiB they may hold together");
        }
        let value = OsString::from_vec(value.to_vec());
        match self
            .0
            .iter_mut()
            .find(|(held, _)| held.as_encoded_bytes() == key)
        {
            Some((_, held)) => *held = value,
            None => self.0.push((OsString::from_vec(key.to_vec()), value)),
        }
        Ok(())
    }
}

/// One `KEY=VALUE` line (without its line end): KEY of letters, digits and `_`, not starting
/// with a digit, and not a `RETRY_` name (those are `retry`'s own); VALUE all that follows the
/// first `=`, as it is.
fn parse(line: &[u8]) -> Result<(&[u8], &[u8]), &'static str> {
    let Some(equals) = line.iter().position(|&byte| byte == b'=') else {
        return Err("it is not KEY=VALUE");
    };
    let (key, value) = (&line[..equals], &line[equals + 1..]);
    let name_byte = |byte: &u8| byte.is_ascii_alphanumeric() || *byte == b'_';
    if key.is_empty() || key[0].is_ascii_digit() || !key.iter().all(name_byte) {
        return Err("KEY must be letters, digits and _, not starting with a digit");
    }
    if key.starts_with(b"RETRY_") {
        return Err("RETRY_ names are retry's own");
    }
    if value.contains(&0) {
        return Err("a value cannot hold a NUL byte");
    }
    Ok((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(values: &HookValues) -> Vec<(String, String)> {
        values
            .pairs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn lines_set_values_and_a_later_value_wins() {
        let mut values = HookValues::default();
        let said = values.take(b"MIRROR=https://b.example\nA_1=x=y\n\nEMPTY=\n", false);
        assert_eq!(said, None);
        assert_eq!(values.take(b"MIRROR=c\n_X=1", false), None);
        assert_eq!(
            kept(&values),
            [
                ("MIRROR".into(), "c".into()),
                ("A_1".into(), "x=y".into()),
                ("EMPTY".into(), String::new()),
                ("_X".into(), "1".into()),
            ]
        );
    }

    #[test]
    fn a_line_that_does_not_parse_is_skipped_and_the_first_one_named() {
        let mut values = HookValues::default();
        let text =
            b"GOOD=1\nno equals sign\n1BAD=x\nRETRY_ATTEMPT=9\nA-B=1\n=v\nNUL=a\0b\nALSO=2\n";
        assert_eq!(
            values.take(text, false),
            Some(Skipped {
                line: 2,
                why: "it is not KEY=VALUE",
                count: 6
            })
        );
        assert_eq!(
            kept(&values),
            [("GOOD".into(), "1".into()), ("ALSO".into(), "2".into())]
        );
        for (line, why) in [
            (
                &b"1BAD=x"[..],
                "KEY must be letters, digits and _, not starting with a digit",
            ),
            (b"RETRY_X=1", "RETRY_ names are retry's own"),
            (b"retry_x=1", ""),
            (
                b"A B=1",
                "KEY must be letters, digits and _, not starting with a digit",
            ),
        ] {
            let mut values = HookValues::default();
            assert_eq!(values.take(line, false).map(|s| s.why).unwrap_or(""), why);
        }
    }

    #[test]
    fn values_are_bytes_as_written() {
        let mut values = HookValues::default();
        assert_eq!(
            values.take(b"V= spaced \"quoted\" \xff\r\r\nW=1\r\n", false),
            None
        );
        let values: Vec<_> = values.pairs().collect();
        // One `\r` before the line feed ends the line; what is before it is the value's.
        assert_eq!(values[0].1.as_encoded_bytes(), b" spaced \"quoted\" \xff\r");
        assert_eq!(values[1].1.as_encoded_bytes(), b"1");
    }

    #[test]
    fn what_was_cut_short_and_what_would_not_fit_are_skipped() {
        let mut values = HookValues::default();
        let said = values.take(b"A=1\nB=half a li", true).unwrap();
        assert_eq!((said.line, said.count), (2, 1));
        assert_eq!(kept(&values), [("A".into(), "1".into())]);
        let big = vec![b'x'; MOST_KEPT - 10];
        let mut line = b"BIG=".to_vec();
        line.extend(&big);
        assert_eq!(values.take(&line, false), None);
        let said = values.take(b"C=0123456789", false).unwrap();
        assert!(said.why.contains("64 KiB"), "{said:?}");
        // Replacing a value counts the new one only.
        assert_eq!(values.take(&line, false), None);
        assert_eq!(values.take(b"A=2", false), None);
    }
}
