//! `_core.Vector`: N copies of a world stepped in one call, buffers crossing as numpy arrays.

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use perennial::cartpole::{CartPole, CartPoleParams};
use perennial::env::{Env, EnvError, Space};
use perennial::limits::MAX_VECTOR_COPIES;
use perennial::regime::apply_conditions;
use perennial::seed::{self, Stream};
use perennial::vector::{AutoresetMode, CartPoleVec, VecEnv, VecError, VecStep, VectorEnv};
use perennial::world_file::WorldFile;

use crate::world::build_world;
use crate::{guarded, load_world};

/// The vector behind a `make_vec` env: the structure-of-arrays [`CartPoleVec`] for a
/// stationary CartPole, else a [`VecEnv`] of worlds, each copy with its own scheduler.
type Backend = Box<dyn VectorEnv<Action = usize>>;

/// N copies of one world file. The Python `PerennialVectorEnv` wraps it.
///
/// Copy `i` after `reset(seed)` is the run a single env reset with `seed + i` would be, so
/// the vector matches Gymnasium's `SyncVectorEnv` over N single envs array for array.
#[pyclass(name = "Vector", module = "perennial._core", unsendable)]
pub struct Vector {
    file: WorldFile,
    num_envs: usize,
    mode: AutoresetMode,
    backend: Option<Backend>,
    obs_len: usize,
    /// The action space, for the errors of actions outside it.
    action_space: Space,
    actions: Vec<usize>,
}

/// `array` as a slice of one element per copy; `wrong(len, copies)` words the error when
/// its length is another.
fn one_per_copy<'a, T: numpy::Element>(
    array: &'a PyReadonlyArray1<'_, T>,
    copies: usize,
    wrong: impl Fn(usize, usize) -> String,
) -> PyResult<&'a [T]> {
    let slice = array
        .as_slice()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if slice.len() != copies {
        return Err(PyValueError::new_err(wrong(slice.len(), copies)));
    }
    Ok(slice)
}

fn vec_err(e: VecError) -> PyErr {
    match e {
        VecError::Regime { .. } => PyRuntimeError::new_err(e.to_string()),
        // The Rust message names `reset_copy`; from Python a copy is reset with a mask.
        VecError::Copy {
            index,
            source: EnvError::EpisodeEnded,
        } => PyValueError::new_err(format!(
            "copy {index}: its episode has ended; no copy was stepped: reset it first with \
             reset(options={{\"reset_mask\": mask}}), mask[{index}] = True"
        )),
        _ => PyValueError::new_err(e.to_string()),
    }
}

