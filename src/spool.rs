//! A byte buffer that keeps the first `MEMORY_LIMIT` bytes in memory and moves to a private
//! temporary file past that, so holding or replaying any amount of data stays bounded in RSS.
//!
//! The file is created with mode 0600 and is unlinked from the start (`O_TMPFILE` where the
//! kernel has it), so nothing is left behind however `retry` ends, SIGKILL included.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// Bytes kept in memory before spilling to a file.
pub const MEMORY_LIMIT: usize = 4 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct Spool {
    memory: Vec<u8>,
    file: Option<File>,
    len: u64,
}

impl Spool {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.file.is_none() && self.memory.len() + bytes.len() > MEMORY_LIMIT {
            let file = tempfile::tempfile()?;
            file.write_all_at(&self.memory, 0)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        match &self.file {
            Some(file) => file.write_all_at(bytes, self.len)?,
            None => self.memory.extend_from_slice(bytes),
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Copies bytes from `offset` into `buffer`; returns how many (0 at the end).
    pub fn read_at(&self, offset: u64, buffer: &mut [u8]) -> io::Result<usize> {
        if offset >= self.len {
            return Ok(0);
        }
        let wanted = buffer.len().min((self.len - offset) as usize);
        match &self.file {
            Some(file) => {
                file.read_exact_at(&mut buffer[..wanted], offset)?;
            }
            None => {
                let start = offset as usize;
                buffer[..wanted].copy_from_slice(&self.memory[start..start + wanted]);
            }
        }
        Ok(wanted)
    }

    /// Writes everything held to `out`.
    pub fn copy_to(&self, out: &mut impl Write) -> io::Result<()> {
        let mut buffer = vec![0u8; 256 * 1024];
        let mut offset = 0;
        loop {
            let read = self.read_at(offset, &mut buffer)?;
            if read == 0 {
                return out.flush();
            }
            out.write_all(&buffer[..read])?;
            offset += read as u64;
        }
    }

    pub fn clear(&mut self) {
        *self = Spool::default();
    }

    /// Whether the bytes live in a file now.
    #[cfg(test)]
    fn spilled(&self) -> bool {
        self.file.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_data_stays_in_memory() {
        let mut spool = Spool::default();
        spool.append(b"hello ").unwrap();
        spool.append(b"world").unwrap();
        assert!(!spool.spilled());
        let mut out = Vec::new();
        spool.copy_to(&mut out).unwrap();
        assert_eq!(out, b"hello world");
        let mut buffer = [0u8; 4];
        assert_eq!(spool.read_at(6, &mut buffer).unwrap(), 4);
        assert_eq!(&buffer, b"worl");
        assert_eq!(spool.read_at(11, &mut buffer).unwrap(), 0);
    }

    #[test]
    fn large_data_spills_to_a_file_and_reads_back_whole() {
        let mut spool = Spool::default();
        let piece: Vec<u8> = (0..=255u8).cycle().take(1024 * 1024 + 7).collect();
        for _ in 0..5 {
            spool.append(&piece).unwrap();
        }
        assert!(spool.spilled());
        assert!(
            spool.memory.capacity() == 0,
            "memory is freed after the spill"
        );
        assert_eq!(spool.len(), 5 * piece.len() as u64);
        let mut out = Vec::new();
        spool.copy_to(&mut out).unwrap();
        assert_eq!(out.len(), 5 * piece.len());
        assert!(
            out.chunks(piece.len())
                .all(|chunk| chunk == piece.as_slice())
        );
        spool.clear();
        assert!(spool.is_empty() && !spool.spilled());
    }
}
