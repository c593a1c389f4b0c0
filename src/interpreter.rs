//! The interpreter that an executable file names: the `#!` line of a script, or the dynamic
//! loader of an ELF binary (its PT_INTERP segment). When that is missing, the kernel says
//! "No such file or directory" of a file that is right there; naming the interpreter instead
//! explains a script with Windows line ends (`#!/bin/sh\r`) or a binary built for another
//! system (a glibc program on Alpine).
//!
//! Pure: it reads the bytes it is given, the start of the file, and never panics on any.

/// How much of a file's start `interpreter` wants: a `#!` line is limited to less, and an ELF
/// loader's path lies within it in every binary linked the usual way.
pub const HEAD: usize = 4096;

const PT_INTERP: u64 = 3;

/// The path of the interpreter that `head`, the start of an executable file, names.
pub fn interpreter(head: &[u8]) -> Option<&[u8]> {
    match head.strip_prefix(b"#!") {
        Some(line) => shebang(line),
        None => elf_loader(head),
    }
}

/// As the kernel reads it: blanks before the name, which ends at a blank or the line's end (so
/// a `\r` is part of it).
fn shebang(line: &[u8]) -> Option<&[u8]> {
    let start = line.iter().position(|&b| b != b' ' && b != b'\t')?;
    let rest = &line[start..];
    let end = rest
        .iter()
        .position(|&b| matches!(b, b' ' | b'\t' | b'\n' | 0))
        .unwrap_or(rest.len());
    Some(&rest[..end]).filter(|name| !name.is_empty())
}

fn elf_loader(head: &[u8]) -> Option<&[u8]> {
    if !head.starts_with(b"\x7fELF") {
        return None;
    }
    let wide = match head.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let big_endian = match head.get(5)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let number = |at: usize, len: usize| -> Option<u64> {
        let bytes = head.get(at..at.checked_add(len)?)?;
        let fold = |value: u64, &byte: &u8| (value << 8) | u64::from(byte);
        Some(if big_endian {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        })
    };
    // Where the program headers are, and where a header keeps its segment's offset and size.
    let (table, entry, count, word, offset_at, size_at) = if wide {
        (
            number(0x20, 8)?,
            number(0x36, 2)?,
            number(0x38, 2)?,
            8,
            8,
            32,
        )
    } else {
        (
            number(0x1c, 4)?,
            number(0x2a, 2)?,
            number(0x2c, 2)?,
            4,
            4,
            16,
        )
    };
    for index in 0..count {
        let at = usize::try_from(table.checked_add(index.checked_mul(entry)?)?).ok()?;
        if number(at, 4)? != PT_INTERP {
            continue;
        }
        let offset = usize::try_from(number(at.checked_add(offset_at)?, word)?).ok()?;
        let size = usize::try_from(number(at.checked_add(size_at)?, word)?).ok()?;
        let path = head.get(offset..offset.checked_add(size)?)?;
        let path = path.split(|&b| b == 0).next()?;
        return Some(path).filter(|path| !path.is_empty());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shebang_line_names_its_interpreter() {
        assert_eq!(interpreter(b"#!/bin/sh\necho"), Some(&b"/bin/sh"[..]));
        assert_eq!(
            interpreter(b"#! /usr/bin/env python3\n"),
            Some(&b"/usr/bin/env"[..])
        );
        assert_eq!(interpreter(b"#!/bin/sh\r\necho"), Some(&b"/bin/sh\r"[..]));
        assert_eq!(interpreter(b"#!\t/bin/bash"), Some(&b"/bin/bash"[..]));
        assert_eq!(interpreter(b"#!\n"), None);
        assert_eq!(interpreter(b"#!   "), None);
        assert_eq!(interpreter(b"echo hi\n"), None);
        assert_eq!(interpreter(b""), None);
    }

    /// A minimal ELF header and one PT_INTERP program header, in either width and byte order.
    fn elf(wide: bool, big_endian: bool, path: &[u8]) -> Vec<u8> {
        let put = |out: &mut Vec<u8>, at: usize, len: usize, value: u64| {
            let bytes = value.to_be_bytes();
            let mut field = bytes[8 - len..].to_vec();
            if !big_endian {
                field.reverse();
            }
            out[at..at + len].copy_from_slice(&field);
        };
        let mut out = vec![0u8; 512];
        out[..4].copy_from_slice(b"\x7fELF");
        out[4] = if wide { 2 } else { 1 };
        out[5] = if big_endian { 2 } else { 1 };
        let (table, entry) = (64u64, if wide { 56 } else { 32 });
        let data = 256usize;
        if wide {
            put(&mut out, 0x20, 8, table);
            put(&mut out, 0x36, 2, entry);
            put(&mut out, 0x38, 2, 2);
        } else {
            put(&mut out, 0x1c, 4, table);
            put(&mut out, 0x2a, 2, entry);
            put(&mut out, 0x2c, 2, 2);
        }
        // A PT_LOAD first, then the PT_INTERP.
        let second = (table + entry) as usize;
        put(&mut out, table as usize, 4, 1);
        put(&mut out, second, 4, PT_INTERP);
        let (word, offset_at, size_at) = if wide { (8, 8, 32) } else { (4, 4, 16) };
        put(&mut out, second + offset_at, word, data as u64);
        put(&mut out, second + size_at, word, path.len() as u64 + 1);
        out[data..data + path.len()].copy_from_slice(path);
        out
    }

    #[test]
    fn an_elf_binary_names_its_loader_in_every_width_and_byte_order() {
        for wide in [false, true] {
            for big_endian in [false, true] {
                let image = elf(wide, big_endian, b"/lib/ld-musl-x86_64.so.1");
                assert_eq!(
                    interpreter(&image),
                    Some(&b"/lib/ld-musl-x86_64.so.1"[..]),
                    "wide {wide}, big endian {big_endian}"
                );
            }
        }
    }

    #[test]
    fn a_real_binary_names_its_loader() {
        let head = std::fs::read("/bin/sh").expect("/bin/sh");
        let loader = interpreter(&head[..HEAD.min(head.len())]);
        let loader = loader.expect("a dynamically linked /bin/sh has a loader");
        assert!(loader.starts_with(b"/") && loader.windows(3).any(|w| w == b"ld-"));
    }

    #[test]
    fn a_damaged_or_static_binary_names_nothing_and_never_panics() {
        let image = elf(true, false, b"/lib/ld.so");
        // Cut anywhere: nothing, or the whole path.
        for len in 0..image.len() {
            let found = interpreter(&image[..len]);
            assert!(
                found.is_none() || found == Some(&b"/lib/ld.so"[..]),
                "{len}"
            );
        }
        // Every byte of the headers flipped in turn, and offsets pointed past the end.
        for at in 0..128 {
            let mut damaged = image.clone();
            damaged[at] ^= 0xff;
            let _ = interpreter(&damaged);
        }
        let mut far = image.clone();
        far[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(interpreter(&far), None);
        // No PT_INTERP: a static binary.
        let mut no_loader = image;
        no_loader[64 + 56] = 1;
        assert_eq!(interpreter(&no_loader), None);
    }
}
