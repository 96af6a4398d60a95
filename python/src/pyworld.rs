//! Worlds written in Python: a Gymnasium env driven by perennial's run core.
//!
//! A [`PyWorld`] is an [`Env`] and a [`Shiftable`] whose every call goes to one
//! `perennial._adapter.WorldAdapter` (Python), which holds the Gymnasium env. Because it is
//! an ordinary world to the core crate, a Python world gets everything a built-in one has:
//! the scheduler shifting its attributes mid-episode, the trace, the events table, notify
//! levels, checkpoints (for envs that pickle), forks and every generic agent.
//!
//! [`PyKind`] is the `kind = "python"` of world files: `[world] entry_point` names the class
//! (or a Gymnasium id) and `[world.params]` its keyword arguments. [`registry`] is the
//! built-in registry plus that kind, which every door of the extension loads world files
//! with; `perennial.wrap` builds a one-off registry whose `python` kind is the env it was
//! given ([`PyKind::instance`]).

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use perennial::env::{Dtype, Env, EnvError, EnvSpec, Space, Transition};
use perennial::regime::Conditions;
use perennial::regime::{ParamInfo, RegimeError, Shiftable, check_parameter};
use perennial::registry::{ParamError, Registry, WorldKind};
use perennial::reward::RewardSpec;
use perennial::world_file::{ENTRY_POINT, PYTHON_KIND, REGIME_ATTRIBUTES};

/// The Python module holding the adapter.
const ADAPTER_MODULE: &str = "perennial._adapter";

/// What errors and manifests call the world file `perennial.wrap` composes.
pub const WRAPPED_PATH: &str = "<perennial.wrap>";

/// The built-in registry plus `kind = "python"` worlds built from their entry points.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::builtin().world_with_agents(PyKind::files(), Vec::new()))
}

/// A registry whose `python` kind builds `adapter`'s env (what `perennial.wrap` runs).
pub fn registry_for(adapter: Py<PyAny>) -> Registry {
    Registry::builtin().world_with_agents(PyKind::instance(adapter), Vec::new())
}

/// A parameter name for the lifetime of the process: [`ParamInfo`] holds `&'static str`,
/// and a Python world's names are known only at run time. Each distinct name is leaked
/// once.
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(|| Mutex::new(BTreeSet::new()))
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// A Python exception as one line: `TypeName: message`.
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let name = e
        .get_type(py)
        .name()
        .map_or_else(|_| "Exception".to_string(), |n| n.to_string());
    format!("{name}: {}", e.value(py))
}

/// `[world.params]` of a Python world: the entry point and the constructor's keyword
/// arguments, kept as TOML and handed to Python as JSON.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(transparent)]
pub struct PyParams(toml::Table);

/// The `python` world kind.
pub struct PyKind {
    /// The adapter every build returns (`perennial.wrap`), else `None`: each build imports
    /// and constructs the file's entry point.
    instance: Option<Py<PyAny>>,
}

impl PyKind {
    /// Worlds built from their world file's `entry_point`.
    pub fn files() -> Self {
        PyKind { instance: None }
    }

    /// The one env `adapter` holds, whatever the file says.
    pub fn instance(adapter: Py<PyAny>) -> Self {
        PyKind {
            instance: Some(adapter),
        }
    }
}

impl WorldKind for PyKind {
    type Env = PyWorld;
    type Params = PyParams;

    fn name(&self) -> &'static str {
        PYTHON_KIND
    }

    fn build(
        &self,
        params: &PyParams,
        _reward: Option<&RewardSpec>,
    ) -> Result<PyWorld, ParamError> {
        let mut kwargs = params.0.clone();
        let shifted: BTreeSet<String> = match kwargs.remove(REGIME_ATTRIBUTES) {
            Some(toml::Value::Array(names)) => names
                .into_iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect(),
            _ => BTreeSet::new(),
        };
        Python::attach(|py| {
            let adapter = match &self.instance {
                Some(a) => a.clone_ref(py),
                None => {
                    let entry = match kwargs.remove(ENTRY_POINT) {
                        Some(toml::Value::String(s)) => s,
                        _ => {
                            return Err(ParamError::field(
                                ENTRY_POINT,
                                "a Python world needs `entry_point = \"package.module:Class\"` \
                                 (or a Gymnasium id such as \"CartPole-v1\") in `[world]`",
                            ));
                        }
                    };
                    let json = serde_json::to_string(&kwargs)
                        .map_err(|e| ParamError::table(format!("cannot pass to Python: {e}")))?;
                    py.import(ADAPTER_MODULE)
                        .and_then(|m| m.call_method1("load", (entry.as_str(), json)))
                        .map_err(|e| ParamError::field(ENTRY_POINT, error_text(py, &e)))?
                        .unbind()
                }
            };
            let mut world =
                PyWorld::new(py, adapter).map_err(|e| ParamError::field(ENTRY_POINT, e))?;
            world.shifted = Some(shifted);
            Ok(world)
        })
    }
}

