//! The enterprise world's oracle: a privileged reference that plays a tuned base-stock policy per regime.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::base_stock::{BaseStockAgent, BaseStockParams};
use super::{AgentCtx, AgentError};
use crate::config::typed_table;
use crate::harness::Agent;
use crate::morpheus::{Morpheus, MorpheusConfig};
use crate::regime::RegimeProbe;

/// Settings of [`Oracle`]: a base-stock policy per regime label.
///
/// In a world file, one `[agent.oracle.<label>]` table per regime, with the fields of
/// [`BaseStockParams`] (`reorder_hours`, `target_hours`, `carrier`, `repair_at`; each
/// optional, defaulting as there):
///
/// ```toml
/// [agent.oracle.baseline]
/// reorder_hours = 24.0
/// target_hours = 36.0
/// carrier = 2
/// repair_at = 0
/// ```
///
/// `cargo run --release --example regime_separation` tunes these per regime and prints
/// them in this form. A regime without a table is played with the base-stock defaults
/// ([`BaseStockParams::default`]). A table whose label no regime of the world has, a field
/// `BaseStockParams` does not have, a value of the wrong type, a negative or non-finite
/// number of hours or a carrier the world does not have is an error at load, naming the
/// file, the line and the field (`agent.oracle.<label>.<field>`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OracleParams {
    /// The base-stock settings to play under each regime label.
    pub per_regime: BTreeMap<String, BaseStockParams>,
}

impl OracleParams {
    /// Reads the `[agent.oracle]` table: one sub-table per label of `labels` (any label
    /// when `labels` is empty, for an oracle built outside a world file), checked against
    /// a world with `carriers` carriers. `agent` is the name errors are reported under.
    ///
    /// # Errors
    ///
    /// [`AgentError::Option`] naming the offending `<label>` or `<label>.<field>`.
    pub fn from_table(
        agent: &str,
        table: &toml::Table,
        labels: &[&str],
        carriers: usize,
    ) -> Result<Self, AgentError> {
        let mut per_regime = BTreeMap::new();
        for (label, value) in table {
            let fail = |field: String, message: String| AgentError::option(agent, field, message);
            if !labels.is_empty() && !labels.contains(&label.as_str()) {
                return Err(fail(
                    label.clone(),
                    format!(
                        "this world has no regime `{label}`; name each table after a regime: {}",
                        labels.join(", ")
                    ),
                ));
            }
            let Some(fields) = value.as_table() else {
                return Err(fail(
                    label.clone(),
                    format!(
                        "is a {}, not a table; give `[agent.{agent}.{label}]` the base-stock settings to play under the regime (reorder_hours, target_hours, carrier, repair_at)",
                        value.type_str()
                    ),
                ));
            };
            let params: BaseStockParams =
                typed_table(fields).map_err(|(key, message)| match key {
                    Some(k) => fail(format!("{label}.{k}"), message),
                    None => fail(label.clone(), message),
                })?;
            for (name, hours) in [
                ("reorder_hours", params.reorder_hours),
                ("target_hours", params.target_hours),
            ] {
                if !(hours.is_finite() && hours >= 0.0) {
                    return Err(fail(
                        format!("{label}.{name}"),
                        format!("is {hours}; use a finite number of hours of demand, at least 0"),
                    ));
                }
            }
            if let Some(c) = params.carrier
                && c as usize >= carriers
            {
                return Err(fail(
                    format!("{label}.carrier"),
                    format!(
                        "is {c}; this world has {carriers} carriers, numbered 0 to {}",
                        carriers.saturating_sub(1)
                    ),
                ));
            }
            per_regime.insert(label.clone(), params);
        }
        Ok(OracleParams { per_regime })
    }

    /// The options of `ctx` read as [`OracleParams::from_table`] does, against the world
    /// file's regime labels and the env's carriers.
    ///
    /// # Errors
    ///
    /// As [`OracleParams::from_table`].
    pub fn from_ctx(ctx: &AgentCtx<'_, Morpheus>) -> Result<Self, AgentError> {
        let labels: Vec<&str> = ctx.regimes.iter().map(|r| r.label.as_str()).collect();
        Self::from_table(ctx.name, ctx.options, &labels, ctx.env.config().carriers)
    }
}

