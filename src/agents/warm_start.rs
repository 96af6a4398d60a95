//! A warm start for the PPO families: a teacher acts first and the policy imitates it.
//!
//! Every PPO family takes two more options:
//!
//! | option | default | meaning |
//! |---|---|---|
//! | `teacher` | none | an agent of the same world, by its `--agent` name (e.g. `base-stock` on the enterprise world, `balance` on CartPole), built with its default options and the run's seed; not a PPO family |
//! | `teacher_steps` | 100,000 when `teacher` is set | the steps the teacher acts in (0: the teacher never acts) |
//! | `teacher_lr` | the family's `lr` | the Adam step size of the updates of windows the teacher acted in; the family's `lr` applies after |
//!
//! With a teacher, the agent is a [`WarmStart`]: for the first `teacher_steps` steps the
//! teacher chooses the actions, and each window's update trains the policy by behaviour
//! cloning on the steps the teacher took (the cross-entropy of its actions, in PPO's
//! minibatches and epochs) and the value network on the window's returns as usual (see
//! [`Ppo::learn_taught`]); the observation normaliser keeps updating throughout. From then on
//! PPO acts and learns as it would have. The teacher also hears the windows and regime
//! notifications while it acts, so a teacher that adapts (`adaptive-base-stock`) does.
//!
//! Why: on a world with an absorbing trap a near-random policy cannot leave (the shipped
//! warehouse spends its cash and credit line within a few hundred hours under a uniform
//! policy, after which no action changes the reward), PPO never sees a reward its actions
//! affect. Imitating a competent policy first starts it on the right side of the trap.
//! The oracle is accepted as a teacher; it reads the regime in force, so a warm start from it
//! is privileged while the teacher acts.
//!
//! # On the warehouse
//!
//! What kept PPO at base-stock's level over 2M steps of `worlds/warehouse.toml` (seeds 0, 1
//! and 2; BENCHMARKS.md, "Warehouse, fifth pass"):
//!
//! ```sh
//! perennial run worlds/warehouse.toml --agent ppo --window-steps 2048 \
//!   --agent-opt teacher=base-stock --agent-opt teacher_steps=200000 --agent-opt teacher_lr=1e-3 \
//!   --agent-opt lr=3e-5 --agent-opt gamma=0.999 --agent-opt scale_rewards=true
//! ```
//!
//! Each part matters there: with 50,000 teacher steps, PPO's default `lr` after the warm
//! start, `gamma = 0.99`, or unscaled rewards, the policy drifts back into the trap within
//! the run. A reorder is paid at once and sold over the next days, so at `gamma = 0.99` it
//! looks like a loss and PPO unlearns reordering.

use serde::{Deserialize, Serialize};

use super::ppo::{self, Ppo};
use super::{AgentBuilder, AgentCtx, AgentError, typed_options};
use crate::env::{Env, Observation};
use crate::harness::{Agent, Window};
use crate::regime::Notification;

/// The steps a teacher acts in when `teacher` is set and `teacher_steps` is not.
pub const DEFAULT_TEACHER_STEPS: u64 = 100_000;

/// The warm-start options every PPO family takes (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WarmStartParams {
    /// The teacher's agent name (none: no warm start).
    pub teacher: Option<String>,
    /// The steps the teacher acts in ([`DEFAULT_TEACHER_STEPS`] when `teacher` is set).
    pub teacher_steps: Option<u64>,
    /// The Adam step size while the teacher acts (the family's `lr` when unset).
    pub teacher_lr: Option<f32>,
}

