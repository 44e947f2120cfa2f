//! The `LogManager`: every partition log of the broker across its `log.dirs`.
//!
//! Each log directory holds partition directories `<topic>-<partition>/`. A new
//! partition goes to the directory holding the fewest partitions. Start-up loads every
//! partition in parallel; a partition that fails to load is reported and skipped, the
//! healthy ones are served. A directory that fails I/O is taken offline: its partitions
//! answer with a storage error and nothing there is retried (fatal, not transient).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::checkpoint::{CheckpointError, take_clean_shutdown_marker, write_clean_shutdown_marker};
use super::clock::Clock;
use super::dir_lock::{DirLockError, LogDirLock};
use super::log::{LoadReport, Log, LogError};
use super::log_config::LogConfig;
use super::relocation::{FUTURE_SUFFIX, Relocation};
use super::{LogDirHealth, TopicPartition};

/// Failures of the log manager itself.
#[derive(Debug, thiserror::Error)]
pub enum LogManagerError {
    #[error("no log directory is configured")]
    NoLogDirs,
    #[error("cannot create log directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("every log directory is offline")]
    AllDirsOffline,
    #[error("partition {0} already exists")]
    AlreadyExists(TopicPartition),
    #[error("{0} is not one of this broker's log.dirs")]
    UnknownLogDir(PathBuf),
    #[error("log directory {0} is offline")]
    LogDirOffline(PathBuf),
    #[error("partition {0} has no replica on this broker")]
    NotHosted(TopicPartition),
    #[error(transparent)]
    Lock(#[from] DirLockError),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// Where a replica is, as DescribeLogDirs reports it.
#[derive(Debug, Clone)]
pub struct ReplicaPlacement {
    pub log: Arc<Log>,
    /// The log directory moving the replica in, if a move is in progress.
    pub moving: Option<Arc<Relocation>>,
}

/// What start-up found.
#[derive(Debug, Default)]
pub struct StartupReport {
    pub loaded: Vec<(TopicPartition, LoadReport)>,
    pub failed: Vec<(PathBuf, LogError)>,
    pub offline_dirs: Vec<(PathBuf, String)>,
    /// Log directories that had not been shut down cleanly.
    pub unclean_dirs: Vec<PathBuf>,
}

/// All partition logs of this broker.
#[derive(Debug)]
pub struct LogManager {
    dirs: Vec<Arc<LogDirHealth>>,
    logs: RwLock<HashMap<TopicPartition, Arc<Log>>>,
    clock: Arc<dyn Clock>,
    /// Moves between log directories in progress.
    relocations: Mutex<HashMap<TopicPartition, Arc<Relocation>>>,
    /// Log directories asked for replicas this broker does not hold yet: where they are
    /// created (Kafka lets AlterReplicaLogDirs come before the replica does).
    preferred_dirs: Mutex<HashMap<TopicPartition, PathBuf>>,
    /// The exclusive lock on every log directory, held for the manager's life.
    _locks: Vec<LogDirLock>,
}

impl LogManager {
    /// Opens every log directory and loads every partition in it. `config_for` gives
    /// each partition's configuration (broker defaults plus its topic's overrides).
    pub fn open(
        log_dirs: &[PathBuf],
        config_for: &(dyn Fn(&TopicPartition) -> LogConfig + Sync),
        clock: Arc<dyn Clock>,
    ) -> Result<(Self, StartupReport), LogManagerError> {
        if log_dirs.is_empty() {
            return Err(LogManagerError::NoLogDirs);
        }
        // Every directory is locked before anything in any of them is read or changed: a
        // second broker on the same directories stops here.
        // A directory that cannot be created or locked for I/O reasons goes offline below
        // like any other failing directory; one another process holds is fatal.
        let mut locks = Vec::with_capacity(log_dirs.len());
        let mut unlockable = HashMap::new();
        for path in log_dirs {
            let locked = std::fs::create_dir_all(path)
                .map_err(|source| DirLockError::Io {
                    dir: path.clone(),
                    source,
                })
                .and_then(|()| LogDirLock::acquire(path));
            match locked {
                Ok(lock) => locks.push(lock),
                Err(held @ DirLockError::Held { .. }) => return Err(held.into()),
                Err(other) => {
                    unlockable.insert(path.clone(), other.to_string());
                }
            }
        }
        let mut report = StartupReport::default();
        let mut dirs = Vec::new();
        let mut work = Vec::new();
        for path in log_dirs {
            let health = Arc::new(LogDirHealth::new(path.clone()));
            let scan = unlockable
                .remove(path)
                .map_or(Ok(()), Err)
                .and_then(|()| {
                    take_clean_shutdown_marker(path).map_err(|e: CheckpointError| e.to_string())
                })
                .and_then(|clean| {
                    partition_dirs(path)
                        .map(|p| (clean, p))
                        .map_err(|e| e.to_string())
                });
            match scan {
                Ok((clean, partitions)) => {
                    if !clean && !partitions.is_empty() {
                        report.unclean_dirs.push(path.clone());
                    }
                    for (dir, tp) in partitions {
                        work.push((dir, tp, clean, Arc::clone(&health)));
                    }
                }
                Err(error) => {
                    tracing::error!(dir = %path.display(), %error, "Log directory is unusable; taking it offline");
                    health.set_offline();
                    report.offline_dirs.push((path.clone(), error));
                }
            }
            dirs.push(health);
        }
        if dirs.iter().all(|d| d.is_offline()) {
            return Err(LogManagerError::AllDirsOffline);
        }
        let results = load_in_parallel(work, config_for, &clock);
        let mut logs: HashMap<TopicPartition, Arc<Log>> = HashMap::new();
        for (dir, tp, result) in results {
            if let Some(kept) = logs.get(&tp) {
                // A move between log directories stopped between its two renames: both
                // copies hold the same records. Keep one.
                tracing::warn!(topic_partition = %tp, kept = %kept.dir().display(), dropped = %dir.display(), "Partition found in two log directories; dropping one copy");
                if let Ok((log, _)) = result {
                    drop(log);
                    if let Err(error) = super::log::retire_dir(&dir) {
                        tracing::warn!(dir = %dir.display(), %error, "Cannot remove the duplicate copy");
                    }
                }
                continue;
            }
            match result {
                Ok((log, load)) => {
                    if load.recovered_segments > 0 {
                        tracing::warn!(topic_partition = %tp, segments = load.recovered_segments, truncated_bytes = load.truncated_bytes, "Recovered partition after an unclean stop");
                    }
                    report.loaded.push((tp.clone(), load));
                    logs.insert(tp, Arc::new(log));
                }
                Err(error) => {
                    tracing::error!(partition_dir = %dir.display(), %error, "Partition failed to load; serving the others");
                    report.failed.push((dir, error));
                }
            }
        }
        Ok((
            Self {
                dirs,
                logs: RwLock::new(logs),
                clock,
                relocations: Mutex::new(HashMap::new()),
                preferred_dirs: Mutex::new(HashMap::new()),
                _locks: locks,
            },
            report,
        ))
    }

    pub fn get(&self, topic_partition: &TopicPartition) -> Option<Arc<Log>> {
        self.logs.read().get(topic_partition).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Log>> {
        self.logs.read().values().cloned().collect()
    }

    pub fn log_dirs(&self) -> &[Arc<LogDirHealth>] {
        &self.dirs
    }

    /// Creates a new partition log in the online directory with the fewest partitions.
    pub fn create(
        &self,
        topic_partition: TopicPartition,
        config: LogConfig,
    ) -> Result<Arc<Log>, LogManagerError> {
        let mut logs = self.logs.write();
        if logs.contains_key(&topic_partition) {
            return Err(LogManagerError::AlreadyExists(topic_partition));
        }
        let preferred = self.preferred_dirs.lock().remove(&topic_partition);
        let online: Vec<&Arc<LogDirHealth>> =
            self.dirs.iter().filter(|d| !d.is_offline()).collect();
        // Counting what each directory holds walks every log: only worth it with a choice
        // to make (with one directory, creating N partitions would cost N² for nothing).
        let dir = match online.as_slice() {
            [] => return Err(LogManagerError::AllDirsOffline),
            [only] => *only,
            several => several
                .iter()
                .copied()
                .min_by_key(|d| {
                    let asked = preferred.as_deref() == Some(d.path());
                    let held = logs
                        .values()
                        .filter(|l| l.dir().starts_with(d.path()))
                        .count();
                    (!asked, held)
                })
                .ok_or(LogManagerError::AllDirsOffline)?,
        };
        let log = Arc::new(Log::create(
            dir.path(),
            topic_partition.clone(),
            config,
            Arc::clone(&self.clock),
            Arc::clone(dir),
        )?);
        logs.insert(topic_partition, Arc::clone(&log));
        Ok(log)
    }

    /// The replica of `topic_partition` here, and the move of it in progress, if any.
    pub fn placement(&self, topic_partition: &TopicPartition) -> Option<ReplicaPlacement> {
        let log = self.get(topic_partition)?;
        let moving = self.relocations.lock().get(topic_partition).cloned();
        Some(ReplicaPlacement { log, moving })
    }

    /// AlterReplicaLogDirs for one replica: moves it to `destination` (one of the
    /// `log.dirs`) in the background; naming its current directory cancels a move in
    /// progress. For a replica this broker does not hold yet, `destination` is where it
    /// will be created, and the answer is [`LogManagerError::NotHosted`] (as Kafka's).
    pub fn move_replica(
        self: &Arc<Self>,
        topic_partition: &TopicPartition,
        destination: &Path,
    ) -> Result<(), LogManagerError> {
        let wanted = std::path::absolute(destination).unwrap_or_else(|_| destination.into());
        let target = self
            .dirs
            .iter()
            .find(|d| std::path::absolute(d.path()).is_ok_and(|p| p == wanted))
            .cloned()
            .ok_or_else(|| LogManagerError::UnknownLogDir(destination.to_path_buf()))?;
        if target.is_offline() {
            return Err(LogManagerError::LogDirOffline(target.path().to_path_buf()));
        }
        let Some(log) = self.get(topic_partition) else {
            self.preferred_dirs
                .lock()
                .insert(topic_partition.clone(), target.path().to_path_buf());
            return Err(LogManagerError::NotHosted(topic_partition.clone()));
        };
        let mut relocations = self.relocations.lock();
        if let Some(running) = relocations.get(topic_partition) {
            if Arc::ptr_eq(running.target(), &target) {
                return Ok(());
            }
            running.cancel();
            relocations.remove(topic_partition);
        }
        if log.dir().parent() == Some(target.path()) {
            return Ok(());
        }
        let relocation = Arc::new(Relocation::new(Arc::clone(&target)));
        relocations.insert(topic_partition.clone(), Arc::clone(&relocation));
        drop(relocations);
        let manager = Arc::clone(self);
        let tp = topic_partition.clone();
        let spawned = std::thread::Builder::new()
            .name("oxbow-move-dir".into())
            .spawn(move || {
                if let Err(error) = log.relocate(&relocation) {
                    tracing::warn!(topic_partition = %tp, to = %relocation.target().path().display(), %error, "Moving a replica to another log directory stopped; it stays where it was");
                }
                let mut relocations = manager.relocations.lock();
                if relocations
                    .get(&tp)
                    .is_some_and(|r| Arc::ptr_eq(r, &relocation))
                {
                    relocations.remove(&tp);
                }
            });
        if let Err(error) = spawned {
            self.relocations.lock().remove(topic_partition);
            return Err(LogManagerError::CreateDir {
                path: target.path().to_path_buf(),
                source: error,
            });
        }
        Ok(())
    }

    /// Removes a partition and its files.
    pub fn delete(&self, topic_partition: &TopicPartition) -> Result<bool, LogManagerError> {
        if let Some(moving) = self.relocations.lock().remove(topic_partition) {
            moving.cancel();
        }
        let removed = self.logs.write().remove(topic_partition);
        match removed {
            Some(log) => {
                log.delete()?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// One pass of background work: flush sealed segments and logs whose `flush.ms` is
    /// due, apply retention. Errors are logged per partition.
    pub fn run_maintenance(&self) {
        for log in self.all() {
            let outcome = log
                .flush_sealed()
                .and_then(|()| log.flush_if_due().map(|_| ()))
                .and_then(|()| log.apply_retention().map(|_| ()));
            if let Err(error) = outcome {
                tracing::warn!(topic_partition = %log.topic_partition(), %error, "Log maintenance failed");
            }
        }
    }

    /// One pass of the log cleaner: every compacted log whose cleaning is due is compacted
    /// (on its own schedule, `log.cleaner.backoff.ms`, as Kafka's cleaner threads).
    pub fn run_cleaner(&self) {
        for log in self.all() {
            if let Err(error) = log.compact() {
                tracing::warn!(topic_partition = %log.topic_partition(), %error, "Log compaction failed");
            }
        }
    }

    /// Clean shutdown: close every log (flush, trim indexes, checkpoints), then mark each
    /// healthy directory as cleanly shut down.
    pub fn shutdown(&self) -> Result<(), LogManagerError> {
        let errors = in_parallel(self.all(), |log| {
            log.close().map_err(|error| {
                tracing::error!(topic_partition = %log.topic_partition(), %error, "Failed to close log");
                error
            })
        });
        let first_error = errors.into_iter().find_map(Result::err);
        for dir in &self.dirs {
            if dir.is_offline() {
                continue;
            }
            if let Err(error) = write_clean_shutdown_marker(dir.path()) {
                tracing::error!(dir = %dir.path().display(), %error, "Failed to write the clean-shutdown marker");
            }
        }
        match first_error {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }
}

/// Partition directories in a log directory, with the partition each names. Directories
/// with other names (deleted partitions, stray files) are skipped.
/// Suffix of a partition directory renamed for deletion (Kafka marks them `-delete` too).
pub const DELETED_SUFFIX: &str = "-delete";

/// Removes a directory off the caller's thread: deleting gigabytes of segments must not
/// hold up the metadata publisher (or the disk writes of the quorum) while it runs.
/// One thread removes every deleted directory in turn, file by file, cutting big files
/// down in steps first: freeing a whole topic's extents at once fills the filesystem's
/// journal, and every fsync behind it (the Raft log's among them) waits.
pub fn remove_in_background(dir: PathBuf) {
    type Queued = (PathBuf, std::time::Instant);
    static DELETER: std::sync::OnceLock<Option<std::sync::mpsc::Sender<Queued>>> =
        std::sync::OnceLock::new();
    let deleter = DELETER.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel::<Queued>();
        std::thread::Builder::new()
            .name("oxbow-delete".into())
            .spawn(move || {
                for (dir, queued) in receiver {
                    // A read under way may still be sending from these files (sendfile):
                    // they are cut down only once it has surely finished.
                    std::thread::sleep(DELETE_GRACE.saturating_sub(queued.elapsed()));
                    if let Err(error) = remove_gradually(&dir) {
                        tracing::warn!(dir = %dir.display(), %error, "Cannot remove a deleted partition directory");
                    }
                }
            })
            .map_err(|error| tracing::warn!(%error, "No thread for deletions; deleting inline"))
            .ok()
            .map(|_| sender)
    });
    let queued = match deleter {
        Some(sender) => sender.send((dir, std::time::Instant::now())),
        None => Err(std::sync::mpsc::SendError((dir, std::time::Instant::now()))),
    };
    if let Err(std::sync::mpsc::SendError((dir, _))) = queued
        && let Err(error) = remove_gradually(&dir)
    {
        tracing::warn!(dir = %dir.display(), %error, "Cannot remove a deleted partition directory");
    }
}

/// How long a deleted directory's files stay whole after the rename, for reads under way.
const DELETE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// Bytes freed per step when a big file is cut down before it is unlinked.
const DELETE_STEP_BYTES: u64 = 64 * 1024 * 1024;

fn remove_gradually(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            remove_gradually(&path)?;
            continue;
        }
        let file = std::fs::OpenOptions::new().write(true).open(&path)?;
        let mut size = file.metadata()?.len();
        while size > DELETE_STEP_BYTES {
            size -= DELETE_STEP_BYTES;
            file.set_len(size)?;
        }
        drop(file);
        std::fs::remove_file(&path)?;
    }
    std::fs::remove_dir(dir)
}

fn partition_dirs(log_dir: &Path) -> std::io::Result<Vec<(PathBuf, TopicPartition)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(log_dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name();
        if name
            .to_str()
            .is_some_and(|n| n.ends_with(DELETED_SUFFIX) || n.ends_with(FUTURE_SUFFIX))
        {
            // A deletion, or a move between log directories, the last run did not finish.
            remove_in_background(entry.path());
            continue;
        }
        if let Some(tp) = name.to_str().and_then(TopicPartition::from_dir_name) {
            found.push((entry.path(), tp));
        }
    }
    Ok(found)
}

type LoadResult = (PathBuf, TopicPartition, Result<(Log, LoadReport), LogError>);

fn load_in_parallel(
    work: Vec<(PathBuf, TopicPartition, bool, Arc<LogDirHealth>)>,
    config_for: &(dyn Fn(&TopicPartition) -> LogConfig + Sync),
    clock: &Arc<dyn Clock>,
) -> Vec<LoadResult> {
    in_parallel(work, |(dir, tp, clean, health)| {
        let config = config_for(&tp);
        let loaded = Log::open(&dir, tp.clone(), config, Arc::clone(clock), health, clean);
        (dir, tp, loaded)
    })
}

/// Threads for work on every partition at once (loading, closing). The work waits on the
/// disk more than on the CPU (an fsync per file on close, after recovery), and fsyncs
/// issued together share the file system's journal commits, so more threads than cores
/// pay: 10,000 partitions closed in 41.9 s one at a time, in 4.1 s with 8 threads
/// (docs/benchmarks/2026-12-02-metadata-scale-ab.txt).
const PARTITION_WORK_THREADS: usize = 8;

/// `work` done by a few threads, results in no particular order.
fn in_parallel<T: Send, R: Send>(work: Vec<T>, each: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = PARTITION_WORK_THREADS
        .max(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .min(work.len().max(1));
    let queue = parking_lot::Mutex::new(work);
    let results = parking_lot::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().pop();
                    let Some(item) = next else {
                        break;
                    };
                    let result = each(item);
                    results.lock().push(result);
                }
            });
        }
    });
    results.into_inner()
}
