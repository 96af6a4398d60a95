//! `perennial eval`: the arguments and what the command prints.

use std::path::PathBuf;

use super::{EvalError, EvalOptions, evaluate, plot_svg, profile_plot_svg};

/// `perennial eval TRACE... [--json] [--plot FILE.svg] [--window W] [--include-payout]
/// [--reference REF...] [--floor TRACE...] [--profile-plot FILE.svg] [--gamma G] [--role R]`
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct EvalArgs {
    /// Trace files, read in the order given: JSON Lines, CSV (by the `.csv` extension) or
    /// Parquet (a `.parquet` directory of part files, or one part file); formats can be mixed.
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
    /// Also print each run's events table (shifts, injected failures, episode ends), found
    /// beside its trace as `<trace-stem>.events.<format>`; with `--json` under `"events"`.
    #[cfg_attr(feature = "cli", arg(long))]
    pub events: bool,
    /// In a trace of a world with roles: the metrics on this role's own reward (its
    /// `role_rewards` entry) instead of the team reward; gap metrics are left out.
    #[cfg_attr(feature = "cli", arg(long, value_name = "ROLE"))]
    pub role: Option<String>,
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
        role: args.role.clone(),
        ..EvalOptions::default()
    };
    // Before any work: a plot must not replace a trace it reads (or the other plot), nor
    // a non-file.
    let unsafe_out = |e: crate::output::OutputError| EvalError::InvalidOptions(e.to_string());
    let outputs: Vec<(&str, &std::path::Path)> = [
        ("--plot", &args.plot),
        ("--profile-plot", &args.profile_plot),
    ]
    .into_iter()
    .filter_map(|(role, p)| Some((role, p.as_deref()?)))
    .collect();
    for (_, path) in &outputs {
        crate::output::check_output(path).map_err(unsafe_out)?;
    }
    let inputs: Vec<(&str, &std::path::Path)> = [
        ("a trace", &args.traces),
        ("a reference", &args.references),
        ("a floor", &args.floors),
    ]
    .into_iter()
    .flat_map(|(role, paths)| paths.iter().map(move |p| (role, p.as_path())))
    .collect();
    crate::output::check_distinct(&inputs, &outputs).map_err(unsafe_out)?;
    for (role, out) in &outputs {
        crate::trace::check_not_companion(role, out, &args.traces)
            .map_err(EvalError::InvalidOptions)?;
    }
    let mut report = evaluate(&args.traces, &options)?;
    // The events tables are read for the plasticity diagnostics too; a missing table is
    // a warning only when the events were asked for.
    let (rows, problems) = read_events(&args.traces, &report.runs);
    let plasticity = super::plasticity_paths(&report.runs, &rows);
    let events = if args.events {
        report.warnings.extend(problems);
        Some(rows)
    } else {
        None
    };
    if let Some(path) = &args.plot {
        plot_svg(&report, path)?;
    }
    if let Some(path) = &args.profile_plot {
        profile_plot_svg(&report, path)?;
    }
    if args.json {
        // Only string-keyed maps, strings and numbers: serializing cannot fail.
        let mut value = serde_json::to_value(&report)
            .expect("a report is made of string-keyed maps, strings and numbers");
        if let (Some(rows), Some(map)) = (events, value.as_object_mut()) {
            let rows = serde_json::to_value(rows).expect("events are strings and numbers");
            map.insert("events".into(), rows);
        }
        if let (false, Some(map)) = (plasticity.is_empty(), value.as_object_mut()) {
            let paths = serde_json::to_value(&plasticity).expect("plasticity paths are numbers");
            map.insert("plasticity".into(), paths);
        }
        let mut json = serde_json::to_string_pretty(&value)
            .expect("a report is made of string-keyed maps, strings and numbers");
        json.push('\n');
        Ok(json)
    } else {
        let mut text = report.to_text();
        text.push_str(&super::plasticity_text(&plasticity));
        if let Some(rows) = events {
            text.push_str(&events_text(&rows));
        }
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

/// The events of the evaluated runs, from the table beside each trace, and the problems
/// met reading them (a missing table, a torn line, a damaged part), which are
/// warnings, never errors.
pub(crate) fn read_events(
    traces: &[PathBuf],
    runs: &[super::RunReport],
) -> (Vec<crate::trace::EventRow>, Vec<String>) {
    let (mut rows, mut problems) = (Vec::new(), Vec::new());
    let mut found = Vec::new();
    for trace in traces.iter().filter(|t| !crate::trace::is_events_table(t)) {
        match crate::trace::find_events(trace) {
            Some(path) if !found.contains(&path) => found.push(path),
            Some(_) => {}
            None => problems.push(format!(
                "{}: no events table beside this trace (`<trace-stem>.events.<format>`)",
                trace.display()
            )),
        }
    }
    for path in found {
        let mut reader = crate::trace::EventReader::open(&path);
        rows.extend((&mut reader).filter(|e| runs.iter().any(|r| r.run_id == e.run_id)));
        problems.extend(reader.problems().iter().cloned());
    }
    (rows, problems)
}

/// The events as a table: run, step, event and what it says.
fn events_text(rows: &[crate::trace::EventRow]) -> String {
    use std::fmt::Write;
    let mut out = format!("\nevents ({})\n", rows.len());
    let width = rows
        .iter()
        .map(|r| r.run_id.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let _ = writeln!(
        out,
        "  {:width$}  {:>10}  {:12}  detail",
        "run", "step", "event"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "  {:width$}  {:>10}  {:12}  {}",
            r.run_id,
            r.step,
            r.event,
            r.detail()
        );
    }
    out
}
