//! Baseline agents: random, hand-written policies for each built-in world, and a learner.
//!
//! | name (`--agent`) | type | worlds | learns |
//! |---|---|---|---|
//! | `random` | [`RandomAgent`] | any | no |
//! | `balance` | [`BalanceAgent`] | CartPole | no |
//! | `base-stock` | [`BaseStockAgent`] | enterprise world | no |
//! | `adaptive-base-stock` | [`AdaptiveBaseStock`] | enterprise world | yes, its stock levels, on every window |
//! | `oracle` | [`Oracle`] | enterprise world | no: a privileged reference that reads the regime in force |
//! | `actor-critic` | [`ActorCritic`] | any with a `Discrete` action space | yes, on every window |
//! | `ppo`, `ppo-replay`, `ppo-ewc`, `ppo-context`, `ppo-plastic` | [`Ppo`] | any with a `Discrete` action space | yes, on every window (see [`ppo`]) |
//!
//! Every PPO family also takes a warm start from a teacher, any other agent of the world:
//! options `teacher` and `teacher_steps` (see [`warm_start`]); and on the enterprise world,
//! `actions = "cover"`, a small structured action space (see [`cover`]).
//!
//! # The agent registry
//!
//! Agents are built by name from an [`AgentCtx`]: the env (so a world's own agent can read
//! its configuration), the agent's options table, the run seed, the world file's regimes
//! and a [`RegimeProbe`] on which the harness publishes the label in force. The options
//! come from a world file's `[agent.<name>]` table and `perennial run --agent-opt
//! KEY=VALUE`; a builder deserializes them with [`AgentCtx::options`] into its params
//! struct, which carries `#[serde(default, deny_unknown_fields)]` so a misspelt option is
//! an error naming it. Every `[agent.<name>]` table of a world file is checked when the
//! file is loaded, by building the agent on the file's world, so a bad option is an error
//! naming the file, the line and the field.
//!
//! Only reference agents read the probe (the enterprise world's `oracle`): a learner is
//! never told which regime is in force.
//!
//! Registering an agent is one entry:
//! - a generic agent (any world with a `Discrete` action space) goes in [`generic`], e.g.
//!   `("ppo", |ctx| Ok(Box::new(Ppo::new(ctx.spec(), ctx.options()?, ctx.seed)?)))`;
//! - a world's own agent goes in its kind's list ([`for_cartpole`], [`for_morpheus`]),
//!   e.g. `("base-stock", |ctx| Ok(Box::new(BaseStockAgent::new(ctx.env.config(), ctx.options()?))))`;
//! - a world defined outside the crate passes its own list to
//!   [`crate::registry::Registry::world_with_agents`].
//!
//! ```
//! use perennial::agents::{self, AgentCtx};
//! use perennial::prelude::*;
//!
//! let env = CartPole::new(CartPoleParams::default());
//! let options: toml::Table = toml::from_str("actor_lr = 0.01").unwrap();
//! let ctx = AgentCtx::new("actor-critic", &env, &options, 7);
//! let build = agents::by_name::<CartPole>("actor-critic").unwrap();
//! assert_eq!(build(&ctx).unwrap().algorithm_id(), "actor-critic");
//!
//! let typo: toml::Table = toml::from_str("actor_rl = 0.01").unwrap();
//! let ctx = AgentCtx { options: &typo, ..ctx };
//! assert!(build(&ctx).err().unwrap().to_string().contains("actor_rl"));
//! ```

mod actor_critic;
mod balance;
mod base_stock;
pub mod cover;
mod oracle;
pub mod ppo;
mod random;
pub mod warm_start;

pub use actor_critic::{ActorCritic, ActorCriticParams};
pub use balance::BalanceAgent;
pub use base_stock::{AdaptiveBaseStock, AdaptiveParams, BaseStockAgent, BaseStockParams};
pub use cover::{CoverActions, CoverAdapter};
pub use oracle::{Oracle, OracleParams};
pub use ppo::{ContextParams, EwcParams, PlasticParams, Ppo, PpoParams, ReplayParams, UpdateStats};
pub use random::RandomAgent;
pub use warm_start::{WarmStart, WarmStartParams};

use std::fmt;

use serde::de::DeserializeOwned;

use crate::cartpole::CartPole;
use crate::config::typed_table;
use crate::env::{Env, EnvSpec, Space};
use crate::harness::Agent;
use crate::morpheus::Morpheus;
use crate::regime::{Regime, RegimeProbe};

