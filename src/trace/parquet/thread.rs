//! When parts are cut ([`PartCadence`]), the thread that writes them ([`PartThread`]), and
//! how a finished part is put in place ([`place_part`], [`sync_parts`]). The trace writer and
//! the events table share them.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::trace::error::TraceError;

/// A flush cuts a part when this long has passed since the last one, by default
/// (`--part-seconds`).
pub const PART_SECONDS: u64 = 1;

/// `secs` as the interval between two parts (`--part-seconds`, the sweep's
/// `part_seconds`): a finite number of seconds, 0 or more. `what` names the option in
/// the message.
///
/// # Errors
///
/// A negative, NaN or infinite (or too large) value.
pub fn part_interval(secs: f64, what: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(secs).map_err(|_| {
        if secs >= 0.0 && secs.is_finite() {
            format!(
                "{what} is {secs:e} seconds, more than a run can last; give at most a few hours"
            )
        } else {
            format!(
                "{what} is {secs}; give a number of seconds, 0 or more (0: a part at every window)"
            )
        }
    })
}

/// When a flush (a window boundary) cuts a part: once [`PartCadence::every`] has passed
/// since the last part. Zero cuts a part at every flush that has rows and waits until it is
/// on disk, so a killed run keeps every row a JSON Lines run would have kept.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PartCadence {
    pub(crate) every: Duration,
    last: Instant,
}

impl Default for PartCadence {
    fn default() -> Self {
        PartCadence {
            every: Duration::from_secs(PART_SECONDS),
            last: Instant::now(),
        }
    }
}

impl PartCadence {
    /// A part is due at this flush.
    pub(crate) fn due(&self) -> bool {
        self.every.is_zero() || self.last.elapsed() >= self.every
    }

    /// A flush waits until the part it cut is on disk.
    pub(crate) fn waits(&self) -> bool {
        self.every.is_zero()
    }

    /// A part was cut now.
    pub(crate) fn cut(&mut self) {
        self.last = Instant::now();
    }
}

/// Writes parts on a thread of their own, one at a time and in the order handed over. The
/// caller hands over a buffer while the previous one may still be on its way to disk; it
/// waits only when it has filled the next before that one is done.
pub(crate) struct PartThread<B: Send + 'static> {
    jobs: Option<SyncSender<B>>,
    done: Receiver<(B, Result<u64, TraceError>)>,
    thread: Option<JoinHandle<()>>,
    dir: PathBuf,
    busy: bool,
}

impl<B: Send + 'static> PartThread<B> {
    /// Starts the thread; `write` writes one buffer as a part, returns its rows and leaves
    /// the buffer empty for reuse.
    ///
    /// # Errors
    ///
    /// The thread cannot be started.
    pub(crate) fn spawn(
        dir: &Path,
        mut write: impl FnMut(&mut B) -> Result<u64, TraceError> + Send + 'static,
    ) -> Result<Self, TraceError> {
        let (jobs, incoming) = sync_channel::<B>(1);
        let (finished, done) = channel();
        let thread = std::thread::Builder::new()
            .name("perennial-parts".into())
            .spawn(move || {
                for mut buffer in incoming {
                    let result = write(&mut buffer);
                    if finished.send((buffer, result)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| TraceError::io(dir, e))?;
        Ok(PartThread {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
            dir: dir.to_path_buf(),
            busy: false,
        })
    }

    fn stopped(&self) -> TraceError {
        TraceError::io(
            &self.dir,
            std::io::Error::other("the thread writing Parquet parts stopped unexpectedly"),
        )
    }

    /// Waits for the part in flight, if any: its emptied buffer and the rows it wrote.
    ///
    /// # Errors
    ///
    /// The part could not be written.
    pub(crate) fn wait(&mut self) -> Result<Option<(B, u64)>, TraceError> {
        if !self.busy {
            return Ok(None);
        }
        self.busy = false;
        let (buffer, rows) = self.done.recv().map_err(|_| self.stopped())?;
        Ok(Some((buffer, rows?)))
    }

    /// As [`PartThread::wait`], without waiting: `None` while the part is still in flight.
    ///
    /// # Errors
    ///
    /// The part could not be written.
    pub(crate) fn poll(&mut self) -> Result<Option<(B, u64)>, TraceError> {
        if !self.busy {
            return Ok(None);
        }
        match self.done.try_recv() {
            Ok((buffer, rows)) => {
                self.busy = false;
                Ok(Some((buffer, rows?)))
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => Ok(None),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.busy = false;
                Err(self.stopped())
            }
        }
    }

    /// Hands `buffer` over; call [`PartThread::wait`] first, since one part is in flight
    /// at a time.
    ///
    /// # Errors
    ///
    /// The thread has stopped.
    pub(crate) fn send(&mut self, buffer: B) -> Result<(), TraceError> {
        debug_assert!(!self.busy, "one part in flight at a time");
        let jobs = self.jobs.as_ref().ok_or_else(|| self.stopped())?;
        jobs.send(buffer).map_err(|_| self.stopped())?;
        self.busy = true;
        Ok(())
    }
}

impl<B: Send + 'static> Drop for PartThread<B> {
    fn drop(&mut self) {
        // The part in flight is finished before the thread ends: it is complete on disk or
        // was never renamed into place.
        let _ = self.wait();
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Moves the finished part `tmp` (written through `file`) into place as `target`. A part
/// cut at a window's flush is renamed as it is: its bytes are in the page cache, so a
/// killed run keeps it whole, as a JSON Lines trace keeps the lines of its last flush
/// (which are not fsynced either). A `durable` part (a checkpoint's sync, the end of the
/// run) is fsynced, after every part in `unsynced`, and the directory after its rename, so
/// what a checkpoint records survives a power loss too.
///
/// # Errors
///
/// An fsync or the rename failed.
pub(crate) fn place_part(
    dir: &Path,
    file: File,
    tmp: &Path,
    target: &Path,
    durable: bool,
    unsynced: &mut Vec<PathBuf>,
) -> Result<(), TraceError> {
    if durable {
        file.sync_all().map_err(|e| TraceError::io(tmp, e))?;
    }
    drop(file);
    std::fs::rename(tmp, target).map_err(|e| TraceError::io(target, e))?;
    if durable {
        sync_parts(dir, unsynced)
    } else {
        unsynced.push(target.to_path_buf());
        Ok(())
    }
}

/// Fsyncs the parts in `unsynced` (renamed without one) and then the directory.
///
/// # Errors
///
/// A part cannot be opened or synced.
pub(crate) fn sync_parts(dir: &Path, unsynced: &mut Vec<PathBuf>) -> Result<(), TraceError> {
    for part in unsynced.drain(..) {
        File::open(&part)
            .and_then(|f| f.sync_all())
            .map_err(|e| TraceError::io(&part, e))?;
    }
    crate::output::sync_folder(dir);
    Ok(())
}
