//! Safe outputs: what may stand at an output path, atomic replacement, and exclusive locks.
//!
//! Every file a command writes goes through these checks, so a hostile path cannot turn an
//! output into damage:
//!
//! - [`check_output`]: an output path must be a regular file or absent. A symlink, a FIFO,
//!   a device node, a socket or a directory is refused before any work is done (replacing
//!   `/dev/full` by a regular file, or following a symlink into a system file, are the
//!   failures this prevents).
//! - [`check_distinct`]: an output must not be an input of the same command, nor another
//!   of its outputs (compared as canonical paths), so `--trace w.toml` cannot overwrite the
//!   world file it reads.
//! - [`write_atomic`]: the SQLite way, a temp file next to the target (its name carries the
//!   writer's pid, so two writers never share one), fsync, rename, fsync of the folder. A
//!   reader sees the old file or the new one, never half of one.
//! - [`OutputLock`]: an exclusive advisory lock (`flock`) held for as long as the value
//!   lives. A second writer is refused with the holder's pid in the message. The lock is
//!   on the open file itself ([`lock_file`] and [`open_locked`], used for traces, which are written
//!   in place) or on a `PATH.lock` file beside an output that is replaced by rename
//!   ([`OutputLock::beside`], used for checkpoints, whose inode changes at every write).
//!   The kernel drops a lock when its holder dies, so a killed run never leaves a stale
//!   one; the `.lock` file itself stays, holding the last holder's pid.
//!
//! These are public so other writers (Parquet part folders, sweep folders) use the same
//! rules.

use std::ffi::OsString;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// An output that cannot be written safely.
#[derive(Debug)]
#[non_exhaustive]
pub enum OutputError {
    /// Something other than a regular file stands at the path.
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What is there (`a symlink`, `a directory`, ...).
        kind: &'static str,
    },
    /// The output is also an input or another output of the same command.
    Same {
        /// The output's role (`--trace`) and path.
        output: (String, PathBuf),
        /// The other file's role and path.
        other: (String, PathBuf),
    },
    /// Another process holds the lock.
    Locked {
        /// The locked file.
        path: PathBuf,
        /// The holder's pid, when the system tells.
        pid: Option<u32>,
    },
    /// An I/O error.
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The path is not UTF-8: the manifests and checkpoints that record it are JSON, which
    /// holds only Unicode text.
    NotUnicode {
        /// The output's role (`--trace`, `sweep --out`).
        role: String,
        /// The path.
        path: PathBuf,
    },
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputError::NotRegular { path, kind } => write!(
                f,
                "{}: is {kind}, not a regular file; an output must be a regular file or not exist (nothing was written)",
                path.display()
            ),
            OutputError::Same { output, other } => write!(
                f,
                "{} {} is the same file as {} {}; give the output another path (nothing was written)",
                output.0,
                output.1.display(),
                other.0,
                other.1.display()
            ),
            OutputError::Locked { path, pid } => {
                write!(f, "{}: in use by ", path.display())?;
                match pid {
                    Some(pid) => write!(f, "another process (pid {pid})")?,
                    None => write!(f, "another process")?,
                }
                write!(
                    f,
                    "; wait for it to finish or choose another path (nothing was written)"
                )
            }
            OutputError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            OutputError::NotUnicode { role, path } => write!(
                f,
                "{role} {}: the path is not UTF-8 (shown with U+FFFD for the bytes that are not); perennial records its outputs' paths in JSON manifests and checkpoints, which hold only Unicode text: give a UTF-8 path (nothing was written)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for OutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OutputError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Implements `From<OutputError>` for a layer's error that has an `Io { path, source }`
/// and an `Output(OutputError)` variant: an I/O failure stays the layer's I/O error (exit
/// 1); a path that cannot be written safely (not a regular file, the same file as an
/// input, locked, not UTF-8) is the layer's `Output` error (bad input).
macro_rules! split_output_error {
    ($error:ident) => {
        impl From<$crate::output::OutputError> for $error {
            fn from(e: $crate::output::OutputError) -> Self {
                match e {
                    $crate::output::OutputError::Io { path, source } => $error::Io { path, source },
                    other => $error::Output(other),
                }
            }
        }
    };
}

pub(crate) use split_output_error;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Refuses a path that is not UTF-8 (see [`OutputError::NotUnicode`]), before anything is
/// written: `role` names it in the message (`--trace`).
///
/// # Errors
///
/// [`OutputError::NotUnicode`].
pub fn check_unicode(role: &str, path: &Path) -> Result<(), OutputError> {
    match path.to_str() {
        Some(_) => Ok(()),
        None => Err(OutputError::NotUnicode {
            role: role.to_string(),
            path: path.to_path_buf(),
        }),
    }
}

/// Checks that `path` is a regular file or absent (a dangling or live symlink is refused,
/// as is anything that is not a plain file).
///
/// # Errors
///
/// [`OutputError::NotRegular`] naming what is there, or an I/O error other than "not found".
///
/// # Examples
///
/// ```
/// use perennial::output::check_output;
///
/// assert!(check_output(std::path::Path::new("/dev/null")).is_err());
/// assert!(check_output(&std::env::temp_dir().join("perennial-doc-absent")).is_ok());
/// ```
pub fn check_output(path: &Path) -> Result<(), OutputError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(path)(e)),
    };
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_symlink() {
        "a symlink"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(OutputError::NotRegular {
        path: path.to_path_buf(),
        kind,
    })
}