/// What an agent builder receives.
#[derive(Debug)]
pub struct AgentCtx<'a, E: Env> {
    /// The name the agent was asked for.
    pub name: &'a str,
    /// The env the agent will act in (freshly built, not reset).
    pub env: &'a E,
    /// The agent's options: its `[agent.<name>]` table with any command-line overrides.
    pub options: &'a toml::Table,
    /// The run seed.
    pub seed: u64,
    /// The world file's regimes (empty for an agent built outside a world file).
    pub regimes: &'a [Regime],
    /// Where the harness publishes the regime label in force. Privileged: only reference
    /// agents read it (see [`RegimeProbe`]).
    pub regime: RegimeProbe,
    /// The world kind's agents (the generic ones and its own), for an agent that builds
    /// another by name (a warm start's teacher); empty outside a registry, where only the
    /// generic agents are found.
    pub agents: &'a [(&'static str, AgentBuilder<E>)],
}

impl<'a, E: Env> AgentCtx<'a, E> {
    /// A context outside a world file: no regimes, and a probe nothing publishes to.
    pub fn new(name: &'a str, env: &'a E, options: &'a toml::Table, seed: u64) -> Self {
        AgentCtx {
            name,
            env,
            options,
            seed,
            regimes: &[],
            regime: RegimeProbe::new(),
            agents: &[],
        }
    }

    /// The env's spec.
    pub fn spec(&self) -> &EnvSpec {
        self.env.spec()
    }

    /// The options as the agent's params struct.
    ///
    /// # Errors
    ///
    /// An option is unknown or has the wrong type; the error names it, as
    /// [`AgentError::Option`] when it is a key of the table.
    pub fn options<P: DeserializeOwned>(&self) -> Result<P, AgentError> {
        typed_options(self.name, self.options)
    }

    /// The number of actions of a `Discrete` action space.
    ///
    /// # Errors
    ///
    /// The action space is not `Discrete`.
    pub fn discrete_actions(&self) -> Result<usize, AgentError> {
        match self.spec().action_space {
            Space::Discrete { n } => Ok(n),
            ref other => Err(AgentError::new(
                self.name,
                format!("needs a Discrete action space; this world's is {other:?}"),
            )),
        }
    }
}

/// `options` of agent `agent` as its params struct; see [`AgentCtx::options`].
fn typed_options<P: DeserializeOwned>(agent: &str, options: &toml::Table) -> Result<P, AgentError> {
    typed_table(options).map_err(|(key, message)| match key {
        Some(field) => AgentError::option(agent, field, message),
        None => AgentError::new(agent, message),
    })
}

