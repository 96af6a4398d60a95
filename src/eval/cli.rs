//! `perennial eval`: the arguments and what the command prints.

use std::path::PathBuf;

use super::{EvalError, EvalOptions, evaluate, plot_svg};

/// `perennial eval TRACE... [--json] [--plot FILE.svg] [--window W] [--include-payout]`
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct EvalArgs {
    /// Trace files (JSON Lines, or CSV by the `.csv` extension), read in the order given.
    #[arg(required = true, num_args = 1.., value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also draw the rolling-mean reward with the intervals shaded into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Smoothing window W, in steps.
    #[arg(long, default_value_t = 100, value_name = "W",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub window: usize,
    /// Count episode-end payouts in the reward the metrics smooth.
    #[arg(long)]
    pub include_payout: bool,
}

/// Runs `perennial eval`: returns what to print (tables, or JSON with `--json`) and writes
/// the plot when `--plot` is given.
///
/// # Errors
///
/// Any [`EvalError`]; the binary prints it and exits with code 2.
pub fn run_cli(args: &EvalArgs) -> Result<String, EvalError> {
    let options = EvalOptions {
        window: args.window,
        include_payout: args.include_payout,
        ..EvalOptions::default()
    };
    if let Some(path) = &args.plot {
        // Before any work: the plot must not replace a trace it reads, nor a non-file.
        crate::output::check_output(path).map_err(|e| EvalError::InvalidOptions(e.to_string()))?;
        let inputs: Vec<(&str, &std::path::Path)> = args
            .traces
            .iter()
            .map(|t| ("a trace", t.as_path()))
            .collect();
        crate::output::check_distinct(&inputs, &[("--plot", path)])
            .map_err(|e| EvalError::InvalidOptions(e.to_string()))?;
    }
    let report = evaluate(&args.traces, &options)?;
    if let Some(path) = &args.plot {
        plot_svg(&report, path)?;
    }
    if args.json {
        // Only string-keyed maps, strings and numbers: serializing cannot fail.
        let mut json = serde_json::to_string_pretty(&report)
            .expect("a report is made of string-keyed maps, strings and numbers");
        json.push('\n');
        Ok(json)
    } else {
        Ok(report.to_text())
    }
}
