//! The sweep directory's lock: the lock every output takes ([`crate::output::lock_file`]),
//! on `DIR/sweep.lock`, which also holds the pid.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::SweepError;

/// Holds a sweep directory for as long as it lives. The kernel drops the lock when the
/// process dies, however it dies, so a SIGKILLed sweep leaves no stale lock; the pid in the
/// file is only there to name the holder.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    path: PathBuf,
}

impl DirLock {
    /// The lock file inside a sweep directory.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join("sweep.lock")
    }

    /// Takes the lock of `dir` (created if needed), without waiting.
    ///
    /// # Errors
    ///
    /// [`SweepError::Locked`] naming the holder's pid when another process holds it;
    /// [`SweepError::NotADirectory`] when `dir` exists and is not a directory;
    /// [`SweepError::Io`] when the directory or lock file cannot be made.
    pub fn acquire(dir: &Path) -> Result<Self, SweepError> {
        if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
            return Err(SweepError::NotADirectory {
                dir: dir.to_path_buf(),
            });
        }
        check_sweep_folder(dir)?;
        std::fs::create_dir_all(dir).map_err(SweepError::io(dir))?;
        let path = Self::path_in(dir);
        crate::output::check_output(&path).map_err(SweepError::Output)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(SweepError::io(&path))?;
        match crate::output::lock_file(&file, &path) {
            Ok(()) => {}
            Err(crate::output::OutputError::Locked { pid, .. }) => {
                // The pid written by the holder names it where `/proc/locks` cannot.
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(SweepError::Locked {
                    dir: dir.to_path_buf(),
                    pid: text.trim().parse().ok().or(pid),
                });
            }
            Err(crate::output::OutputError::Io { source, .. }) => {
                return Err(SweepError::io(&path)(source));
            }
            Err(e) => return Err(SweepError::io(&path)(std::io::Error::other(e.to_string()))),
        }
        file.set_len(0).map_err(SweepError::io(&path))?;
        file.rewind().map_err(SweepError::io(&path))?;
        writeln!(file, "{}", std::process::id()).map_err(SweepError::io(&path))?;
        Ok(DirLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What a sweep puts in its folder before its first manifest: a folder holding only these
/// (or nothing) can become a sweep folder.
///
/// `ray-results.json` is what the Python Ray backend writes there before `--collect`.
const SWEEP_ENTRIES: [&str; 5] = [
    "sweep.lock",
    "traces",
    "checkpoints",
    "logs",
    "ray-results.json",
];

/// Refuses a folder that exists, holds no sweep manifest and holds something a sweep did
/// not put there: a sweep replaces `eval.json`, `eval.txt` and `plot.svg` in its folder,
/// so it must never take over a user's folder (`--out ~/results`).
fn check_sweep_folder(dir: &Path) -> Result<(), SweepError> {
    let manifest = super::SweepManifest::path_in(dir);
    if std::fs::symlink_metadata(&manifest).is_ok() {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let name = entry.map_err(SweepError::io(dir))?.file_name();
        let name = name.to_string_lossy();
        let temp = name.starts_with("manifest.json.") && name.ends_with(".tmp");
        if !temp && !SWEEP_ENTRIES.contains(&name.as_ref()) {
            return Err(SweepError::Manifest {
                path: dir.to_path_buf(),
                message: format!(
                    "this folder holds `{name}` but no sweep manifest, so it is not a sweep folder and a sweep would replace files in it; give --out a new or empty folder (nothing was touched)"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_and_the_lock_is_freed_on_drop() {
        let dir = crate::output::Scratch::new("lock");
        let first = DirLock::acquire(&dir).unwrap();
        let err = DirLock::acquire(&dir).unwrap_err();
        match &err {
            SweepError::Locked { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("expected Locked, got {other}"),
        }
        assert!(
            err.to_string()
                .contains(&format!("pid {}", std::process::id()))
        );
        drop(first);
        let again = DirLock::acquire(&dir).unwrap();
        assert!(again.path().is_file());
        drop(again);
    }
}
