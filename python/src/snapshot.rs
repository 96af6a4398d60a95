//! `_core.Snapshot`: a Python env's run saved as plain data, and the calls that take,
//! restore and fork it.
//!
//! A snapshot holds the run's session state ([`SessionState`]: the world with its random
//! streams, the scheduler mid-plan, the identity with its notify level, the counters, the
//! baseline and the next observation) but not its trace, and the hash of the world file
//! it was taken in. Its text is a JSON envelope `{"version", "world", "world_hash",
//! "state", "hash"}` where `state` is the session state's JSON as text and `hash` the
//! content hash of the rest, so the text read back is the text written and an edit to any
//! part is refused when the snapshot is loaded ([`Snapshot::from_json`]), before anything is
//! restored. It pickles as that text, so a snapshot taken in one process restores in
//! another.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyType;

use perennial::regime::NotifyLevel;
use perennial::session::SessionState;

use crate::guarded;
use crate::run::{Run, to_py, trace_target};

/// The version written in every snapshot; a snapshot of another version is refused.
pub const PY_SNAPSHOT_VERSION: u64 = 1;

/// The hash a snapshot's envelope records over its other fields.
fn envelope_hash(world: &str, world_hash: &str, state: &str) -> String {
    perennial::output::content_hash(
        format!("perennial-snapshot {PY_SNAPSHOT_VERSION}\n{world}\n{world_hash}\n{state}")
            .as_bytes(),
    )
}

/// A Python env's run, saved: see the module docs. Picklable; take one with
/// `env.unwrapped.snapshot()`, restore it with `env.unwrapped.restore(snapshot)` or start
/// a fresh env from it with `perennial.make(world, snapshot=snapshot)`.
#[pyclass(name = "Snapshot", module = "perennial._core", frozen)]
pub struct Snapshot {
    /// The envelope's JSON text, as written and read.
    json: String,
    /// The world file's path as the run showed it.
    world: String,
    /// The world file's content hash.
    world_hash: String,
    /// The saved session state.
    state: SessionState,
}

impl Snapshot {
    /// Reads and checks a snapshot's text.
    fn from_json(json: &str) -> Result<Self, String> {
        let refuse = |why: String| format!("not a perennial snapshot: {why}");
        let v: serde_json::Value = serde_json::from_str(json).map_err(|e| refuse(e.to_string()))?;
        let obj = v
            .as_object()
            .ok_or_else(|| refuse("the text is not a JSON object".into()))?;
        let text = |field: &str| -> Result<String, String> {
            obj.get(field)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| refuse(format!("field `{field}` is missing or not text")))
        };
        let known = ["version", "world", "world_hash", "state", "hash"];
        if let Some(extra) = obj.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(refuse(format!("unknown field `{extra}`")));
        }
        match obj.get("version").and_then(serde_json::Value::as_u64) {
            Some(PY_SNAPSHOT_VERSION) => {}
            None => return Err(refuse("field `version` is missing or not a number".into())),
            Some(other) => {
                return Err(format!(
                    "the snapshot is of version {other}, this perennial reads version {PY_SNAPSHOT_VERSION}: take a new snapshot with this version"
                ));
            }
        }
        let (world, world_hash, state_text, hash) = (
            text("world")?,
            text("world_hash")?,
            text("state")?,
            text("hash")?,
        );
        let actual = envelope_hash(&world, &world_hash, &state_text);
        if actual != hash {
            return Err(format!(
                "the snapshot's content hash is {actual} but it records {hash}: it was edited or damaged, and is refused (take a new snapshot)"
            ));
        }
        let state: SessionState =
            serde_json::from_str(&state_text).map_err(|e| refuse(format!("field `state`: {e}")))?;
        Ok(Snapshot {
            json: json.to_string(),
            world,
            world_hash,
            state,
        })
    }

    /// The snapshot of `run` as it stands.
    fn of(run: &Run) -> Result<Self, String> {
        let state = run.inner.save_state().map_err(|e| match e {
            crate::world::RunError::Usage(m) | crate::world::RunError::Failed(m) => m,
            crate::world::RunError::World(e) => e.to_string(),
        })?;
        if state.obs.is_null() {
            return Err(
                "snapshot() before the first reset(): there is no run to save yet; call reset() first"
                    .into(),
            );
        }
        let record = run.inner.file().record();
        let world = record.path.display().to_string();
        let state_text = serde_json::to_string(&state).map_err(|e| e.to_string())?;
        let hash = envelope_hash(&world, &record.hash, &state_text);
        let json = serde_json::json!({
            "version": PY_SNAPSHOT_VERSION,
            "world": world,
            "world_hash": record.hash,
            "state": state_text,
            "hash": hash,
        })
        .to_string();
        Ok(Snapshot {
            json,
            world,
            world_hash: record.hash,
            state,
        })
    }
}

