//! A small structured action space for the PPO families on the enterprise world: the policy picks a cover level or a repair, and an adapter turns it into the world's operation.
//!
//! `--agent-opt actions=cover` (any PPO family, enterprise worlds only) gives the policy
//! [`CoverAdapter::choices`] actions instead of the world's whole table:
//!
//! | choice | operation |
//! |---|---|
//! | `0` | `Noop` |
//! | `1..=6` | cover level `L` of [`COVER_HOURS`] (8, 16, 24, 36, 48, 72 hours of base demand): the SKU whose inventory position covers the fewest hours, if fewer than `L`, is reordered with the bucket closest to what brings it up to `1.5 L` (base-stock's rule with reorder point `L`); `Noop` when no SKU is below `L` or the stock reading is missing |
//! | `7` | repair the first broken dock door; `Noop` when every door works |
//!
//! Masking: an operation the world would reject becomes `Noop` (a repair of a working
//! door), and a reorder never buys on credit: it is cut to the largest bucket the cash on
//! hand pays for at list cost, or `Noop` when none is. So even the untrained policy, which
//! picks among the choices uniformly, plays a jittery base-stock policy and stays solvent.
//!
//! The policy learns from its own choices (the window's actions are replaced by them), and
//! from the hour's reward shaped by the stock's value: `r + γ Φ(s') − Φ(s)` with `Φ` the
//! inventory position valued at list cost (a missing reading keeps the last valid one's
//! value). This is
//! potential-based shaping (Ng et al. 1999), which leaves the best policy unchanged; it
//! books a purchase as cash turned into stock rather than a loss, so an order is no longer
//! punished the hour it is placed for revenue that comes days later. The trace records
//! the world's operations and rewards as usual.

use serde::{Deserialize, Serialize};

use super::base_stock::{BaseStockAgent, BaseStockParams};
use super::ppo::Ppo;
use crate::env::{Env, Observation};
use crate::harness::{Agent, Window};
use crate::morpheus::{ActionLayout, MorpheusConfig, Op};
use crate::trace::Plasticity;

/// The cover levels of choices `1..=6`, hours of base demand (reorder points; the target
/// is [`TARGET_RATIO`] times the level).
pub const COVER_HOURS: [f64; 6] = [8.0, 16.0, 24.0, 36.0, 48.0, 72.0];

/// Order-up-to target of a cover level, as a multiple of it.
pub const TARGET_RATIO: f64 = 1.5;

/// Turns a choice of the cover action space into the world's action index; see the
/// [module docs](self).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CoverAdapter {
    policy: BaseStockAgent,
    layout: (usize, usize, usize, usize),
    quantities: Vec<u64>,
    unit_cost: Vec<f64>,
    opening_cash: f64,
}

impl CoverAdapter {
    /// The adapter for a world with this layout.
    pub fn new(config: &MorpheusConfig) -> Self {
        CoverAdapter {
            policy: BaseStockAgent::new(config, BaseStockParams::default()),
            layout: (
                config.skus,
                config.reorder_quantities.len(),
                config.carriers,
                config.docks,
            ),
            quantities: config.reorder_quantities.clone(),
            unit_cost: (0..config.skus)
                .map(|i| config.sku_price(i) * config.unit_cost_ratio)
                .collect(),
            opening_cash: config.opening_cash,
        }
    }

    /// Number of choices: no-op, the cover levels, repair.
    pub fn choices(&self) -> usize {
        COVER_HOURS.len() + 2
    }

    fn action_layout(&self) -> ActionLayout {
        let (skus, buckets, carriers, docks) = self.layout;
        ActionLayout {
            skus,
            buckets,
            carriers,
            docks,
        }
    }

    /// The operation `choice` stands for under observation `obs` (a choice out of range
    /// is `Noop`).
    pub fn op(&mut self, choice: usize, obs: &[f32]) -> Op {
        let (skus, _, carriers, docks) = self.layout;
        let at = |i: usize| obs.get(i).map_or(0.0, |&v| f64::from(v));
        if choice == COVER_HOURS.len() + 1 {
            return (0..docks)
                .find(|&d| at(4 * skus + d) < 0.5)
                .map_or(Op::Noop, |d| Op::RepairDock { dock: d as u32 });
        }
        let Some(&level) = choice.checked_sub(1).and_then(|k| COVER_HOURS.get(k)) else {
            return Op::Noop;
        };
        self.policy.set_params(BaseStockParams {
            repair_at: 0,
            ..BaseStockParams::levels(level, TARGET_RATIO * level)
        });
        let op = self
            .action_layout()
            .decode(self.policy.choose(obs))
            .unwrap_or_default();
        let Op::Reorder { sku, bucket } = op else {
            return op;
        };
        let cash = at(4 * skus + docks + carriers + 1) * self.opening_cash;
        let cost = |b: usize| self.quantities[b] as f64 * self.unit_cost[sku as usize];
        (0..=bucket as usize)
            .rev()
            .find(|&b| cost(b) <= cash)
            .map_or(Op::Noop, |b| Op::Reorder {
                sku,
                bucket: b as u32,
            })
    }

