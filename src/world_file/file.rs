//! A loaded and validated world file ([`WorldFile`]) and what it offers the code that runs
//! it: its parameters, agents' options, reward specification and scheduler.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use crate::regime::{NotifyLevel, Plan, Regime, RegimeError, Scheduler};
use crate::reward::RewardSpec;

/// Run defaults a world file may set for `perennial run`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessDefaults {
    /// Step budget.
    pub steps: Option<u64>,
    /// Steps per rollout window.
    pub window_steps: Option<usize>,
    /// Reset at episode ends and go on.
    pub auto_reset: Option<bool>,
    /// Run seed.
    pub seed: Option<u64>,
    /// Agent name (see `perennial run --help`).
    pub agent: Option<String>,
}

/// A loaded and validated world file.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldFile {
    /// Where it was loaded from.
    pub path: PathBuf,
    /// One-line description.
    pub description: String,
    /// The world's kind name, as registered.
    pub kind: String,
    /// The kind's parameters (read them with [`WorldFile::params`]).
    pub params: WorldParams,
    /// The regimes, in file order; the first is the initial regime unless the schedule says otherwise.
    pub regimes: Vec<Regime>,
    /// The schedule.
    pub plan: Plan,
    /// The reward specification, when the file gives one.
    pub reward: Option<RewardSpec>,
    /// Run defaults.
    pub harness: HarnessDefaults,
    /// Agent options by agent name, from `[agent.<name>]` tables.
    pub agents: BTreeMap<String, toml::Table>,
    /// What the agent is told about regime shifts, from `[notify] level` (default `none`).
    pub notify: NotifyLevel,
    /// The roles, from a `[roles]` table (see [`crate::morpheus::roles`]).
    pub roles: Option<crate::morpheus::roles::RoleTable>,
    /// The kind's reward specification, used when the file gives none.
    pub(super) default_reward: Option<RewardSpec>,
    /// The text it was parsed from.
    pub(super) text: String,
}

impl WorldFile {
    /// The world's kind name as written in the file.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The text the file was parsed from, e.g. for a run manifest.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The manifest's record of this file: its path, the hash of its text, and the text.
    pub fn record(&self) -> crate::trace::WorldFileRecord {
        crate::trace::WorldFileRecord {
            path: self.path.clone(),
            hash: crate::trace::content_hash(&self.text),
            text: self.text.clone(),
        }
    }

    /// The kind's parameters as `T` (e.g. [`crate::cartpole::CartPoleParams`] for a
    /// `cartpole` file), or `None` when the file is of another kind.
    pub fn params<T: std::any::Any>(&self) -> Option<&T> {
        self.params.get()
    }

    /// The options table of agent `name`: its `[agent.<name>]` table, or an empty one.
    /// For a roles agent (`ROLE=AGENT,...`), one table per role: its agent's options.
    pub fn agent_options(&self, name: &str) -> toml::Table {
        if name.contains('=') {
            return name
                .split(',')
                .filter_map(|part| part.split_once('='))
                .map(|(role, agent)| {
                    let options = self.agent_options(agent.trim());
                    (role.trim().to_string(), toml::Value::Table(options))
                })
                .collect();
        }
        self.agents.get(name).cloned().unwrap_or_default()
    }

    /// The reward specification the world runs with: the file's, else the kind's default
    /// (none for CartPole, whose reward is Gymnasium's).
    pub fn reward_spec(&self) -> Option<RewardSpec> {
        self.reward.clone().or_else(|| self.default_reward.clone())
    }

    /// A scheduler for these regimes and plan, its stream seeded with `seed`.
    ///
    /// # Errors
    ///
    /// Never for a loaded file (the plan was checked at load).
    pub fn scheduler(&self, seed: u64) -> Result<Scheduler, RegimeError> {
        Scheduler::new(self.regimes.clone(), self.plan.clone(), seed)
    }
}

/// A kind's parameters after loading, type-erased so a [`WorldFile`] can hold any kind's.
#[derive(Clone)]
pub struct WorldParams(Arc<dyn AnyParams>);

trait AnyParams: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn eq_dyn(&self, other: &dyn AnyParams) -> bool;
    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl<T: Any + PartialEq + fmt::Debug + Send + Sync> AnyParams for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn eq_dyn(&self, other: &dyn AnyParams) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl WorldParams {
    /// Wraps a kind's parameters.
    pub fn new<T: Any + PartialEq + fmt::Debug + Send + Sync>(params: T) -> Self {
        WorldParams(Arc::new(params))
    }

    /// The parameters as their kind's type, or `None` for another kind's.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }
}

impl fmt::Debug for WorldParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.debug(f)
    }
}

impl PartialEq for WorldParams {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(other.0.as_ref())
    }
}