/// Checks that `path` is a real folder or absent, for outputs that are folders (a Parquet
/// trace, its events table): a symlink is refused as for files, and so is anything that is
/// not a folder.
///
/// # Errors
///
/// [`OutputError::NotRegular`] naming what is there.
pub fn check_output_dir(path: &Path) -> Result<(), OutputError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(OutputError::NotRegular {
            path: path.to_path_buf(),
            kind: "a symlink",
        }),
        Ok(m) if !m.is_dir() => check_output(path).and(Err(OutputError::NotRegular {
            path: path.to_path_buf(),
            kind: "a file, not a folder",
        })),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(path)(e)),
    }
}

/// Opens `path` to append to it (created when missing), after [`check_output`] and without
/// following a symlink put there since: for logs and other files that only grow.
///
/// # Errors
///
/// As [`check_output`], or an I/O error with the path.
pub fn open_append(path: &Path) -> Result<File, OutputError> {
    use std::os::unix::fs::OpenOptionsExt;
    check_output(path)?;
    OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(io(path))
}

/// The canonical form of a path that may not exist yet: its folder canonicalized, then the
/// file name. `None` when the folder does not exist either (then it names no existing file).
fn canonical(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = path.canonicalize() {
        return Some(p);
    }
    let name = path.file_name()?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = match dir {
        Some(d) => d.canonicalize().ok()?,
        None => std::env::current_dir().ok()?,
    };
    Some(dir.join(name))
}

/// Checks that no output is an input, and no two outputs are one file. Each path comes
/// with its role (`"world file"`, `"--trace"`) for the message.
///
/// # Errors
///
/// [`OutputError::Same`] naming both roles and paths.
///
/// # Examples
///
/// ```
/// use std::path::Path;
/// use perennial::output::check_distinct;
///
/// let w = Path::new("worlds/warehouse.toml");
/// let err = check_distinct(&[("world file", w)], &[("--trace", w)]).unwrap_err();
/// assert!(err.to_string().contains("is the same file as world file"));
/// ```
pub fn check_distinct(
    inputs: &[(&str, &Path)],
    outputs: &[(&str, &Path)],
) -> Result<(), OutputError> {
    let canon = |list: &[(&str, &Path)]| -> Vec<(String, PathBuf, Option<PathBuf>)> {
        list.iter()
            .map(|(role, p)| (role.to_string(), p.to_path_buf(), canonical(p)))
            .collect()
    };
    let inputs = canon(inputs);
    let outputs = canon(outputs);
    for (i, (role, path, c)) in outputs.iter().enumerate() {
        let Some(c) = c else { continue };
        let clash = inputs
            .iter()
            .chain(outputs[..i].iter())
            .find(|(_, _, other)| other.as_ref() == Some(c));
        if let Some((other_role, other_path, _)) = clash {
            return Err(OutputError::Same {
                output: (role.clone(), path.clone()),
                other: (other_role.clone(), other_path.clone()),
            });
        }
    }
    Ok(())
}

/// A hash of `bytes` (FNV-1a, 64 bits, as 16 hex digits): stable across platforms and
/// versions, for telling whether a file changed (not a defence against a forger).
///
/// # Examples
///
/// ```
/// assert_eq!(perennial::output::content_hash(b""), "cbf29ce484222325");
/// ```
pub fn content_hash(bytes: &[u8]) -> String {
    let mut hasher = ContentHasher::default();
    hasher.update(bytes);
    hasher.finish()
}

/// [`content_hash`] of bytes written to it in pieces: the same hash as of their
/// concatenation, without holding it (serialise into it with `serde_json::to_writer`).
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// let mut hasher = perennial::output::ContentHasher::default();
/// hasher.write_all(b"per").unwrap();
/// hasher.write_all(b"ennial").unwrap();
/// assert_eq!(hasher.finish(), perennial::output::content_hash(b"perennial"));
/// ```
#[derive(Clone, Debug)]
pub struct ContentHasher(u64);