impl WarmStartParams {
    /// The option names, as they appear in an agent's table.
    pub const KEYS: [&'static str; 3] = ["teacher", "teacher_steps", "teacher_lr"];

    /// Takes the warm-start options out of `options` (the rest are the family's own).
    ///
    /// # Errors
    ///
    /// A warm-start option has the wrong type, or `teacher_steps` is given without `teacher`.
    pub fn take(agent: &str, options: &mut toml::Table) -> Result<Self, AgentError> {
        let own: toml::Table = Self::KEYS
            .iter()
            .filter_map(|k| options.remove(*k).map(|v| (k.to_string(), v)))
            .collect();
        let params: Self = typed_options(agent, &own)?;
        if params.teacher.is_none() {
            let set = [
                ("teacher_steps", params.teacher_steps.is_some()),
                ("teacher_lr", params.teacher_lr.is_some()),
            ];
            if let Some((key, _)) = set.iter().find(|(_, set)| *set) {
                return Err(AgentError::option(
                    agent,
                    *key,
                    "is set but `teacher` is not; name the agent that acts first, e.g. teacher = \"base-stock\"",
                ));
            }
        }
        if let Some(lr) = params.teacher_lr
            && !(lr.is_finite() && lr > 0.0)
        {
            return Err(AgentError::option(
                agent,
                "teacher_lr",
                format!("is {lr}; give a positive finite number"),
            ));
        }
        Ok(params)
    }
}

/// A PPO family warmed up by a teacher; see the [module docs](self).
pub struct WarmStart<E: Env> {
    ppo: Ppo,
    teacher: Box<dyn Agent<E>>,
    teacher_name: String,
    teacher_steps: u64,
    /// The Adam step size of the updates of windows the teacher acted in.
    teacher_lr: f32,
    /// Steps acted so far, by either.
    acted: u64,
    /// Steps of the window in progress the teacher acted in.
    taught: usize,
}

/// The saved form of a [`WarmStart`].
#[derive(Serialize, Deserialize)]
struct Saved {
    teacher_name: String,
    teacher_steps: u64,
    teacher_lr: f32,
    acted: u64,
    taught: usize,
    ppo: serde_json::Value,
    teacher: serde_json::Value,
}

impl<E: Env<Action = usize>> WarmStart<E> {
    /// `ppo` warmed up by `teacher` (called `teacher_name` in checkpoints and errors) for the
    /// first `teacher_steps` steps, at `ppo`'s own step size (see [`WarmStart::teacher_lr`]).
    pub fn new(
        ppo: Ppo,
        teacher: Box<dyn Agent<E>>,
        teacher_name: &str,
        teacher_steps: u64,
    ) -> Self {
        WarmStart {
            teacher_lr: ppo.params().lr,
            ppo,
            teacher,
            teacher_name: teacher_name.to_string(),
            teacher_steps,
            acted: 0,
            taught: 0,
        }
    }

    /// Updates on windows the teacher acted in step Adam by `lr` instead of the learner's
    /// own `lr`.
    pub fn teacher_lr(mut self, lr: f32) -> Self {
        self.teacher_lr = lr;
        self
    }

    /// The learner.
    pub fn ppo(&self) -> &Ppo {
        &self.ppo
    }

    /// The learner, mutably (e.g. to read its action probabilities).
    pub fn ppo_mut(&mut self) -> &mut Ppo {
        &mut self.ppo
    }

    /// Whether the teacher chooses the next action.
    pub fn teaching(&self) -> bool {
        self.acted < self.teacher_steps
    }

