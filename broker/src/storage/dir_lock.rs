//! The exclusive lock a broker holds on each of its log directories (Kafka's `.lock`).
//!
//! ```text
//! <log.dir>/.lock    flock(2) LOCK_EX, held for the broker's life; holds the holder's pid
//! ```
//!
//! Two brokers on one directory would both append to the same segments and truncate each
//! other's indexes. The lock is an advisory `flock` on an open file: the kernel drops it
//! when the process exits, SIGKILL included, so a crash never leaves a stale lock behind.
//! The pid written into the file is only for the message naming the holder; the lock, not
//! the file's content, decides. The metadata quorum's directory lives inside the first log
//! directory, so that directory's lock covers it too.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

pub const LOCK_FILE: &str = ".lock";

/// Why a log directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum DirLockError {
    #[error(
        "log directory {} is in use by another process{}: two brokers must never share a log directory",
        dir.display(),
        holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Held { dir: PathBuf, holder: Option<u32> },
    #[error("cannot lock log directory {}: {source}", dir.display())]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// A held lock on one log directory; dropping it releases the lock.
#[derive(Debug)]
pub struct LogDirLock {
    _file: Flock<File>,
}

impl LogDirLock {
    /// Takes the lock on `dir` (which must exist) without waiting.
    pub fn acquire(dir: &Path) -> Result<Self, DirLockError> {
        let io = |source| DirLockError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        let mut locked = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, Errno::EWOULDBLOCK)) => {
                return Err(DirLockError::Held {
                    dir: dir.to_path_buf(),
                    holder: read_pid(&mut file),
                });
            }
            Err((_, errno)) => return Err(io(std::io::Error::from(errno))),
        };
        locked.set_len(0).map_err(io)?;
        locked.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(locked, "{}", std::process::id()).map_err(io)?;
        Ok(Self { _file: locked })
    }
}

/// The pid of the process holding `dir`'s lock, if one does (the lock is tested, not
/// taken): how `oxbow dev` finds a node restarted by hand.
pub fn holder(dir: &Path) -> Option<u32> {
    let file = OpenOptions::new()
        .read(true)
        .open(dir.join(LOCK_FILE))
        .ok()?;
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Ok(_) => None,
        Err((mut file, Errno::EWOULDBLOCK)) => read_pid(&mut file),
        Err(_) => None,
    }
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_held_directory_is_refused_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let held = LogDirLock::acquire(dir.path()).unwrap();
        let error = LogDirLock::acquire(dir.path()).unwrap_err();
        assert!(
            matches!(&error, DirLockError::Held { holder: Some(pid), .. } if *pid == std::process::id()),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains(&dir.path().display().to_string())
        );
        assert_eq!(holder(dir.path()), Some(std::process::id()));
        drop(held);
        assert_eq!(holder(dir.path()), None);
        LogDirLock::acquire(dir.path()).unwrap();
    }
}
