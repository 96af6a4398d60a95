//! `perennial run`'s flags.

use std::path::PathBuf;

/// `perennial run [WORLD_FILE] [--agent NAME] [--agent-opt KEY=VALUE]... [--steps N] ...`
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunArgs {
    /// World definition file [default: worlds/warehouse.toml].
    pub world_file: Option<PathBuf>,
    /// Agent: random, actor-critic, ppo, ppo-replay, ppo-ewc, ppo-context, ppo-plastic,
    /// or one of the world's own (balance for CartPole; base-stock, adaptive-base-stock
    /// and oracle for the enterprise world) [default: the world file's `[harness] agent`,
    /// else random]; `perennial check` lists the agents of a world file.
    #[arg(long)]
    pub agent: Option<String>,
    /// An agent option, overriding the world file's `[agent.<name>]` table; KEY may be
    /// dotted (`baseline.reorder_point=40`), VALUE is TOML (a bare word is a string).
    /// Repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    pub agent_opt: Vec<String>,
    /// Step budget [default: the world file's, else 100000].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Run seed [default: the world file's, else 0].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Steps per rollout window [default: the world file's, else 256].
    #[arg(long)]
    pub window_steps: Option<usize>,
    /// Reset the env when it ends an episode and go on (off unless the world file says so).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub auto_reset: Option<bool>,
    /// Trace file [default: runs/<run-id>.<format>].
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Trace format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: FormatArg,
    /// Run id [default: <task>-<agent>-seed<seed>, with the world file's name after the task
    /// when it differs from the task; the same run twice writes the same bytes].
    #[arg(long)]
    pub run_id: Option<String>,
    /// Also write the `obs` and `action` columns.
    #[arg(long)]
    pub record_transitions: bool,
    /// Parquet: a window's flush cuts a part file once this many seconds have passed since
    /// the last (a killed run loses at most about that much); 0 cuts one at every window and
    /// waits until it is renamed into place, so a killed run keeps every row a JSON Lines
    /// trace would [default: 1]. With another format it is an error.
    #[arg(long, value_name = "SECS", value_parser = part_seconds, allow_negative_numbers = true)]
    pub part_seconds: Option<f64>,
    /// Write no trace (for timing).
    #[arg(long, conflicts_with = "trace")]
    pub no_trace: bool,
    /// Write a checkpoint every N steps (atomically), to continue a killed run with --resume.
    #[arg(long, value_name = "N")]
    pub checkpoint_every: Option<u64>,
    /// Checkpoint file [default: runs/<run-id>.ckpt.json].
    #[arg(long, requires = "checkpoint_every")]
    pub checkpoint: Option<PathBuf>,
    /// Continue the run saved in this checkpoint: the trace is cut back to the checkpoint's
    /// step and appended to; every other flag comes from the checkpoint.
    #[arg(long, value_name = "CHECKPOINT", conflicts_with_all = ["world_file", "agent", "agent_opt", "steps", "seed", "window_steps", "auto_reset", "trace", "run_id", "record_transitions", "part_seconds", "no_trace", "checkpoint_every", "notify"])]
    pub resume: Option<PathBuf>,
    /// With --resume: continue even though the world file changed since the checkpoint
    /// (the run then follows the edited file, and its trace differs from an uninterrupted one).
    #[arg(long, requires = "resume")]
    pub allow_world_change: bool,
    /// What the agent is told at a regime shift: none, flag, delta or label [default: the
    /// world file's `[notify] level`, else none].
    #[arg(long, value_name = "LEVEL")]
    pub notify: Option<crate::regime::NotifyLevel>,
}

/// `--format`.
#[derive(Clone, Copy, Debug, Default, clap::ValueEnum)]
pub enum FormatArg {
    /// JSON Lines.
    #[default]
    Jsonl,
    /// CSV.
    Csv,
    /// A directory of Parquet part files.
    Parquet,
}

/// Parses `--part-seconds`: a number of seconds, 0 or more.
fn part_seconds(s: &str) -> Result<f64, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    crate::trace::part_interval(secs, "--part-seconds").map(|_| secs)
}
