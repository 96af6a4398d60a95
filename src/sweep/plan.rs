//! The planned runs of a sweep: ids, paths under the sweep directory, and exact argv.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::file::SweepFile;

/// One run of a sweep, as the local runner and the Ray backend both start it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedRun {
    /// `<task>-<agent>-seed<seed>`, what `perennial run` would name it.
    pub run_id: String,
    /// The world file (absolute).
    pub world: PathBuf,
    /// The world's task id.
    pub task: String,
    /// The agent name.
    pub agent: String,
    /// The run seed.
    pub seed: u64,
    /// `DIR/traces/<run-id>.<format>`.
    pub trace: PathBuf,
    /// `DIR/checkpoints/<run-id>.ckpt.json`.
    pub checkpoint: PathBuf,
    /// `DIR/logs/<run-id>.log`: the run's output, every attempt appended.
    pub log: PathBuf,
    /// `perennial` arguments (without the program) that start the run from step 0.
    pub argv: Vec<String>,
    /// `perennial` arguments that continue the run from its checkpoint.
    pub resume_argv: Vec<String>,
}

impl PlannedRun {
    /// The arguments for the next attempt: continue from the checkpoint when there is one,
    /// else start from step 0 (which rewrites the trace from its first byte).
    pub fn next_argv(&self) -> &[String] {
        if self.checkpoint.is_file() {
            &self.resume_argv
        } else {
            &self.argv
        }
    }
}

/// Every run of a sweep, in file order (worlds, then agents, then seeds), with its paths
/// under `dir`.
pub fn plan(sweep: &SweepFile, dir: &Path) -> Vec<PlannedRun> {
    let ext = sweep.format.extension();
    let format = ext;
    let mut runs = Vec::with_capacity(sweep.len());
    for world in &sweep.worlds {
        for agent in &sweep.agents {
            for &seed in &sweep.seeds {
                let run_id = format!("{}-{agent}-seed{seed}", world.task);
                let trace = dir.join("traces").join(format!("{run_id}.{ext}"));
                let checkpoint = dir.join("checkpoints").join(format!("{run_id}.ckpt.json"));
                let log = dir.join("logs").join(format!("{run_id}.log"));
                let s = |p: &Path| p.to_string_lossy().into_owned();
                let mut argv = vec![
                    "run".to_string(),
                    s(&world.path),
                    "--agent".into(),
                    agent.clone(),
                    "--seed".into(),
                    seed.to_string(),
                    "--steps".into(),
                    sweep.steps.to_string(),
                    "--format".into(),
                    format.into(),
                    "--run-id".into(),
                    run_id.clone(),
                    "--trace".into(),
                    s(&trace),
                    "--checkpoint-every".into(),
                    sweep.checkpoint_every.to_string(),
                    "--checkpoint".into(),
                    s(&checkpoint),
                ];
                if let Some(secs) = sweep.part_seconds {
                    argv.extend(["--part-seconds".into(), secs.to_string()]);
                }
                for option in &sweep.agent_options {
                    argv.extend(["--agent-opt".into(), option.clone()]);
                }
                if let Some(level) = sweep.notify {
                    argv.extend(["--notify".into(), level.as_str().into()]);
                }
                let resume_argv = vec!["run".to_string(), "--resume".into(), s(&checkpoint)];
                runs.push(PlannedRun {
                    run_id,
                    world: world.path.clone(),
                    task: world.task.clone(),
                    agent: agent.clone(),
                    seed,
                    trace,
                    checkpoint,
                    log,
                    argv,
                    resume_argv,
                });
            }
        }
    }
    runs
}