impl Default for ContentHasher {
    fn default() -> Self {
        ContentHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl ContentHasher {
    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }

    /// The hash, as [`content_hash`] writes it.
    pub fn finish(&self) -> String {
        format!("{:016x}", self.0)
    }
}

impl std::io::Write for ContentHasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The temp file [`write_atomic`] uses for `path`: beside it, named after it and the pid.
fn temp_path(path: &Path) -> PathBuf {
    let mut name: OsString = path.as_os_str().to_owned();
    name.push(format!(".{}.tmp", std::process::id()));
    PathBuf::from(name)
}

/// Creates the folder that will hold `path` when it is missing, as `perennial run` does
/// for its trace, so an output may name a folder not made yet.
///
/// # Errors
///
/// An I/O error naming the folder.
pub fn create_parent(path: &Path) -> Result<(), OutputError> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::create_dir_all(dir).map_err(io(dir)),
        None => Ok(()),
    }
}

/// Replaces `path` with `bytes` atomically: temp file, fsync, rename, fsync of the folder
/// (created when missing). Refuses a path that is not a regular file or absent
/// ([`check_output`]).
///
/// # Errors
///
/// [`OutputError::NotRegular`], or an I/O error with the path; the temp file is removed on
/// failure and the old file is left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// As [`write_atomic`], with the content written by `fill` (e.g. a serializer streaming
/// into the file).
///
/// # Errors
///
/// As [`write_atomic`]; an error from `fill` is reported with the path.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> Result<(), OutputError> {
    check_output(path)?;
    create_parent(path)?;
    let tmp = temp_path(path);
    let result = (|| {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        fill(&mut file)?;
        file.flush()?;
        file.sync_all()?;
        drop(file);
        // Checked again just before the rename: the path may have changed while writing.
        if let Err(e) = check_output(path) {
            return Err(std::io::Error::other(e.to_string()));
        }
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(path)(e));
    }
    sync_parent(path);
    Ok(())
}

/// Syncs the folder holding `path`, so a rename into it is durable.
pub fn sync_parent(path: &Path) {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sync_folder(dir);
}

