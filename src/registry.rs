//! Open registries: the world kinds a world file may name, and the agents each kind can run.
//!
//! A world file's `[world] kind` is looked up in a [`Registry`]; the kind parses and
//! validates its own `[world.params]` table, builds the env, and lists its agents: the
//! generic ones every `Discrete` world gets ([`crate::agents::generic`]) and its own.
//! [`Registry::builtin`] holds CartPole and the enterprise world; a researcher's crate adds
//! its world with [`Registry::world`] and hands the registry to
//! `perennial::cli::main_with` to get `run`, `check`, checkpoints and the rest for it.
//!
//! ```
//! use perennial::prelude::*;
//! use perennial::registry::{KindFn, Registry};
//!
//! // CartPole under another name, with its parameters fixed by the file.
//! let pole = KindFn::new("pole", |params: &CartPoleParams| Ok(CartPole::new(params.clone())));
//! let registry = Registry::builtin().world(pole);
//! let kind = registry.kind("pole").unwrap();
//! assert!(kind.agent_names().contains(&"random"));
//! ```
//!
//! A kind with reward signals of its own or a default reward specification implements
//! [`WorldKind`] itself, as the enterprise world's does.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::agents::{self, AgentBuilder, AgentCtx, AgentError};
use crate::config::typed_table;
use crate::dyn_env::DynEnv;
use crate::env::Env;
use crate::harness::{
    Agent, AgentStart, Checkpoint, DynHarness, DynRestored, Harness, HarnessConfig, Snapshot,
    SnapshotError,
};
use crate::morpheus::{self, Morpheus, MorpheusConfig};
use crate::regime::{NotifyLevel, ParamInfo, RegimeProbe, Shiftable, validate_conditions};
use crate::reward::RewardSpec;
use crate::seed::{self, Stream};
use crate::world_file::TomlFile;
pub use crate::world_file::WorldParams;
pub use crate::world_file::kinds::ParamError;
use crate::world_file::kinds::{AgentCheckError, KindRules, Kinds};
use crate::world_file::{WorldFile, WorldFileError};

/// A world kind: the name a world file uses, its parameter struct, and how to build the env.
///
/// `Params` is deserialized from `[world.params]` (give it `#[serde(default,
/// deny_unknown_fields)]` so every field is optional and a misspelt one is an error naming
/// it); a missing table means `Params::default()`. After [`WorldKind::build`], the env's
/// initial [`Shiftable`] parameters are checked against their ranges, so a kind need not.
pub trait WorldKind: Send + Sync + 'static {
    /// The env this kind builds.
    type Env: Env<Action = usize> + Shiftable + 'static;
    /// The `[world.params]` table, typed.
    type Params: DeserializeOwned + Default + Clone + PartialEq + fmt::Debug + Send + Sync + 'static;

    /// The `kind = "..."` name.
    fn name(&self) -> &'static str;

    /// Builds the env from validated parameters and the world file's reward specification
    /// (the file's, else [`WorldKind::default_reward`]).
    ///
    /// # Errors
    ///
    /// The parameters do not make a world; name the field when one is to blame.
    fn build(
        &self,
        params: &Self::Params,
        reward: Option<&RewardSpec>,
    ) -> Result<Self::Env, ParamError>;

    /// The reward signals a `[reward]` section may read (none by default).
    fn reward_signals(&self) -> &'static [&'static str] {
        &[]
    }

    /// The reward specification when the file gives none (none by default: the env's own).
    fn default_reward(&self) -> Option<RewardSpec> {
        None
    }

    /// The operation kinds a world file's `[roles]` table may give to roles; empty (the
    /// default) for a kind without roles.
    fn operations(&self) -> &'static [&'static str] {
        &[]
    }

    /// The agents a role of this kind's worlds may run (`--agent ROLE=AGENT`); empty (the
    /// default) for a kind without roles.
    fn role_agent_names(&self) -> Vec<&'static str> {
        Vec::new()
    }
}

