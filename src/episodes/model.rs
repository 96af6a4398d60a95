//! The rLLM data model: `Episode` > `Trajectory` > `Step`, serialized in rLLM's `to_dict` shape.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::transcript::Conversation;

/// Why an episode ended, with rLLM's `TerminationReason` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminationReason {
    /// The env returned `terminated`: a genuine terminal state (`env_done`).
    EnvDone,
    /// The env returned `truncated` only: a cutoff it imposed itself (`max_turns_exceeded`).
    MaxTurnsExceeded,
    /// The run stopped, or a chunk was cut, before the env ended the episode (`unknown`).
    /// The normal case in a persistent world.
    Unknown,
}

impl TerminationReason {
    /// Every reason, in the order summaries list them.
    pub const ALL: [TerminationReason; 3] = [
        TerminationReason::EnvDone,
        TerminationReason::MaxTurnsExceeded,
        TerminationReason::Unknown,
    ];

    /// The reason for an episode whose last step carried these flags. When both are true
    /// (the pole fell on the time-limit step) the terminal state wins: `env_done`.
    pub fn from_flags(terminated: bool, truncated: bool) -> Self {
        match (terminated, truncated) {
            (true, _) => TerminationReason::EnvDone,
            (false, true) => TerminationReason::MaxTurnsExceeded,
            (false, false) => TerminationReason::Unknown,
        }
    }

    /// The serialized name, e.g. `env_done`.
    pub fn as_str(self) -> &'static str {
        match self {
            TerminationReason::EnvDone => "env_done",
            TerminationReason::MaxTurnsExceeded => "max_turns_exceeded",
            TerminationReason::Unknown => "unknown",
        }
    }
}

impl fmt::Display for TerminationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One env step, or one model call, as rLLM sees it: what the agent observed, what it did,
/// what it earned.
///
/// Serialized with the keys of rLLM's `Step.to_dict` (so `Step.from_dict` reads it): the
/// observation under `observation`, the metadata under `info`, the conversation under
/// `chat_completions`, and the token-level payloads (`prompt_ids`, `response_ids`,
/// `logprobs`, `model_output`, `routing_matrices`, `weight_version`) written empty. A
/// numeric agent's Step has an empty conversation, `thought` and `model_response`; a
/// model call's (an export with transcripts) carries them. `id` and `output` are rLLM's core
/// fields that `to_dict` leaves out; they are written too. Reading accepts `input` and
/// `metadata` as aliases of `observation` and `info`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Step {
    /// `"{run_id}:{step}"`: unique within a run, stable across exports.
    #[serde(default)]
    pub id: String,
    /// The observation the agent acted on (the trace's `obs`).
    #[serde(rename = "observation", alias = "input")]
    pub input: Value,
    /// The model's raw output in rLLM; null for a perennial agent, whose only output is
    /// its action.
    #[serde(default)]
    pub output: Value,
    /// The action taken (the trace's `action`: a number or an array).
    pub action: Value,
    /// The step's total reward.
    pub reward: f64,
    /// True on the step where the env ended the episode (`terminated` or `truncated`).
    pub done: bool,
    /// Undiscounted reward-to-go within the trajectory, this step included.
    #[serde(default)]
    pub mc_return: f64,
    /// The trajectory's advantage, broadcast to each of its steps; null until estimated.
    #[serde(default)]
    pub advantage: Option<f64>,
    /// The rest of the trace row: `step`, `episode_step`, `regime`, `regime_origin`,
    /// `terminated`, `truncated`, `ceiling`, and `components` / `payout` when non-empty.
    #[serde(rename = "info", alias = "metadata", default)]
    pub metadata: BTreeMap<String, Value>,
    /// The conversation up to and including the model's reply of this step, in OpenAI chat
    /// format; empty for a numeric agent.
    #[serde(default)]
    pub chat_completions: Conversation,
    /// The model's reasoning; empty for a numeric agent.
    #[serde(default)]
    pub thought: String,
    /// The model's reply text; empty for a numeric agent.
    #[serde(default)]
    pub model_response: String,
}