/// An adapter's error as the user should read it: the adapter's own messages as they are,
/// anything else with its exception type.
fn error_text(py: Python<'_>, e: &PyErr) -> String {
    let ours = py
        .import(ADAPTER_MODULE)
        .and_then(|m| m.getattr("PythonWorldError"))
        .is_ok_and(|t| e.get_type(py).is(&t));
    if ours {
        e.value(py).to_string()
    } else {
        describe(py, e)
    }
}

/// What the adapter returned (an attribute or a method's result) as a `T`; a Python error
/// becomes its `text`.
fn extracted<'py, T>(
    py: Python<'py>,
    read: PyResult<Bound<'py, PyAny>>,
    text: fn(Python<'_>, &PyErr) -> String,
) -> Result<T, String>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    read.and_then(|v| v.extract()).map_err(|e| text(py, &e))
}

/// A Gymnasium env written in Python, as a perennial world.
pub struct PyWorld {
    adapter: Py<PyAny>,
    /// The adapter's entry point, for messages.
    entry: String,
    spec: EnvSpec,
    params: Vec<ParamInfo>,
    /// Observation length, for the zeros a failed reset returns.
    dim: usize,
    /// Whether an episode runs, and whether it ended.
    started: bool,
    ended: bool,
    /// The error a failed `reset` left, reported by the next step (`reset` cannot fail).
    failed_reset: Option<String>,
    /// The attributes the world file's regimes set: the baseline a shift returns to holds
    /// only these and the declared parameters (`None`: every parameter).
    shifted: Option<BTreeSet<String>>,
    /// Whether the env declares its parameters (`parameters()`) rather than having them
    /// discovered.
    declared: bool,
}

impl PyWorld {
    /// The world `adapter` (a `perennial._adapter.WorldAdapter`) holds.
    ///
    /// # Errors
    ///
    /// The adapter's spec or parameters cannot be read; the message says why.
    pub fn new(py: Python<'_>, adapter: Py<PyAny>) -> Result<Self, String> {
        let a = adapter.bind(py);
        let entry: String = extracted(py, a.getattr("entry"), describe)?;
        let spec: String = extracted(py, a.call_method0("spec"), error_text)?;
        let spec: serde_json::Value =
            serde_json::from_str(&spec).map_err(|e| format!("{entry}: bad spec: {e}"))?;
        let observation_space = space(&spec["observation_space"])
            .ok_or_else(|| format!("{entry}: the observation space is not Box or Discrete"))?;
        let action_space = space(&spec["action_space"])
            .ok_or_else(|| format!("{entry}: the action space is not Discrete"))?;
        let id = spec["id"].as_str().unwrap_or("python-world").to_string();
        let dim = observation_space.len();
        let list: Vec<(String, f64, f64, bool, String)> =
            extracted(py, a.call_method0("parameters"), error_text)?;
        let declared: bool = extracted(py, a.getattr("declared"), describe)?;
        let params = list
            .into_iter()
            .map(|(name, min, max, integer, doc)| ParamInfo {
                name: intern(&name),
                min,
                max,
                doc: intern(&doc),
                integer,
            })
            .collect();
        Ok(PyWorld {
            adapter,
            entry,
            spec: EnvSpec::new(id, observation_space, action_space),
            params,
            dim,
            started: false,
            ended: false,
            failed_reset: None,
            shifted: None,
            declared,
        })
    }

    /// A failure inside the Python world, worded for the step that met it.
    fn world_error(&self, py: Python<'_>, during: &str, e: &PyErr) -> EnvError {
        EnvError::World(format!(
            "the Python world `{}` raised in {during}: {}",
            self.entry,
            error_text(py, e)
        ))
    }
}

/// A spec space the adapter described as JSON.
fn space(v: &serde_json::Value) -> Option<Space> {
    match v["kind"].as_str()? {
        "discrete" => Some(Space::Discrete {
            n: usize::try_from(v["n"].as_u64()?).ok()?,
        }),
        "box" => {
            let list = |key: &str| -> Option<Vec<f64>> {
                // Infinite bounds come as the strings "inf" and "-inf" (JSON has no
                // infinity).
                v[key]
                    .as_array()?
                    .iter()
                    .map(|x| {
                        x.as_f64().or_else(|| match x.as_str()? {
                            "inf" => Some(f64::INFINITY),
                            "-inf" => Some(f64::NEG_INFINITY),
                            _ => None,
                        })
                    })
                    .collect()
            };
            Some(Space::Box {
                low: list("low")?,
                high: list("high")?,
                dtype: Dtype::F32,
            })
        }
        _ => None,
    }
}

