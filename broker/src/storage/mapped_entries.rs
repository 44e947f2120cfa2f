//! Fixed-width index entries in a preallocated file mapped with memmap2.
//!
//! This is the only module of the broker with `unsafe` code. The file is an array of
//! entries, each a whole number of big-endian 32-bit words; entries `0..len` are valid
//! and everything after them is preallocated zeroes. One writer appends entries while
//! any number of readers look them up without taking a lock:
//!
//! - every word is read and written through an [`AtomicU32`] placed on the mapping, so a
//!   reader racing a writer sees old or new words, never undefined behaviour;
//! - the writer stores the words of entry `len` and then publishes `len + 1` with
//!   `Release`; readers load `len` with `Acquire` and only read entries below it.
//!
//! Crash behaviour: the file length says nothing about how many entries are valid
//! while the segment is active (the tail is zero-filled preallocation), so after an
//! unclean stop the owner rebuilds the index from the log. On seal and on clean close
//! the file is trimmed to exactly `len` entries, so a sealed index's length is its count.
//!
//! File descriptors: the file is closed once it is mapped (the mapping keeps it alive), as
//! Kafka's `AbstractIndex` does, so a partition holds one descriptor (its active segment's
//! log file) instead of three: with 10,000 partitions that is 10,000 descriptors, not
//! 30,000 (more than a common limit of 20,000 open files: partitions past two thirds of it
//! could not be created). [`MappedEntries::trim`] and [`MappedEntries::sync`] reopen the
//! file by path; a file renamed or removed meanwhile (its segment deleted by retention, its
//! partition directory retired or moved) has nothing left to trim or make durable.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use memmap2::{Advice, MmapOptions, MmapRaw};
use parking_lot::Mutex;

const WORD: usize = 4;

/// Failures of an index file.
#[derive(Debug, thiserror::Error)]
pub enum IndexFileError {
    #[error("cannot open index file {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot resize index file {path} to {bytes} bytes: {source}")]
    Resize {
        path: PathBuf,
        bytes: u64,
        source: std::io::Error,
    },
    #[error("cannot map index file {path}: {source}")]
    Map {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot sync index file {path}: {source}")]
    Sync {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("index file {path} is full ({capacity} entries)")]
    Full { path: PathBuf, capacity: usize },
}

/// A file of `WORDS`-word entries; see the module documentation for the layout.
#[derive(Debug)]
pub struct MappedEntries<const WORDS: usize> {
    path: PathBuf,
    /// `None` when the file has zero length (a sealed, empty index): nothing to map.
    map: Option<MmapRaw>,
    /// Entries the file can hold; lowered to `len` when the file is trimmed, so that no
    /// word past the end of the file is ever touched.
    capacity: AtomicUsize,
    len: AtomicUsize,
    writer: Mutex<()>,
}

impl<const WORDS: usize> MappedEntries<WORDS> {
    pub const ENTRY_BYTES: usize = WORDS * WORD;

    /// Opens (creating if missing) an index file holding `valid_entries` valid entries and
    /// sizes it to `capacity_bytes` (rounded down to whole entries).
    pub fn open(
        path: &Path,
        valid_entries: usize,
        capacity_bytes: u64,
    ) -> Result<Self, IndexFileError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|source| IndexFileError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        let capacity = (capacity_bytes as usize / Self::ENTRY_BYTES).max(valid_entries);
        let bytes = (capacity * Self::ENTRY_BYTES) as u64;
        file.set_len(bytes)
            .map_err(|source| IndexFileError::Resize {
                path: path.to_path_buf(),
                bytes,
                source,
            })?;
        let map = Self::map(path, &file, bytes)?;
        drop(file);
        Ok(Self {
            path: path.to_path_buf(),
            map,
            capacity: AtomicUsize::new(capacity),
            len: AtomicUsize::new(valid_entries),
            writer: Mutex::new(()),
        })
    }

    /// Entries in an existing file whose length is exactly its entry count (a trimmed index).
    pub fn entries_in_trimmed_file(path: &Path) -> Option<usize> {
        let bytes = std::fs::metadata(path).ok()?.len() as usize;
        bytes
            .is_multiple_of(Self::ENTRY_BYTES)
            .then_some(bytes / Self::ENTRY_BYTES)
    }

    fn map(path: &Path, file: &File, bytes: u64) -> Result<Option<MmapRaw>, IndexFileError> {
        if bytes == 0 {
            return Ok(None);
        }
        let map = MmapOptions::new()
            .len(bytes as usize)
            .map_raw(file)
            .map_err(|source| IndexFileError::Map {
                path: path.to_path_buf(),
                source,
            })?;
        // Without this, the first touch of a page of the preallocated (sparse) tail reads
        // around it: the kernel zero-fills a whole readahead window of holes per fault, and
        // does so again whenever memory pressure drops those clean pages. Producing to
        // 10,000 partitions spent 94% of the broker's CPU there. Index pages are touched
        // one at a time (appends at the end, binary searches), so readahead never helps.
        if let Err(error) = map.advise(Advice::Random) {
            tracing::debug!(path = %path.display(), %error, "madvise(MADV_RANDOM) on an index refused");
        }
        Ok(Some(map))
    }

    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_full(&self) -> bool {
        self.len() >= self.capacity.load(Ordering::Acquire)
    }

