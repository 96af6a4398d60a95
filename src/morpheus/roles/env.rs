//! The `enterprise` world kind: the enterprise world run by several roles at once.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use super::{Observe, Role, RoleLayout, RoleTable};
use crate::env::{Env, EnvError, EnvSpec, SavedState, Space, Transition, WorldEvent};
use crate::morpheus::{self, Morpheus, MorpheusConfig, Op};
use crate::regime::{ParamInfo, RegimeError, Shiftable};
use crate::reward::{Ceiling, RewardSpec};

/// The `[world.params]` of an `enterprise` world: the enterprise layout, and the roles
/// (the world file's `[roles]` table, which the loader checks and hands over as `roles`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EnterpriseParams {
    /// The layout.
    pub config: MorpheusConfig,
    /// The roles.
    pub roles: RoleTable,
}

impl<'de> Deserialize<'de> for EnterpriseParams {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut table = toml::Table::deserialize(d)?;
        let roles = match table.remove("roles") {
            Some(v) => v.try_into().map_err(|e: toml::de::Error| {
                D::Error::custom(format!("roles: {}", e.message().trim()))
            })?,
            None => RoleTable::default(),
        };
        let config = table
            .try_into()
            .map_err(|e: toml::de::Error| D::Error::custom(e.message().trim()))?;
        Ok(EnterpriseParams { config, roles })
    }
}

/// What each role's agent learns from, step by step, as the env computed it: the env
/// pushes, the roles agent takes a window's worth at each update.
#[derive(Clone, Debug, Default)]
pub struct RewardTap(Arc<Mutex<VecDeque<Vec<f64>>>>);

impl RewardTap {
    fn push(&self, rewards: Vec<f64>) {
        if let Ok(mut q) = self.0.lock() {
            if q.len() >= crate::limits::MAX_WINDOW_STEPS {
                q.pop_front();
            }
            q.push_back(rewards);
        }
    }

    /// The last `n` steps' rewards per role, oldest first (fewer after a resume).
    pub fn take(&self, n: usize) -> Vec<Vec<f64>> {
        let Ok(mut q) = self.0.lock() else {
            return Vec::new();
        };
        let skip = q.len().saturating_sub(n);
        q.drain(..).skip(skip).collect()
    }
}

/// The enterprise world with roles: one joint `Discrete` action per hour (see the
/// [module docs](super)), the team reward the world's own, and each role's reward from
/// the terms it owns.
///
/// # Examples
///
/// ```
/// use perennial::morpheus::roles::{EnterpriseEnv, RoleTable};
/// use perennial::morpheus::{MorpheusConfig, default_reward_spec};
/// use perennial::prelude::*;
///
/// let mut env = EnterpriseEnv::new(MorpheusConfig::default(), default_reward_spec(), RoleTable::default()).unwrap();
/// env.reset(3);
/// let action = env.joint(&[0, 0]).unwrap();
/// let t = env.step(&action).unwrap();
/// let own: f64 = env.role_rewards().iter().sum();
/// assert!((own - t.reward).abs() <= 1e-9 * t.reward.abs().max(1.0));
/// ```
pub struct EnterpriseEnv {
    world: Morpheus,
    roles: RoleTable,
    layouts: Vec<RoleLayout>,
    /// Per role, the indices of the breakdown's components it owns.
    owned: Vec<Vec<usize>>,
    spec: EnvSpec,
    names: Vec<String>,
    own: Vec<f64>,
    tap: RewardTap,
    ops: Vec<Op>,
}

