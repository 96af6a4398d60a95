//! `perennial bench run` and `perennial bench report`.

use super::{Failure, emit, signals};
use crate::bench::{BenchError, BenchReportArgs, BenchRunArgs};
use crate::registry::Registry;

/// The bench commands.
#[derive(clap::Subcommand)]
pub(crate) enum BenchCommand {
    /// Run an agent on suites (every track and seed, with the references), resumably, into
    /// --out.
    Run(BenchRunArgs),
    /// Check results files and print and write the table.
    Report(BenchReportArgs),
}

fn failure(e: &BenchError) -> Failure {
    let code = match e {
        BenchError::Sweep(crate::sweep::SweepError::Interrupted { .. }) => {
            signals::code().unwrap_or(e.exit_code())
        }
        _ => e.exit_code(),
    };
    Failure {
        code,
        message: e.to_string(),
    }
}

pub(crate) fn run(
    registry: &Registry,
    command: &BenchCommand,
    handle_signals: bool,
) -> Result<(), Failure> {
    match command {
        BenchCommand::Run(args) => {
            if handle_signals {
                signals::install();
            }
            crate::bench::run_cli(registry, args, &signals::RAISED)
        }
        BenchCommand::Report(args) => crate::bench::report_cli(args),
    }
    .map(|out| emit(&out))
    .map_err(|e| failure(&e))
}
