//! Several agents in one enterprise world: roles that each own some operation kinds.
//!
//! A [`RoleTable`] (a world file's `[roles]` table) gives every operation kind but the
//! no-op to exactly one role, in file order. Each role has its own `Discrete` action space
//! ([`RoleLayout`]): index 0 is the no-op, then its operations in the order of
//! [`OpKind::ALL`]. In an hour the roles' operations apply in role order, each against the
//! day's `op_budget` on its own. A role observes its projection of the world's
//! observation (`observe = "own"`: the blocks that touch its operations, plus the clock
//! and the flags) or all of it (`"full"`); the full vector is the state for centralized
//! training.
//!
//! Rewards: the team reward is the world's reward specification, unchanged. Each role
//! owns some of its terms (`terms = [...]`, every term owned once), so the roles' own
//! rewards add up to the team reward. An agent learns from
//! `alpha × team + (1 − alpha) × own` (`alpha` 1, the default: cooperative).
//!
//! The `enterprise` world kind ([`EnterpriseEnv`]) runs a roles table with one joint
//! `Discrete` action: role `r`'s index times the product of the later roles' sizes, summed
//! (the first role is the most significant digit). A roles agent
//! ([`RolesAgent`]: `--agent warehouse=base-stock,logistics=random`) builds one agent per
//! role and encodes their choices.

mod agent;
mod env;
mod kind;
mod notify;

use serde::{Deserialize, Serialize};

pub use agent::{RoleView, RolesAgent, for_enterprise, role_agents};
pub use env::{EnterpriseEnv, EnterpriseParams, RewardTap};
pub use kind::EnterpriseKind;
pub use notify::{DeltaScope, RoleNotify, tell, touches};

pub use super::action::OpKind;
use super::{ActionLayout, MorpheusConfig, Op};

/// Hours a `prioritize_sku` lasts.
pub const PRIORITY_HOURS: u64 = 24;

/// The shipping-cost factor of a wave that carries a held wave's orders with it.
pub const CONSOLIDATION_DISCOUNT: f64 = 0.5;

/// The rebooking fee of a change of carrier in a roles world (booked as shipping): a
/// carrier contract is not free to break, so a desk that keeps switching pays for it.
pub const CARRIER_SWITCH_FEE: f64 = 20.0;

/// What a role observes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Observe {
    /// The blocks that touch its operations, the clock and the flags.
    #[default]
    Own,
    /// The whole observation.
    Full,
}

/// One role: its name, the operation kinds it owns, what it observes and the team reward
/// terms it owns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    /// Its name (`warehouse`).
    pub name: String,
    /// The operation kinds it owns, in action-table order.
    pub ops: Vec<OpKind>,
    /// What it observes.
    #[serde(default)]
    pub observe: Observe,
    /// The names of the team reward's terms its own reward sums.
    #[serde(default)]
    pub terms: Vec<String>,
}

/// A world's roles, in the order their operations apply within an hour.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleTable {
    /// The roles.
    pub roles: Vec<Role>,
    /// The weight of the team reward in what each role's agent learns from (1).
    #[serde(default = "one")]
    pub alpha: f64,
    /// What each role is told at a shift (the world file's per-role `[notify]` keys).
    #[serde(default, skip_serializing_if = "RoleNotify::is_default")]
    pub notify: RoleNotify,
}

fn one() -> f64 {
    1.0
}

/// A role table that does not hold: which role and field, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleError {
    /// The role to blame, when one is.
    pub role: Option<String>,
    /// The field within it (`ops`, `terms`, `observe`) or the table's (`alpha`).
    pub field: &'static str,
    /// Why.
    pub message: String,
}

impl std::fmt::Display for RoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.role {
            Some(r) => write!(f, "roles.{r}.{}: {}", self.field, self.message),
            None => write!(f, "roles.{}: {}", self.field, self.message),
        }
    }
}

impl std::error::Error for RoleError {}

impl Default for RoleTable {
    /// The shipped split: `warehouse` (reorder, expedite, repair_dock; the inbound costs)
    /// and `logistics` (choose_carrier, prioritize_sku, hold_wave; revenue and the
    /// outbound costs), cooperative.
    fn default() -> Self {
        let terms = |t: &[&str]| t.iter().map(|s| s.to_string()).collect();
        RoleTable {
            roles: vec![
                Role {
                    name: "warehouse".into(),
                    ops: vec![OpKind::Reorder, OpKind::Expedite, OpKind::RepairDock],
                    observe: Observe::Own,
                    terms: terms(&[
                        "purchases",
                        "holding",
                        "repair",
                        "expedite",
                        "detention",
                        "interest",
                    ]),
                },
                Role {
                    name: "logistics".into(),
                    ops: vec![
                        OpKind::ChooseCarrier,
                        OpKind::PrioritizeSku,
                        OpKind::HoldWave,
                    ],
                    observe: Observe::Own,
                    terms: terms(&["revenue", "shipping", "late", "lost"]),
                },
            ],
            alpha: 1.0,
            notify: RoleNotify::default(),
        }
    }
}