/// An agent that cannot be built: unknown name or bad options.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentError {
    /// No agent of that name for the world.
    Unknown {
        /// The name asked for.
        agent: String,
        /// The agents there are.
        known: Vec<String>,
    },
    /// The agent exists but its options (or the world) do not suit it.
    Build {
        /// The agent's name.
        agent: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// One option of the agent's table is wrong.
    Option {
        /// The agent's name.
        agent: String,
        /// The option's dotted path within the `[agent.<name>]` table, e.g.
        /// `peak_season.reorder_hours`.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
}

impl AgentError {
    /// An error building agent `agent`.
    pub fn new(agent: &str, message: impl Into<String>) -> Self {
        AgentError::Build {
            agent: agent.to_string(),
            message: message.into(),
        }
    }

    /// An error in option `field` (dotted, within the agent's table) of agent `agent`.
    pub fn option(agent: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        AgentError::Option {
            agent: agent.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// No agent `agent` for this world; lists the ones there are.
    pub fn unknown(agent: &str, known: &[&str]) -> Self {
        AgentError::Unknown {
            agent: agent.to_string(),
            known: known.iter().map(|k| k.to_string()).collect(),
        }
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Unknown { agent, known } => write!(
                f,
                "unknown agent `{agent}` for this world; use one of: {}",
                known.join(", ")
            ),
            AgentError::Build { agent, message } => write!(f, "agent `{agent}`: {message}"),
            AgentError::Option {
                agent,
                field,
                message,
            } => write!(f, "agent `{agent}`: option `{field}`: {message}"),
        }
    }
}

impl std::error::Error for AgentError {}

/// The options of an agent that takes none: any key is an error naming it.
#[derive(Clone, Copy, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// Builds an agent for env type `E`.
pub type AgentBuilder<E> = fn(&AgentCtx<'_, E>) -> Result<Box<dyn Agent<E>>, AgentError>;

/// The agents every world with a `Discrete` action space gets, by name.
pub fn generic<E: Env<Action = usize> + 'static>() -> Vec<(&'static str, AgentBuilder<E>)> {
    vec![
        ("random", |ctx| {
            ctx.options::<NoOptions>()?;
            Ok(Box::new(RandomAgent::new(
                ctx.spec().action_space.clone(),
                ctx.seed,
            )))
        }),
        ("actor-critic", |ctx| {
            let n = ctx.discrete_actions()?;
            let dim = ctx.spec().observation_space.len();
            Ok(Box::new(ActorCritic::new(dim, n, ctx.options()?, ctx.seed)))
        }),
        ("ppo", ppo_family),
        ("ppo-replay", ppo_family),
        ("ppo-ewc", ppo_family),
        ("ppo-context", ppo_family),
        ("ppo-plastic", ppo_family),
    ]
}

/// Builds the PPO family `ctx.name` from its options table, warmed up by a teacher when
/// the table names one (see [`warm_start`]).
fn ppo_family<E: Env<Action = usize> + 'static>(
    ctx: &AgentCtx<'_, E>,
) -> Result<Box<dyn Agent<E>>, AgentError> {
    let mut options = ctx.options.clone();
    let warm = WarmStartParams::take(ctx.name, &mut options)?;
    let cover = cover_actions(ctx, &mut options)?;
    if cover.is_some() && warm.teacher.is_some() {
        return Err(AgentError::option(
            ctx.name,
            "actions",
            "`cover` cannot be combined with `teacher`, whose actions are the world's own; drop one",
        ));
    }
    let n = match &cover {
        Some(adapter) => adapter.choices(),
        None => ctx
            .discrete_actions()
            .map_err(|e| match (&warm.teacher, e) {
                (Some(_), AgentError::Build { agent, message }) => {
                    AgentError::option(&agent, "teacher", message)
                }
                (_, e) => e,
            })?,
    };
    let dim = ctx.spec().observation_space.len();
    let agent = match Ppo::by_name(ctx.name, dim, n, options, ctx.seed) {
        Ok(Some(agent)) => agent,
        Ok(None) => return Err(AgentError::unknown(ctx.name, &ppo::FAMILIES)),
        Err(message) => return Err(AgentError::new(ctx.name, message)),
    };
    if let Some(adapter) = cover {
        return Ok(Box::new(CoverActions::new(agent, adapter)));
    }
    Ok(match WarmStart::teacher(ctx, &warm)? {
        Some(teacher) => {
            let steps = warm
                .teacher_steps
                .unwrap_or(warm_start::DEFAULT_TEACHER_STEPS);
            let name = warm.teacher.as_deref().unwrap_or_default();
            let lr = warm.teacher_lr.unwrap_or(agent.params().lr);
            Box::new(WarmStart::new(agent, teacher, name, steps).teacher_lr(lr))
        }
        None => Box::new(agent),
    })
}

/// Takes a PPO family's `actions` option out of its table: `"cover"` is the enterprise
/// world's [`CoverAdapter`], `"world"` (the default) the world's own actions.
fn cover_actions<E: Env + 'static>(
    ctx: &AgentCtx<'_, E>,
    options: &mut toml::Table,
) -> Result<Option<CoverAdapter>, AgentError> {
    let Some(value) = options.remove("actions") else {
        return Ok(None);
    };
    match value.as_str() {
        Some("world") => Ok(None),
        Some("cover") => {
            let env: &dyn std::any::Any = ctx.env;
            env.downcast_ref::<Morpheus>()
                .map(|m| Some(CoverAdapter::new(m.config())))
                .ok_or_else(|| {
                    AgentError::option(
                        ctx.name,
                        "actions",
                        "`cover` is the enterprise world's action space (kind \"morpheus\"); this world has none, leave `actions` out",
                    )
                })
        }
        _ => Err(AgentError::option(
            ctx.name,
            "actions",
            format!(
                "is {value}; use \"cover\" (the enterprise world's cover levels) or \"world\" (the world's own actions, the default)"
            ),
        )),
    }
}

/// The generic agent named `name`, if there is one.
pub fn by_name<E: Env<Action = usize> + 'static>(name: &str) -> Option<AgentBuilder<E>> {
    generic::<E>()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| b)
}

/// CartPole's own agents.
pub fn for_cartpole() -> Vec<(&'static str, AgentBuilder<CartPole>)> {
    vec![("balance", |ctx| {
        ctx.options::<NoOptions>()?;
        Ok(Box::new(BalanceAgent::default()))
    })]
}

/// The enterprise world's own agents.
pub fn for_morpheus() -> Vec<(&'static str, AgentBuilder<Morpheus>)> {
    vec![
        ("base-stock", |ctx| {
            Ok(Box::new(BaseStockAgent::new(
                ctx.env.config(),
                ctx.options()?,
            )))
        }),
        ("adaptive-base-stock", |ctx| {
            Ok(Box::new(AdaptiveBaseStock::new(
                ctx.env.config(),
                ctx.options()?,
                ctx.seed,
            )))
        }),
        ("oracle", |ctx| {
            Ok(Box::new(Oracle::new(
                ctx.env.config(),
                OracleParams::from_ctx(ctx)?,
                ctx.regime.clone(),
            )))
        }),
    ]
}
