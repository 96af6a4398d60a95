//! Episodes, trajectories and steps: a run's experience in the data model of rLLM.
//!
//! [rLLM](https://github.com/rllm-org/rllm) trains language-model agents from
//! `Episode > Trajectory > Step`. This module turns perennial traces recorded with
//! `--record-transitions` into that model, one JSON object per episode per line, so a
//! perennial world can feed an LLM-agent training stack unchanged, and estimates
//! group-relative advantages on the way.
//!
//! # The mapping
//!
//! | rLLM | perennial | notes |
//! |---|---|---|
//! | `Episode` | one env episode of one run | or one chunk of it, with `chunk_steps` |
//! | `Episode.id` | `"{task_id}:{rollout_idx}"` | task id = the trace's `task`; [`Episode::task_id`] splits at the *last* `:` |
//! | rollout index | episodes of that task so far | counted across all input traces, in (run, episode) order, from 0 |
//! | `Episode.task` | the trace's `task` (a JSON string) | |
//! | `termination_reason` | `env_done` / `max_turns_exceeded` / `unknown` | terminated / truncated only / not ended by the env; both flags → `env_done` |
//! | `is_correct` | `false` | a world has no correct answer; no number is invented |
//! | `session_id` | `run_id` | |
//! | `metrics` | `steps`, `reward` | |
//! | `info` (metadata) | `run_id`, `seed`, `algorithm_id`, `env_episode`, `chunk`, `first_step`, `last_step`, `first_episode_step`, `regimes` | |
//! | `artifacts` | `{}` | |
//! | `Trajectory` | the single agent's steps, `name = "agent"` | `uid = "{run_id}:{episode}:{first_step}"` |
//! | `Trajectory.reward` | sum of its step rewards | |
//! | `Trajectory.signals` | each `components` and `payout` term summed over the trajectory | |
//! | `Step.observation` (`input`) | the trace's `obs`, the observation acted on | |
//! | `Step.action` | the trace's `action` | |
//! | `Step.output` | `null` | a perennial agent's only output is its action |
//! | `Step.reward`, `done` | `reward`, `terminated \|\| truncated` | `done` is true only where the env ended the episode, never at a chunk cut |
//! | `Step.mc_return` | undiscounted reward-to-go within the trajectory | |
//! | `Step.advantage` | the trajectory's advantage, on every step | `null` without an estimator |
//! | `Step.info` (metadata) | `step`, `episode_step`, `regime`, `regime_origin`, `terminated`, `truncated`, `ceiling`, `components`, `payout` | maps only when non-empty |
//!
//! The JSON uses the keys of rLLM's `to_dict` (metadata under `info`; on steps the
//! observation under `observation` and the language-model payloads, `prompt_ids`,
//! `chat_completions`, ..., written empty), so rLLM's `Episode.from_dict` reads a line
//! as is; rLLM's core fields that `to_dict` leaves out (`Step.id`, `Step.output`,
//! `Trajectory.signals`, `Episode.artifacts`) are written too.
//!
//! # Episodes in a persistent world
//!
//! Only the environment ends an episode. A run that stops on its step budget leaves its
//! last episode unfinished, and a persistent world's run is one such episode: it is
//! exported `unknown`. `chunk_steps` cuts long episodes into fixed-length chunks, each its
//! own rollout; a chunk is `unknown` unless the env ended the episode on its last step.
//! A chunk cut ends nothing in the world; it only sizes the training examples.
//!
//! # Groups and advantages
//!
//! Trajectories group by `"{task_id}:{name}"`; every rollout of one task by one agent role
//! is compared with the others. [`AdvantageEstimator`] gives `grpo`, `rloo` and
//! `reinforce`. A group spans all input traces, so [`export`] reads them twice: once
//! for the rewards (one number per trajectory in memory), once to write.
//!
//! # Examples
//!
//! ```
//! use perennial::prelude::*;
//! use perennial::agents::RandomAgent;
//! use perennial::episodes::{export, read_episodes, AdvantageEstimator, ExportOptions};
//! use perennial::harness::{Harness, HarnessConfig};
//! use perennial::trace::TraceFormat;
//!
//! let dir = std::env::temp_dir().join(format!("perennial-episodes-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let trace_path = dir.join("run.jsonl");
//!
//! let env = CartPole::new(CartPoleParams::default());
//! let agent = RandomAgent::new(env.spec().action_space.clone(), 3);
//! let harness = Harness::new(env, agent, 3);
//! let config = HarnessConfig { steps: 200, auto_reset: true, record_transitions: true, ..HarnessConfig::default() };
//! harness.trace(&trace_path, TraceFormat::Jsonl).config(config).run()?;
//!
//! let out = dir.join("episodes.jsonl");
//! let options = ExportOptions { advantage: Some(AdvantageEstimator::Grpo), ..ExportOptions::default() };
//! let summary = export(&[&trace_path], &out, &options)?;
//! assert_eq!(summary.steps, 200);
//!
//! let first = read_episodes(&out)?.next().unwrap()?;
//! assert_eq!(first.id, "cartpole:0");
//! assert_eq!(first.trajectories[0].name, "agent");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod advantage;
mod calls;
mod cli;
mod desk_log;
mod error;
mod export;
mod model;
mod roles;
mod summary;
pub mod transcript;

pub use advantage::{AdvantageEstimator, GRPO_EPSILON, assign_advantages};
pub(crate) use cli::without_their_events_tables;
pub use cli::{EpisodesArgs, RenderFormat, run_cli};
pub(crate) use desk_log::DeskLog;
pub use error::EpisodeError;
pub use export::{AGENT_NAME, EpisodeReader, ExportOptions, export, export_calls, read_episodes};
pub use model::{Episode, Step, TerminationReason, Trajectory};
pub use summary::{ExportSummary, GroupSummary};
pub use transcript::{
    Conversation, RecordedToolCall, TranscriptCall, TranscriptError, TranscriptReader,
    TranscriptWriter,
};
