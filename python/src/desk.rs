//! `_core.Desk`: the enterprise world's tool surface for language-model agents.
//!
//! A desk answers tool calls against one `Run`: queries from the world's state, operations
//! and `wait` by stepping the run, so every hour is one trace row written as for any
//! other agent. The Python `perennial.llm` module wraps it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;

use perennial::morpheus::api::{self, Desk as CoreDesk, DeskOptions, Hour, Stepper, ToolCall};
use perennial::morpheus::roles::EnterpriseEnv;
use perennial::morpheus::{Morpheus, MorpheusConfig, Op};

use crate::run::{Run, to_py};
use crate::world::{Run as CoreRun, RunError};
use crate::{guarded, load_world};

/// The enterprise world behind a run, or an error saying which worlds have tools.
fn morpheus(run: &CoreRun) -> PyResult<&Morpheus> {
    run.world()
        .world_any()
        .downcast_ref::<Morpheus>()
        .ok_or_else(|| not_enterprise(run.file().kind()))
}

fn not_enterprise(kind: &str) -> PyErr {
    PyValueError::new_err(format!(
        "tools exist for the enterprise world (kind = \"morpheus\"), not for kind = \"{kind}\"; use a world file such as shipped:warehouse.toml"
    ))
}

/// A run seen as a [`Stepper`]: each hour is one step of the run, with its trace row.
struct RunStepper<'a>(&'a mut CoreRun);

impl Stepper for RunStepper<'_> {
    type Error = RunError;

    fn world(&self) -> &Morpheus {
        // `Desk::new` checked that the run's world is the enterprise world, and a run never
        // changes its world's type.
        match self.0.world().world_any().downcast_ref::<Morpheus>() {
            Some(m) => m,
            None => unreachable!("a desk's run holds the enterprise world"),
        }
    }

    fn step_hour(&mut self, action: usize) -> Result<Hour, RunError> {
        let out = self.0.step(action)?;
        Ok(Hour {
            reward: out.reward,
            ended: out.terminated || out.truncated,
        })
    }
}

/// Answers tool calls against one run of the enterprise world.
#[pyclass(name = "Desk", module = "perennial._core", unsendable)]
pub struct Desk {
    inner: CoreDesk,
}

#[pymethods]
impl Desk {
    /// A desk for `run`'s world; `max_calls_per_hour` calls are answered per hour (16).
    #[new]
    #[pyo3(signature = (run, max_calls_per_hour = 16))]
    fn new(run: PyRef<'_, Run>, max_calls_per_hour: u32) -> PyResult<Self> {
        guarded(|| {
            if max_calls_per_hour == 0 {
                return Err(PyValueError::new_err(
                    "max_calls_per_hour is 0; use at least 1 (the default is 16)",
                ));
            }
            let world = morpheus(&run.inner)?;
            Ok(Desk {
                inner: CoreDesk::new(world.config(), DeskOptions { max_calls_per_hour }),
            })
        })
    }

    /// Answers one call; `arguments` is its JSON text. Returns the reply envelope as a JSON
    /// string `{status, success, data, error}`.
    fn call(
        &mut self,
        mut run: PyRefMut<'_, Run>,
        name: &str,
        arguments: &str,
    ) -> PyResult<String> {
        guarded(|| {
            morpheus(&run.inner)?;
            let mut stepper = RunStepper(&mut run.inner);
            let reply = self
                .inner
                .call(&mut stepper, name, arguments)
                .map_err(to_py)?;
            Ok(reply.to_json())
        })
    }

    /// Answers a MORPHEUS-style request `{path, method, body}` given as JSON text.
    fn request(&mut self, mut run: PyRefMut<'_, Run>, request: &str) -> PyResult<String> {
        guarded(|| {
            morpheus(&run.inner)?;
            // Text that is not JSON reaches the parser as a string, which it refuses (400).
            let value = serde_json::from_str::<Value>(request)
                .unwrap_or_else(|_| Value::String(request.to_string()));
            let mut stepper = RunStepper(&mut run.inner);
            let reply = self.inner.request(&mut stepper, &value).map_err(to_py)?;
            Ok(reply.to_json())
        })
    }

    /// Forgets the world it served, for a run just reset or restored; counts are kept.
    fn restart(&mut self) {
        self.inner.restart();
    }

