//! The skeleton every example program shares: a `main` that prints the error of its `run` and
//! exits with a failure code, and a step budget read from `PERENNIAL_EXAMPLE_STEPS`.
//!
//! An example of your own is then its `run` alone:
//!
//! ```no_run
//! use std::error::Error;
//! use std::process::ExitCode;
//!
//! fn main() -> ExitCode {
//!     perennial::example::main("my_example", || {
//!         let steps = perennial::example::step_budget(10_000)?;
//!         println!("running {steps} steps");
//!         Ok(())
//!     })
//! }
//! ```

use std::error::Error;
use std::process::ExitCode;

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

/// The step budget in `PERENNIAL_EXAMPLE_STEPS`, or `default` when it is not set. A value
/// that is not a whole number of at least 1 (or not Unicode) is an error naming the variable.
pub fn step_budget(default: u64) -> Result<u64, Box<dyn Error>> {
    let text = match std::env::var(STEPS_VAR) {
        Err(std::env::VarError::NotPresent) => return Ok(default),
        other => other.map_err(|e| format!("{STEPS_VAR}: {e}"))?,
    };
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{STEPS_VAR} is {text:?}; give a step count of at least 1").into()),
    }
}
