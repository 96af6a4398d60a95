//! `Helper`: a second thread that takes chunks of a batch, spinning briefly between batches.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long the helper waits for the next batch before it parks. A training loop calls again
/// within tens of microseconds, and a parked thread takes about as long to wake; an idle
/// vector costs no CPU after this.
const SPIN: Duration = Duration::from_micros(60);

/// One chunk of work: the caller's closure, given the chunk's index.
type Job<'a> = &'a (dyn Fn(usize) + Sync);

/// A thread that helps the calling thread through the chunks of each batch.
///
/// [`Helper::run`] publishes a batch; the caller and the helper thread both claim chunks
/// until none is left, so a helper that is not scheduled in time costs nothing but the
/// chunk it claimed. The thread starts at the first `run`, spins for [`SPIN`] after each
/// batch, then parks until the next one; dropping the `Helper` stops and joins it. A clone
/// starts a thread of its own when first used.
#[derive(Default)]
pub(super) struct Helper {
    thread: Option<(Arc<Shared>, JoinHandle<()>)>,
}

/// The batch as both threads see it.
#[derive(Default)]
struct Shared {
    /// The batch number (high 32 bits), its number of chunks (16 bits) and the next
    /// unclaimed chunk (low 16 bits), in one word, so that a claim is one compare-and-swap
    /// and never takes a chunk of a batch other than the one it read.
    claim: AtomicU64,
    /// Chunks of the current batch finished (by either thread).
    done: AtomicUsize,
    /// The current batch's job, on the stack of the thread in [`Helper::run`].
    job: AtomicPtr<Job<'static>>,
    sleeping: AtomicBool,
    stop: AtomicBool,
    panicked: AtomicBool,
}

impl Shared {
    /// Claims and runs one chunk of the current batch; false when none is left.
    fn run_one(&self) -> bool {
        let mut word = self.claim.load(SeqCst);
        loop {
            let (chunks, next) = ((word >> 16) & 0xffff, word & 0xffff);
            if next >= chunks {
                return false;
            }
            // Read before the claim: a successful claim proves the batch was still open,
            // so the pointer read is that batch's job, and `run` does not return (the job
            // outlives its use) until this chunk is counted done.
            let job = self.job.load(SeqCst);
            match self
                .claim
                .compare_exchange_weak(word, word + 1, SeqCst, SeqCst)
            {
                Ok(_) => {
                    // SAFETY: `job` points at the `Job` of the open batch (see above), alive
                    // until `done` counts every chunk.
                    let job = unsafe { *job };
                    let chunk = usize::try_from(next).unwrap_or(usize::MAX);
                    if catch_unwind(AssertUnwindSafe(|| job(chunk))).is_err() {
                        self.panicked.store(true, SeqCst);
                    }
                    self.done.fetch_add(1, SeqCst);
                    return true;
                }
                Err(now) => word = now,
            }
        }
    }

    fn has_work(&self) -> bool {
        let word = self.claim.load(SeqCst);
        word & 0xffff < (word >> 16) & 0xffff
    }

    /// The helper thread's loop: chunks while there are some, a short spin, then park.
    fn serve(&self) {
        let mut idle_since = Instant::now();
        while !self.stop.load(SeqCst) {
            if self.run_one() {
                idle_since = Instant::now();
            } else if idle_since.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                self.sleeping.store(true, SeqCst);
                // Checked after announcing the sleep: `run` publishes, then reads
                // `sleeping`, so either this sees the batch or `run` unparks.
                if !self.has_work() && !self.stop.load(SeqCst) {
                    thread::park();
                }
                self.sleeping.store(false, SeqCst);
                idle_since = Instant::now();
            }
        }
    }
}

impl Helper {
    /// The most chunks a batch may have.
    pub(super) const MAX_CHUNKS: usize = 0xffff;

    /// Runs `job(c)` for every chunk `c` in `0..chunks`, on this thread and the helper's,
    /// and returns when all are done. Panics when a chunk panicked (on either thread), or
    /// when `chunks` exceeds [`Helper::MAX_CHUNKS`].
    pub(super) fn run(&mut self, chunks: usize, job: &(dyn Fn(usize) + Sync)) {
        assert!(chunks <= Self::MAX_CHUNKS, "{chunks} chunks in one batch");
        let (shared, handle) = self.thread.get_or_insert_with(|| {
            let shared = Arc::new(Shared::default());
            let theirs = Arc::clone(&shared);
            let handle = thread::Builder::new()
                .name("perennial-vector".into())
                .spawn(move || theirs.serve())
                .expect("the OS starts a thread");
            (shared, handle)
        });
        let job: Job<'_> = job;
        // SAFETY: only the lifetime is erased. The helper dereferences the pointer only
        // after claiming a chunk of this batch, and this function returns only once every
        // chunk is done, so no use outlives `job`.
        let ptr =
            unsafe { std::mem::transmute::<*const Job<'_>, *mut Job<'static>>(&raw const job) };
        shared.done.store(0, SeqCst);
        shared.job.store(ptr, SeqCst);
        let batch = (shared.claim.load(SeqCst) >> 32).wrapping_add(1) & 0xffff_ffff;
        shared
            .claim
            .store(batch << 32 | (chunks as u64) << 16, SeqCst);
        if shared.sleeping.load(SeqCst) {
            handle.thread().unpark();
        }
        while shared.run_one() {}
        let mut spins = 0u32;
        while shared.done.load(SeqCst) < chunks {
            // The helper holds a chunk; if it was descheduled, give it the core.
            if spins < 4096 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
        shared.job.store(std::ptr::null_mut(), SeqCst);
        assert!(
            !shared.panicked.swap(false, SeqCst),
            "a chunk of the batch panicked"
        );
    }
}

impl Clone for Helper {
    fn clone(&self) -> Self {
        Helper::default()
    }
}

impl std::fmt::Debug for Helper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Helper")
            .field("started", &self.thread.is_some())
            .finish()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        if let Some((shared, handle)) = self.thread.take() {
            shared.stop.store(true, SeqCst);
            handle.thread().unpark();
            // The thread only ever runs our chunks, whose panics it catches.
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_chunk_runs_once_per_batch() {
        let mut helper = Helper::default();
        let counts: Vec<AtomicU32> = (0..64).map(|_| AtomicU32::new(0)).collect();
        for batch in 1..=500 {
            let chunks = 1 + batch % 64;
            helper.run(chunks, &|c| {
                counts[c].fetch_add(1, SeqCst);
            });
            for (c, n) in counts.iter().enumerate() {
                let want = u32::from(c < chunks);
                assert_eq!(n.swap(0, SeqCst), want, "batch {batch} chunk {c}");
            }
        }
    }

    #[test]
    fn the_helper_parks_when_idle_and_drop_joins_it() {
        let mut helper = Helper::default();
        helper.run(4, &|_| {});
        let shared = Arc::clone(&helper.thread.as_ref().expect("started").0);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !shared.sleeping.load(SeqCst) {
            assert!(Instant::now() < deadline, "the helper never parked");
            thread::sleep(Duration::from_millis(1));
        }
        helper.run(4, &|_| {});
        drop(helper);
        assert_eq!(Arc::strong_count(&shared), 1, "the thread has ended");
    }

    #[test]
    fn a_panicking_chunk_panics_the_caller() {
        let mut helper = Helper::default();
        let caught = catch_unwind(AssertUnwindSafe(|| {
            helper.run(8, &|c| assert!(c != 5, "chunk five"));
        }));
        assert!(caught.is_err());
    }
}