#[pymethods]
impl Snapshot {
    /// Reads a snapshot from its text (`to_json`); a snapshot whose text was edited, or of
    /// another version, raises `ValueError`.
    #[new]
    fn new(json: &str) -> PyResult<Self> {
        guarded(|| Snapshot::from_json(json).map_err(PyValueError::new_err))
    }

    /// The snapshot's text: JSON, versioned and sealed by a content hash.
    fn to_json(&self) -> String {
        self.json.clone()
    }

    /// Pickles as its text.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, (String,))> {
        Ok((slf.get_type(), (slf.get().json.clone(),)))
    }

    /// Steps the saved run had taken: a run restored from it takes step `step` next.
    #[getter]
    fn step(&self) -> u64 {
        self.state.counters.step
    }

    /// The saved run's episode index.
    #[getter]
    fn episode(&self) -> u64 {
        self.state.counters.episode
    }

    /// The saved run's step within its episode.
    #[getter]
    fn episode_step(&self) -> u64 {
        self.state.counters.episode_step
    }

    /// The saved run's id.
    #[getter]
    fn run_id(&self) -> String {
        self.state.identity.run_id.clone()
    }

    /// The saved run's seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.state.identity.seed
    }

    /// The saved run's task.
    #[getter]
    fn task(&self) -> String {
        self.state.identity.task.clone()
    }

    /// The world file the run was built from, as the run showed it.
    #[getter]
    fn world_file(&self) -> String {
        self.world.clone()
    }

    /// The observation the saved run acts on next (float32): what a run restored from the
    /// snapshot answers with its first `step`.
    #[getter]
    fn observation<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray1<f32>>> {
        let obs: Vec<f32> = serde_json::from_value(self.state.obs.clone()).map_err(|e| {
            PyValueError::new_err(format!("the saved observation is not a float vector: {e}"))
        })?;
        Ok(numpy::PyArray1::from_vec(py, obs))
    }

    fn __repr__(&self) -> String {
        format!(
            "Snapshot(run_id={:?}, step={}, world={:?})",
            self.state.identity.run_id, self.state.counters.step, self.world
        )
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.json == other.json
    }
}

/// The run of `run` as it stands, as a [`Snapshot`].
#[pyfunction]
pub fn snapshot(run: PyRef<'_, Run>) -> PyResult<Snapshot> {
    guarded(|| Snapshot::of(&run).map_err(PyValueError::new_err))
}

/// Puts `snapshot` in place in `run` (which must be untraced and of the same world file).
/// With `seed`, `run_id` or `notify`, the restored run takes them instead of the saved
/// ones (the seed then draws the world of every later episode; the episode under way is
/// the saved one). The run keeps its own algorithm id.
#[pyfunction]
#[pyo3(signature = (run, snapshot, seed = None, run_id = None, notify = None))]
pub fn restore(
    mut run: PyRefMut<'_, Run>,
    snapshot: &Snapshot,
    seed: Option<u64>,
    run_id: Option<String>,
    notify: Option<&str>,
) -> PyResult<()> {
    guarded(|| {
        let record = run.inner.file().record();
        if record.hash != snapshot.world_hash {
            return Err(PyValueError::new_err(format!(
                "the snapshot was taken in a run of {} (world file hash {}), but this env runs {} (hash {}): restore it into an env made from the same world file",
                snapshot.world,
                snapshot.world_hash,
                record.path.display(),
                record.hash
            )));
        }
        let mut state = snapshot.state.clone();
        state.identity.algorithm_id = run.inner.identity().algorithm_id.clone();
        if let Some(seed) = seed {
            state.identity.seed = seed;
        }
        if let Some(id) = run_id {
            state.identity.run_id = id;
        }
        if let Some(level) = notify {
            state.identity.notify = level
                .parse::<NotifyLevel>()
                .map_err(|e| PyValueError::new_err(format!("notify: {e}")))?;
        }
        run.inner.restore_state(state).map_err(to_py)
    })
}

/// Starts `run`'s trace at the step it stands at (after [`restore`]). With `fork` =
/// `(source run id, k)`, its events table starts with a `fork` event saying the run is
/// rollout `k` of a fork of that run.
#[pyfunction]
#[pyo3(signature = (run, trace, format = None, record_transitions = false, part_seconds = None, fork = None))]
pub fn open_trace(
    mut run: PyRefMut<'_, Run>,
    trace: PathBuf,
    format: Option<&str>,
    record_transitions: bool,
    part_seconds: Option<f64>,
    fork: Option<(String, u64)>,
) -> PyResult<()> {
    guarded(|| {
        let target = trace_target(trace, format, record_transitions, part_seconds)?;
        run.inner.attach_trace(target).map_err(to_py)?;
        match fork {
            Some((source, k)) => run.inner.record_fork(&source, k).map_err(to_py),
            None => Ok(()),
        }
    })
}