/// What a world file, an agent choice and a seed need to become a running harness.
#[derive(Clone, Debug)]
pub struct RunRequest<'a> {
    /// The loaded world file.
    pub world: &'a WorldFile,
    /// The agent's registered name.
    pub agent: &'a str,
    /// The agent's options (its `[agent.<name>]` table with any overrides).
    pub agent_options: &'a toml::Table,
    /// The run seed.
    pub seed: u64,
    /// How the harness drives the run.
    pub config: HarnessConfig,
    /// The run id, when not the default.
    pub run_id: Option<String>,
    /// What the agent is told about regime shifts (see [`Harness::notify`]).
    pub notify: NotifyLevel,
    /// For [`Kind::resume`]: the world file was edited since the checkpoint and the run
    /// follows it (`--allow-world-change`): its parameters and its schedule (replayed to
    /// the checkpoint's step) replace the checkpoint's, while the world's state, the agent
    /// and the counters go on. Ignored by the other methods.
    pub follow_world: bool,
}

/// Why a run could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The world could not be built from its file: the file, line and field where known.
    World(WorldFileError),
    /// The agent is unknown or its options are wrong.
    Agent(AgentError),
    /// The checkpoint or snapshot does not fit the world or agent.
    Checkpoint(SnapshotError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::World(e) => write!(f, "{e}"),
            BuildError::Checkpoint(e) => write!(f, "{e}"),
            BuildError::Agent(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::World(e) => Some(e),
            BuildError::Agent(e) => Some(e),
            BuildError::Checkpoint(e) => Some(e),
        }
    }
}

crate::error_from::wrap_errors!(BuildError {
    WorldFileError => World,
});

/// A registered kind, type-erased: what the CLI, sweeps and the Python package call. What
/// loading a world file asks of its kind ([`KindRules`]: parameters, reward signals,
/// agents, operations) is the supertrait, defined beside the loader.
pub trait Kind: KindRules + Send + Sync {
    /// Builds the file's world, type-erased (see [`crate::dyn_env`]).
    ///
    /// # Errors
    ///
    /// The world cannot be built.
    fn build_env(&self, world: &WorldFile) -> Result<Box<dyn DynEnv>, BuildError>;
    /// Builds the world and the agent, checking the agent's options, and drops both.
    ///
    /// # Errors
    ///
    /// As [`Kind::harness`].
    fn check_agent(
        &self,
        world: &WorldFile,
        agent: &str,
        options: &toml::Table,
        seed: u64,
    ) -> Result<(), BuildError>;
    /// A harness for a new run: world, agent, the file's scheduler seeded from the run seed,
    /// config and run id.
    ///
    /// # Errors
    ///
    /// The world cannot be built, the agent is unknown or its options are wrong.
    fn harness(&self, request: &RunRequest<'_>) -> Result<Box<dyn DynHarness>, BuildError>;
    /// A harness continuing the run saved in `checkpoint`.
    ///
    /// # Errors
    ///
    /// As [`Kind::harness`], or the checkpoint does not fit.
    fn resume(
        &self,
        request: &RunRequest<'_>,
        checkpoint: Checkpoint,
    ) -> Result<Box<dyn DynHarness>, BuildError>;
    /// A harness continuing `snapshot` for a fork: the world, scheduler and counters are
    /// the snapshot's; the agent is built from `request` (with `request.seed` as its seed)
    /// and starts as `start` says; the budget and `record_transitions` are
    /// `request.config`'s, the rest of the config the snapshot's; the run id is
    /// `request.run_id`, else the snapshot's.
    ///
    /// # Errors
    ///
    /// As [`Kind::harness`], or the snapshot does not fit.
    fn restore(
        &self,
        request: &RunRequest<'_>,
        snapshot: &Snapshot,
        start: AgentStart,
    ) -> Result<Box<dyn DynRestored>, BuildError>;
}

/// The scheduler of `request`'s world file, on the run seed's scheduler stream.
fn scheduler_of(request: &RunRequest<'_>) -> Result<crate::regime::Scheduler, BuildError> {
    request
        .world
        .scheduler(seed::derive(request.seed, Stream::Scheduler, 0))
        .map_err(|e| BuildError::World(WorldFileError::whole(&request.world.path, e.to_string())))
}

/// A [`WorldKind`] with its agents: generic ones and the kind's own.
struct Entry<K: WorldKind> {
    kind: K,
    agents: Vec<(&'static str, AgentBuilder<K::Env>)>,
}

impl<K: WorldKind> Entry<K> {
    fn env(&self, world: &WorldFile) -> Result<K::Env, BuildError> {
        let params = world.params::<K::Params>().ok_or_else(|| {
            BuildError::World(WorldFileError::whole(
                &world.path,
                format!(
                    "the world file was loaded for another kind than `{}`",
                    self.kind.name()
                ),
            ))
        })?;
        let reward = world.reward_spec();
        self.kind
            .build(params, reward.as_ref())
            .map_err(|e| BuildError::World(WorldFileError::whole(&world.path, e.to_string())))
    }

