//! The `perennial` command line as a library: `run`, `fork`, `play`, `check`, `worlds`, `eval`, `episodes`, `serve`.
//!
//! The binary is [`main`]; a researcher's crate that registers its own world calls
//! [`main_with`] with its [`Registry`] and gets the same commands for that world. Callers
//! that are not a process entry point (the Python package, sweeps, tests) call
//! [`run_with_args`], which parses the given arguments, runs the command in-process and
//! returns the exit code: 0 for success, 2 for bad input (an unreadable or invalid world
//! file, an unknown agent, a bad option), 1 for a run that failed.
//!
//! ```no_run
//! use perennial::registry::Registry;
//!
//! fn main() -> std::process::ExitCode {
//!     perennial::cli::main_with(Registry::builtin())
//! }
//! ```
//!
//! This module needs the default `cli` feature (clap and indicatif).

// The flags' doc comments are clap's help text, printed as written: `<run-id>` in them is
// a placeholder, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

/// `println!` for a command's report, through [`emit`]: a reader that stops early
/// (`perennial run ... | head`) ends the output quietly instead of panicking.
macro_rules! out {
    () => {
        $crate::cli::emit("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}

mod args;
mod bench;
mod export;
mod fork;
mod info;
mod play;
mod progress;
mod render;
mod run;
#[cfg(feature = "serve")]
mod serve;
mod signals;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::registry::Registry;
pub use args::{FormatArg, RunArgs};
pub use fork::ForkArgs;
pub use play::PlayArgs;
pub use run::RunPlan;

/// Reinforcement-learning environments whose worlds may never end.
#[derive(Parser)]
#[command(name = "perennial", version, about, long_about = None)]
struct Cli {
    /// Without a command, `perennial` runs the default world as `perennial run` would.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run an agent in a world and write its trace.
    Run(RunArgs),
    /// Score traces: the six continual-RL metrics per configuration interval.
    Eval(crate::eval::EvalArgs),
    /// Export a trace's experience as rLLM episodes (Episode > Trajectory > Step).
    Episodes(crate::episodes::EpisodesArgs),
    /// Run every (world, agent, seed) of a sweep file, resumably, and score them together.
    Sweep(crate::sweep::SweepArgs),
    /// The benchmark: run an agent on versioned suites, and report the table.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Fork a checkpoint: K rollouts of H steps from its saved world state.
    Fork(fork::ForkArgs),
    /// Play the enterprise world through its tools: typed commands in a terminal, or JSON
    /// lines with --json; writes a trace and a transcript.
    Play(play::PlayArgs),
    /// Export traces for other tools.
    #[command(subcommand)]
    Export(export::ExportCommand),
    /// List the shipped world files.
    Worlds,
    /// Serve the enterprise world's tools to OpenEnv and MCP clients.
    #[cfg(feature = "serve")]
    Serve(serve::ServeArgs),
    /// Validate a world file and the agent it names.
    Check {
        /// The world file.
        world_file: std::path::PathBuf,
    },
}

/// An error and the exit code it earns: 2 for bad input, 1 for a run that failed.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    pub(crate) fn input(e: impl std::fmt::Display) -> Self {
        Failure {
            code: 2,
            message: e.to_string(),
        }
    }

    pub(crate) fn run(e: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: e.to_string(),
        }
    }
}

/// The `perennial` binary with the built-in worlds and agents.
pub fn main() -> ExitCode {
    main_with(Registry::builtin())
}

/// The `perennial` command line over `registry`'s worlds and agents, reading the process's
/// arguments.
pub fn main_with(registry: Registry) -> ExitCode {
    execute(&registry, std::env::args_os(), true)
}

/// Parses `args` (the first is the program name, as in `std::env::args_os`), runs the
/// command in this process and returns its exit code. Usage errors print clap's message
/// and return 2; `--help` and `--version` print and return 0.
pub fn run_with_args<I, T>(registry: &Registry, args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    execute(registry, args, false)
}

/// Parses and runs one command. Only the process's own entry point (`handle_signals`)
/// takes over SIGINT and SIGTERM: a caller embedding the command line (the Python package,
/// a sweep) keeps its own handlers.
fn execute<I, T>(registry: &Registry, args: I, handle_signals: bool) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match dispatch(
        registry,
        cli.command.unwrap_or(Command::Run(RunArgs::default())),
        handle_signals,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// Writes a command's report to stdout. A reader that stops early (`perennial eval ... |
/// head`) closes the pipe; that ends the output quietly instead of panicking.
pub(crate) fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn dispatch(registry: &Registry, command: Command, handle_signals: bool) -> Result<(), Failure> {
    match command {
        Command::Run(args) => run::run(registry, &args, handle_signals),
        Command::Eval(args) => crate::eval::run_cli(&args)
            .map(|out| emit(&out))
            .map_err(Failure::input),
        Command::Episodes(args) => {
            render::episodes(registry, &args).map(|summary| emit(&format!("{summary}\n")))
        }
        Command::Sweep(args) => {
            if handle_signals {
                signals::install();
            }
            crate::sweep::run_cli(registry, &args, &signals::RAISED)
                .map(|out| emit(&out))
                .map_err(|e| Failure {
                    code: match e {
                        crate::sweep::SweepError::Interrupted { .. } => {
                            signals::code().unwrap_or(e.exit_code())
                        }
                        _ => e.exit_code(),
                    },
                    message: e.to_string(),
                })
        }
        Command::Bench(command) => bench::run(registry, &command, handle_signals),
        Command::Fork(args) => fork::run(registry, &args),
        Command::Play(args) => play::play(registry, &args),
        Command::Export(export::ExportCommand::L2logger(args)) => export::export_l2logger(&args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::run(&args),
        Command::Worlds => info::worlds(registry),
        Command::Check { world_file } => info::check(registry, &world_file),
    }
}
