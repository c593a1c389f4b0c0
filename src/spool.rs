//! A byte buffer that keeps the first `MEMORY_LIMIT` bytes in memory and moves to a private
//! temporary file past that, so holding or replaying any amount of data stays bounded in RSS.
//!
//! The file is created with mode 0600 and is unlinked from the start (`O_TMPFILE` where the
//! kernel has it), so nothing is left behind however `retry` ends, SIGKILL included.
//!
//! Should no file be had, or a write to it fail (no writable `TMPDIR`, a full disk), the bytes
//! that the file did not take stay in memory: losing held output or replayed input would be
//! worse than growing, and the owner says so (see `spill_error`).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::text::plain_error;

/// Bytes kept in memory before spilling to a file.
pub(crate) const MEMORY_LIMIT: usize = 4 * 1024 * 1024;

/// The most that all spools together keep in memory once no file takes their bytes: past it,
/// a spool has no room (see `has_room`), and its owner stops reading what it would append.
pub(crate) const MEMORY_BOUND: usize = 64 * 1024 * 1024;

/// The bytes all spools of the process hold in memory.
static IN_MEMORY: AtomicUsize = AtomicUsize::new(0);

/// The size from which glibc gives a buffer a mapping of its own, unmapped when it is freed:
/// glibc's own starting value, held fixed (see `give_freed_memory_back`).
const OWN_MAPPING_FROM: libc::c_int = 128 * 1024;

/// Makes the memory of a freed spool go back to the system, so that what `retry` holds stays
/// what the spools count. Left to itself, glibc raises the size from which a buffer gets a
/// mapping of its own to that of each such buffer freed (to 4 MiB after the first spool), and
/// later spools then grow in the arenas of the threads that copy them, which keep freed memory:
/// under load, when an attempt's copy threads have not yet ended as the next attempt's start,
/// each new thread gets an arena of its own, and each arena kept a spool's 4 MiB (120 MiB for
/// 64 MiB counted with threads that end 2 s late; 190 MiB seen). Call it before any thread
/// exists.
pub(crate) fn give_freed_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt(3) with a valid parameter; it only changes the allocator's settings.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_MAPPING_FROM);
    }
}

#[derive(Debug)]
pub(crate) struct Spool {
    /// Where the bytes this spool holds in memory are counted: the process's count, or, in a
    /// unit test, the test's own (tests run side by side in one process).
    in_memory: &'static AtomicUsize,
    /// The first bytes, once they outgrew memory.
    file: Option<File>,
    /// How many bytes the file holds.
    in_file: u64,
    /// The bytes after those: all of them until the spill, and those no file would take.
    memory: Vec<u8>,
    /// Why bytes stay in memory past `MEMORY_LIMIT`, once a spill has failed.
    spill_error: Option<String>,
}

impl Default for Spool {
    fn default() -> Self {
        Self {
            in_memory: &IN_MEMORY,
            file: None,
            in_file: 0,
            memory: Vec::new(),
            spill_error: None,
        }
    }
}

impl Spool {
    /// Moves what is in memory to the file now, and all that comes later: for bytes that wait
    /// long, beside other spools that fill. Should no file be had, they stay in memory.
    pub(crate) fn spill_now(&mut self) {
        if self.file.is_some() || self.spill_error.is_some() || self.memory.is_empty() {
            return;
        }
        match spill(&self.memory) {
            Ok(file) => self.spilled_to(file),
            Err(error) => self.spill_error = Some(error),
        }
    }

    /// The bytes in memory are in `file` now.
    fn spilled_to(&mut self, file: File) {
        self.in_file = self.memory.len() as u64;
        self.in_memory
            .fetch_sub(self.memory.len(), Ordering::Relaxed);
        self.memory = Vec::new();
        self.file = Some(file);
    }

    /// Whether `more` bytes may be appended: while a file takes them (or none has been tried
    /// yet: the append tries one before memory would pass the bound), and in memory while all
    /// spools together hold no more than `MEMORY_BOUND`.
    pub(crate) fn has_room(&self, more: usize) -> bool {
        let untried = self.file.is_none() && self.spill_error.is_none();
        (self.file.is_some() && self.spill_error.is_none())
            || untried
            || self.in_memory_after(more) <= MEMORY_BOUND
    }

    pub(crate) fn len(&self) -> u64 {
        self.in_file + self.memory.len() as u64
    }

    pub(crate) fn append(&mut self, bytes: &[u8]) {
        if self.spill_error.is_none()
            && self.file.is_none()
            && (self.memory.len() + bytes.len() > MEMORY_LIMIT
                || self.in_memory_after(bytes.len()) > MEMORY_BOUND)
        {
            match spill(&self.memory) {
                Ok(file) => self.spilled_to(file),
                Err(error) => self.spill_error = Some(error),
            }
        }
        if let (Some(file), None) = (&self.file, &self.spill_error) {
            match file.write_all_at(bytes, self.in_file) {
                Ok(()) => {
                    self.in_file += bytes.len() as u64;
                    return;
                }
                Err(error) => {
                    self.spill_error = Some(cannot_write(&error));
                }
            }
        }
        self.memory.extend_from_slice(bytes);
        self.in_memory.fetch_add(bytes.len(), Ordering::Relaxed);
    }