/// Step as rLLM's `to_dict` writes it; borrows, so writing a step copies nothing.
#[derive(Serialize)]
struct StepDict<'a> {
    id: &'a str,
    observation: &'a Value,
    output: &'a Value,
    action: &'a Value,
    reward: f64,
    done: bool,
    mc_return: f64,
    advantage: Option<f64>,
    info: &'a BTreeMap<String, Value>,
    prompt_ids: [u8; 0],
    response_ids: [u8; 0],
    logprobs: [u8; 0],
    routing_matrices: Option<()>,
    chat_completions: &'a Conversation,
    thought: &'a str,
    model_response: &'a str,
    model_output: Option<()>,
    weight_version: Option<()>,
}

impl Serialize for Step {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StepDict {
            id: &self.id,
            observation: &self.input,
            output: &self.output,
            action: &self.action,
            reward: self.reward,
            done: self.done,
            mc_return: self.mc_return,
            advantage: self.advantage,
            info: &self.metadata,
            prompt_ids: [],
            response_ids: [],
            logprobs: [],
            routing_matrices: None,
            chat_completions: &self.chat_completions,
            thought: &self.thought,
            model_response: &self.model_response,
            model_output: None,
            weight_version: None,
        }
        .serialize(serializer)
    }
}

/// The steps of one agent role within an episode.
///
/// Serialized with the keys of rLLM's `Trajectory.to_dict` (`uid`, `name`, `task`,
/// `steps`, `reward`, `info`) plus `signals`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// `"{run_id}:{episode}:{first_step}"`: unique per run, stable across exports.
    pub uid: String,
    /// The agent role; `"agent"` for the single agent of a perennial run.
    pub name: String,
    /// The task, as on the episode.
    pub task: Value,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The trajectory's reward: the sum of its step rewards.
    pub reward: f64,
    /// Each reward component's and payout's sum over the trajectory (empty for a world
    /// without a reward specification). Component and payout names never collide in a
    /// reward specification, so one flat map holds both.
    #[serde(default)]
    pub signals: BTreeMap<String, f64>,
    /// `algorithm_id`: the policy that played this role.
    #[serde(rename = "info", alias = "metadata", default)]
    pub metadata: BTreeMap<String, Value>,
}

impl Trajectory {
    /// Sets `advantage` on every step, as rLLM broadcasts a trajectory's advantage.
    pub fn broadcast_advantage(&mut self, advantage: f64) {
        for step in &mut self.steps {
            step.advantage = Some(advantage);
        }
    }
}

/// One rollout of a task: an env episode of one run, or a fixed-length chunk of one.
///
/// Serialized with the keys of rLLM's `Episode.to_dict` (`id`, `task`,
/// `termination_reason`, `is_correct`, `session_id`, `trajectories`, `metrics`, `info`)
/// plus `artifacts`.
///
/// # Examples
///
/// ```
/// use perennial::episodes::{Episode, TerminationReason};
///
/// let episode = Episode {
///     id: Episode::make_id("warehouse:north", 7),
///     task: "warehouse:north".into(),
///     termination_reason: TerminationReason::Unknown,
///     is_correct: false,
///     session_id: None,
///     trajectories: Vec::new(),
///     artifacts: Default::default(),
///     metrics: Default::default(),
///     metadata: Default::default(),
/// };
/// assert_eq!(episode.id, "warehouse:north:7");
/// assert_eq!(episode.task_id(), "warehouse:north");
/// assert_eq!(episode.rollout_idx(), Some(7));
/// assert_eq!(episode.group_key("agent"), "warehouse:north:agent");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// `"{task_id}:{rollout_idx}"`.
    pub id: String,
    /// The task: the trace's `task` column.
    pub task: Value,
    /// Why the episode ended.
    pub termination_reason: TerminationReason,
    /// rLLM's correctness flag. A perennial world has no correct answer, so the export
    /// writes false rather than invent one.
    pub is_correct: bool,
    /// The run the episode came from (its `run_id`): rLLM's session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// One trajectory per agent role.
    pub trajectories: Vec<Trajectory>,
    /// Files or blobs produced alongside the episode (none from a trace).
    #[serde(default)]
    pub artifacts: BTreeMap<String, Value>,
    /// `steps` and `reward` (the sum over all trajectories).
    #[serde(default)]
    pub metrics: BTreeMap<String, f64>,
    /// Where in the run the episode lies: `run_id`, `seed`, `algorithm_id`, `env_episode`,
    /// `chunk`, `first_step`, `last_step`, `first_episode_step`, and the `regimes` in force,
    /// in order of first appearance.
    #[serde(rename = "info", alias = "metadata", default)]
    pub metadata: BTreeMap<String, Value>,
}