    /// Calls counted so far: a dict of calls, malformed_calls, invalid_calls, refused, hours.
    fn counts(&self) -> std::collections::BTreeMap<&'static str, u64> {
        let c = self.inner.counts();
        [
            ("calls", c.calls),
            ("malformed_calls", c.malformed_calls),
            ("invalid_calls", c.invalid_calls),
            ("refused", c.refused),
            ("hours", c.hours),
        ]
        .into_iter()
        .collect()
    }

    /// The tools as a JSON list: OpenAI strict function tools (`form` "openai") or MCP
    /// `Tool` objects ("mcp").
    #[pyo3(signature = (form = "openai"))]
    fn tools(&self, form: &str) -> PyResult<String> {
        catalogue_json(self.inner.catalogue(), form)
    }
}

fn catalogue_json(catalogue: &api::Catalogue, form: &str) -> PyResult<String> {
    let list = match form {
        "openai" => catalogue.openai(),
        "mcp" => catalogue.mcp(),
        other => {
            return Err(PyValueError::new_err(format!(
                "form is {other:?}; use \"openai\" or \"mcp\""
            )));
        }
    };
    Ok(Value::Array(list).to_string())
}

/// The layout of the enterprise world a world file describes.
fn layout(py: Python<'_>, world: &str) -> PyResult<MorpheusConfig> {
    let file = load_world(py, world)?;
    let built =
        crate::world::build_world(&file, crate::pyworld::registry()).map_err(crate::build_error)?;
    match built.as_ref().world_any().downcast_ref::<Morpheus>() {
        Some(m) => Ok(m.config().clone()),
        None => Err(not_enterprise(file.kind())),
    }
}

/// The tools of the world file `world` as a JSON list, in `form` "openai" or "mcp"; in a
/// world with roles, those of role `role` (which it must name).
#[pyfunction]
#[pyo3(signature = (world, form = "openai", role = None))]
pub(crate) fn tools(
    py: Python<'_>,
    world: &str,
    form: &str,
    role: Option<&str>,
) -> PyResult<String> {
    guarded(|| {
        let file = load_world(py, world)?;
        let built = crate::world::build_world(&file, crate::pyworld::registry())
            .map_err(crate::build_error)?;
        let any = built.as_ref().world_any();
        if let Some(env) = any.downcast_ref::<EnterpriseEnv>() {
            let roles = env.roles();
            let Some(role) = role else {
                return Err(PyValueError::new_err(format!(
                    "role=None: this world is run by several roles; name one: {}",
                    roles.names().join(", ")
                )));
            };
            let desks = api::RoleDesks::new(env.world().config(), DeskOptions::default(), roles);
            let r = desks
                .position(role)
                .map_err(|e| PyValueError::new_err(format!("role={role:?}: {e}")))?;
            let catalogue = desks
                .catalogue(r)
                .ok_or_else(|| not_enterprise(file.kind()))?;
            return catalogue_json(catalogue, form);
        }
        let Some(m) = any.downcast_ref::<Morpheus>() else {
            return Err(not_enterprise(file.kind()));
        };
        if let Some(role) = role {
            return Err(PyValueError::new_err(format!(
                "role={role:?}: this world has no roles; leave role out"
            )));
        }
        catalogue_json(&api::Catalogue::of(m.config()), form)
    })
}

/// The tool call that does what action index `action` does in the world file `world`:
/// `(name, arguments as a JSON string)`; the no-op is `wait` for one hour.
#[pyfunction]
pub(crate) fn action_call(
    py: Python<'_>,
    world: &str,
    action: usize,
) -> PyResult<(String, String)> {
    guarded(|| {
        let cfg = &layout(py, world)?;
        let op = Op::decode(action, cfg).ok_or_else(|| {
            PyValueError::new_err(format!(
                "action {action} is outside this world's action table"
            ))
        })?;
        let call = match op {
            Op::Noop => ToolCall::Wait { hours: 1 },
            op => ToolCall::from_op(op, cfg).ok_or_else(|| {
                PyValueError::new_err(format!("action {action} has no tool call"))
            })?,
        };
        Ok((
            call.tool().as_str().to_string(),
            call.arguments().to_string(),
        ))
    })
}

/// The run's hour rendered for a prompt: `format` "text" or "json" (a JSON string).
#[pyfunction]
#[pyo3(signature = (run, format = "text"))]
pub(crate) fn render(run: PyRef<'_, Run>, format: &str) -> PyResult<String> {
    guarded(|| {
        let world = morpheus(&run.inner)?;
        match format {
            "text" => Ok(api::render_text(world)),
            "json" => Ok(api::render_json(world).to_string()),
            other => Err(PyValueError::new_err(format!(
                "format is {other:?}; use \"text\" or \"json\""
            ))),
        }
    })
}