impl EnterpriseEnv {
    /// The world of `config` and `reward` run by `roles`. A role's own reward sums the
    /// terms it names; the world file's loader checks that they partition the reward.
    ///
    /// # Errors
    ///
    /// The world cannot be built, or the roles' operations are not each owned once (a
    /// message naming the role and field).
    pub fn new(
        config: MorpheusConfig,
        reward: RewardSpec,
        roles: RoleTable,
    ) -> Result<Self, String> {
        roles.check(None).map_err(|e| e.to_string())?;
        let mut world = Morpheus::new(config.clone(), reward).map_err(|e| e.to_string())?;
        // Every roles table gives `hold_wave` to a role (checked above).
        world.set_consolidating();
        let layouts: Vec<RoleLayout> = roles
            .roles
            .iter()
            .map(|r| RoleLayout::new(r, &config))
            .collect();
        let names = &world.spec().components;
        let owned = roles
            .roles
            .iter()
            .map(|r| {
                names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| r.terms.contains(n))
                    .map(|(i, _)| i)
                    .collect()
            })
            .collect();
        let n = layouts
            .iter()
            .try_fold(1usize, |acc, l| acc.checked_mul(l.actions));
        let n = n.ok_or("the roles' joint action space is too large")?;
        let spec = EnvSpec {
            action_space: Space::Discrete { n },
            ..world.spec().clone()
        };
        Ok(EnterpriseEnv {
            own: vec![0.0; roles.roles.len()],
            names: roles.roles.iter().map(|r| r.name.clone()).collect(),
            world,
            roles,
            layouts,
            owned,
            spec,
            tap: RewardTap::default(),
            ops: Vec::new(),
        })
    }

    /// The roles.
    pub fn roles(&self) -> &RoleTable {
        &self.roles
    }

    /// Each role's action table and view, in role order.
    pub fn layouts(&self) -> &[RoleLayout] {
        &self.layouts
    }

    /// The world underneath.
    pub fn world(&self) -> &Morpheus {
        &self.world
    }

    /// The full observation (the state for centralized training), empty before a reset.
    pub fn state(&self) -> Vec<f32> {
        self.world
            .ecs()
            .and_then(|w| w.get_resource::<morpheus::resources::ObservationBuffer>())
            .map(|o| o.0.clone())
            .unwrap_or_default()
    }

    /// Role `r`'s observation of `state`.
    pub fn observe(&self, r: usize, state: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        if let Some(l) = self.layouts.get(r) {
            l.project(state, &mut out);
        }
        out
    }

    /// The joint action of one index per role (role order), `None` when one is outside
    /// its role's table or the count is wrong.
    pub fn joint(&self, per_role: &[usize]) -> Option<usize> {
        joint(&self.layouts, per_role)
    }

    /// One index per role of the joint action `action`.
    pub fn split(&self, action: usize) -> Vec<usize> {
        split(&self.layouts, action)
    }

    /// The last step's own reward per role (the terms each owns), in role order.
    pub fn role_rewards(&self) -> &[f64] {
        &self.own
    }

    /// What each role's agent learns from on the last step, whose team reward was `team`:
    /// `alpha × team + (1 − alpha) × own`, in role order (exactly `team` at `alpha` 1).
    pub fn learning_rewards(&self, team: f64) -> Vec<f64> {
        let alpha = self.roles.alpha;
        self.own
            .iter()
            .map(|&own| {
                if alpha == 1.0 {
                    team
                } else {
                    alpha * team + (1.0 - alpha) * own
                }
            })
            .collect()
    }

    /// The indices of the full observation role `r` sees: as its role says, or as
    /// `observe` says in its place (the PettingZoo env's `observe` option). `None` for no
    /// such role.
    pub fn seen(&self, r: usize, observe: Option<Observe>) -> Option<Vec<usize>> {
        let layout = self.layouts.get(r)?;
        match observe {
            None => Some(layout.seen.clone()),
            Some(observe) => {
                let role = Role {
                    observe,
                    ..self.roles.roles[r].clone()
                };
                Some(RoleLayout::new(&role, &layout.config).seen)
            }
        }
    }

    /// Where each step's learning rewards per role go (for [`super::RolesAgent`]).
    pub fn reward_tap(&self) -> RewardTap {
        self.tap.clone()
    }
}

