//! `perennial._core`: the extension module under the `perennial` Python package.
//!
//! The Python package wraps these types in real `gymnasium.Env` and
//! `gymnasium.vector.VectorEnv` subclasses; users never need this module directly. Every
//! entry point converts Rust errors into Python exceptions with the same message
//! (`ValueError` for bad actions and options, `WorldFileError` for world files) and catches
//! panics, so none reaches the interpreter.

mod desk;
mod pyworld;
mod roles;
mod run;
mod snapshot;
mod vector;
mod world;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use perennial::world_file::{WorldFile, WorldFileError as CoreWorldFileError};

create_exception!(
    _core,
    WorldFileError,
    PyValueError,
    "A world file that cannot be used. `file`, `line` (1-based, or None) and `field` (or None) say where; the message says why and what to do."
);

/// Runs `f`, turning a panic into a `RuntimeError` that names it a bug.
pub(crate) fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in perennial ({what}); this is a bug: please report it with the call that caused it"
            )))
        }
    }
}

/// The Python exception for a world-file error, with its location as attributes.
pub(crate) fn world_file_error(py: Python<'_>, e: &CoreWorldFileError) -> PyErr {
    let err = WorldFileError::new_err(e.to_string());
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail in practice; if it did,
    // the message alone still says everything.
    let _ = value.setattr("file", e.path.display().to_string());
    let _ = value.setattr("line", e.line);
    let _ = value.setattr("field", e.field.clone());
    err
}

/// The Python exception for a world that cannot be built: a `WorldFileError` with its
/// location when the file is at fault, else a `ValueError`.
pub(crate) fn build_error(e: perennial::registry::BuildError) -> PyErr {
    match e {
        perennial::registry::BuildError::World(e) => Python::attach(|py| world_file_error(py, &e)),
        e => PyValueError::new_err(e.to_string()),
    }
}

/// Loads and validates a world file: a path, or `shipped:<name>` for a shipped one.
pub(crate) fn load_world(py: Python<'_>, world: &str) -> PyResult<WorldFile> {
    world::load(world).map_err(|e| world_file_error(py, &e))
}

/// The shipped world files: a dict from file name to TOML text.
#[pyfunction]
fn shipped_worlds() -> Vec<(&'static str, &'static str)> {
    world::SHIPPED.to_vec()
}

/// Checks a world file and returns its summary as JSON: kind, description, regime labels,
/// plan name and the `[harness]` defaults.
#[pyfunction]
fn check_world(py: Python<'_>, path: &str) -> PyResult<String> {
    guarded(|| {
        let file = load_world(py, path)?;
        let plan = match &file.plan {
            perennial::regime::Plan::Fixed { .. } => "fixed",
            perennial::regime::Plan::Cycle { .. } => "cycle",
            perennial::regime::Plan::Stochastic { .. } => "stochastic",
            perennial::regime::Plan::Manual => "manual",
        };
        let d = &file.harness;
        Ok(serde_json::json!({
            "kind": file.kind(),
            "description": file.description,
            "regimes": file.regimes.iter().map(|r| r.label.clone()).collect::<Vec<_>>(),
            "plan": plan,
            "notify": file.notify.as_str(),
            "harness": {
                "steps": d.steps,
                "window_steps": d.window_steps,
                "auto_reset": d.auto_reset,
                "seed": d.seed,
                "agent": d.agent,
            },
        })
        .to_string())
    })
}

/// The agent names `perennial run --agent` and sweep files accept for the world file at
/// `path`, from the built-in registry: the generic agents, then the world kind's own.
#[pyfunction]
fn agents(py: Python<'_>, path: &str) -> PyResult<Vec<String>> {
    guarded(|| {
        let file = load_world(py, path)?;
        let kind = crate::pyworld::registry()
            .kind(file.kind())
            .ok_or_else(|| {
                PyRuntimeError::new_err(format!("no world kind `{}` is built in", file.kind()))
            })?;
        Ok(kind.agent_names().into_iter().map(String::from).collect())
    })
}