    /// Copies bytes from `offset` into `buffer`; returns how many (0 at the end).
    pub(crate) fn read_at(&self, offset: u64, buffer: &mut [u8]) -> io::Result<usize> {
        if offset < self.in_file {
            let wanted = buffer.len().min((self.in_file - offset) as usize);
            if let Some(file) = &self.file {
                file.read_exact_at(&mut buffer[..wanted], offset)?;
            }
            return Ok(wanted);
        }
        let start = ((offset - self.in_file) as usize).min(self.memory.len());
        let wanted = buffer.len().min(self.memory.len() - start);
        buffer[..wanted].copy_from_slice(&self.memory[start..start + wanted]);
        Ok(wanted)
    }

    /// Writes everything held to `out`.
    pub(crate) fn copy_to(&self, out: &mut impl Write) -> io::Result<()> {
        let mut buffer = vec![0u8; 128 * 1024];
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

    /// Why bytes past `MEMORY_LIMIT` stay in memory, if they do.
    pub(crate) fn spill_error(&self) -> Option<&str> {
        self.spill_error.as_deref()
    }

    /// What all spools counted with this one would hold in memory with `more` bytes.
    fn in_memory_after(&self, more: usize) -> usize {
        self.in_memory.load(Ordering::Relaxed).saturating_add(more)
    }

    /// Whether the bytes live in a file now.
    #[cfg(test)]
    fn spilled(&self) -> bool {
        self.file.is_some()
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.in_memory
            .fetch_sub(self.memory.len(), Ordering::Relaxed);
    }
}

/// A private temporary file holding `bytes`.
fn spill(bytes: &[u8]) -> Result<File, String> {
    let dir = crate::dirs::temp_dir();
    let file = tempfile::tempfile_in(&dir).map_err(|error| {
        format!(
            "cannot create a temporary file in {}: {}",
            crate::text::path(&dir),
            plain_error(&error)
        )
    })?;
    file.write_all_at(bytes, 0)
        .map_err(|error| cannot_write(&error))?;
    Ok(file)
}

fn cannot_write(error: &io::Error) -> String {
    format!("cannot write a temporary file: {}", plain_error(error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_data_stays_in_memory() {
        let mut spool = alone();
        assert_eq!(spool.len(), 0);
        spool.append(b"hello ");
        spool.append(b"world");
        assert_eq!(spool.len(), 11);
        assert!(!spool.spilled());
        let mut out = Vec::new();
        spool.copy_to(&mut out).unwrap();
        assert_eq!(out, b"hello world");
        let mut buffer = [0u8; 4];
        assert_eq!(spool.read_at(6, &mut buffer).unwrap(), 4);
        assert_eq!(&buffer, b"worl");
        assert_eq!(spool.read_at(11, &mut buffer).unwrap(), 0);
    }

    /// The reference's "past 4 MiB" (docs/reference.md): exactly 4 MiB stays in memory, one byte more spills.
    #[test]
    fn the_memory_limit_is_four_mebibytes() {
        let mut spool = alone();
        spool.append(&vec![b'x'; 4 * 1024 * 1024]);
        assert!(!spool.spilled());
        spool.append(b"y");
        assert!(spool.spilled());
        assert_eq!(spool.len(), 4 * 1024 * 1024 + 1);
    }

    #[test]
    fn large_data_spills_to_a_file_and_reads_back_whole() {
        let mut spool = alone();
        let piece: Vec<u8> = (0..=255u8).cycle().take(1024 * 1024 + 7).collect();
        for _ in 0..5 {
            spool.append(&piece);
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
        assert_eq!(spool.spill_error(), None);
    }

    /// A spool that no file takes has room while all spools' memory stays within the bound,
    /// and none past it; a spool whose file works always has room.
    #[test]
    fn memory_without_a_file_is_bounded_for_all_spools_together() {
        let in_memory = Box::leak(Box::new(AtomicUsize::new(0)));
        let without_file = || {
            let mut spool = counted_in(in_memory);
            spool.spill_error = Some("no file".into());
            spool
        };
        let mut spool = without_file();
        assert!(counted_in(in_memory).has_room(MEMORY_BOUND * 2));
        let piece = vec![7u8; 1024 * 1024];
        let mut appended = 0;
        while spool.has_room(piece.len()) {
            spool.append(&piece);
            appended += piece.len();
            assert!(appended <= MEMORY_BOUND, "past the bound");
        }
        assert!(appended > 0);
        let other = without_file();
        assert!(!other.has_room(piece.len()), "the bound is for all spools");
        drop(spool);
        assert!(
            other.has_room(piece.len()),
            "a dropped spool's memory counts no more"
        );
    }

    /// A spool counted on its own, as if it were the process's only one: the process's count
    /// is shared by the tests that run beside this one.
    fn alone() -> Spool {
        counted_in(Box::leak(Box::new(AtomicUsize::new(0))))
    }

    /// A spool counted with the others counted in `in_memory`.
    fn counted_in(in_memory: &'static AtomicUsize) -> Spool {
        let mut spool = Spool::default();
        spool.in_memory = in_memory;
        spool
    }

    /// Memory a spool holds before it has tried a file counts toward the bound too: an append
    /// that would pass it tries the file first.
    #[test]
    fn an_append_that_would_pass_the_bound_tries_a_file_first() {
        let in_memory = Box::leak(Box::new(AtomicUsize::new(0)));
        let mut full = counted_in(in_memory);
        full.spill_error = Some("no file".into());
        let piece = vec![7u8; 1024 * 1024];
        while full.has_room(piece.len()) {
            full.append(&piece);
        }
        let mut fresh = counted_in(in_memory);
        assert!(fresh.has_room(piece.len()), "a file may yet take it");
        fresh.append(&piece);
        assert!(
            fresh.spilled(),
            "the bytes went to a file, not past the bound"
        );
    }

    /// A file that stops taking bytes (a full disk) keeps what it took; the rest stays in
    /// memory, and everything reads back whole and in order.
    #[test]
    fn bytes_a_file_will_not_take_stay_in_memory() {
        let mut spool = alone();
        let piece: Vec<u8> = (0..=250u8).cycle().take(3 * 1024 * 1024 + 11).collect();
        spool.append(&piece);
        spool.append(&piece);
        let file = spool.file.as_ref().expect("spilled");
        let in_file = spool.in_file;
        // The same file, open for reading only: writes to it now fail.
        let read_only = File::open(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(file)
        ))
        .unwrap();
        spool.file = Some(read_only);
        spool.append(&piece);
        spool.append(b"tail");
        assert_eq!(spool.in_file, in_file);
        assert!(spool.spill_error().unwrap().contains("cannot write"));
        assert_eq!(spool.len(), 3 * piece.len() as u64 + 4);
        let mut out = Vec::new();
        spool.copy_to(&mut out).unwrap();
        let mut expected = [piece.as_slice(); 3].concat();
        expected.extend_from_slice(b"tail");
        assert!(out == expected, "the bytes read back differ");
        let mut buffer = [0u8; 8];
        assert_eq!(spool.read_at(in_file - 3, &mut buffer).unwrap(), 3);
        assert_eq!(spool.read_at(spool.len() - 2, &mut buffer).unwrap(), 2);
        assert_eq!(&buffer[..2], b"il");
        assert_eq!(spool.read_at(spool.len(), &mut buffer).unwrap(), 0);
    }

    /// The same file, open for reading only: writes to it fail from now on, as on a full disk.
    /// Whether there was a file to do that to.
    fn refuse_writes(spool: &mut Spool) -> bool {
        let Some(file) = &spool.file else {
            return false;
        };
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(file));
        spool.file = Some(File::open(path).unwrap());
        true
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Whatever the sizes, and wherever the file stops taking bytes (or is never had),
        /// everything appended reads back whole and in order, from any offset.
        #[test]
        fn reads_back_what_was_appended(
            sizes in proptest::collection::vec(0usize..2_000_000, 0..10),
            refuse_from in proptest::option::of(0usize..10),
            no_file in any::<bool>(),
            offsets in proptest::collection::vec(any::<u64>(), 4),
        ) {
            let mut spool = alone();
            if no_file {
                spool.spill_error = Some("no file".into());
            }
            let mut expected = Vec::new();
            let mut refused = false;
            for (index, size) in sizes.iter().enumerate() {
                // From `refuse_from` on, as soon as there is a file.
                if !refused && refuse_from.is_some_and(|from| index >= from) {
                    refused = refuse_writes(&mut spool);
                }
                let piece: Vec<u8> = (0..*size).map(|at| (at * 31 + index * 7) as u8).collect();
                spool.append(&piece);
                expected.extend_from_slice(&piece);
            }
            prop_assert_eq!(spool.len(), expected.len() as u64);
            prop_assert_eq!(spool.spilled(), !no_file && expected.len() > MEMORY_LIMIT);
            let mut out = Vec::new();
            spool.copy_to(&mut out).unwrap();
            prop_assert!(out == expected, "the bytes read back differ");
            let mut buffer = vec![0u8; 100_000];
            for offset in offsets {
                let offset = offset % (expected.len() as u64 + 2);
                let read = spool.read_at(offset, &mut buffer).unwrap();
                let start = (offset as usize).min(expected.len());
                prop_assert!(read <= expected.len() - start);
                prop_assert!(buffer[..read] == expected[start..start + read]);
                prop_assert!(read > 0 || start == expected.len());
            }
        }
    }
}