    /// Builds agent `name` on `env`, with the world file's regimes and `probe` as the
    /// regime probe (which the harness publishes to).
    fn agent(
        &self,
        env: &K::Env,
        world: &WorldFile,
        name: &str,
        options: &toml::Table,
        seed: u64,
        probe: &RegimeProbe,
    ) -> Result<Box<dyn Agent<K::Env>>, BuildError> {
        // `ROLE=AGENT,...` names a roles agent, one agent per role.
        let lookup = if name.contains('=') { "roles" } else { name };
        let build = self
            .agents
            .iter()
            .find(|(n, _)| *n == lookup)
            .map(|(_, b)| *b)
            .ok_or_else(|| BuildError::Agent(AgentError::unknown(name, &self.names())))?;
        build(&AgentCtx {
            name,
            env,
            options,
            seed,
            regimes: &world.regimes,
            regime: probe.clone(),
            agents: &self.agents,
        })
        .map_err(BuildError::Agent)
    }

    /// The env, the agent and the probe the agent reads the regime from (only reference
    /// agents read it) for a run of `request`.
    #[expect(
        clippy::type_complexity,
        reason = "the three parts of a run, used at once"
    )]
    fn parts(
        &self,
        request: &RunRequest<'_>,
    ) -> Result<(K::Env, Box<dyn Agent<K::Env>>, RegimeProbe), BuildError> {
        let env = self.env(request.world)?;
        let probe = RegimeProbe::new();
        let (world, options) = (request.world, request.agent_options);
        let agent = self.agent(&env, world, request.agent, options, request.seed, &probe)?;
        Ok((env, agent, probe))
    }

    fn names(&self) -> Vec<&'static str> {
        self.agents.iter().map(|(n, _)| *n).collect()
    }
}

impl<K: WorldKind> KindRules for Entry<K> {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn load(
        &self,
        table: Option<&toml::Table>,
    ) -> Result<(WorldParams, Vec<ParamInfo>), ParamError> {
        let params: K::Params = match table {
            None => K::Params::default(),
            Some(t) => typed_table(t).map_err(|(field, message)| ParamError { field, message })?,
        };
        let reward = self.default_reward();
        let env = self.kind.build(&params, reward.as_ref())?;
        let parameters = env.parameters();
        validate_conditions(&parameters, &env.snapshot()).map_err(|e| {
            let field = match &e {
                crate::regime::RegimeError::OutOfRange { name, .. }
                | crate::regime::RegimeError::UnknownParameter { name, .. } => Some(name.clone()),
                _ => None,
            };
            ParamError {
                field,
                message: e.to_string(),
            }
        })?;
        Ok((WorldParams::new(params), parameters))
    }