impl Episode {
    /// The id of rollout `rollout_idx` of task `task_id`: `"{task_id}:{rollout_idx}"`.
    pub fn make_id(task_id: &str, rollout_idx: u64) -> String {
        format!("{task_id}:{rollout_idx}")
    }

    /// The task id: the id up to its last `:` (task ids may contain `:` themselves), or
    /// the whole id when it has none.
    pub fn task_id(&self) -> &str {
        self.id.rsplit_once(':').map_or(&self.id, |(task, _)| task)
    }

    /// The rollout index: the number after the id's last `:`, if there is one.
    pub fn rollout_idx(&self) -> Option<u64> {
        self.id.rsplit_once(':')?.1.parse().ok()
    }

    /// The advantage group of this episode's trajectory named `name`: `"{task_id}:{name}"`.
    pub fn group_key(&self, name: &str) -> String {
        format!("{}:{name}", self.task_id())
    }
}

/// A trajectory of `steps`, their rewards-to-go filled in.
pub(super) fn trajectory(
    uid: String,
    name: String,
    task: &Value,
    mut steps: Vec<Step>,
    signals: BTreeMap<String, f64>,
    metadata: BTreeMap<String, Value>,
) -> Trajectory {
    let mut to_go = 0.0;
    for s in steps.iter_mut().rev() {
        to_go += s.reward;
        s.mc_return = to_go;
    }
    Trajectory {
        uid,
        name,
        task: task.clone(),
        reward: steps.iter().map(|s| s.reward).sum(),
        steps,
        signals,
        metadata,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(id: &str) -> Episode {
        Episode {
            id: id.into(),
            task: Value::Null,
            termination_reason: TerminationReason::Unknown,
            is_correct: false,
            session_id: None,
            trajectories: Vec::new(),
            artifacts: BTreeMap::new(),
            metrics: BTreeMap::new(),
            metadata: BTreeMap::new(),
        }
    }

    #[test]
    fn ids_split_at_the_last_colon() {
        let e = episode("a:b:c:12");
        assert_eq!(e.task_id(), "a:b:c");
        assert_eq!(e.rollout_idx(), Some(12));
        assert_eq!(e.group_key("agent"), "a:b:c:agent");
    }

    #[test]
    fn an_id_without_an_index_has_no_rollout_idx() {
        assert_eq!(episode("cartpole").task_id(), "cartpole");
        assert_eq!(episode("cartpole").rollout_idx(), None);
        assert_eq!(episode("cartpole:x").rollout_idx(), None);
    }

    #[test]
    fn terminated_wins_over_truncated() {
        assert_eq!(
            TerminationReason::from_flags(true, true),
            TerminationReason::EnvDone
        );
        assert_eq!(
            TerminationReason::from_flags(false, true),
            TerminationReason::MaxTurnsExceeded
        );
        assert_eq!(
            TerminationReason::from_flags(false, false),
            TerminationReason::Unknown
        );
    }

    #[test]
    fn step_is_written_with_rllm_to_dict_keys() {
        let step = Step {
            id: "r:0".into(),
            input: serde_json::json!([0.5]),
            output: Value::Null,
            action: serde_json::json!(1),
            reward: 1.0,
            done: false,
            mc_return: 3.0,
            advantage: None,
            metadata: BTreeMap::new(),
            chat_completions: Conversation::new(),
            thought: String::new(),
            model_response: String::new(),
        };
        let v = serde_json::to_value(&step).unwrap();
        for key in [
            "prompt_ids",
            "response_ids",
            "logprobs",
            "chat_completions",
            "observation",
            "thought",
            "action",
            "model_response",
            "model_output",
            "info",
            "reward",
            "done",
            "mc_return",
            "advantage",
            "weight_version",
        ] {
            assert!(v.get(key).is_some(), "missing {key} in {v}");
        }
        assert_eq!(v["prompt_ids"], serde_json::json!([]));
        assert_eq!(v["chat_completions"], serde_json::json!([]));
        assert_eq!(v["thought"], "");
        let back: Step = serde_json::from_value(v).unwrap();
        assert_eq!(back, step);
    }
}
