//! `_core.Run`: one world driven from Python, one action at a time, with its trace.

use std::path::PathBuf;

use numpy::PyArray1;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use perennial::env::{EnvError, Space};
use perennial::regime::NotifyLevel;
use perennial::trace::TraceFormat;

use crate::world::{Run as CoreRun, RunError, TraceTarget};
use crate::{guarded, load_world};
use perennial::world_file::TomlFile;

pub(crate) fn to_py(e: RunError) -> PyErr {
    match e {
        RunError::Usage(m) => PyValueError::new_err(m),
        RunError::Failed(m) => PyRuntimeError::new_err(m),
        RunError::World(e) => Python::attach(|py| crate::world_file_error(py, &e)),
    }
}

/// One run of a world file, stepped by the caller. The Python `PerennialEnv` wraps it.
///
/// Not shared between threads: a trace writer belongs to one thread.
#[pyclass(name = "Run", module = "perennial._core", unsendable)]
pub struct Run {
    pub(crate) inner: CoreRun,
    /// Reward component names, in breakdown order.
    components: Vec<String>,
    /// Payout names, in breakdown order.
    payouts: Vec<String>,
}

#[pymethods]
impl Run {
    /// Builds a run of the world file at `world` with run seed `seed`. With `trace`, rows
    /// go to that file (`format` "jsonl" or "csv", else from the extension). `notify` is
    /// "none", "flag", "delta" or "label" (default: the world file's `[notify] level`).
    #[new]
    #[expect(
        clippy::too_many_arguments,
        reason = "these are the Python constructor's keyword arguments"
    )]
    #[pyo3(signature = (world, seed = 0, run_id = None, algorithm_id = "python".to_string(), trace = None, format = None, record_transitions = false, notify = None, part_seconds = None, adapter = None))]
    fn new(
        py: Python<'_>,
        world: &str,
        seed: u64,
        run_id: Option<String>,
        algorithm_id: String,
        trace: Option<PathBuf>,
        format: Option<&str>,
        record_transitions: bool,
        notify: Option<&str>,
        part_seconds: Option<f64>,
        adapter: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        guarded(|| {
            let notify = notify
                .map(|n| n.parse::<NotifyLevel>())
                .transpose()
                .map_err(|e| PyValueError::new_err(format!("notify: {e}")))?;
            // With an adapter (`perennial.wrap`), `world` is the world file's text and the
            // `python` kind builds the adapter's env.
            let wrapped = adapter.map(crate::pyworld::registry_for);
            let registry = wrapped
                .as_ref()
                .unwrap_or_else(|| crate::pyworld::registry());
            let file = match &wrapped {
                None => load_world(py, world)?,
                Some(r) => perennial::world_file::WorldFile::parse_with(
                    world,
                    std::path::Path::new(crate::pyworld::WRAPPED_PATH),
                    r,
                )
                .map_err(|e| crate::world_file_error(py, &e))?,
            };
            let target = trace
                .map(|path| trace_target(path, format, record_transitions, part_seconds))
                .transpose()?;
            let inner = CoreRun::new(file, registry, seed, run_id, algorithm_id, target, notify)
                .map_err(to_py)?;
            let spec = inner.spec();
            Ok(Run {
                components: spec.components.clone(),
                payouts: spec.payouts.clone(),
                inner,
            })
        })
    }

    /// The world's spec: a dict with id, observation_space, action_space (each a dict with
    /// `kind` and its fields, infinite bounds kept), persistent, components and payouts.
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guarded(|| {
            let spec = self.inner.spec();
            let d = PyDict::new(py);
            d.set_item("id", &spec.id)?;
            d.set_item(
                "observation_space",
                space_dict(py, &spec.observation_space)?,
            )?;
            d.set_item("action_space", space_dict(py, &spec.action_space)?)?;
            d.set_item("persistent", spec.persistent)?;
            d.set_item("components", &spec.components)?;
            d.set_item("payouts", &spec.payouts)?;
            Ok(d)
        })
    }

    /// The world file's path.
    #[getter]
    fn world_file(&self) -> String {
        self.inner.file().path.display().to_string()
    }

    /// The run's identity: (run_id, seed, algorithm_id, task).
    fn identity(&self) -> (String, u64, String, String) {
        let id = self.inner.identity();
        (
            id.run_id.clone(),
            id.seed,
            id.algorithm_id.clone(),
            id.task.clone(),
        )
    }

    /// The run's notify level: "none", "flag", "delta" or "label".
    #[getter]
    fn notify(&self) -> &'static str {
        self.inner.identity().notify.as_str()
    }

    /// What the last step told the agent about a regime shift, as a dict
    /// `{"level", "step", "label", "delta"}` (`label` a string at level "label", else
    /// None; `delta` a dict `{name: {"from", "to"}}` at level "delta", else None), or None
    /// on every step that is not the first of a new regime, and always at level "none".
    fn notification<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        guarded(|| {
            let Some(n) = self.inner.notification() else {
                return Ok(None);
            };
            let d = PyDict::new(py);
            d.set_item("level", n.level.as_str())?;
            d.set_item("step", n.step)?;
            d.set_item("label", n.label.as_deref())?;
            match &n.delta {
                None => d.set_item("delta", py.None())?,
                Some(delta) => {
                    let changes = PyDict::new(py);
                    for (name, c) in delta {
                        let change = PyDict::new(py);
                        change.set_item("from", c.from)?;
                        change.set_item("to", c.to)?;
                        changes.set_item(name, change)?;
                    }
                    d.set_item("delta", changes)?;
                }
            }
            Ok(Some(d))
        })
    }

    /// The regime label in force.
    #[getter]
    fn regime(&self) -> String {
        self.inner.regime().0.to_string()
    }

    /// How the regime in force came about: initial, scheduled, stochastic or manual.
    #[getter]
    fn regime_origin(&self) -> &'static str {
        self.inner.regime().1.as_str()
    }

    /// (steps in the run, episode index, step within the episode).
    fn counters(&self) -> (u64, u64, u64) {
        self.inner.counters()
    }

    /// Destroys the world and builds the next episode, or, with `seed`, starts the run
    /// afresh with that run seed. Returns the first observation (float32).
    #[pyo3(signature = (seed = None))]
    fn reset<'py>(
        &mut self,
        py: Python<'py>,
        seed: Option<u64>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        guarded(|| {
            let obs = self.inner.reset(seed).map_err(to_py)?;
            Ok(PyArray1::from_slice(py, obs))
        })
    }

    /// One step: (obs, reward, terminated, truncated, components, payout); the last two are
    /// dicts when the world has a reward specification, else None. The payout dict is
    /// non-empty only on an episode's last step.
    #[expect(
        clippy::type_complexity,
        reason = "the step tuple is the Python-facing shape"
    )]
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        action: &Bound<'py, PyAny>,
    ) -> PyResult<(
        Bound<'py, PyArray1<f32>>,
        f64,
        bool,
        bool,
        Option<Bound<'py, PyDict>>,
        Option<Bound<'py, PyDict>>,
    )> {
        guarded(|| {
            let space = &self.inner.spec().action_space;
            let action = discrete_action(action, self.inner.counters().0, space)?;
            let out = self.inner.step(action).map_err(to_py)?;
            let obs = PyArray1::from_slice(py, out.obs);
            let (components, payout) = match out.breakdown {
                None => (None, None),
                Some(b) => {
                    let c = PyDict::new(py);
                    for (name, v) in self.components.iter().zip(&b.components) {
                        c.set_item(name, v)?;
                    }
                    let p = PyDict::new(py);
                    if out.terminated || out.truncated {
                        for (name, v) in self.payouts.iter().zip(&b.payouts) {
                            p.set_item(name, v)?;
                        }
                    }
                    (Some(c), Some(p))
                }
            };
            Ok((
                obs,
                out.reward,
                out.terminated,
                out.truncated,
                components,
                payout,
            ))
        })
    }

    /// Under a manual plan, makes `label` the regime from the next step on.
    fn shift(&mut self, label: &str) -> PyResult<()> {
        guarded(|| self.inner.shift(label).map_err(to_py))
    }

    /// Records that the run failed outside the world (e.g. the agent driving it raised):
    /// the manifest's exit status becomes `failed: <message>` when the run is closed.
    fn fail(&mut self, message: String) {
        self.inner.fail(message);
    }

    /// Records that the run was interrupted: the manifest's exit status becomes
    /// `interrupted` when the run is closed.
    fn interrupt(&mut self) {
        self.inner.interrupt();
    }

    /// Gives the run id and the algorithm id; only before the trace is opened
    /// (`_core.open_trace`).
    fn identify(&mut self, run_id: String, algorithm_id: String) -> PyResult<()> {
        guarded(|| self.inner.identify(run_id, algorithm_id).map_err(to_py))
    }

    /// What the run manifest records of the agent (`agent`, `agent_options`, a JSON
    /// object) and the options merged over the env's (`options`, a JSON object); only
    /// before the trace is opened.
    fn describe(&mut self, agent: String, agent_options: &str, options: &str) -> PyResult<()> {
        guarded(|| {
            let parse = |what: &str, text: &str| {
                serde_json::from_str::<serde_json::Value>(text)
                    .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
            };
            let agent_options = parse("agent_options", agent_options)?;
            let serde_json::Value::Object(options) = parse("options", options)? else {
                return Err(PyValueError::new_err("options: give a JSON object"));
            };
            self.inner.describe(crate::world::Described {
                agent,
                agent_options,
                options,
            });
            Ok(())
        })
    }

    /// Writes every buffered trace row to the file.
    fn flush(&mut self) -> PyResult<()> {
        guarded(|| self.inner.flush().map_err(to_py))
    }

    /// Flushes and closes the trace.
    fn close(&mut self) -> PyResult<()> {
        guarded(|| self.inner.close().map_err(to_py))
    }
}