    fn word(&self, word_index: usize) -> Option<&AtomicU32> {
        let map = self.map.as_ref()?;
        if word_index >= self.capacity.load(Ordering::Acquire) * WORDS {
            return None;
        }
        // SAFETY: the mapping is at least `capacity * WORDS` words long and lives as long as `self`;
        // `word_index` is below that bound, and the mapping is page-aligned so every word
        // offset is 4-byte aligned. All accesses to mapped words go through `AtomicU32`,
        // so concurrent readers and the single writer never race non-atomically. The
        // file is only shrunk (`trim`) to a length that still covers every published
        // entry, and readers never read past the published length.
        Some(unsafe { &*(map.as_ptr().add(word_index * WORD) as *const AtomicU32) })
    }

    /// Reads entry `index` if it is published.
    pub fn get(&self, index: usize) -> Option<[u32; WORDS]> {
        if index >= self.len() {
            return None;
        }
        let mut entry = [0u32; WORDS];
        for (i, slot) in entry.iter_mut().enumerate() {
            *slot = u32::from_be(self.word(index * WORDS + i)?.load(Ordering::Relaxed));
        }
        Some(entry)
    }

    /// Appends an entry and publishes it.
    pub fn push(&self, entry: [u32; WORDS]) -> Result<(), IndexFileError> {
        let _writer = self.writer.lock();
        let index = self.len.load(Ordering::Relaxed);
        let capacity = self.capacity.load(Ordering::Acquire);
        if index >= capacity {
            return Err(IndexFileError::Full {
                path: self.path.clone(),
                capacity,
            });
        }
        for (i, value) in entry.iter().enumerate() {
            let word = self
                .word(index * WORDS + i)
                .ok_or_else(|| IndexFileError::Full {
                    path: self.path.clone(),
                    capacity,
                })?;
            word.store(value.to_be(), Ordering::Relaxed);
        }
        self.len.store(index + 1, Ordering::Release);
        Ok(())
    }

