//! `perennial eval`: the arguments and what the command prints.

use std::path::PathBuf;

use super::{EvalError, EvalOptions, evaluate, plot_svg, profile_plot_svg};

/// `perennial eval TRACE... [--json] [--plot FILE.svg] [--window W] [--include-payout]
/// [--reference REF...] [--floor TRACE...] [--profile-plot FILE.svg] [--gamma G]`
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct EvalArgs {
    /// Trace files (JSON Lines, or CSV by the `.csv` extension), read in the order given.
    #[cfg_attr(feature = "cli", arg(required = true, num_args = 1.., value_name = "TRACE"))]
    pub traces: Vec<PathBuf>,
    /// Print the report as JSON instead of tables.
    #[cfg_attr(feature = "cli", arg(long))]
    pub json: bool,
    /// Also draw the rolling-mean reward with the intervals shaded into this SVG file.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE.svg"))]
    pub plot: Option<PathBuf>,
    /// Smoothing window W, in steps.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 100, value_name = "W",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)))]
    pub window: usize,
    /// Count episode-end payouts in the reward the metrics smooth.
    #[cfg_attr(feature = "cli", arg(long))]
    pub include_payout: bool,
    /// Reference traces (e.g. an oracle's): each run is paired with the reference run of the
    /// same task and seed for `regret` and state-adjusted forgetting.
    #[cfg_attr(feature = "cli", arg(long = "reference", num_args = 1.., value_name = "REF"))]
    pub references: Vec<PathBuf>,
    /// Floor traces (e.g. a random agent's), paired the same way, for `normalized_regret`;
    /// with references too, the aggregate scores are normalized between the two.
    #[cfg_attr(feature = "cli", arg(long = "floor", num_args = 1.., value_name = "TRACE"))]
    pub floors: Vec<PathBuf>,
    /// Also draw the aggregate performance profiles into this SVG file.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE.svg"))]
    pub profile_plot: Option<PathBuf>,
    /// The γ of the aggregate optimality gap (scores above it count as γ).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 1.0, value_name = "G",
          value_parser = finite))]
    pub gamma: f64,
}

#[cfg(feature = "cli")]
fn finite(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a finite number")),
    }
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
        references: args.references.clone(),
        floors: args.floors.clone(),
        gamma: args.gamma,
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
    if let Some(path) = &args.profile_plot {
        profile_plot_svg(&report, path)?;
    }
    if args.json {
        // Only string-keyed maps, strings and numbers: serializing cannot fail.
        let mut json = serde_json::to_string_pretty(&report)
            .expect("a report is made of string-keyed maps, strings and numbers");
        json.push('\n');
        Ok(json)
    } else {
        let mut text = report.to_text();
        let summaries = crate::trace::manifest_summaries(&args.traces, &report.runs);
        if !summaries.is_empty() {
            text.push_str("\nmanifests\n");
            for line in summaries {
                text.push_str(&format!("  {line}\n"));
            }
        }
        Ok(text)
    }
}