impl Vector {
    /// A vector of `self.num_envs` copies whose schedulers are seeded as the runs with
    /// seeds `seeds[i]`.
    fn build(&self, seeds: &[u64]) -> PyResult<Backend> {
        if let (Some(params), [only]) =
            (self.file.params::<CartPoleParams>(), &self.file.regimes[..])
        {
            // One regime never shifts: its conditions are the physics of every copy.
            let mut scratch = CartPole::new(params.clone());
            apply_conditions(&mut scratch, &only.conditions)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            return Ok(Box::new(CartPoleVec::new(
                self.num_envs,
                scratch.params().clone(),
                self.mode,
            )));
        }
        let envs = (0..self.num_envs)
            .map(|_| build_world(&self.file, crate::pyworld::registry()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(crate::build_error)?;
        let mut v = VecEnv::new(envs, self.mode).map_err(vec_err)?;
        for (i, &s) in seeds.iter().enumerate() {
            let scheduler = self
                .file
                .scheduler(seed::derive(s, Stream::Scheduler, 0))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            v = v.scheduler(i, scheduler).map_err(vec_err)?;
        }
        Ok(Box::new(v))
    }

    fn last(&self) -> PyResult<&VecStep> {
        match &self.backend {
            Some(v) => Ok(v.last()),
            None => Err(PyValueError::new_err(
                "step called before reset; call reset(seed=...) first",
            )),
        }
    }
}

#[pymethods]
impl Vector {
    /// `num_envs` copies of the world file at `world`, autoresetting as `autoreset_mode`
    /// ("next_step", "same_step" or "disabled") says.
    #[new]
    #[pyo3(signature = (world, num_envs, autoreset_mode = "next_step"))]
    fn new(py: Python<'_>, world: &str, num_envs: usize, autoreset_mode: &str) -> PyResult<Self> {
        guarded(|| {
            let file = load_world(py, world)?;
            if num_envs == 0 {
                return Err(PyValueError::new_err("num_envs must be at least 1"));
            }
            // PerennialVectorEnv says so first, for any Python integer.
            if num_envs > MAX_VECTOR_COPIES {
                return Err(PyValueError::new_err(format!(
                    "num_envs={num_envs}: at most {MAX_VECTOR_COPIES}"
                )));
            }
            let mode = match autoreset_mode {
                "next_step" => AutoresetMode::NextStep,
                "same_step" => AutoresetMode::SameStep,
                "disabled" => AutoresetMode::Disabled,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "unknown autoreset mode `{other}`; use \"next_step\", \"same_step\" or \"disabled\""
                    )));
                }
            };
            let world =
                build_world(&file, crate::pyworld::registry()).map_err(crate::build_error)?;
            let (obs_len, action_space) = (
                world.spec().observation_space.len(),
                world.spec().action_space.clone(),
            );
            Ok(Vector {
                file,
                num_envs,
                mode,
                backend: None,
                obs_len,
                action_space,
                actions: vec![0; num_envs],
            })
        })
    }

    /// Number of copies.
    #[getter]
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    /// Whether the structure-of-arrays CartPole vector drives the copies.
    #[getter]
    fn is_cartpole_vec(&self) -> bool {
        self.file.params::<CartPoleParams>().is_some() && self.file.regimes.len() == 1
    }

    /// With `seed`, starts copy `i` as the run with seed `seed + i`; without, every copy
    /// moves on to its next episode (the first reset without a seed uses seed 0). Returns the
    /// observations, shape (num_envs, obs_len).
    #[pyo3(signature = (seed = None))]
    fn reset<'py>(
        &mut self,
        py: Python<'py>,
        seed: Option<u64>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        guarded(|| {
            match (seed, self.backend.as_mut()) {
                (None, Some(backend)) => {
                    for i in 0..self.num_envs {
                        backend.reset_copy(i).map_err(vec_err)?;
                    }
                }
                (seed, _) => {
                    let base = seed.unwrap_or(0);
                    let seeds: Vec<u64> = (0..self.num_envs as u64)
                        .map(|i| base.wrapping_add(i))
                        .collect();
                    let mut backend = match self.backend.take() {
                        // The CartPole vector has no schedulers: it is reused as it is.
                        Some(v) if self.is_cartpole_vec() => v,
                        _ => self.build(&seeds)?,
                    };
                    backend.reset_runs(&seeds).map_err(vec_err)?;
                    self.backend = Some(backend);
                }
            }
            obs_array(py, self.num_envs, self.obs_len, self.last()?.obs())
        })
    }

    /// Destroys and rebuilds the copies where `mask` is true (their next episodes); returns
    /// every copy's observations. For `autoreset_mode="disabled"`.
    fn reset_copies<'py>(
        &mut self,
        py: Python<'py>,
        mask: PyReadonlyArray1<'py, bool>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        guarded(|| {
            let mask = one_per_copy(&mask, self.num_envs, |n, copies| {
                format!("reset_mask has {n} elements for {copies} copies")
            })?;
            let Some(backend) = self.backend.as_mut() else {
                return Err(PyValueError::new_err(
                    "reset with a reset_mask before the first reset; call reset(seed=...) first",
                ));
            };
            for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
                backend.reset_copy(i).map_err(vec_err)?;
            }
            obs_array(py, self.num_envs, self.obs_len, self.last()?.obs())
        })
    }

    /// Steps every copy: (obs, rewards, terminated, truncated, final_obs). `final_obs` is
    /// the (num_envs, obs_len) array of the ended copies' last observations under
    /// "same_step" (rows of copies that did not end are unspecified), else None.
    #[expect(
        clippy::type_complexity,
        reason = "the step tuple is the Python-facing shape"
    )]
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<(
        Bound<'py, PyArray2<f32>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<bool>>,
        Bound<'py, PyArray1<bool>>,
        Option<Bound<'py, PyArray2<f32>>>,
    )> {
        guarded(|| {
            let given = one_per_copy(&actions, self.num_envs, |n, copies| {
                format!("{n} actions for {copies} copies; give one action per copy")
            })?;
            for (i, (&a, slot)) in given.iter().zip(&mut self.actions).enumerate() {
                *slot = usize::try_from(a).map_err(|_| {
                    let e = EnvError::invalid_action(&a, &self.action_space);
                    PyValueError::new_err(format!("copy {i}: {e}; no copy was stepped"))
                })?;
            }
            let out = match self.backend.as_mut() {
                Some(v) => v.step(&self.actions),
                None => Err(VecError::NotReset),
            }
            .map_err(vec_err)?;
            let (n, d) = (self.num_envs, self.obs_len);
            let final_obs = match self.mode {
                AutoresetMode::SameStep => Some(obs_array(py, n, d, out.final_obs())?),
                _ => None,
            };
            let rewards = PyArray1::from_slice(py, out.rewards());
            let terminated = PyArray1::from_slice(py, out.terminated());
            let truncated = PyArray1::from_slice(py, out.truncated());
            let obs = obs_array(py, n, d, out.obs())?;
            Ok((obs, rewards, terminated, truncated, final_obs))
        })
    }

    /// Copy `i`'s regime label (the stationary label for the CartPole vector).
    fn regime(&self, i: usize) -> PyResult<String> {
        guarded(|| {
            if i >= self.num_envs {
                return Err(PyValueError::new_err(format!(
                    "no copy {i}: the vector has {} copies",
                    self.num_envs
                )));
            }
            let scheduler = self.backend.as_ref().and_then(|v| v.scheduler_of(i));
            Ok(match scheduler {
                Some(s) => s.label().to_string(),
                None => self
                    .file
                    .regimes
                    .first()
                    .map(|r| r.label.clone())
                    .unwrap_or_default(),
            })
        })
    }
}

/// A (rows, cols) float32 array holding `flat`.
fn obs_array<'py>(
    py: Python<'py>,
    rows: usize,
    cols: usize,
    flat: &[f32],
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    PyArray1::from_slice(py, flat)
        .reshape([rows, cols])
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}