/// Scores traces as `perennial eval --json` does and returns that JSON document.
#[pyfunction]
#[pyo3(signature = (traces, window = 100, include_payout = false))]
fn evaluate(traces: Vec<PathBuf>, window: usize, include_payout: bool) -> PyResult<String> {
    guarded(|| {
        let options = perennial::eval::EvalOptions {
            window,
            include_payout,
            ..perennial::eval::EvalOptions::default()
        };
        let report = perennial::eval::evaluate(&traces, &options)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut json = serde_json::to_string_pretty(&report)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        json.push('\n');
        Ok(json)
    })
}

/// Reads an events table (`<run-id>.events.<format>`): its rows as a JSON array and the
/// problems met reading it (a torn last line, a half-written part), which skip what they
/// hit and are never errors. Given a trace that has an events table beside it, reads that
/// table.
#[pyfunction]
fn load_events(path: PathBuf) -> PyResult<(String, Vec<String>)> {
    guarded(|| {
        let path = match perennial::trace::is_events_table(&path) {
            true => path,
            false => perennial::trace::find_events(&path).unwrap_or(path),
        };
        let mut reader = perennial::trace::EventReader::open(&path);
        let rows: Vec<perennial::trace::EventRow> = (&mut reader).collect();
        let json =
            serde_json::to_string(&rows).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok((json, reader.problems().to_vec()))
    })
}

/// Writes rLLM episodes from traces as `perennial episodes` does; returns its summary line.
#[pyfunction]
#[pyo3(signature = (traces, out, advantage = None, chunk_steps = None))]
fn export_episodes(
    traces: Vec<PathBuf>,
    out: PathBuf,
    advantage: Option<&str>,
    chunk_steps: Option<u64>,
) -> PyResult<String> {
    use perennial::episodes::AdvantageEstimator;
    guarded(|| {
        let advantage = match advantage {
            None => None,
            Some("grpo") => Some(AdvantageEstimator::Grpo),
            Some("rloo") => Some(AdvantageEstimator::Rloo),
            Some("reinforce") => Some(AdvantageEstimator::Reinforce),
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "unknown advantage estimator `{other}`; use one of: grpo, rloo, reinforce, or None"
                )));
            }
        };
        if chunk_steps == Some(0) {
            return Err(PyValueError::new_err(
                "chunk_steps must be at least 1 (or None for whole episodes)",
            ));
        }
        let options = perennial::episodes::ExportOptions {
            chunk_steps,
            advantage,
        };
        let summary = perennial::episodes::export(&traces, &out, &options)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(format!("Wrote {}: {summary}", out.display()))
    })
}

/// Runs the `perennial` command line in this process with `argv` (the arguments after
/// the program name) and returns its exit code: 0 for success, 2 for bad input, 1 for a
/// run that failed.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> PyResult<u8> {
    // A sweep started here runs each run as `python -m perennial run ...` with this
    // interpreter, which knows the Python worlds (unless `PERENNIAL_BIN` says otherwise).
    let python: PathBuf = py.import("sys")?.getattr("executable")?.extract()?;
    perennial::sweep::set_run_command(python, vec!["-m".into(), "perennial".into()]);
    guarded(|| {
        let args = std::iter::once("perennial".to_string()).chain(argv);
        // The command runs without the interpreter lock: fork rollouts on other threads
        // take it for each call into a Python world.
        let code = py.detach(|| perennial::cli::run_with_args(crate::pyworld::registry(), args));
        // ExitCode keeps its value private; every code the CLI returns fits in a u8.
        Ok((0..=u8::MAX)
            .find(|&n| std::process::ExitCode::from(n) == code)
            .unwrap_or(1))
    })
}