    fn reward_signals(&self) -> &'static [&'static str] {
        self.kind.reward_signals()
    }

    fn default_reward(&self) -> Option<RewardSpec> {
        self.kind.default_reward()
    }

    fn agent_names(&self) -> Vec<&'static str> {
        self.names()
    }

    fn operations(&self) -> &'static [&'static str] {
        self.kind.operations()
    }

    fn role_agent_names(&self) -> Vec<&'static str> {
        self.kind.role_agent_names()
    }

    fn check_agent_options(
        &self,
        world: &WorldFile,
        agent: &str,
        options: &toml::Table,
    ) -> Result<(), AgentCheckError> {
        self.check_agent(world, agent, options, 0)
            .map_err(|e| match e {
                BuildError::Agent(AgentError::Option { field, message, .. }) => {
                    AgentCheckError::Option { field, message }
                }
                BuildError::Agent(AgentError::Build { message, .. }) => {
                    AgentCheckError::Build { message }
                }
                other => AgentCheckError::Other(other.to_string()),
            })
    }
}

impl<K: WorldKind> Kind for Entry<K> {
    fn build_env(&self, world: &WorldFile) -> Result<Box<dyn DynEnv>, BuildError> {
        Ok(Box::new(self.env(world)?))
    }

    fn check_agent(
        &self,
        world: &WorldFile,
        agent: &str,
        options: &toml::Table,
        seed: u64,
    ) -> Result<(), BuildError> {
        let env = self.env(world)?;
        self.agent(&env, world, agent, options, seed, &RegimeProbe::new())
            .map(drop)
    }

    fn harness(&self, request: &RunRequest<'_>) -> Result<Box<dyn DynHarness>, BuildError> {
        let (env, agent, probe) = self.parts(request)?;
        let scheduler = scheduler_of(request)?;
        let mut harness = Harness::new(env, agent, request.seed)
            .scheduler(scheduler)
            .config(request.config.clone())
            .publish_regime(probe)
            .notify(request.notify);
        if let Some(id) = &request.run_id {
            harness = harness.run_id(id.clone());
        }
        Ok(Box::new(harness))
    }

    fn resume(
        &self,
        request: &RunRequest<'_>,
        checkpoint: Checkpoint,
    ) -> Result<Box<dyn DynHarness>, BuildError> {
        let (env, agent, probe) = self.parts(request)?;
        // The parameters the edited file builds the world with, read before the world
        // loads the checkpoint's state.
        let baseline = request.follow_world.then(|| env.snapshot());
        let mut harness = Harness::resume(env, agent, checkpoint, None)
            .map_err(|e| BuildError::Checkpoint(e.into()))?;
        if let Some(baseline) = baseline {
            let scheduler = scheduler_of(request)?;
            harness = harness
                .follow_world(scheduler, baseline)
                .map_err(|e| BuildError::Checkpoint(e.into()))?;
        }
        Ok(Box::new(harness.publish_regime(probe)))
    }

    fn restore(
        &self,
        request: &RunRequest<'_>,
        snapshot: &Snapshot,
        start: AgentStart,
    ) -> Result<Box<dyn DynRestored>, BuildError> {
        let (env, agent, probe) = self.parts(request)?;
        let config = HarnessConfig {
            steps: request.config.steps,
            record_transitions: request.config.record_transitions,
            ..snapshot.config().clone()
        };
        let mut harness = Harness::restore(env, agent, snapshot, start)
            .map_err(BuildError::Checkpoint)?
            .config(config)
            .publish_regime(probe);
        if let Some(id) = &request.run_id {
            harness = harness.run_id(id.clone());
        }
        Ok(Box::new(harness))
    }
}

/// World kinds by name, each with its agents.
#[derive(Clone, Default)]
pub struct Registry {
    kinds: BTreeMap<String, Arc<dyn Kind>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.kinds.keys()).finish()
    }
}

impl Registry {
    /// A registry with no kinds.
    pub fn empty() -> Self {
        Registry::default()
    }

    /// Adds (or replaces) a kind with the generic agents only.
    pub fn world<K: WorldKind>(self, kind: K) -> Self {
        self.world_with_agents(kind, Vec::new())
    }

