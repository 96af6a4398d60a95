//! One agent per role: a role's view of the world as an env agents are built on, and the
//! roles agent that asks each role's agent and encodes their choices as one joint action.

use crate::agents::{self, AgentBuilder, AgentCtx, AgentError, BaseStockAgent, BaseStockParams};
use crate::env::{Dtype, Env, EnvError, EnvSpec, Space, Transition};
use crate::harness::{Agent, Window};
use crate::morpheus::{ActionLayout, Op};
use crate::regime::{Conditions, Notification, NotifyLevel, Regime, RegimeProbe, Shiftable};
use crate::seed::{self, Stream};

use super::env::{EnterpriseEnv, RewardTap, joint, split};
use super::{OpKind, RoleLayout, RoleNotify, agent_id, parse_agent_spec, tell};

/// One role's view of an enterprise world: its observation space and action table. Agents
/// are built on it; it never steps (the [`EnterpriseEnv`] does).
pub struct RoleView {
    spec: EnvSpec,
    layout: RoleLayout,
}

impl RoleView {
    /// The view of role `r` of `env`.
    pub fn of(env: &EnterpriseEnv, r: usize) -> Option<Self> {
        let layout = env.layouts().get(r)?.clone();
        let full = &env.spec().observation_space;
        let observation_space = match full {
            Space::Box { low, high, dtype } => Space::Box {
                low: layout.seen.iter().map(|&i| low[i]).collect(),
                high: layout.seen.iter().map(|&i| high[i]).collect(),
                dtype: *dtype,
            },
            _ => Space::Box {
                low: vec![f64::NEG_INFINITY; layout.seen.len()],
                high: vec![f64::INFINITY; layout.seen.len()],
                dtype: Dtype::F32,
            },
        };
        let spec = EnvSpec {
            id: format!("{}:{}", env.spec().id, env.roles().roles[r].name),
            observation_space,
            action_space: Space::Discrete { n: layout.actions },
            ..env.spec().clone()
        };
        Some(RoleView { spec, layout })
    }

    /// The role's action table and projection.
    pub fn layout(&self) -> &RoleLayout {
        &self.layout
    }
}

impl Env for RoleView {
    type Obs = Vec<f32>;
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, _seed: u64) -> Vec<f32> {
        vec![0.0; self.layout.seen.len()]
    }

    fn step(&mut self, _action: &usize) -> Result<Transition<Vec<f32>>, EnvError> {
        Err(EnvError::World(
            "a role's view does not step; step the enterprise world with a joint action".into(),
        ))
    }
}

/// Base-stock split by role: the reorder and repair rules act for a role that owns
/// reorders or repairs (its carrier choice left out), the carrier rule for the role that
/// owns the carrier choice; an operation the role does not own becomes its no-op.
struct RoleBaseStock {
    inner: BaseStockAgent,
    table: ActionLayout,
    layout: RoleLayout,
}

impl Agent<RoleView> for RoleBaseStock {
    fn algorithm_id(&self) -> &str {
        "base-stock"
    }

    fn act(&mut self, obs: &Vec<f32>) -> usize {
        let full = self.layout.embed(obs);
        let op = self.table.decode(self.inner.act(&full)).unwrap_or(Op::Noop);
        self.layout.encode(op).unwrap_or(0)
    }

    fn save_state(&self) -> Result<serde_json::Value, String> {
        self.inner.save_state()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), String> {
        self.inner.load_state(state)
    }
}

/// The agents a role can have: the generic ones and base-stock's share of the role.
pub fn role_agents() -> Vec<(&'static str, AgentBuilder<RoleView>)> {
    let mut list = agents::generic::<RoleView>();
    list.push(("base-stock", |ctx| {
        let mut params: BaseStockParams = ctx.options()?;
        let owns = |op| ctx.env.layout.encode(op).is_some();
        if !owns(Op::ChooseCarrier { carrier: 0 }) {
            params.carrier = None;
        }
        if !owns(Op::RepairDock { dock: 0 }) {
            params.repair_at = 0;
        }
        let config = &ctx.env.layout.config;
        Ok(Box::new(RoleBaseStock {
            inner: BaseStockAgent::new(config, params),
            table: ActionLayout::of(config),
            layout: ctx.env.layout.clone(),
        }))
    }));
    list
}