impl RoleTable {
    /// Checks the table: at least one role, names that are ids and unique, every role
    /// owning an operation, every operation kind owned by exactly one role, `alpha` in
    /// `[0, 1]`; and with the team reward's term names, every term owned by exactly one
    /// role.
    ///
    /// # Errors
    ///
    /// The first rule broken, naming the role and field.
    pub fn check(&self, terms: Option<&[String]>) -> Result<(), RoleError> {
        let err = |role: Option<&str>, field, message: String| RoleError {
            role: role.map(str::to_string),
            field,
            message,
        };
        if self.roles.is_empty() {
            return Err(err(None, "roles", "names no role".into()));
        }
        if !(0.0..=1.0).contains(&self.alpha) {
            return Err(err(
                None,
                "alpha",
                format!(
                    "is {}; use a weight from 0 (each role its own reward) to 1 (the team's)",
                    self.alpha
                ),
            ));
        }
        let mut owner: std::collections::BTreeMap<OpKind, &str> = Default::default();
        let mut term_owner: std::collections::BTreeMap<&str, &str> = Default::default();
        for (i, role) in self.roles.iter().enumerate() {
            let name = role.name.as_str();
            crate::limits::check_id("a role name", name).map_err(|m| err(Some(name), "name", m))?;
            if self.roles[..i].iter().any(|r| r.name == role.name) {
                return Err(err(Some(name), "name", "is given twice".into()));
            }
            if role.ops.is_empty() {
                return Err(err(
                    Some(name),
                    "ops",
                    format!(
                        "the role owns no operation; give it at least one of: {}",
                        OpKind::ALL.map(OpKind::name).join(", ")
                    ),
                ));
            }
            for &op in &role.ops {
                if let Some(first) = owner.insert(op, name) {
                    return Err(err(
                        Some(name),
                        "ops",
                        format!(
                            "operation `{}` is owned twice (by `{first}` and `{name}`); give each operation to one role",
                            op.name()
                        ),
                    ));
                }
            }
            let Some(terms) = terms else {
                continue;
            };
            for t in &role.terms {
                if !terms.contains(t) {
                    return Err(err(
                        Some(name),
                        "terms",
                        format!(
                            "`{t}` is not a term of the reward; its terms are: {}",
                            terms.join(", ")
                        ),
                    ));
                }
                if let Some(first) = term_owner.insert(t, name) {
                    return Err(err(
                        Some(name),
                        "terms",
                        format!(
                            "term `{t}` is owned twice (by `{first}` and `{name}`); the roles' terms must partition the reward"
                        ),
                    ));
                }
            }
        }
        if let Some(op) = OpKind::ALL.into_iter().find(|k| !owner.contains_key(k)) {
            return Err(err(
                None,
                "roles",
                format!(
                    "operation `{}` is owned by no role; give every operation to one role",
                    op.name()
                ),
            ));
        }
        if let Some(t) = terms
            .unwrap_or_default()
            .iter()
            .find(|t| !term_owner.contains_key(t.as_str()))
        {
            return Err(err(
                None,
                "roles",
                format!(
                    "reward term `{t}` is owned by no role; the roles' `terms` must partition the reward"
                ),
            ));
        }
        Ok(())
    }

    /// The role names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.roles.iter().map(|r| r.name.as_str()).collect()
    }

    /// The index of role `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.roles.iter().position(|r| r.name == name)
    }
}

/// One role's action table and observation projection under a layout.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleLayout {
    /// Its operation kinds, in table order.
    kinds: Vec<OpKind>,
    /// The indices of the world's observation it sees, ascending.
    pub seen: Vec<usize>,
    /// Its action count (the no-op included).
    pub actions: usize,
    config: MorpheusConfig,
}

impl RoleLayout {
    /// The layout of `role` in `config`'s world.
    pub fn new(role: &Role, config: &MorpheusConfig) -> Self {
        let mut kinds = role.ops.clone();
        kinds.sort_unstable();
        kinds.dedup();
        let actions = ActionLayout::of(config).len_in(&kinds);
        let seen = match role.observe {
            Observe::Full => (0..config.observation_len()).collect(),
            Observe::Own => own_view(&kinds, config),
        };
        RoleLayout {
            kinds,
            seen,
            actions,
            config: config.clone(),
        }
    }