    /// Adds (or replaces) a kind with the generic agents and its own `agents`, which may
    /// also replace a generic one of the same name.
    pub fn world_with_agents<K: WorldKind>(
        mut self,
        kind: K,
        own: Vec<(&'static str, AgentBuilder<K::Env>)>,
    ) -> Self {
        let mut list = agents::generic::<K::Env>();
        for (name, build) in own {
            list.retain(|(n, _)| *n != name);
            list.push((name, build));
        }
        let name = kind.name().to_string();
        self.kinds
            .insert(name, Arc::new(Entry { kind, agents: list }));
        self
    }

    /// The kind registered under `name`.
    pub fn kind(&self, name: &str) -> Option<&dyn Kind> {
        self.kinds.get(name).map(|k| k.as_ref())
    }

    /// The registered kind names, sorted.
    pub fn kind_names(&self) -> Vec<&str> {
        self.kinds.keys().map(String::as_str).collect()
    }
}

impl Kinds for Registry {
    fn rules(&self, name: &str) -> Option<&dyn KindRules> {
        self.kind(name).map(|k| k as &dyn KindRules)
    }

    fn names(&self) -> Vec<&str> {
        self.kind_names()
    }
}

/// A kind made of its name and a function from its parameters to the env: for a world
/// with no reward signals of its own for a `[reward]` section to read and no default reward
/// specification. CartPole's kind is one.
pub struct KindFn<P, E> {
    name: &'static str,
    build: fn(&P) -> Result<E, ParamError>,
}

impl<P, E> KindFn<P, E> {
    /// The kind `name`, whose envs `build` makes from the `[world.params]` table.
    pub fn new(name: &'static str, build: fn(&P) -> Result<E, ParamError>) -> Self {
        KindFn { name, build }
    }
}

impl<P, E> WorldKind for KindFn<P, E>
where
    P: DeserializeOwned + Default + Clone + PartialEq + fmt::Debug + Send + Sync + 'static,
    E: Env<Action = usize> + Shiftable + 'static,
{
    type Env = E;
    type Params = P;

    fn name(&self) -> &'static str {
        self.name
    }

    fn build(&self, params: &P, _: Option<&RewardSpec>) -> Result<E, ParamError> {
        (self.build)(params)
    }
}

/// The persistent enterprise world (see [`crate::morpheus`]).
pub(crate) struct MorpheusKind;

impl WorldKind for MorpheusKind {
    type Env = Morpheus;
    type Params = MorpheusConfig;

    fn name(&self) -> &'static str {
        "morpheus"
    }

    fn build(
        &self,
        config: &MorpheusConfig,
        reward: Option<&RewardSpec>,
    ) -> Result<Morpheus, ParamError> {
        config
            .validate()
            .map_err(|e| ParamError::field(e.field, e.message.clone()))?;
        let reward = reward
            .cloned()
            .unwrap_or_else(morpheus::default_reward_spec);
        Morpheus::new(config.clone(), reward).map_err(ParamError::table)
    }

    fn reward_signals(&self) -> &'static [&'static str] {
        morpheus::signal_names()
    }

    fn default_reward(&self) -> Option<RewardSpec> {
        Some(morpheus::default_reward_spec())
    }
}

/// Loads the world file at `path` with `registry` and builds its world, type-erased.
///
/// # Errors
///
/// The file is not a valid world file for `registry` (the message names file, line and
/// field), or its world cannot be built.
pub fn make(path: &std::path::Path, registry: &Registry) -> Result<Box<dyn DynEnv>, BuildError> {
    let world = WorldFile::load_with(path, registry)?;
    build(&world, registry)
}

/// Builds a loaded world file's world, type-erased.
///
/// # Errors
///
/// The file's kind is not in `registry`, or its world cannot be built.
pub fn build(world: &WorldFile, registry: &Registry) -> Result<Box<dyn DynEnv>, BuildError> {
    let kind = registry.kind(world.kind()).ok_or_else(|| {
        BuildError::World(WorldFileError::whole(
            &world.path,
            format!("unknown world kind `{}`", world.kind()),
        ))
    })?;
    kind.build_env(world)
}