/// Where a trace at `path` goes and how: `format` "jsonl", "csv" or "parquet", else from
/// the extension.
pub(crate) fn trace_target(
    path: PathBuf,
    format: Option<&str>,
    record_transitions: bool,
    part_seconds: Option<f64>,
) -> PyResult<TraceTarget> {
    let format = match format.or_else(|| path.extension().and_then(|e| e.to_str())) {
        Some("jsonl") | None => TraceFormat::Jsonl,
        Some("csv") => TraceFormat::Csv,
        Some("parquet") => TraceFormat::Parquet,
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "trace format `{other}` is not supported; use \"jsonl\", \"csv\" or \"parquet\" (or a trace path ending in .jsonl, .csv or .parquet)"
            )));
        }
    };
    let part_interval = match (part_seconds, format) {
        (None, _) => None,
        (Some(s), TraceFormat::Parquet) => Some(
            perennial::trace::part_interval(s, "part_seconds").map_err(PyValueError::new_err)?,
        ),
        (Some(_), other) => {
            return Err(PyValueError::new_err(format!(
                "part_seconds is for Parquet traces (a directory of part files); this trace is {}: leave part_seconds out",
                other.extension()
            )));
        }
    };
    Ok(TraceTarget {
        path,
        format,
        record_transitions,
        part_interval,
    })
}

