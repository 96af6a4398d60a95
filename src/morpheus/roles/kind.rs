//! The `enterprise` world kind: how a world file with roles becomes an [`EnterpriseEnv`],
//! and the agents its roles may run.

use super::agent::role_agents;
use super::env::{EnterpriseEnv, EnterpriseParams};
use crate::morpheus;
use crate::registry::{ParamError, WorldKind};
use crate::reward::RewardSpec;

/// The `enterprise` world kind: [`EnterpriseEnv`] from [`EnterpriseParams`].
pub struct EnterpriseKind;

impl WorldKind for EnterpriseKind {
    type Env = EnterpriseEnv;
    type Params = EnterpriseParams;

    fn name(&self) -> &'static str {
        "enterprise"
    }

    fn build(
        &self,
        params: &EnterpriseParams,
        reward: Option<&RewardSpec>,
    ) -> Result<EnterpriseEnv, ParamError> {
        params
            .config
            .validate()
            .map_err(|e| ParamError::field(e.field, e.message.clone()))?;
        let reward = reward
            .cloned()
            .unwrap_or_else(morpheus::default_reward_spec);
        EnterpriseEnv::new(params.config.clone(), reward, params.roles.clone())
            .map_err(|m| ParamError::field("roles", m))
    }

    fn reward_signals(&self) -> &'static [&'static str] {
        morpheus::signal_names()
    }

    fn default_reward(&self) -> Option<RewardSpec> {
        Some(morpheus::default_reward_spec())
    }

    fn operations(&self) -> &'static [&'static str] {
        &[
            "noop",
            "reorder",
            "choose_carrier",
            "expedite",
            "repair_dock",
            "prioritize_sku",
            "hold_wave",
        ]
    }

    fn role_agent_names(&self) -> Vec<&'static str> {
        role_agents().iter().map(|(name, _)| *name).collect()
    }
}