    /// The shaping potential of `obs`: its inventory position valued at list cost, or
    /// `None` for a missing reading.
    pub fn potential(&self, obs: &[f32]) -> Option<f64> {
        self.policy.stock_value(obs, &self.unit_cost)
    }

    /// The world's action index for `choice` under `obs`.
    pub fn action(&mut self, choice: usize, obs: &[f32]) -> usize {
        let op = self.op(choice, obs);
        self.action_layout().encode(op).unwrap_or(0)
    }
}

/// A PPO family acting through a [`CoverAdapter`]: its policy has the adapter's choices
/// for actions and learns from them; the world sees the operations they stand for.
#[derive(Debug)]
pub struct CoverActions {
    ppo: Ppo,
    adapter: CoverAdapter,
    /// The choices made since the last update, one per step of the window.
    choices: Vec<usize>,
}

impl CoverActions {
    /// Wraps `ppo`, built with [`CoverAdapter::choices`] actions.
    pub fn new(ppo: Ppo, adapter: CoverAdapter) -> Self {
        CoverActions {
            ppo,
            adapter,
            choices: Vec::new(),
        }
    }
}

/// What [`CoverActions`] saves beside the network.
#[derive(Serialize, Deserialize)]
struct Saved {
    ppo: serde_json::Value,
    choices: Vec<usize>,
}