    /// The operation at role index `i`, `None` outside the role's table.
    pub fn decode(&self, i: usize) -> Option<Op> {
        ActionLayout::of(&self.config).decode_in(&self.kinds, i)
    }

    /// The role index of `op`, `None` when the role does not own it.
    pub fn encode(&self, op: Op) -> Option<usize> {
        ActionLayout::of(&self.config).encode_in(&self.kinds, op)
    }

    /// The role's observation: its entries of the world's `full` one.
    pub fn project(&self, full: &[f32], out: &mut Vec<f32>) {
        out.clear();
        out.extend(
            self.seen
                .iter()
                .map(|&i| full.get(i).copied().unwrap_or(0.0)),
        );
    }

    /// The world's observation with the role's entries from `own` and zeros elsewhere,
    /// for a policy written against the world's layout.
    pub fn embed(&self, own: &[f32]) -> Vec<f32> {
        let mut full = vec![0.0; self.config.observation_len()];
        for (&i, &v) in self.seen.iter().zip(own) {
            full[i] = v;
        }
        full
    }
}

/// The observation entries that touch `ops`, plus the clock, the failure count and the
/// flags (see [the world's layout](crate::morpheus)).
fn own_view(ops: &[OpKind], cfg: &MorpheusConfig) -> Vec<usize> {
    let (s, d, c) = (cfg.skus, cfg.docks, cfg.carriers);
    let base = 4 * s + d + c;
    let block = |k: usize| k * s..(k + 1) * s;
    let mut seen = std::collections::BTreeSet::new();
    for op in ops {
        let ranges: Vec<std::ops::Range<usize>> = match op {
            // On hand, pipeline, backlog, cash.
            OpKind::Reorder => vec![block(0), block(2), block(3), base + 1..base + 2],
            // Pipeline and the yard.
            OpKind::Expedite => vec![block(2), base..base + 1],
            // The doors and the yard.
            OpKind::RepairDock => vec![4 * s..4 * s + d, base..base + 1],
            // Carriers, reserved stock, goodwill.
            OpKind::ChooseCarrier => vec![4 * s + d..base, block(1), base + 2..base + 3],
            // On hand, reserved, backlog.
            OpKind::PrioritizeSku => vec![block(0), block(1), block(3)],
            // Reserved stock, backlog, goodwill.
            OpKind::HoldWave => vec![block(1), block(3), base + 2..base + 3],
        };
        for r in ranges {
            seen.extend(r);
        }
    }
    // The clock, the failure count and the flags.
    seen.extend(base + 3..base + 8);
    seen.into_iter().collect()
}

/// `--agent ROLE=AGENT,ROLE=AGENT` as (role, agent) pairs in role order.
///
/// # Errors
///
/// A part is not `ROLE=AGENT`, names a role the world does not have or one given twice,
/// or a role is missing; the message names the part.
pub fn parse_agent_spec(spec: &str, roles: &RoleTable) -> Result<Vec<(String, String)>, String> {
    let names = roles.names().join(", ");
    let mut out: Vec<Option<String>> = vec![None; roles.roles.len()];
    for part in spec.split(',') {
        let Some((role, agent)) = part.split_once('=') else {
            return Err(format!(
                "--agent part `{part}` is not ROLE=AGENT; this world's roles are: {names}"
            ));
        };
        let (role, agent) = (role.trim(), agent.trim());
        let Some(r) = roles.position(role) else {
            return Err(format!(
                "--agent names unknown role `{role}`; this world's roles are: {names}"
            ));
        };
        if agent.is_empty() {
            return Err(format!("--agent gives role `{role}` no agent"));
        }
        if out[r].replace(agent.to_string()).is_some() {
            return Err(format!("--agent gives role `{role}` twice"));
        }
    }
    roles
        .roles
        .iter()
        .zip(out)
        .map(|(role, agent)| match agent {
            Some(a) => Ok((role.name.clone(), a)),
            None => Err(format!(
                "--agent gives role `{}` no agent; name one agent per role: {names}",
                role.name
            )),
        })
        .collect()
}

/// The id of a roles agent spec (`warehouse.base-stock+logistics.random`): one that
/// run ids and the trace's `algorithm_id` accept.
pub fn agent_id(spec: &str) -> String {
    spec.replace('=', ".").replace(',', "+").replace(' ', "")
}

#[cfg(test)]
mod tests;