/// A **reference, not a learner**: the base-stock policy ([`BaseStockAgent`]) with the
/// settings tuned for the regime in force, switched the step a regime comes into force.
///
/// It is privileged: it reads the regime label through a [`RegimeProbe`] the harness
/// publishes to (`perennial run --agent oracle` wires one up; a harness built by hand needs
/// [`Harness::publish_regime`](crate::harness::Harness::publish_regime) with a clone of the
/// probe given here). The observation is the same as every other agent's, and nothing else
/// is privileged: its decisions within a regime are base-stock's, on the same readings.
/// Its trace is the yardstick `perennial eval --reference` measures learners against
/// (regret per interval and label); its settings come from the world file, so a
/// researcher's variant of a world carries its own. Until a label is published, and under
/// a label without settings, it plays [`BaseStockParams::default`]. It never learns.
///
/// # Examples
///
/// ```
/// use perennial::agents::{BaseStockParams, Oracle, OracleParams};
/// use perennial::harness::{Harness, HarnessConfig};
/// use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
/// use perennial::prelude::*;
/// use perennial::regime::RegimeProbe;
///
/// let config = MorpheusConfig::default();
/// let env = Morpheus::new(config.clone(), default_reward_spec()).unwrap();
/// let mut params = OracleParams::default();
/// params.per_regime.insert("lean".into(), BaseStockParams::levels(10.0, 15.0));
/// let probe = RegimeProbe::new();
/// let oracle = Oracle::new(&config, params, probe.clone());
/// let regimes = vec![Regime::new("normal", &[]), Regime::new("lean", &[("demand_rate", 0.6)])];
/// let plan = Plan::cycle(&["normal", "lean"], 50);
/// let harness = Harness::new(env, oracle, 3)
///     .scheduler(Scheduler::new(regimes, plan, 0).unwrap())
///     .config(HarnessConfig { steps: 100, ..HarnessConfig::default() })
///     .publish_regime(probe.clone());
/// harness.run().unwrap();
/// assert_eq!(probe.label().as_deref(), Some("lean"));
/// ```
#[derive(Debug)]
pub struct Oracle {
    policy: BaseStockAgent,
    params: OracleParams,
    /// The label whose settings the policy plays.
    active: Option<String>,
    probe: RegimeProbe,
    /// The probe generation last looked at; not saved, so a resumed oracle reads the label
    /// again (and keeps its policy's state when the label is still `active`).
    seen: Option<u64>,
}

/// What [`Oracle`] saves in a checkpoint.
#[derive(Serialize, Deserialize)]
struct Saved {
    policy: serde_json::Value,
    params: OracleParams,
    active: Option<String>,
}

impl Oracle {
    /// An oracle for a world with this layout, reading the label in force from `probe`.
    pub fn new(config: &MorpheusConfig, params: OracleParams, probe: RegimeProbe) -> Self {
        Oracle {
            policy: BaseStockAgent::new(config, BaseStockParams::default()),
            params,
            active: None,
            probe,
            seen: None,
        }
    }

    /// The settings it plays per label.
    pub fn params(&self) -> &OracleParams {
        &self.params
    }

    /// The settings it plays now.
    pub fn playing(&self) -> &BaseStockParams {
        self.policy.params()
    }

    fn follow_regime(&mut self) {
        let generation = self.probe.generation();
        if self.seen == Some(generation) {
            return;
        }
        self.seen = Some(generation);
        let label = self.probe.label();
        if label != self.active {
            let params = label
                .as_ref()
                .and_then(|l| self.params.per_regime.get(l))
                .cloned()
                .unwrap_or_default();
            self.policy.set_params(params);
            self.active = label;
        }
    }
}

impl Agent<Morpheus> for Oracle {
    fn algorithm_id(&self) -> &str {
        "oracle"
    }

    fn act(&mut self, obs: &Vec<f32>) -> usize {
        self.follow_regime();
        self.policy.choose(obs)
    }

    fn save_state(&self) -> Result<serde_json::Value, String> {
        let saved = Saved {
            policy: self.policy.save_state()?,
            params: self.params.clone(),
            active: self.active.clone(),
        };
        serde_json::to_value(saved).map_err(|e| e.to_string())
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), String> {
        let saved: Saved = serde_json::from_value(state).map_err(|e| e.to_string())?;
        if saved.params != self.params {
            return Err(format!(
                "the saved per-regime settings are {:?}; this run's oracle has {:?}",
                saved.params.per_regime, self.params.per_regime
            ));
        }
        let mut policy = self.policy.clone();
        Agent::<Morpheus>::load_state(&mut policy, saved.policy)?;
        self.policy = policy;
        self.active = saved.active;
        self.seen = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    fn field(err: AgentError) -> String {
        match err {
            AgentError::Option { field, .. } => field,
            other => panic!("not an option error: {other}"),
        }
    }

    #[test]
    fn tables_are_read_per_label_and_missing_fields_default() {
        let p = OracleParams::from_table(
            "oracle",
            &table("[a]\nreorder_hours = 10.0\ncarrier = 1\n[b]\n"),
            &["a", "b", "c"],
            3,
        )
        .unwrap();
        assert_eq!(p.per_regime["a"].reorder_hours, 10.0);
        assert_eq!(p.per_regime["a"].carrier, Some(1));
        assert_eq!(
            p.per_regime["a"].target_hours,
            BaseStockParams::default().target_hours
        );
        assert_eq!(p.per_regime["b"], BaseStockParams::default());
        assert!(!p.per_regime.contains_key("c"));
    }

    #[test]
    fn bad_tables_name_the_label_and_field() {
        let labels = ["a", "b"];
        let err = |text: &str| {
            field(OracleParams::from_table("oracle", &table(text), &labels, 3).unwrap_err())
        };
        assert_eq!(err("[z]\nreorder_hours = 1.0\n"), "z");
        assert_eq!(err("a = 3\n"), "a");
        assert_eq!(err("[a]\nreorder_hourz = 1.0\n"), "a.reorder_hourz");
        assert_eq!(
            err("[a]\nreorder_hours = 1.0\ncarrier = \"fast\"\n"),
            "a.carrier"
        );
        assert_eq!(err("[b]\ntarget_hours = -1.0\n"), "b.target_hours");
        assert_eq!(err("[b]\nreorder_hours = nan\n"), "b.reorder_hours");
        assert_eq!(err("[b]\ncarrier = 3\n"), "b.carrier");
    }
}