impl Env for PyWorld {
    type Obs = Vec<f32>;
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Vec<f32> {
        Python::attach(|py| {
            let out = self
                .adapter
                .bind(py)
                .call_method1("reset", (seed,))
                .and_then(|o| o.extract::<Vec<f32>>());
            self.started = true;
            self.ended = false;
            match out {
                Ok(obs) => {
                    self.failed_reset = None;
                    obs
                }
                Err(e) => {
                    self.failed_reset = Some(self.world_error(py, "reset", &e).to_string());
                    vec![0.0; self.dim]
                }
            }
        })
    }

    fn step(&mut self, action: &usize) -> Result<Transition<Vec<f32>>, EnvError> {
        if let Some(e) = &self.failed_reset {
            return Err(EnvError::World(e.clone()));
        }
        perennial::env::check_step(self.started, self.ended, action, &self.spec.action_space)?;
        Python::attach(|py| {
            let out = self
                .adapter
                .bind(py)
                .call_method1("step", (*action,))
                .map_err(|e| self.world_error(py, "step", &e))?;
            let tuple = out
                .cast::<PyTuple>()
                .map_err(|_| EnvError::World(format!("{}: step gave no tuple", self.entry)))?;
            let (observation, reward, terminated, truncated): (Vec<f32>, f64, bool, bool) = tuple
                .extract()
                .map_err(|e| self.world_error(py, "step", &e))?;
            if observation.len() != self.dim {
                return Err(EnvError::World(format!(
                    "the Python world `{}` returned an observation of {} numbers; its \
                     observation space holds {}",
                    self.entry,
                    observation.len(),
                    self.dim
                )));
            }
            self.ended = terminated || truncated;
            Ok(Transition {
                observation,
                reward,
                terminated,
                truncated,
                breakdown: None,
            })
        })
    }

    fn save_state(&self) -> Result<serde_json::Value, EnvError> {
        Python::attach(|py| {
            let bytes = self
                .adapter
                .bind(py)
                .call_method0("save")
                .map_err(|e| self.world_error(py, "save", &e))?;
            let bytes = bytes
                .cast::<PyBytes>()
                .map_err(|_| EnvError::World(format!("{}: save gave no bytes", self.entry)))?
                .as_bytes()
                .to_vec();
            Ok(serde_json::json!({
                "python_pickle": hex(&bytes),
                "started": self.started,
                "ended": self.ended,
            }))
        })
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), EnvError> {
        let bad = |what: &str| {
            EnvError::World(format!(
                "the saved state of the Python world `{}` {what}",
                self.entry
            ))
        };
        let text = state["python_pickle"]
            .as_str()
            .ok_or_else(|| bad("has no `python_pickle` string"))?;
        let bytes = unhex(text).ok_or_else(|| bad("has a `python_pickle` that is not hex"))?;
        let started = state["started"]
            .as_bool()
            .ok_or_else(|| bad("has no `started` flag"))?;
        let ended = state["ended"]
            .as_bool()
            .ok_or_else(|| bad("has no `ended` flag"))?;
        Python::attach(|py| {
            self.adapter
                .bind(py)
                .call_method1("load", (PyBytes::new(py, &bytes),))
                .map(drop)
                .map_err(|e| self.world_error(py, "load", &e))
        })?;
        self.started = started;
        self.ended = ended;
        self.failed_reset = None;
        Ok(())
    }
}

impl Shiftable for PyWorld {
    fn parameters(&self) -> Vec<ParamInfo> {
        self.params.clone()
    }

    fn get(&self, name: &str) -> Option<f64> {
        Python::attach(|py| {
            self.adapter
                .bind(py)
                .call_method1("get", (name,))
                .and_then(|v| v.extract::<Option<f64>>())
                .ok()
                .flatten()
        })
    }

    /// The baseline a shift returns to: the parameters the env declares, or, for
    /// discovered attributes, only those the world file's regimes set (the others are the
    /// env's own state, which a shift must not touch).
    fn snapshot(&self) -> Conditions {
        self.params
            .iter()
            .filter(|p| {
                self.declared
                    || self
                        .shifted
                        .as_ref()
                        .is_none_or(|names| names.contains(p.name))
            })
            .filter_map(|p| self.get(p.name).map(|v| (p.name.to_string(), v)))
            .collect()
    }

    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        check_parameter(&self.params, name, value)?;
        Python::attach(|py| {
            self.adapter
                .bind(py)
                .call_method1("set", (name, value))
                .map(drop)
                .map_err(|e| RegimeError::Refused {
                    name: name.to_string(),
                    message: error_text(py, &e),
                })
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