/// One agent per role, acting together: each sees its role's observation, chooses in its
/// role's table, and learns from its role's reward (the roles' `alpha` mix). Its
/// checkpoint holds every role's state, by role.
pub struct RolesAgent {
    id: String,
    names: Vec<String>,
    agents: Vec<Box<dyn Agent<RoleView>>>,
    layouts: Vec<RoleLayout>,
    tap: RewardTap,
    buf: Vec<f32>,
    told: Told,
}

/// What the roles agent needs to tell each role at its own level.
struct Told {
    notify: RoleNotify,
    /// Each role's operation kinds, in role order.
    ops: Vec<Vec<OpKind>>,
    /// The world file's regimes and the world's parameters before any: to work out a
    /// `delta` from the labels when the run's notification names only the label.
    regimes: Vec<Regime>,
    baseline: Conditions,
    probe: RegimeProbe,
    /// The label in force, as last seen.
    label: Option<String>,
}

impl Told {
    /// Each role's notification (role order) from the run's `n`.
    fn split(&mut self, names: &[String], n: &Notification) -> Vec<Option<Notification>> {
        let to = n.label.clone().or_else(|| self.probe.label());
        let from = std::mem::replace(&mut self.label, to.clone());
        let find = |l: &Option<String>| {
            let l = l.as_deref()?;
            self.regimes.iter().find(|r| r.label == l)
        };
        let (from, to) = (find(&from), find(&to));
        names
            .iter()
            .zip(&self.ops)
            .map(|(name, ops)| {
                let level = self.notify.level_of(name, n.level);
                let delta = || {
                    let (from, to) = (from?, to?);
                    NotifyLevel::Delta
                        .at_shift(n.step, from, to, &self.baseline)
                        .and_then(|d| d.delta)
                };
                tell(level, self.notify.delta, ops, n, delta)
            })
            .collect()
    }
}

impl RolesAgent {
    /// The roles agent `ctx.name` (`ROLE=AGENT,...`), each role's agent built with its
    /// options from `ctx.options[role]`.
    ///
    /// # Errors
    ///
    /// The spec names an unknown role or agent, or a role's agent refuses its options or
    /// its role's spaces.
    pub fn build(ctx: &AgentCtx<'_, EnterpriseEnv>) -> Result<Self, AgentError> {
        let env = ctx.env;
        let pairs =
            parse_agent_spec(ctx.name, env.roles()).map_err(|m| AgentError::new(ctx.name, m))?;
        let builders = role_agents();
        let known: Vec<&str> = builders.iter().map(|(n, _)| *n).collect();
        let mut agents = Vec::new();
        for (r, (role, name)) in pairs.iter().enumerate() {
            let view =
                RoleView::of(env, r).ok_or_else(|| AgentError::new(ctx.name, "no such role"))?;
            let build = builders
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, b)| *b)
                .ok_or_else(|| AgentError::unknown(name, &known))?;
            let options = match ctx.options.get(role) {
                Some(toml::Value::Table(t)) => t.clone(),
                Some(_) => {
                    return Err(AgentError::new(
                        ctx.name,
                        format!("the options of role `{role}` are not a table"),
                    ));
                }
                None => toml::Table::new(),
            };
            let role_ctx = AgentCtx {
                name,
                env: &view,
                options: &options,
                seed: seed::derive(ctx.seed, Stream::Agent, r as u64 + 1),
                regimes: ctx.regimes,
                regime: ctx.regime.clone(),
                agents: &builders,
            };
            let agent = build(&role_ctx)
                .map_err(|e| AgentError::new(ctx.name, format!("role `{role}`: {e}")))?;
            agents.push(agent);
        }
        let baseline = env
            .parameters()
            .iter()
            .filter_map(|p| Some((p.name.to_string(), env.get(p.name)?)))
            .collect();
        let told = Told {
            notify: env.roles().notify.clone(),
            ops: env.roles().roles.iter().map(|r| r.ops.clone()).collect(),
            regimes: ctx.regimes.to_vec(),
            baseline,
            probe: ctx.regime.clone(),
            label: None,
        };
        Ok(RolesAgent {
            told,
            id: agent_id(ctx.name),
            names: pairs.into_iter().map(|(r, _)| r).collect(),
            agents,
            layouts: env.layouts().to_vec(),
            tap: env.reward_tap(),
            buf: Vec::new(),
        })
    }
}