    /// Builds the teacher `params.teacher` for `ctx`'s world, looked up in the world kind's
    /// agents ([`AgentCtx::agents`]) and then the generic ones, with its default options and
    /// the run's seed; `None` when no teacher is set.
    ///
    /// # Errors
    ///
    /// An [`AgentError::Option`] on `teacher`: the agent is unknown, a PPO family, or cannot
    /// be built on this world.
    pub fn teacher(
        ctx: &AgentCtx<'_, E>,
        params: &WarmStartParams,
    ) -> Result<Option<Box<dyn Agent<E>>>, AgentError>
    where
        E: 'static,
    {
        let Some(name) = params.teacher.as_deref() else {
            return Ok(None);
        };
        let bad = |message: String| AgentError::option(ctx.name, "teacher", message);
        if ppo::FAMILIES.contains(&name) {
            return Err(bad(format!(
                "`{name}` is a PPO family; a teacher is built with its default options, so it \
                 would be an untrained learner (and a teacher cannot have a teacher): name a \
                 fixed policy, e.g. one of: {}",
                teachers(ctx).join(", ")
            )));
        }
        let build = ctx
            .agents
            .iter()
            .copied()
            .chain(super::generic::<E>())
            .find(|(n, _)| *n == name)
            .map(|(_, b)| b)
            .ok_or_else(|| {
                bad(format!(
                    "no agent `{name}` for this world; use one of: {}",
                    teachers(ctx).join(", ")
                ))
            })?;
        let empty = toml::Table::new();
        let teacher_ctx = AgentCtx {
            name,
            options: &empty,
            regime: ctx.regime.clone(),
            ..*ctx
        };
        build(&teacher_ctx)
            .map(Some)
            .map_err(|e| bad(format!("`{name}` cannot teach here: {e}")))
    }
}

/// The names a `teacher` option may take on `ctx`'s world.
fn teachers<E: Env<Action = usize> + 'static>(ctx: &AgentCtx<'_, E>) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    let all: Vec<(&'static str, AgentBuilder<E>)> = ctx
        .agents
        .iter()
        .copied()
        .chain(super::generic::<E>())
        .collect();
    for (name, _) in all {
        if !ppo::FAMILIES.contains(&name) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

impl<E: Env<Action = usize>> Agent<E> for WarmStart<E> {
    fn algorithm_id(&self) -> &str {
        Agent::<E>::algorithm_id(&self.ppo)
    }

    fn act(&mut self, obs: &E::Obs) -> usize {
        let action = if self.teaching() {
            self.ppo.follow(obs.as_slice());
            self.taught += 1;
            self.teacher.act(obs)
        } else {
            Agent::<E>::act(&mut self.ppo, obs)
        };
        self.acted += 1;
        action
    }

    fn notify(&mut self, notification: &Notification) {
        if self.teaching() {
            self.teacher.notify(notification);
        }
        Agent::<E>::notify(&mut self.ppo, notification);
    }

    fn update(&mut self, window: &Window<E::Obs, usize>) {
        if self.taught > 0 {
            self.teacher.update(window);
        }
        let lr = if self.taught > 0 {
            self.teacher_lr
        } else {
            self.ppo.params().lr
        };
        self.ppo.learn_taught(window, self.taught, lr);
        self.taught = 0;
    }

    fn plasticity(&self) -> Option<crate::trace::Plasticity> {
        Agent::<E>::plasticity(&self.ppo)
    }

    fn reseed(&mut self, seed: u64) {
        self.teacher.reseed(seed);
        Agent::<E>::reseed(&mut self.ppo, seed);
    }

    fn save_state(&self) -> Result<serde_json::Value, String> {
        let saved = Saved {
            teacher_name: self.teacher_name.clone(),
            teacher_steps: self.teacher_steps,
            teacher_lr: self.teacher_lr,
            acted: self.acted,
            taught: self.taught,
            ppo: Agent::<E>::save_state(&self.ppo)?,
            teacher: self
                .teacher
                .save_state()
                .map_err(|e| format!("teacher `{}`: {e}", self.teacher_name))?,
        };
        serde_json::to_value(saved).map_err(|e| e.to_string())
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), String> {
        let id = Agent::<E>::algorithm_id(&self.ppo).to_string();
        let saved: Saved = serde_json::from_value(state)
            .map_err(|e| format!("{id} with a teacher: state: {e}"))?;
        let plan =
            |name: &str, steps: u64, lr: f32| format!("by `{name}` for {steps} steps at lr {lr}");
        let (theirs, ours) = (
            plan(&saved.teacher_name, saved.teacher_steps, saved.teacher_lr),
            plan(&self.teacher_name, self.teacher_steps, self.teacher_lr),
        );
        if theirs != ours {
            return Err(format!(
                "the checkpoint holds a `{id}` taught {theirs}; this run's is taught {ours}"
            ));
        }
        let mut ppo = self.ppo.clone();
        Agent::<E>::load_state(&mut ppo, saved.ppo)?;
        self.teacher
            .load_state(saved.teacher)
            .map_err(|e| format!("teacher `{}`: {e}", self.teacher_name))?;
        self.ppo = ppo;
        self.acted = saved.acted;
        self.taught = saved.taught;
        Ok(())
    }
}