impl<E> Agent<E> for CoverActions
where
    E: Env<Action = usize>,
    E::Obs: Observation,
{
    fn algorithm_id(&self) -> &str {
        Agent::<E>::algorithm_id(&self.ppo)
    }

    fn act(&mut self, obs: &E::Obs) -> usize {
        let choice = Agent::<E>::act(&mut self.ppo, obs);
        self.choices.push(choice);
        self.adapter.action(choice, obs.as_slice())
    }

    fn update(&mut self, window: &Window<E::Obs, usize>) {
        let n = window.len();
        let mut own = window.clone();
        let gamma = self.ppo.params().gamma;
        let mut held = 0.0;
        let mut phi = |o: &E::Obs| {
            if let Some(v) = self.adapter.potential(o.as_slice()) {
                held = v;
            }
            held
        };
        for ((r, o), next) in own
            .rewards
            .iter_mut()
            .zip(&window.obs)
            .zip(&window.next_obs)
        {
            let now = phi(o);
            *r += gamma * phi(next) - now;
        }
        let from = self.choices.len().saturating_sub(n);
        own.actions = self.choices.split_off(from);
        own.actions.resize(n, 0);
        self.choices.clear();
        Agent::<E>::update(&mut self.ppo, &own);
    }

    fn plasticity(&self) -> Option<Plasticity> {
        Agent::<E>::plasticity(&self.ppo)
    }

    fn reseed(&mut self, seed: u64) {
        Agent::<E>::reseed(&mut self.ppo, seed);
    }

    fn save_state(&self) -> Result<serde_json::Value, String> {
        let saved = Saved {
            ppo: Agent::<E>::save_state(&self.ppo)?,
            choices: self.choices.clone(),
        };
        serde_json::to_value(saved).map_err(|e| e.to_string())
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), String> {
        let saved: Saved = serde_json::from_value(state)
            .map_err(|e| format!("a PPO acting through `actions = \"cover\"`: {e}"))?;
        Agent::<E>::load_state(&mut self.ppo, saved.ppo)?;
        self.choices = saved.choices;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::PpoParams;
    use crate::morpheus::{Morpheus, default_reward_spec};

    /// Every shelf empty, every door up, cash as opened, a valid reading.
    fn empty_shelves(config: &MorpheusConfig) -> Vec<f32> {
        let (s, d, c) = (config.skus, config.docks, config.carriers);
        let base = 4 * s + d + c;
        let mut obs = vec![0.0; base + 8];
        obs[4 * s..base].fill(1.0);
        obs[base + 1] = 1.0;
        obs[base + 7] = 1.0;
        obs
    }

    #[test]
    fn each_choice_is_the_operation_it_documents() {
        let config = MorpheusConfig::default();
        let mut adapter = CoverAdapter::new(&config);
        let mut obs = empty_shelves(&config);
        assert_eq!(adapter.choices(), 8);
        assert_eq!(adapter.op(0, &obs), Op::Noop);
        // Empty shelves: every level reorders SKU 0 (the first of the neediest), with the
        // bucket closest to 1.5 L hours of its demand.
        for (k, level) in COVER_HOURS.iter().enumerate() {
            let need = TARGET_RATIO * level * config.sku_demand(0);
            let closest = (0..config.reorder_quantities.len())
                .min_by(|&a, &b| {
                    let da = (config.reorder_quantities[a] as f64 - need).abs();
                    let db = (config.reorder_quantities[b] as f64 - need).abs();
                    da.total_cmp(&db)
                })
                .unwrap();
            assert_eq!(
                adapter.op(k + 1, &obs),
                Op::Reorder {
                    sku: 0,
                    bucket: closest as u32
                },
                "level {level}"
            );
        }
        // Well stocked: no SKU under the level, nothing to do.
        obs[..config.skus].fill(1.0);
        assert_eq!(adapter.op(1, &obs), Op::Noop);
        let repair = COVER_HOURS.len() + 1;
        obs[4 * config.skus + 2] = 0.0;
        assert_eq!(adapter.op(repair, &obs), Op::RepairDock { dock: 2 });
        assert_eq!(adapter.op(repair + 1, &obs), Op::Noop);
    }

    #[test]
    fn operations_the_world_would_reject_or_that_buy_on_credit_are_masked() {
        let config = MorpheusConfig::default();
        let mut adapter = CoverAdapter::new(&config);
        let mut obs = empty_shelves(&config);
        // Every door works: a repair would be rejected.
        assert_eq!(adapter.op(COVER_HOURS.len() + 1, &obs), Op::Noop);
        // Cash for 20 units of SKU 0 but not 200: the order shrinks to what it pays for.
        let cash = 30.0 * config.sku_price(0) * config.unit_cost_ratio;
        obs[4 * config.skus + config.docks + config.carriers + 1] =
            (cash / config.opening_cash) as f32;
        assert_eq!(
            adapter.op(COVER_HOURS.len(), &obs),
            Op::Reorder { sku: 0, bucket: 0 }
        );
        obs[4 * config.skus + config.docks + config.carriers + 1] = -0.5;
        assert_eq!(adapter.op(COVER_HOURS.len(), &obs), Op::Noop);
        // A missing reading orders nothing.
        let mut missing = empty_shelves(&config);
        missing[4 * config.skus + config.docks + config.carriers + 7] = 0.0;
        assert_eq!(adapter.op(3, &missing), Op::Noop);
    }

    #[test]
    fn the_same_seed_gives_the_same_actions_and_the_policy_learns_its_choices() {
        let config = MorpheusConfig::default();
        let env = Morpheus::new(config.clone(), default_reward_spec()).unwrap();
        let dim = env.spec().observation_space.len();
        let build = |seed| {
            let adapter = CoverAdapter::new(&config);
            let ppo = Ppo::new(dim, adapter.choices(), PpoParams::default(), seed).unwrap();
            CoverActions::new(ppo, adapter)
        };
        let obs = empty_shelves(&config);
        let actions = |agent: &mut CoverActions| -> Vec<usize> {
            (0..64)
                .map(|_| Agent::<Morpheus>::act(agent, &obs))
                .collect()
        };
        let (mut a, mut b) = (build(3), build(3));
        let first = actions(&mut a);
        assert_eq!(first, actions(&mut b));
        assert!(first.iter().all(|&x| x < config.action_count()));
        assert_eq!(a.choices.len(), 64);
        let window = Window {
            obs: vec![obs.clone(); 64],
            actions: first,
            rewards: vec![1.0; 64],
            next_obs: vec![obs.clone(); 64],
            terminated: vec![false; 64],
            truncated: vec![false; 64],
            ..Window::default()
        };
        Agent::<Morpheus>::update(&mut a, &window);
        assert!(a.choices.is_empty());
        let state = Agent::<Morpheus>::save_state(&a).unwrap();
        Agent::<Morpheus>::load_state(&mut b, state).unwrap();
        assert_eq!(actions(&mut a), actions(&mut b), "a loaded copy acts alike");
    }

    #[test]
    fn every_ppo_family_takes_the_cover_actions_and_other_worlds_refuse_them() {
        let config = MorpheusConfig::default();
        let env = Morpheus::new(config.clone(), default_reward_spec()).unwrap();
        let cover: toml::Table = toml::from_str("actions = \"cover\"").unwrap();
        let obs = empty_shelves(&config);
        for name in crate::agents::ppo::FAMILIES {
            let ctx = crate::agents::AgentCtx::new(name, &env, &cover, 1);
            let build = crate::agents::by_name::<Morpheus>(name).unwrap();
            let mut agent = build(&ctx).unwrap();
            assert_eq!(agent.algorithm_id(), name);
            assert!(agent.act(&obs) < config.action_count(), "{name}");
        }
        let pole = crate::cartpole::CartPole::new(crate::cartpole::CartPoleParams::default());
        let ctx = crate::agents::AgentCtx::new("ppo", &pole, &cover, 1);
        let build = crate::agents::by_name::<crate::cartpole::CartPole>("ppo").unwrap();
        let err = build(&ctx).err().unwrap().to_string();
        assert!(
            err.contains("`actions`") && err.contains("enterprise"),
            "{err}"
        );
        let typo: toml::Table = toml::from_str("actions = \"covers\"").unwrap();
        let ctx = crate::agents::AgentCtx::new("ppo", &env, &typo, 1);
        let build = crate::agents::by_name::<Morpheus>("ppo").unwrap();
        assert!(build(&ctx).err().unwrap().to_string().contains("covers"));
    }
}