/// A space as a dict: `kind` ("discrete", "multi_discrete", "box") and its fields.
pub(crate) fn space_dict<'py>(py: Python<'py>, space: &Space) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match space {
        Space::Discrete { n } => {
            d.set_item("kind", "discrete")?;
            d.set_item("n", n)?;
        }
        Space::MultiDiscrete { nvec } => {
            d.set_item("kind", "multi_discrete")?;
            d.set_item("nvec", nvec)?;
        }
        Space::Box { low, high, .. } => {
            d.set_item("kind", "box")?;
            d.set_item("low", low)?;
            d.set_item("high", high)?;
        }
    }
    Ok(d)
}

/// Reads a discrete action: a Python or numpy integer (a 0-d array too).
pub(crate) fn discrete_action(
    action: &Bound<'_, PyAny>,
    step: u64,
    space: &Space,
) -> PyResult<usize> {
    let repr = || {
        action
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "?".into())
    };
    let outside = |e: EnvError| PyValueError::new_err(format!("step {step}: {e}"));
    match action.extract::<i64>() {
        Ok(value) => {
            usize::try_from(value).map_err(|_| outside(EnvError::invalid_action(&value, space)))
        }
        // An integer too large for i64 (it has `__index__`) is outside every space; it is
        // shown as Python shows it.
        Err(_) if action.call_method0("__index__").is_ok() => {
            Err(outside(EnvError::InvalidAction {
                action: repr(),
                space: space.to_string(),
            }))
        }
        Err(_) => Err(PyValueError::new_err(format!(
            "step {step}: invalid action {}: a discrete action is an integer",
            repr()
        ))),
    }
}