/// Syncs the folder `dir` itself, so the entries renamed into it are durable.
pub fn sync_folder(dir: &Path) {
    // Some filesystems refuse to sync a directory; the rename is then as durable as they
    // make it, and there is nothing better to do.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// An exclusive advisory lock, held until dropped. See the module doc.
#[derive(Debug)]
pub struct OutputLock {
    /// The `.lock` file; closing it releases the lock.
    _file: File,
    path: PathBuf,
}

impl OutputLock {
    /// Takes the lock on `PATH.lock` (created if needed), for an output that is replaced
    /// by rename, and writes this process's pid into it.
    ///
    /// # Errors
    ///
    /// [`OutputError::Locked`] naming `path` and the holder's pid, or an I/O error.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::output::OutputLock;
    ///
    /// let path = std::env::temp_dir().join(format!("perennial-doc-{}.ckpt", std::process::id()));
    /// let held = OutputLock::beside(&path).unwrap();
    /// // flock locks belong to the open file, so even this process cannot take it twice.
    /// assert!(OutputLock::beside(&path).is_err());
    /// drop(held);
    /// assert!(OutputLock::beside(&path).is_ok());
    /// # std::fs::remove_file(path.with_extension("ckpt.lock")).unwrap();
    /// ```
    pub fn beside(path: &Path) -> Result<Self, OutputError> {
        let mut name: OsString = path.as_os_str().to_owned();
        name.push(".lock");
        let lock_path = PathBuf::from(name);
        check_output(&lock_path)?;
        let mut file = open_lock_file(&lock_path).map_err(io(&lock_path))?;
        match lock_file(&file, path) {
            Ok(()) => {}
            Err(OutputError::Locked { path, pid: None }) => {
                let mut text = String::new();
                let pid = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| text.trim().parse().ok());
                return Err(OutputError::Locked { path, pid });
            }
            Err(e) => return Err(e),
        }
        // The last holder is gone (the lock is ours): the temp file a killed one left
        // mid-write ([`write_atomic`] names it after its pid) is of no use to anyone.
        let mut last = String::new();
        if file.read_to_string(&mut last).is_ok()
            && let Ok(pid) = last.trim().parse::<u32>()
            && pid != std::process::id()
        {
            let mut stale: OsString = path.as_os_str().to_owned();
            stale.push(format!(".{pid}.tmp"));
            let stale = PathBuf::from(stale);
            if std::fs::symlink_metadata(&stale).is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(&stale);
            }
        }
        // The pid is for the message a second writer gets; the lock itself is the flock.
        let _ = file
            .set_len(0)
            .and_then(|()| std::io::Seek::rewind(&mut file))
            .and_then(|()| file.write_all(std::process::id().to_string().as_bytes()));
        Ok(OutputLock {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    /// The output the lock protects.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens (creating it) the lock file `path` for reading and writing, never through a
/// symbolic link and without blocking on a FIFO; its contents are kept.
///
/// # Errors
///
/// What opening the file returns.
pub fn open_lock_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// Takes an exclusive lock on `file`, an open handle of `path`, without waiting. The lock
/// lasts as long as `file` (or a clone of its handle) is open.
///
/// # Errors
///
/// [`OutputError::Locked`] with the holder's pid when the system tells it.
pub fn lock_file(file: &File, path: &Path) -> Result<(), OutputError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(OutputError::Locked {
            path: path.to_path_buf(),
            pid: holder_pid(file),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io(path)(e)),
    }
}

/// The pid holding a `flock` on `file`, from `/proc/locks` (Linux); `None` elsewhere.
fn holder_pid(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let inode = file.metadata().ok()?.ino();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let suffix = format!(":{inode}");
    locks.lines().find_map(|line| {
        // `1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF`
        let fields: Vec<&str> = line.split_whitespace().collect();
        let is_flock = fields.get(1) == Some(&"FLOCK");
        let on_file = fields.get(5).is_some_and(|f| f.ends_with(&suffix));
        if is_flock && on_file {
            fields.get(4)?.parse().ok()
        } else {
            None
        }
    })
}

/// Opens `path` for writing under an exclusive lock without truncating it first, so a
/// refused writer damages nothing; the caller truncates or seeks once the lock is held.
///
/// # Errors
///
/// As [`check_output`] and [`lock_file`].
pub fn open_locked(path: &Path) -> Result<File, OutputError> {
    check_output(path)?;
    let file = open_lock_file(path).map_err(io(path))?;
    lock_file(&file, path)?;
    Ok(file)
}

/// A unit test's own folder under the temp dir, made empty and removed when dropped, so a
/// passing `cargo test` leaves nothing behind. Dereferences to the folder's path.
#[cfg(test)]
pub(crate) struct Scratch(PathBuf);

#[cfg(test)]
impl Scratch {
    /// `perennial-test-<pid>-<n>-<name>`: `n` counts the folders of the process, so tests
    /// running at once never share one.
    pub(crate) fn new(name: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("perennial-test-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// The path of a file `name` in a folder of its own, and the folder's guard.
    pub(crate) fn file(name: &str) -> (Self, PathBuf) {
        let dir = Scratch::new(name);
        let path = dir.join(name);
        (dir, path)
    }
}

#[cfg(test)]
impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

#[cfg(test)]
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_directories_fifos_and_devices_are_refused() {
        let d = Scratch::new("kinds");
        let target = d.join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (path, kind) in [
            (&link, "a symlink"),
            (&d.to_path_buf(), "a directory"),
            (&fifo, "a FIFO"),
            (&PathBuf::from("/dev/null"), "a device"),
        ] {
            let err = check_output(path).unwrap_err().to_string();
            assert!(err.contains(kind), "{err}");
            assert!(write_atomic(path, b"x").is_err());
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn an_output_equal_to_an_input_through_another_spelling_is_refused() {
        let d = Scratch::new("same");
        let world = d.join("w.toml");
        std::fs::write(&world, "x").unwrap();
        let other_spelling = d.join(".").join("w.toml");
        let err = check_distinct(&[("world file", &world)], &[("--trace", &other_spelling)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--trace") && err.contains("world file"),
            "{err}"
        );
        let a = d.join("a.jsonl");
        let err = check_distinct(&[], &[("--trace", &a), ("--checkpoint", &a)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--checkpoint") && err.contains("--trace"),
            "{err}"
        );
        assert!(check_distinct(&[("world file", &world)], &[("--trace", &a)]).is_ok());
    }

    #[test]
    fn atomic_write_replaces_the_file_and_leaves_no_temp() {
        let d = Scratch::new("atomic");
        let p = d.join("out.json");
        std::fs::write(&p, "old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&*d).unwrap().count(), 1);
    }

    #[test]
    fn a_second_lock_names_the_holder_pid() {
        let d = Scratch::new("lock");
        let p = d.join("t.jsonl");
        let held = open_locked(&p).unwrap();
        let err = open_locked(&p).unwrap_err();
        match &err {
            OutputError::Locked { pid, .. } => {
                assert_eq!(*pid, Some(std::process::id()), "{err}");
            }
            other => panic!("expected a lock error, got {other}"),
        }
        drop(held);
        assert!(open_locked(&p).is_ok());
        let ck = d.join("c.ckpt.json");
        let held = OutputLock::beside(&ck).unwrap();
        let err = OutputLock::beside(&ck).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(held);
    }
}
