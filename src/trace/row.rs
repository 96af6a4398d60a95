//! The trace row: the DESIGN columns, owned for reading and borrowed for writing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::env::{Env, Transition};
use crate::regime::{NotifyLevel, Origin};
use crate::reward::Ceiling;

/// The trace columns in DESIGN order (`obs` and `action` follow when transitions are
/// recorded). CSV replaces `components` and `payout` with one `c.<name>` / `p.<name>`
/// column per term.
pub const COLUMNS: [&str; 15] = [
    "run_id",
    "seed",
    "algorithm_id",
    "task",
    "step",
    "episode",
    "episode_step",
    "reward",
    "components",
    "payout",
    "regime",
    "regime_origin",
    "terminated",
    "truncated",
    "ceiling",
];

/// The optional column after `ceiling`: the world's expected-reward bound
/// ([`Env::expected_bound`]). Written only for a world that declares one, so the traces of
/// other worlds keep the columns and bytes they always had; readers take a missing column
/// as null.
pub const BOUND: &str = "bound";

/// The optional column after `bound`: each role's own reward (`{role: reward}`), written
/// only for a world run by several roles ([`Env::role_names`]); CSV writes one
/// `r.<role>` column per role, Parquet a struct. Readers take a missing column as no roles.
pub const ROLE_REWARDS: &str = "role_rewards";

/// Who ran what: the columns that are the same on every row of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunIdentity {
    /// Unique per run.
    pub run_id: String,
    /// The run seed.
    pub seed: u64,
    /// The agent's id.
    pub algorithm_id: String,
    /// World or task id, e.g. `warehouse`.
    pub task: String,
    /// What the agent is told about regime shifts. Written as a `notify` column right
    /// after `task` only when it is not `none`, so a run that tells nothing writes the
    /// columns (and bytes) it always wrote.
    #[serde(default, skip_serializing_if = "NotifyLevel::is_none")]
    pub notify: NotifyLevel,
}

/// A recorded observation (`--record-transitions`): the agent's, or in a world with roles
/// each role's view, by role (the trace's `obs` is then `{role: [floats]}` and its
/// `action` `{role: index}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecordedObs {
    /// The agent's observation.
    Flat(Vec<f64>),
    /// Each role's observation, by role.
    Roles(BTreeMap<String, Vec<f64>>),
}

/// One trace row as read back from a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceRow {
    /// Unique per run.
    pub run_id: String,
    /// Run seed.
    pub seed: u64,
    /// The agent's id.
    pub algorithm_id: String,
    /// World or task id.
    pub task: String,
    /// The run's notify level; the column is absent (and this `none`) when the agent was
    /// not told about shifts.
    #[serde(default, skip_serializing_if = "NotifyLevel::is_none")]
    pub notify: NotifyLevel,
    /// Global step index from 0, contiguous.
    pub step: u64,
    /// Env episode index from 0.
    pub episode: u64,
    /// Step index within the episode from 0.
    pub episode_step: u64,
    /// Total reward of the step.
    pub reward: f64,
    /// Per-step reward terms (empty when the world has no reward specification).
    pub components: BTreeMap<String, f64>,
    /// Episode-end terms; non-empty only on an episode's last step.
    pub payout: BTreeMap<String, f64>,
    /// Label in force for this step.
    pub regime: String,
    /// Why that label is in force.
    pub regime_origin: Origin,
    /// The env said terminal.
    pub terminated: bool,
    /// The env imposed a cutoff.
    pub truncated: bool,
    /// Configuration-specific upper bound for this step's reward.
    pub ceiling: Option<f64>,
    /// The expected-reward bound in force: no policy's long-run average reward per step
    /// exceeds it ([`Env::expected_bound`]). `None` where the world declares none, or the
    /// trace has no `bound` column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// Each role's own reward in a world run by several roles (their team reward is
    /// `reward`); empty where the world has no roles.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub role_rewards: BTreeMap<String, f64>,
    /// With `--record-transitions`: the observation the agent acted on (in a world with
    /// roles, each role's, by role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obs: Option<RecordedObs>,
    /// With `--record-transitions`: the action taken (a number or an array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<serde_json::Value>,
}

impl TraceRow {
    /// The reward without episode-end payouts: `reward - sum(payout)`.
    pub fn reward_without_payout(&self) -> f64 {
        self.reward - self.payout.values().sum::<f64>()
    }
}

/// One row on its way to a writer, borrowing from the harness (no allocation per step).
#[derive(Clone, Copy, Debug)]
pub struct RowRecord<'a> {
    /// Global step index.
    pub step: u64,
    /// Episode index.
    pub episode: u64,
    /// Step within the episode.
    pub episode_step: u64,
    /// Total reward.
    pub reward: f64,
    /// Per-step term values, in the writer's component-name order.
    pub components: &'a [f64],
    /// Payout values in the writer's payout-name order; empty unless the episode ended.
    pub payouts: &'a [f64],
    /// Label in force.
    pub regime: &'a str,
    /// Its origin.
    pub origin: Origin,
    /// Terminated flag.
    pub terminated: bool,
    /// Truncated flag.
    pub truncated: bool,
    /// The applicable ceiling.
    pub ceiling: Option<f64>,
    /// The expected-reward bound in force.
    pub bound: Option<f64>,
    /// Each role's own reward, in the writer's role order; empty without roles.
    pub role_rewards: &'a [f64],
    /// The observation acted on, when transitions are recorded.
    pub obs: Option<&'a [f32]>,
    /// The action as JSON text, when transitions are recorded.
    pub action_json: Option<&'a str>,
    /// In a world with roles, when transitions are recorded: each role's observation (its
    /// view, role order), written as `obs` = `{role: [floats]}` in place of `obs`.
    pub role_obs: &'a [Vec<f32>],
    /// In a world with roles, when transitions are recorded: each role's action index (role
    /// order), written as `action` = `{role: index}` in place of `action_json`.
    pub role_actions: &'a [usize],
}

impl<'a> RowRecord<'a> {
    /// The row of step `step` (the `episode_step`-th of episode `episode`) that produced `t`,
    /// under the label `regime` of origin `origin`, in `env`: `t`'s reward, flags and
    /// terms, its payouts only when it ended the episode, `env`'s ceiling for such a step
    /// and its expected bound, and its roles' own rewards. No observation or action: set `obs` and `action_json` when
    /// transitions are recorded. The harness and the Python envs write their rows through
    /// this one definition.
    #[inline]
    pub fn of_step<E: Env + ?Sized>(
        (step, episode, episode_step): (u64, u64, u64),
        t: &'a Transition<E::Obs>,
        regime: &'a str,
        origin: Origin,
        env: &'a E,
    ) -> Self {
        let done = t.done();
        let ceiling: Option<Ceiling> = env.ceiling();
        let (components, payouts): (&[f64], &[f64]) = match &t.breakdown {
            Some(b) => (&b.components, if done { &b.payouts } else { &[] }),
            None => (&[], &[]),
        };
        RowRecord {
            step,
            episode,
            episode_step,
            reward: t.reward,
            components,
            payouts,
            regime,
            origin,
            terminated: t.terminated,
            truncated: t.truncated,
            ceiling: ceiling.map(|c| c.applicable(done)),
            bound: env.expected_bound(),
            role_rewards: env.role_rewards(),
            obs: None,
            action_json: None,
            role_obs: &[],
            role_actions: &[],
        }
    }
}