impl Agent<EnterpriseEnv> for RolesAgent {
    fn algorithm_id(&self) -> &str {
        &self.id
    }

    fn act(&mut self, obs: &Vec<f32>) -> usize {
        if self.told.label.is_none() && !self.told.notify.is_default() {
            self.told.label = self.told.probe.label();
        }
        let mut per_role = Vec::with_capacity(self.agents.len());
        for (agent, layout) in self.agents.iter_mut().zip(&self.layouts) {
            layout.project(obs, &mut self.buf);
            let i = agent.act(&self.buf);
            // An index outside the role's table is its no-op: a role cannot act for another.
            per_role.push(if i < layout.actions { i } else { 0 });
        }
        joint(&self.layouts, &per_role).unwrap_or(0)
    }

    fn notify(&mut self, notification: &Notification) {
        if self.told.notify.is_default() {
            for a in &mut self.agents {
                a.notify(notification);
            }
            return;
        }
        let told = self.told.split(&self.names, notification);
        for (a, n) in self.agents.iter_mut().zip(told) {
            if let Some(n) = n {
                a.notify(&n);
            }
        }
    }

    fn update(&mut self, window: &Window<Vec<f32>, usize>) {
        let n = window.rewards.len();
        let learned = self.tap.take(n);
        let offset = n - learned.len().min(n);
        for (r, (agent, layout)) in self.agents.iter_mut().zip(&self.layouts).enumerate() {
            let view = |o: &Vec<f32>| {
                let mut out = Vec::new();
                layout.project(o, &mut out);
                out
            };
            let rewards = (0..n)
                .map(|i| {
                    i.checked_sub(offset)
                        .and_then(|k| learned.get(k))
                        .and_then(|v| v.get(r).copied())
                        .unwrap_or(window.rewards[i])
                })
                .collect();
            let role_window = Window {
                start_step: window.start_step,
                obs: window.obs.iter().map(view).collect(),
                actions: window
                    .actions
                    .iter()
                    .map(|&a| split(&self.layouts, a)[r])
                    .collect(),
                rewards,
                next_obs: window.next_obs.iter().map(view).collect(),
                terminated: window.terminated.clone(),
                truncated: window.truncated.clone(),
            };
            agent.update(&role_window);
        }
    }

    fn reseed(&mut self, seed: u64) {
        for (r, a) in self.agents.iter_mut().enumerate() {
            a.reseed(seed::derive(seed, Stream::Agent, r as u64 + 1));
        }
    }

    fn save_state(&self) -> Result<serde_json::Value, String> {
        let mut map = serde_json::Map::new();
        for (name, a) in self.names.iter().zip(&self.agents) {
            let state = a.save_state().map_err(|e| format!("role `{name}`: {e}"))?;
            map.insert(name.clone(), state);
        }
        Ok(serde_json::Value::Object(map))
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), String> {
        let serde_json::Value::Object(mut map) = state else {
            return Err("a roles agent's saved state is an object by role".into());
        };
        for (name, a) in self.names.iter().zip(&mut self.agents) {
            let s = map
                .remove(name)
                .ok_or_else(|| format!("the saved state has no role `{name}`"))?;
            a.load_state(s).map_err(|e| format!("role `{name}`: {e}"))?;
        }
        if let Some(extra) = map.keys().next() {
            return Err(format!(
                "the saved state has role `{extra}`, which this world has not"
            ));
        }
        Ok(())
    }
}

/// The enterprise kind's agents beside the generic ones: `roles` (reached by any
/// `ROLE=AGENT,...` name).
pub fn for_enterprise() -> Vec<(&'static str, AgentBuilder<EnterpriseEnv>)> {
    vec![("roles", |ctx| Ok(Box::new(RolesAgent::build(ctx)?)))]
}