/// Runs perennial's `Env` contract (`perennial::env::check`) on the worlds `make` returns
/// (a Python callable giving a fresh `perennial._adapter.WorldAdapter` each call), `steps`
/// steps per trajectory from seed `seed`. Returns `{"passed": [rule, ...], "skipped":
/// [(rule, why), ...], "failure": None or {"rule", "step", "message"}}`.
#[pyfunction]
#[pyo3(signature = (make, seed = 0, steps = 500))]
fn check_env<'py>(
    py: Python<'py>,
    make: Bound<'py, PyAny>,
    seed: u64,
    steps: u64,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    guarded(|| {
        let build = || -> Result<pyworld::PyWorld, String> {
            let adapter = make.call0().map_err(|e| e.value(py).to_string())?;
            pyworld::PyWorld::new(py, adapter.unbind())
        };
        let options = perennial::env::CheckOptions { seed, steps };
        let out = pyo3::types::PyDict::new(py);
        let (passed, skipped, failure) = match perennial::env::check(build, &options) {
            Ok(report) => (report.passed, report.skipped, None),
            Err(f) => (Vec::new(), Vec::new(), Some(f)),
        };
        let names: Vec<&str> = passed.iter().map(|r| r.as_str()).collect();
        out.set_item("passed", names)?;
        let skipped: Vec<(&str, String)> =
            skipped.into_iter().map(|(r, w)| (r.as_str(), w)).collect();
        out.set_item("skipped", skipped)?;
        match failure {
            None => out.set_item("failure", py.None())?,
            Some(f) => {
                let d = pyo3::types::PyDict::new(py);
                d.set_item("rule", f.rule.as_str())?;
                d.set_item("step", f.step)?;
                d.set_item("message", f.message)?;
                out.set_item("failure", d)?;
            }
        }
        Ok(out)
    })
}

/// [`check_env`] for a world file (a path or `shipped:<name>`): each rule on fresh worlds
/// built through the registry. Returns the same document, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, seed = 0, steps = 500))]
fn check_contract(py: Python<'_>, path: &str, seed: u64, steps: u64) -> PyResult<String> {
    guarded(|| {
        let file = load_world(py, path)?;
        let registry = pyworld::registry();
        let build = || perennial::dyn_env::build(&file, registry);
        let options = perennial::env::CheckOptions { seed, steps };
        let doc = match perennial::env::check(build, &options) {
            Ok(report) => serde_json::json!({
                "passed": report.passed.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
                "skipped": report.skipped.iter().map(|(r, w)| (r.as_str(), w)).collect::<Vec<_>>(),
                "failure": null,
            }),
            Err(f) => serde_json::json!({
                "passed": [],
                "skipped": [],
                "failure": {"rule": f.rule.as_str(), "step": f.step, "message": f.message},
            }),
        };
        Ok(doc.to_string())
    })
}

/// The extension module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", perennial::VERSION)?;
    m.add("WorldFileError", m.py().get_type::<WorldFileError>())?;
    m.add_class::<run::Run>()?;
    m.add_class::<vector::Vector>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<desk::Desk>()?;
    m.add_function(wrap_pyfunction!(desk::tools, m)?)?;
    m.add_function(wrap_pyfunction!(desk::action_call, m)?)?;
    m.add_function(wrap_pyfunction!(desk::render, m)?)?;
    m.add_function(wrap_pyfunction!(roles::roles, m)?)?;
    m.add_function(wrap_pyfunction!(roles::joint_action, m)?)?;
    m.add_function(wrap_pyfunction!(roles::role_rewards, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::restore, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::open_trace, m)?)?;
    m.add("MAX_VECTOR_COPIES", perennial::limits::MAX_VECTOR_COPIES)?;
    m.add_function(wrap_pyfunction!(check_world, m)?)?;
    m.add_function(wrap_pyfunction!(agents, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(check_env, m)?)?;
    m.add_function(wrap_pyfunction!(check_contract, m)?)?;
    m.add_function(wrap_pyfunction!(shipped_worlds, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(export_episodes, m)?)?;
    m.add_function(wrap_pyfunction!(load_events, m)?)?;
    Ok(())
}
