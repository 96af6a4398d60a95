//! The session table: who holds which world, how many may, for how long, and the snapshots.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::run::{ResetOptions, Run, Saved};
use super::worlds::{Worlds, quote};

/// Who opened a session, which decides how it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Opener {
    /// A WebSocket without `session_id`: the session ends with the socket.
    Socket,
    /// OpenEnv's `openenv/session/create`: ends with `openenv/session/close` or idleness.
    OpenEnv,
    /// MCP's `initialize`: ends with `DELETE /mcp` or idleness.
    Mcp,
}

/// One session: its run (none before the first reset), who opened it, and when it was
/// last used.
pub(crate) struct Seat {
    run: Mutex<Option<Run>>,
    pub(crate) opener: Opener,
    /// A WebSocket is attached: the session is not reaped while it is.
    attached: AtomicBool,
    last_used: AtomicU64,
    /// Closed: a request that still holds the seat gets an error instead of a world.
    closed: AtomicBool,
}

impl Seat {
    /// The run, locked. A panic while the lock was held cannot have left the run half
    /// stepped in a way that matters more than refusing the session, so the lock is taken
    /// back.
    pub(crate) fn run(&self) -> MutexGuard<'_, Option<Run>> {
        self.run.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the session has been closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// Why a session could not be opened.
#[derive(Debug)]
pub(crate) struct Capacity {
    pub(crate) active: usize,
    pub(crate) max: usize,
}

impl std::fmt::Display for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server holds {} of its {} sessions; close one or retry later",
            self.active, self.max
        )
    }
}

/// A fresh id of 128 random bits from the operating system, as 32 hex digits: session and
/// snapshot ids are the only keys to a world, so none can be guessed from another.
fn unguessable_id() -> String {
    let mut bytes = [0u8; 16];
    if rand::TryRng::try_fill_bytes(&mut rand::rngs::SysRng, &mut bytes).is_err() {
        // The thread's generator is a CSPRNG the OS seeds; it serves if the OS call fails.
        rand::Rng::fill_bytes(&mut rand::rng(), &mut bytes);
    }
    format!("{:032x}", u128::from_be_bytes(bytes))
}

/// The snapshots kept, oldest first: a new one beyond the limit drops the oldest.
struct Snapshots {
    by_id: HashMap<String, Arc<Saved>>,
    order: VecDeque<String>,
}

/// Every session of a server and its snapshots.
pub(crate) struct Sessions {
    seats: Mutex<HashMap<String, Arc<Seat>>>,
    snapshots: Mutex<Snapshots>,
    /// Runs started, for the names of their traces.
    next_run: AtomicU64,
    /// Where each run writes its trace, when anywhere.
    runs: Option<PathBuf>,
    max_sessions: usize,
    max_snapshots: usize,
    idle: Duration,
    epoch: Instant,
    pub(crate) worlds: Worlds,
}

impl Sessions {
    pub(crate) fn new(
        worlds: Worlds,
        max_sessions: usize,
        max_snapshots: usize,
        idle: Duration,
        runs: Option<PathBuf>,
    ) -> Self {
        Sessions {
            seats: Mutex::new(HashMap::new()),
            snapshots: Mutex::new(Snapshots {
                by_id: HashMap::new(),
                order: VecDeque::new(),
            }),
            next_run: AtomicU64::new(1),
            runs,
            max_sessions,
            max_snapshots,
            idle,
            epoch: Instant::now(),
            worlds,
        }
    }