/// The joint index of one index per role (the first role most significant).
pub(super) fn joint(layouts: &[RoleLayout], per_role: &[usize]) -> Option<usize> {
    if per_role.len() != layouts.len() {
        return None;
    }
    let mut j = 0usize;
    for (l, &i) in layouts.iter().zip(per_role) {
        if i >= l.actions {
            return None;
        }
        j = j * l.actions + i;
    }
    Some(j)
}

/// The indices per role of joint index `j`.
pub(super) fn split(layouts: &[RoleLayout], mut j: usize) -> Vec<usize> {
    let mut out = vec![0; layouts.len()];
    for (slot, l) in out.iter_mut().zip(layouts).rev() {
        *slot = j % l.actions;
        j /= l.actions;
    }
    out
}

impl Env for EnterpriseEnv {
    type Obs = Vec<f32>;
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Vec<f32> {
        self.own.iter_mut().for_each(|r| *r = 0.0);
        let first = self.world.reset(seed);
        self.world.set_switch_fee(super::CARRIER_SWITCH_FEE);
        first
    }

    fn step(&mut self, action: &usize) -> Result<Transition<Vec<f32>>, EnvError> {
        if !self.spec.action_space.contains_index(*action) {
            return Err(EnvError::invalid_action(action, &self.spec.action_space));
        }
        self.ops.clear();
        for (l, i) in self.layouts.iter().zip(split(&self.layouts, *action)) {
            self.ops.push(l.decode(i).unwrap_or(Op::Noop));
        }
        let ops = std::mem::take(&mut self.ops);
        let t = self.world.step_ops(&ops);
        self.ops = ops;
        let t = t?;
        if let Some(b) = &t.breakdown {
            for (own, idx) in self.own.iter_mut().zip(&self.owned) {
                *own = idx
                    .iter()
                    .map(|&i| b.components.get(i).copied().unwrap_or(0.0))
                    .sum();
            }
        }
        self.tap.push(self.learning_rewards(t.reward));
        Ok(t)
    }

    fn ceiling(&self) -> Option<Ceiling> {
        self.world.ceiling()
    }

    fn expected_bound(&self) -> Option<f64> {
        self.world.expected_bound()
    }

    fn role_names(&self) -> &[String] {
        &self.names
    }

    fn role_rewards(&self) -> &[f64] {
        &self.own
    }

    fn role_transition(
        &self,
        obs: &[f32],
        action: &usize,
        views: &mut Vec<Vec<f32>>,
        actions: &mut Vec<usize>,
    ) {
        views.resize_with(self.layouts.len(), Vec::new);
        for (l, view) in self.layouts.iter().zip(views.iter_mut()) {
            l.project(obs, view);
        }
        actions.clear();
        actions.extend(split(&self.layouts, *action));
    }

    fn drain_events(&mut self, out: &mut Vec<WorldEvent>) {
        self.world.drain_events(out);
    }

    fn save_state(&self) -> Result<serde_json::Value, EnvError> {
        self.world.save_state()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), EnvError> {
        self.world.load_state(state)
    }

    fn save_state_typed(&self) -> Result<SavedState, EnvError> {
        self.world.save_state_typed()
    }

    fn load_state_typed(&mut self, state: &SavedState) -> Result<(), EnvError> {
        self.world.load_state_typed(state)
    }
}

/// The roles' desks ([`RoleDesks`](crate::morpheus::api::RoleDesks)) step the world with
/// its own action index, the joint action of every role's part of the hour.
impl crate::morpheus::api::Stepper for EnterpriseEnv {
    type Error = EnvError;

    fn world(&self) -> &Morpheus {
        &self.world
    }

    fn step_hour(&mut self, action: usize) -> Result<crate::morpheus::api::Hour, EnvError> {
        let t = Env::step(self, &action)?;
        Ok(crate::morpheus::api::Hour {
            reward: t.reward,
            ended: t.terminated || t.truncated,
        })
    }
}

impl Shiftable for EnterpriseEnv {
    fn parameters(&self) -> Vec<ParamInfo> {
        self.world.parameters()
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.world.get(name)
    }

    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        self.world.set(name, value)
    }
}
