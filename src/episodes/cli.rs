//! The `perennial episodes` command: arguments and the run that prints a summary.

use std::path::PathBuf;

use super::advantage::AdvantageEstimator;
use super::error::EpisodeError;
use super::export::{ExportOptions, export_calls};

/// `perennial episodes TRACE... --out FILE.jsonl [--advantage grpo|rloo|reinforce]
/// [--chunk-steps N]`: exports traces as rLLM episodes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct EpisodesArgs {
    /// Trace files (JSON Lines, CSV or Parquet) written with --record-transitions, read in
    /// order.
    #[cfg_attr(feature = "cli", arg(required = true, value_name = "TRACE"))]
    pub traces: Vec<PathBuf>,
    /// Where to write the episodes, one JSON object per line.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE.jsonl"))]
    pub out: PathBuf,
    /// Estimate advantages per group "{task_id}:{name}" and broadcast them to every step.
    #[cfg_attr(feature = "cli", arg(long, value_enum))]
    pub advantage: Option<AdvantageEstimator>,
    /// Cut each episode into chunks of at most N steps (for a persistent world's one long
    /// episode); a chunk the env did not end is `unknown`.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub chunk_steps: Option<u64>,
    /// Transcripts of the traces' runs (`<run-id>.transcript.jsonl`, one per run, matched
    /// by run id): write one Step per model call, with its conversation, instead of one
    /// per trace row. Repeatable.
    #[cfg_attr(feature = "cli", arg(long, value_name = "T", num_args = 1..))]
    pub transcripts: Vec<PathBuf>,
    /// Render a numeric agent's enterprise-world trace as tool-call transcripts (`text`:
    /// the `render_text` prompt each hour; `json`: `render_json`), replayed from its run
    /// manifest, and write their Steps: supervised fine-tuning data.
    #[cfg_attr(feature = "cli", arg(long, value_enum, conflicts_with = "transcripts"))]
    pub render: Option<RenderFormat>,
    /// With --render: also write the rendered transcript here (one trace only).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE", requires = "render"))]
    pub transcript_out: Option<PathBuf>,
}

/// What `--render` shows the model each hour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum RenderFormat {
    /// `render_text`: one hour in a few hundred characters.
    Text,
    /// `render_json`: the same hour, structured.
    Json,
}

/// `traces` without the events tables of traces also given: a glob such as
/// `DIR/rollout-*.jsonl` matches `rollout-0.events.jsonl` beside `rollout-0.jsonl`. An
/// events table given alone is kept, and refused by the reader as not a trace.
pub(crate) fn without_their_events_tables(traces: &[PathBuf]) -> Vec<PathBuf> {
    let given: std::collections::HashSet<&PathBuf> = traces.iter().collect();
    traces
        .iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let beside = p.with_file_name(name.replacen(".events.", ".", 1));
            !(crate::trace::is_events_table(p) && given.contains(&beside))
        })
        .cloned()
        .collect()
}

/// Runs the command: writes the episodes and returns a one-paragraph summary to print.
///
/// # Errors
///
/// See [`export`](crate::episodes::export); the caller prints the error and exits with code 2.
pub fn run_cli(args: &EpisodesArgs) -> Result<String, EpisodeError> {
    if args.render.is_some() {
        return Err(EpisodeError::InvalidArgument(
            "--render replays the world, which needs the command line's world registry; run `perennial episodes --render`".into(),
        ));
    }
    let options = ExportOptions {
        chunk_steps: args.chunk_steps,
        advantage: args.advantage,
    };
    let traces = without_their_events_tables(&args.traces);
    let summary = export_calls(&traces, &args.transcripts, &args.out, &options)?;
    Ok(format!("Wrote {}: {summary}", args.out.display()))
}
