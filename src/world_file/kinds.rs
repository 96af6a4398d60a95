//! What loading a world file asks of a world kind, as traits this module defines and a
//! registry implements ([`crate::registry::Registry`] does): the kind's parameters
//! ([`KindRules::load`] into [`WorldParams`]), its reward signals and default reward, its
//! agents and operations, and a check of an agent's options. The loader depends on these
//! traits only, so the registry, which builds worlds from loaded files, sits above it.

use std::fmt;

use super::file::{WorldFile, WorldParams};
use crate::regime::ParamInfo;
use crate::reward::RewardSpec;

/// A `[world.params]` value a kind rejects: the field (relative to `world.params`) and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamError {
    /// The offending key of `[world.params]`, when one is to blame.
    pub field: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl ParamError {
    /// An error about one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        ParamError {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// An error about the table as a whole.
    pub fn table(message: impl fmt::Display) -> Self {
        ParamError {
            field: None,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "world.params.{field}: {}", self.message),
            None => write!(f, "world.params: {}", self.message),
        }
    }
}

impl std::error::Error for ParamError {}

/// Why an agent's options do not fit it, as the loader reports it (the key to blame when
/// there is one).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentCheckError {
    /// An option is unknown, of the wrong type or out of range.
    Option {
        /// The option, relative to `[agent.<name>]`.
        field: String,
        /// Why.
        message: String,
    },
    /// The agent cannot be built with these options on this world.
    Build {
        /// Why.
        message: String,
    },
    /// Anything else (the world itself could not be built).
    Other(String),
}

/// A world kind as the loader sees it.
pub trait KindRules {
    /// The `kind = "..."` name.
    fn name(&self) -> &str;
    /// Parses and validates `[world.params]` (`None`: the table is absent); returns the
    /// parameters and the world's [`Shiftable`](crate::regime::Shiftable) parameter list
    /// for checking regimes.
    ///
    /// # Errors
    ///
    /// A field is unknown, has the wrong type or is out of range.
    fn load(
        &self,
        params: Option<&toml::Table>,
    ) -> Result<(WorldParams, Vec<ParamInfo>), ParamError>;
    /// The reward signals a `[reward]` section may read.
    fn reward_signals(&self) -> &'static [&'static str];
    /// The reward specification when the file gives none.
    fn default_reward(&self) -> Option<RewardSpec>;
    /// The agents this kind can run, generic ones first.
    fn agent_names(&self) -> Vec<&'static str>;
    /// The operation kinds its `[roles]` table may assign; empty for a kind without roles.
    fn operations(&self) -> &'static [&'static str] {
        &[]
    }
    /// The agents a role may run (`ROLE=AGENT`); empty for a kind without roles.
    fn role_agent_names(&self) -> Vec<&'static str> {
        Vec::new()
    }
    /// Builds `agent` with `options` on `world` (its parameters loaded) and drops it.
    ///
    /// # Errors
    ///
    /// The options do not fit the agent, or it cannot be built.
    fn check_agent_options(
        &self,
        world: &WorldFile,
        agent: &str,
        options: &toml::Table,
    ) -> Result<(), AgentCheckError>;
}

/// The kinds a world file may name (a registry).
pub trait Kinds {
    /// The kind registered under `name`.
    fn rules(&self, name: &str) -> Option<&dyn KindRules>;
    /// The registered kind names, sorted.
    fn names(&self) -> Vec<&str>;
}