    /// Forgets entries from `len` on (they are zeroed so a crash leaves no stale tail).
    pub fn truncate(&self, len: usize) {
        let _writer = self.writer.lock();
        let current = self.len.load(Ordering::Relaxed);
        if len >= current {
            return;
        }
        self.len.store(len, Ordering::Release);
        for word_index in len * WORDS..current * WORDS {
            if let Some(word) = self.word(word_index) {
                word.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Forgets every entry without zeroing the file: for a rebuild that overwrites entries
    /// from the start (an index after an unclean stop may claim its whole preallocated
    /// length; zeroing that would touch every page of it).
    pub fn reset(&self) {
        let _writer = self.writer.lock();
        self.len.store(0, Ordering::Release);
    }

    /// Binary search: the index of the last entry for which `is_at_or_before` holds, given
    /// that the predicate holds for a prefix of the entries.
    pub fn last_where(&self, is_at_or_before: impl Fn(&[u32; WORDS]) -> bool) -> Option<usize> {
        let (mut low, mut high) = (0usize, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.get(middle) {
                Some(entry) if is_at_or_before(&entry) => low = middle + 1,
                _ => high = middle,
            }
        }
        low.checked_sub(1)
    }

    /// Flushes the mapping and the file (its length included) to disk. A file gone from its
    /// path has nothing to make durable (see the module documentation).
    pub fn sync(&self) -> Result<(), IndexFileError> {
        let fail = |source| IndexFileError::Sync {
            path: self.path.clone(),
            source,
        };
        if let Some(map) = &self.map {
            map.flush().map_err(fail)?;
        }
        match File::open(&self.path) {
            Ok(file) => file.sync_all().map_err(fail),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
            Err(error) => Err(fail(error)),
        }
    }

    /// Shrinks the file to exactly the published entries (on seal and clean close). The
    /// mapping is kept: every published entry is still inside the file.
    pub fn trim(&self) -> Result<(), IndexFileError> {
        let _writer = self.writer.lock();
        let len = self.len.load(Ordering::Relaxed);
        self.capacity.store(len, Ordering::Release);
        let bytes = (len * Self::ENTRY_BYTES) as u64;
        let fail = |source| IndexFileError::Resize {
            path: self.path.clone(),
            bytes,
            source,
        };
        match OpenOptions::new().write(true).open(&self.path) {
            Ok(file) => file.set_len(bytes).map_err(fail),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
            Err(error) => Err(fail(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The lock-free read path under contention: one writer pushes while readers look
    //! entries up, then the writer trims the file under them. Each entry's words are a
    //! function of its index, so a torn or unpublished entry shows as a mismatch.
    #![allow(clippy::unwrap_used)]

    use std::sync::Barrier;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    const ENTRIES: usize = 40_000;
    const READERS: usize = 3;

    type Entries = MappedEntries<3>;

    fn entry(index: usize) -> [u32; 3] {
        let i = u32::try_from(index).unwrap();
        [i, !i, i.wrapping_mul(2_654_435_761)]
    }

    /// Checks everything a reader may see at this moment; returns the length it saw.
    fn check_published(entries: &Entries, seen_len: usize, probe: usize) -> usize {
        let len = entries.len();
        assert!(len >= seen_len, "len went back from {seen_len} to {len}");
        if len > 0 {
            assert_eq!(
                entries.get(len - 1),
                Some(entry(len - 1)),
                "newest of {len}"
            );
            let index = probe % len;
            assert_eq!(
                entries.get(index),
                Some(entry(index)),
                "entry {index} of {len}"
            );
            let found = entries.last_where(|e| e[0] as usize <= index);
            assert_eq!(
                found,
                Some(index),
                "last_where({index}) with {len} published"
            );
        }
        // An index at or past the length read at the start may have been published since;
        // then it must be complete.
        if let Some(words) = entries.get(len) {
            assert_eq!(words, entry(len), "entry {len} read while being published");
        }
        len
    }

    /// Descriptors of this process open on `path`.
    fn descriptors_on(path: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| target == path)
            .count()
    }

    /// The `VmFlags` line of this process's mapping of `path`, from /proc/self/smaps.
    fn mapping_flags(path: &Path) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let wanted = path.to_str().unwrap();
        let mut in_mapping = false;
        for line in smaps.lines() {
            if line.ends_with(wanted) {
                in_mapping = true;
            } else if in_mapping && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.trim().to_string());
            }
        }
        None
    }

    #[test]
    fn an_index_mapping_is_advised_random_so_a_fault_reads_no_window_of_holes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.timeindex");
        let entries = Entries::open(&path, 0, 1024 * 1024).unwrap();
        entries.push(entry(0)).unwrap();
        let flags = mapping_flags(&path).expect("the index is mapped");
        // "rr": random read advised (MADV_RANDOM), so no read-around on faults.
        assert!(
            flags.split_whitespace().any(|flag| flag == "rr"),
            "VmFlags of the index mapping: {flags}"
        );
    }

    #[test]
    fn an_open_index_holds_no_file_descriptor_and_reopens_its_file_to_trim_and_sync() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let entries = Entries::open(&path, 0, 100 * Entries::ENTRY_BYTES as u64).unwrap();
        assert_eq!(descriptors_on(&path), 0);
        for index in 0..10 {
            entries.push(entry(index)).unwrap();
        }
        entries.sync().unwrap();
        entries.trim().unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            10 * Entries::ENTRY_BYTES as u64
        );
        assert_eq!(descriptors_on(&path), 0);
        assert_eq!(entries.get(9), Some(entry(9)));
        // Renamed away (its segment deleted by retention): the mapping still reads, and
        // there is nothing left to trim or sync at the old path.
        let deleted = dir.path().join("00000000000000000000.index.deleted");
        std::fs::rename(&path, &deleted).unwrap();
        entries.sync().unwrap();
        entries.trim().unwrap();
        assert_eq!(entries.get(9), Some(entry(9)));
        assert_eq!(
            std::fs::metadata(&deleted).unwrap().len(),
            10 * Entries::ENTRY_BYTES as u64
        );
    }

    #[test]
    fn readers_see_only_whole_published_entries_while_the_writer_pushes_and_trims() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let capacity_bytes = ((ENTRIES + 1000) * Entries::ENTRY_BYTES) as u64;
        let entries = Entries::open(&path, 0, capacity_bytes).unwrap();
        let start = Barrier::new(READERS + 1);
        // Readers that have checked a half-written index: the writer holds the second half
        // back until every reader has, so each one reads while pushes are still to come.
        let midway = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let readers: Vec<_> = (0..READERS)
                .map(|reader| {
                    let (entries, start, midway) = (&entries, &start, &midway);
                    scope.spawn(move || {
                        start.wait();
                        let (mut seen, mut probe, mut counted) = (0, reader * 7919, false);
                        // Capacity only reaches the length when the writer trims.
                        while !entries.is_full() {
                            seen = check_published(entries, seen, probe);
                            probe = probe.wrapping_mul(31).wrapping_add(17);
                            if !counted && seen >= ENTRIES / 2 {
                                midway.fetch_add(1, Ordering::AcqRel);
                                counted = true;
                            }
                        }
                        // After the trim the file is exactly the entries: every one readable.
                        assert_eq!(entries.len(), ENTRIES);
                        for index in 0..ENTRIES {
                            assert_eq!(entries.get(index), Some(entry(index)));
                        }
                    })
                })
                .collect();
            start.wait();
            for index in 0..ENTRIES {
                // (A reader that failed never gets midway: stop waiting for it.)
                if index == ENTRIES / 2 {
                    while midway.load(Ordering::Acquire) < READERS
                        && !readers.iter().any(|r| r.is_finished())
                    {
                        std::thread::yield_now();
                    }
                }
                entries.push(entry(index)).unwrap();
            }
            entries.trim().unwrap();
            for reader in readers {
                reader.join().unwrap();
            }
        });
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            (ENTRIES * Entries::ENTRY_BYTES) as u64
        );
        assert!(matches!(
            entries.push(entry(ENTRIES)),
            Err(IndexFileError::Full { .. })
        ));
    }
}
