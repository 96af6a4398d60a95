//! `perennial export`: traces for other tools (the L2Logger layout of DARPA's l2metrics).

use std::path::PathBuf;

use clap::Subcommand;

use super::Failure;

/// `perennial export ...`
#[derive(Subcommand)]
pub(super) enum ExportCommand {
    /// Write the L2Logger log layout (one scenario folder per run, one block per
    /// configuration interval), so `python -m l2metrics -l OUT/<run-id> -p reward` scores it.
    L2logger(L2LoggerArgs),
}

#[derive(clap::Args)]
pub(super) struct L2LoggerArgs {
    /// Trace files or Parquet directories, read in the order given.
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// The logging base folder; each run becomes `OUT/<run-id>/`.
    #[arg(long, value_name = "OUT")]
    out: PathBuf,
    /// Steps averaged into one L2Logger experience.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..))]
    steps_per_exp: u64,
}

pub(super) fn export_l2logger(args: &L2LoggerArgs) -> Result<(), Failure> {
    let options = crate::trace::L2LoggerOptions {
        steps_per_exp: args.steps_per_exp,
    };
    for run in
        crate::trace::export_l2logger(&args.traces, &args.out, &options).map_err(Failure::input)?
    {
        out!(
            "{}: {} blocks, {} experiences -> {} (score it: python -m l2metrics -l {} -p reward --no-plot)",
            run.run_id,
            run.blocks,
            run.experiences,
            run.dir.display(),
            run.dir.display()
        );
    }
    Ok(())
}