    fn seats(&self) -> MutexGuard<'_, HashMap<String, Arc<Seat>>> {
        self.seats.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The idle time after which a session is closed.
    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }

    /// Opens a session with no run, under a fresh unguessable id.
    pub(crate) fn open(&self, opener: Opener) -> Result<(String, Arc<Seat>), Capacity> {
        let mut seats = self.seats();
        if seats.len() >= self.max_sessions {
            return Err(Capacity {
                active: seats.len(),
                max: self.max_sessions,
            });
        }
        let id = loop {
            let id = unguessable_id();
            if !seats.contains_key(&id) {
                break id;
            }
        };
        let seat = Arc::new(Seat {
            run: Mutex::new(None),
            opener,
            attached: AtomicBool::new(opener == Opener::Socket),
            last_used: AtomicU64::new(self.now()),
            closed: AtomicBool::new(false),
        });
        seats.insert(id.clone(), Arc::clone(&seat));
        Ok((id, seat))
    }

    /// The session `id`, marked as used now.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Seat>> {
        let seat = self.seats().get(id).cloned()?;
        seat.last_used.store(self.now(), Ordering::Relaxed);
        Some(seat)
    }

    /// Attaches a WebSocket to session `id` (one at a time).
    pub(crate) fn attach(&self, id: &str) -> Result<Arc<Seat>, String> {
        let seat = self
            .get(id)
            .ok_or_else(|| format!("unknown session_id `{}`", quote(id)))?;
        if seat.attached.swap(true, Ordering::AcqRel) {
            return Err(format!(
                "session `{}` already has a WebSocket attached",
                quote(id)
            ));
        }
        Ok(seat)
    }

    /// Detaches the WebSocket from session `id`; the session stays.
    pub(crate) fn detach(&self, id: &str) {
        if let Some(seat) = self.get(id) {
            seat.attached.store(false, Ordering::Release);
        }
    }

    /// Closes session `id`; false when there is none.
    pub(crate) fn close(&self, id: &str) -> bool {
        match self.seats().remove(id) {
            Some(seat) => {
                seat.closed.store(true, Ordering::Release);
                true
            }
            None => false,
        }
    }

    /// Closes every session idle for longer than the idle time and not attached to a
    /// socket; returns how many.
    pub(crate) fn reap(&self) -> usize {
        let limit = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
        let now = self.now();
        let mut seats = self.seats();
        let before = seats.len();
        seats.retain(|_, seat| {
            let idle = now.saturating_sub(seat.last_used.load(Ordering::Relaxed));
            let keep = seat.attached.load(Ordering::Acquire) || idle <= limit;
            if !keep {
                seat.closed.store(true, Ordering::Release);
            }
            keep
        });
        before - seats.len()
    }

    /// The run a reset of session `sid` with `options` starts: a snapshot restored, a
    /// world built, or (`join`) a role in another session's world with roles. With a runs
    /// directory its trace is `<world>-<sid>-<n>.jsonl` there, `n` counting the server's
    /// runs, so no run writes over another's (a joined world's trace is its opener's).
    pub(crate) fn build(&self, sid: &str, options: &ResetOptions) -> Result<Run, String> {
        if let (Some(host), Some(role)) = (&options.join, &options.role) {
            let seat = self
                .get(host)
                .ok_or_else(|| format!("reset option `join`: no session `{}`", quote(host)))?;
            let guard = seat.run();
            let Some(run) = guard.as_ref() else {
                return Err(format!(
                    "reset option `join`: session `{}` has no world yet; reset it with a world and a role first",
                    quote(host)
                ));
            };
            return run.join(role, options);
        }
        let run_id = |world: &str| {
            let n = self.next_run.fetch_add(1, Ordering::Relaxed);
            format!("{world}-{}-{n}", sid.get(..12).unwrap_or(sid))
        };
        if let Some(id) = &options.snapshot {
            let saved = self
                .snapshots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .by_id
                .get(id)
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "no snapshot `{}`; snapshots are ids from POST /snapshots, never paths",
                        quote(id)
                    )
                })?;
            if let Some(world) = &options.world
                && *world != saved.world.id
            {
                return Err(format!(
                    "snapshot `{id}` is of world `{}`, not `{}`",
                    saved.world.id,
                    quote(world)
                ));
            }
            let name = run_id(&saved.world.id);
            let trace = self.runs.as_deref().map(|d| (d, name.as_str()));
            return Run::restore(&saved, id, options, trace);
        }
        let world = match &options.world {
            Some(id) => self.worlds.get(id)?,
            None => self.worlds.default_world(),
        };
        let seed = options.seed.or(world.file.harness.seed).unwrap_or_default();
        let name = run_id(&world.id);
        let trace = self.runs.as_deref().map(|d| (d, name.as_str()));
        Run::new(world, seed, options, trace)
    }

    /// Saves session `id`'s run as a new snapshot and returns the snapshot's id.
    pub(crate) fn snapshot(&self, id: &str) -> Result<String, String> {
        let seat = self
            .get(id)
            .ok_or_else(|| format!("unknown session_id `{}`", quote(id)))?;
        let saved = match seat.run().as_ref() {
            Some(run) => run.save()?,
            None => {
                return Err(format!(
                    "session `{id}` has no world yet; reset it before taking a snapshot"
                ));
            }
        };
        let mut snaps = self.snapshots.lock().unwrap_or_else(|p| p.into_inner());
        let snap = loop {
            let id = unguessable_id();
            if !snaps.by_id.contains_key(&id) {
                break id;
            }
        };
        while snaps.order.len() >= self.max_snapshots {
            if let Some(old) = snaps.order.pop_front() {
                snaps.by_id.remove(&old);
            }
        }
        snaps.order.push_back(snap.clone());
        snaps.by_id.insert(snap.clone(), Arc::new(saved));
        Ok(snap)
    }
}
