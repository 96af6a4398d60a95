//! The skeleton every example program shares: a `main` that prints the error of its `run` and
//! exits with a failure code, a step budget read from `PERENNIAL_EXAMPLE_STEPS`, the world
//! files shipped in `worlds/`, and a folder in the temp dir for the traces.
//!
//! An example of your own is then its `run` alone:
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! fn main() -> ExitCode {
//!     perennial::example::main_with_steps("my_example", 10_000, |steps| {
//!         println!("running {steps} steps");
//!         Ok(())
//!     })
//! }
//! ```

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::agents::RandomAgent;
use crate::env::{Env, EnvError};
use crate::harness::Agent;
use crate::world_file::TomlFile;
use crate::world_file::WorldFile;

/// The environment variable that sets an example's step budget (the tests set it small).
pub const STEPS_VAR: &str = "PERENNIAL_EXAMPLE_STEPS";

/// Runs `run`; on an error, prints `name: error` to stderr and returns a failure exit code.
pub fn main(name: &str, run: impl FnOnce() -> Result<(), Box<dyn Error>>) -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// [`main`] for a `run` that takes the example's step budget: the one in
/// `PERENNIAL_EXAMPLE_STEPS`, else `default_steps` (see [`step_budget`]). A bad value of the
/// variable is printed like `run`'s errors.
pub fn main_with_steps(
    name: &str,
    default_steps: u64,
    run: impl FnOnce(u64) -> Result<(), Box<dyn Error>>,
) -> ExitCode {
    main(name, || run(step_budget(default_steps)?))
}

/// The step budget in `PERENNIAL_EXAMPLE_STEPS`, or `default` when it is not set. A value
/// that is not a whole number of at least 1 (or not Unicode) is an error naming the variable.
pub fn step_budget(default: u64) -> Result<u64, Box<dyn Error>> {
    count_from_env(STEPS_VAR, default)
}

/// The whole number of at least 1 in the environment variable `var`, or `default` when it is
/// not set; any other value (or one that is not Unicode) is an error naming the variable.
pub fn count_from_env(var: &str, default: u64) -> Result<u64, Box<dyn Error>> {
    let text = match std::env::var(var) {
        Err(std::env::VarError::NotPresent) => return Ok(default),
        other => other.map_err(|e| format!("{var}: {e}"))?,
    };
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{var} is {text:?}; give a whole number of at least 1").into()),
    }
}

/// The path of `file` in the `worlds/` folder shipped with this crate, e.g.
/// `worlds/warehouse.toml` for `"warehouse.toml"`.
pub fn shipped_world_path(file: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("worlds")
        .join(file)
}

/// The world file `file` shipped in this crate's `worlds/` folder, loaded and checked.
///
/// # Errors
///
/// The file does not load (see [`WorldFile::load`]).
pub fn shipped_world(file: &str) -> Result<WorldFile, Box<dyn Error>> {
    Ok(WorldFile::load(&shipped_world_path(file))?)
}

/// The folder `name` in the temp dir, where an example writes its traces; made when missing.
///
/// # Errors
///
/// The folder cannot be made; the error names it.
pub fn output_dir(name: &str) -> Result<PathBuf, Box<dyn Error>> {
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// `steps` steps of a random agent through the `Env` trait alone, resetting when an episode
/// ends (the first episode with seed `seed`, the next ones with 1, 2, ...; the agent draws
/// from `seed` too): the bare loop the harness and the peers are measured against. Returns
/// the total reward.
///
/// # Errors
///
/// The env refuses an action (a world whose action space is not `Discrete`).
pub fn random_loop<E: Env<Action = usize>>(
    env: &mut E,
    steps: u64,
    seed: u64,
) -> Result<f64, EnvError> {
    let mut agent = RandomAgent::new(env.spec().action_space.clone(), seed);
    let mut obs = env.reset(seed);
    let (mut episode, mut total) = (0, 0.0);
    for _ in 0..steps {
        let action = Agent::<E>::act(&mut agent, &obs);
        let t = env.step(&action)?;
        total += t.reward;
        obs = if t.done() {
            episode += 1;
            env.reset(episode)
        } else {
            t.observation
        };
    }
    Ok(total)
}
