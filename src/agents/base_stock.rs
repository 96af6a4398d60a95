//! Base-stock (reorder-point) policies for the enterprise world: fixed, and one that tunes itself on every window.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::harness::{Agent, Window};
use crate::morpheus::{ActionLayout, Morpheus, MorpheusConfig, Op};
use crate::seed::{self, Stream};

/// Settings of [`BaseStockAgent`], in hours of expected demand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BaseStockParams {
    /// Reorder when a SKU's inventory position covers fewer hours than this (36).
    pub reorder_hours: f64,
    /// Order up to this many hours of demand (96).
    pub target_hours: f64,
    /// Carrier to ship with, chosen on the first step and again at every midnight; `None`
    /// (the default) leaves the world's choice alone.
    pub carrier: Option<u32>,
    /// Repair broken dock doors once at least this many are broken; 0 never repairs (1).
    pub repair_at: u32,
    /// Also repair a broken door, however few are broken, once the yard holds at least
    /// this many trailers per door; 0 never does (0). Detention is charged per trailer,
    /// so a queue is dearer than a repair.
    #[serde(skip_serializing_if = "is_zero")]
    pub repair_yard: f64,
    /// Hours after reordering a SKU before it is reordered again; 0 has no pause (0). A
    /// stale reading does not yet show the order just placed, and would order it twice.
    #[serde(skip_serializing_if = "is_zero")]
    pub cooldown_hours: f64,
}

/// Leaves a setting that is off out of what is saved, so saved settings read as before.
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for BaseStockParams {
    fn default() -> Self {
        BaseStockParams {
            reorder_hours: 36.0,
            target_hours: 96.0,
            carrier: None,
            repair_at: 1,
            repair_yard: 0.0,
            cooldown_hours: 0.0,
        }
    }
}

impl BaseStockParams {
    /// Stock levels only: no carrier choice, repairs at the first broken door.
    pub fn levels(reorder_hours: f64, target_hours: f64) -> Self {
        BaseStockParams {
            reorder_hours,
            target_hours,
            ..BaseStockParams::default()
        }
    }
}

/// The classic operations baseline: on the first step and at every midnight, pick the
/// configured carrier (if any); else repair a broken dock once `repair_at` are broken;
/// otherwise, when a SKU's inventory position (on hand + in the pipeline − backlog) falls
/// below its reorder point, order the reorder size closest to what brings it up to the
/// target; otherwise do nothing.
///
/// It reads only the observation (whose layout the enterprise world documents) and the
/// layout's public settings (SKU count, reorder sizes, base demand); it never sees the
/// regime, so a demand or lead-time shift leaves its fixed points wrong. It never learns.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BaseStockAgent {
    params: BaseStockParams,
    skus: usize,
    docks: usize,
    carriers: usize,
    buckets: Vec<u64>,
    stock_scale: f64,
    demand: Vec<f64>,
    #[serde(default)]
    started: bool,
    /// Hours since each SKU was last reordered, kept only while `cooldown_hours` is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    since: Vec<f64>,
}

impl BaseStockAgent {
    /// A policy for a world with this layout.
    pub fn new(config: &MorpheusConfig, params: BaseStockParams) -> Self {
        BaseStockAgent {
            params,
            skus: config.skus,
            docks: config.docks,
            carriers: config.carriers,
            buckets: config.reorder_quantities.clone(),
            stock_scale: config.stock_scale,
            demand: (0..config.skus).map(|i| config.sku_demand(i)).collect(),
            started: false,
            since: Vec::new(),
        }
    }

    /// The settings it plays.
    pub fn params(&self) -> &BaseStockParams {
        &self.params
    }

    /// Plays other settings from the next step on.
    pub fn set_params(&mut self, params: BaseStockParams) {
        self.params = params;
        self.started = false;
        self.since.clear();
    }

    /// The action for `obs` under the settings in force.
    pub(super) fn choose(&mut self, obs: &[f32]) -> usize {
        let (s, b) = (self.skus, self.buckets.len());
        if self.params.cooldown_hours > 0.0 {
            self.since.resize(s, f64::INFINITY);
            self.since.iter_mut().for_each(|h| *h += 1.0);
        }
        let at = |i: usize| obs.get(i).map_or(0.0, |&v| f64::from(v));
        // The world's choice of carrier is not observed, so it is re-sent once a day: the
        // cosine of the hour of day is 1 only at midnight.
        let midnight = at(4 * s + self.docks + self.carriers + 4) > 0.999;
        if let Some(c) = self
            .params
            .carrier
            .filter(|&c| (c as usize) < self.carriers)
            && (midnight || !self.started)
        {
            self.started = true;
            return self.index(Op::ChooseCarrier { carrier: c });
        }
        self.started = true;
        let broken = || (0..self.docks).filter(|&d| at(4 * s + d) < 0.5);
        let queued = self.params.repair_yard > 0.0
            && at(4 * s + self.docks + self.carriers) >= self.params.repair_yard;
        if (queued
            || self.params.repair_at > 0 && broken().count() >= self.params.repair_at as usize)
            && let Some(d) = broken().next()
        {
            return self.index(Op::RepairDock { dock: d as u32 });
        }
        // Missing readings are zeros, not empty shelves: wait for the next valid one.
        if at(4 * s + self.docks + self.carriers + 7) < 0.5 {
            return 0;
        }
        let mut worst: Option<(usize, f64, f64)> = None;
        for i in 0..s {
            let position = (at(i) + at(2 * s + i) - at(3 * s + i)) * self.stock_scale;
            let cover = position / self.demand[i].max(1e-9);
            let paused = self
                .since
                .get(i)
                .is_some_and(|&h| h <= self.params.cooldown_hours);
            if !paused
                && cover < self.params.reorder_hours
                && worst.is_none_or(|(_, c, _)| cover < c)
            {
                worst = Some((i, cover, position));
            }
        }
        let Some((sku, _, position)) = worst else {
            return 0;
        };
        let need = self.params.target_hours * self.demand[sku] - position;
        let bucket = (0..b)
            .min_by(|&x, &y| {
                let dx = (self.buckets[x] as f64 - need).abs();
                let dy = (self.buckets[y] as f64 - need).abs();
                dx.total_cmp(&dy)
            })
            .unwrap_or(0);
        if let Some(h) = self.since.get_mut(sku) {
            *h = 0.0;
        }
        self.index(Op::Reorder {
            sku: sku as u32,
            bucket: bucket as u32,
        })
    }

    /// What the stock in `obs` is worth at `unit_cost` per unit of each SKU: its inventory
    /// position (on hand + in the pipeline − backlog), or `None` for a missing reading.
    pub(super) fn stock_value(&self, obs: &[f32], unit_cost: &[f64]) -> Option<f64> {
        let s = self.skus;
        let at = |i: usize| obs.get(i).map_or(0.0, |&v| f64::from(v));
        (at(4 * s + self.docks + self.carriers + 7) >= 0.5).then(|| {
            (0..s)
                .zip(unit_cost)
                .map(|(i, c)| (at(i) + at(2 * s + i) - at(3 * s + i)) * self.stock_scale * c)
                .sum()
        })
    }

    /// The index of `op` in the world's action table (`Noop` for an operation outside it,
    /// which this policy never builds: its SKUs, buckets, carriers and docks come from the
    /// same layout).
    fn index(&self, op: Op) -> usize {
        let layout = ActionLayout {
            skus: self.skus,
            buckets: self.buckets.len(),
            carriers: self.carriers,
            docks: self.docks,
        };
        layout.encode(op).unwrap_or(0)
    }
}

impl Agent<Morpheus> for BaseStockAgent {
    fn algorithm_id(&self) -> &str {
        "base-stock"
    }

    fn act(&mut self, obs: &Vec<f32>) -> usize {
        self.choose(obs)
    }

    crate::serde_agent_state!(skus, docks, carriers, buckets, demand.len());
}

/// Settings of [`AdaptiveBaseStock`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdaptiveParams {
    /// Where the search starts (deliberately poor by default: 4 and 8 hours of cover).
    pub start: BaseStockParams,
    /// Size of the log-scale perturbation tried in the first pair of windows (0.8).
    pub sigma: f64,
    /// What the perturbation shrinks to (0.15).
    pub sigma_end: f64,
    /// Log-scale step per unit of standardized reward difference, in the first pair (0.4).
    pub step: f64,
    /// What the step shrinks to (0.08).
    pub step_end: f64,
    /// Pairs of windows over which the perturbation and the step cover half their way from
    /// the first values to the last (50).
    pub half_life: f64,
    /// Hours at the start of each window left out of its mean reward, while the stock
    /// left by the previous setting sells off or fills up (64; at most half a window).
    pub settle: usize,
    /// Limit of the standardized reward difference, in its running RMS (2).
    pub clip: f64,
    /// Count the change in the stock's value at list cost in a window's profit (true): a
    /// setting that fills the shelves pays for stock it sells in later windows, and one
    /// that empties them sells stock an earlier window paid for.
    pub value_stock: bool,
}

impl Default for AdaptiveParams {
    fn default() -> Self {
        AdaptiveParams {
            start: BaseStockParams::levels(4.0, 8.0),
            sigma: 0.8,
            sigma_end: 0.15,
            step: 0.4,
            step_end: 0.08,
            half_life: 50.0,
            settle: 64,
            clip: 2.0,
            value_stock: true,
        }
    }
}

impl AdaptiveParams {
    /// `first` moving towards `last`, half the way after `half_life` pairs.
    fn anneal(&self, first: f64, last: f64, pairs: u64) -> f64 {
        let left = if self.half_life > 0.0 {
            (-(pairs as f64) / self.half_life).exp2()
        } else {
            0.0
        };
        last + (first - last) * left
    }
}

/// A base-stock policy that learns its own reorder point and target, window by window.
///
/// The policy is [`BaseStockAgent`]'s, with two parameters in log space: the reorder point
/// and the target's ratio to it. Learning is antithetic random search over pairs of
/// windows: the pair plays `θ + σε` and `θ − σε` (ε a random unit direction from the agent
/// stream; which of the two goes first alternates from pair to pair, so the stock one
/// setting leaves to the next favours neither side), each window's mean reward is taken
/// after its first `settle` hours, and θ moves along ε by `step` times the difference of
/// the two means divided by the running RMS of such differences (clipped to `±clip`). The
/// perturbation and the step start large, so a poor start is left within a few dozen
/// pairs, and shrink towards `sigma_end` and `step_end`, which they keep: it never stops,
/// so when a regime shift moves the best stock levels it follows them. It reads the same
/// observation as the fixed policy and never sees the regime.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AdaptiveBaseStock {
    policy: BaseStockAgent,
    params: AdaptiveParams,
    /// log(reorder_hours), log(target_hours / reorder_hours)
    theta: [f64; 2],
    direction: [f64; 2],
    /// Mean reward of the pair's first window, while its second runs.
    #[serde(alias = "plus_reward")]
    first_reward: Option<f64>,
    /// Pairs of windows compared so far.
    #[serde(default)]
    pairs: u64,
    /// Running mean square of the pairs' reward differences (0 before the first pair).
    #[serde(default)]
    diff_square: f64,
    /// List cost of a unit of each SKU, what its stock is valued at.
    #[serde(default)]
    unit_cost: Vec<f64>,
    rng: ChaCha8Rng,
}

impl AdaptiveBaseStock {
    /// A learner for a world with this layout, for the run seeded with `seed`.
    pub fn new(config: &MorpheusConfig, params: AdaptiveParams, seed: u64) -> Self {
        let start = params.start.clone();
        let theta = [
            start.reorder_hours.max(1e-3).ln(),
            (start.target_hours / start.reorder_hours.max(1e-3))
                .max(1.0)
                .ln(),
        ];
        let mut agent = AdaptiveBaseStock {
            policy: BaseStockAgent::new(config, start),
            params,
            theta,
            direction: [0.0; 2],
            first_reward: None,
            pairs: 0,
            diff_square: 0.0,
            unit_cost: (0..config.skus)
                .map(|i| config.sku_price(i) * config.unit_cost_ratio)
                .collect(),
            rng: seed::rng(seed, Stream::Agent),
        };
        agent.new_direction();
        agent.apply(agent.first_sign());
        agent
    }

    /// The reorder point and target (hours of demand) it has learned so far.
    pub fn learned(&self) -> BaseStockParams {
        let [r, g] = self.theta;
        BaseStockParams {
            reorder_hours: r.exp(),
            target_hours: (r + g.max(0.0)).exp(),
            ..self.params.start.clone()
        }
    }

    fn new_direction(&mut self) {
        let a: f64 = self.rng.random::<f64>() * std::f64::consts::TAU;
        self.direction = [a.cos(), a.sin()];
    }

    /// The side (`+1` for `θ + σε`) the current pair plays first: alternates.
    fn first_sign(&self) -> f64 {
        if self.pairs.is_multiple_of(2) {
            1.0
        } else {
            -1.0
        }
    }

    /// Sets the acting policy to `theta + sign · σ · direction`, keeping the start's
    /// carrier and repair settings.
    fn apply(&mut self, sign: f64) {
        let p = &self.params;
        let s = sign * p.anneal(p.sigma, p.sigma_end, self.pairs);
        let r = self.theta[0] + s * self.direction[0];
        let g = (self.theta[1] + s * self.direction[1]).max(0.0);
        self.policy.params = BaseStockParams {
            reorder_hours: r.exp(),
            target_hours: (r + g).exp(),
            ..p.start.clone()
        };
    }

    /// The window's mean reward per hour after its first `settle` hours, plus (with
    /// `value_stock`) the change in the stock's value between the first and the last
    /// valid reading of that stretch.
    fn profit_per_hour(&self, window: &Window<Vec<f32>, usize>) -> f64 {
        let from = self.params.settle.min(window.len() / 2);
        let rewards = &window.rewards;
        let plain = || rewards[from..].iter().sum::<f64>() / (rewards.len() - from) as f64;
        if !self.params.value_stock {
            return plain();
        }
        let value = |i: usize| self.policy.stock_value(window.obs.get(i)?, &self.unit_cost);
        let first = (from..window.len()).find_map(|i| Some((i, value(i)?)));
        let last = (from..window.len())
            .rev()
            .find_map(|i| Some((i, value(i)?)));
        match (first, last) {
            (Some((a, start)), Some((b, end))) if b > a => {
                (rewards[a..b].iter().sum::<f64>() + end - start) / (b - a) as f64
            }
            _ => plain(),
        }
    }

    /// Moves θ by the pair's standardized difference `plus − minus` along ε.
    fn learn(&mut self, plus: f64, minus: f64) {
        let diff = plus - minus;
        self.diff_square = if self.pairs == 0 {
            diff * diff
        } else {
            0.9 * self.diff_square + 0.1 * diff * diff
        };
        let rms = self.diff_square.sqrt();
        let p = &self.params;
        let standard = if rms > 0.0 {
            (diff / rms).clamp(-p.clip, p.clip)
        } else {
            0.0
        };
        let step = p.anneal(p.step, p.step_end, self.pairs) * standard;
        for (t, d) in self.theta.iter_mut().zip(self.direction) {
            *t += step * d;
        }
        self.theta[0] = self.theta[0].clamp(0.0, 8.0);
        self.theta[1] = self.theta[1].clamp(0.0, 4.0);
        self.pairs += 1;
    }
}

impl Agent<Morpheus> for AdaptiveBaseStock {
    fn algorithm_id(&self) -> &str {
        "adaptive-base-stock"
    }

    fn act(&mut self, obs: &Vec<f32>) -> usize {
        self.policy.choose(obs)
    }

    fn reseed(&mut self, seed: u64) {
        self.rng = crate::seed::rng(seed, crate::seed::Stream::Agent);
    }

    fn update(&mut self, window: &Window<Vec<f32>, usize>) {
        if window.is_empty() {
            return;
        }
        let mean = self.profit_per_hour(window);
        let first = self.first_sign();
        match self.first_reward.take() {
            None => {
                self.first_reward = Some(mean);
                self.apply(-first);
            }
            Some(earlier) => {
                let (plus, minus) = if first > 0.0 {
                    (earlier, mean)
                } else {
                    (mean, earlier)
                };
                self.learn(plus, minus);
                self.new_direction();
                self.apply(self.first_sign());
            }
        }
    }

    crate::serde_agent_state!(
        policy.skus,
        policy.docks,
        policy.carriers,
        policy.buckets,
        policy.demand.len(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An observation of `config` with every shelf and pipeline empty, every door and
    /// carrier up, the yard holding `trailers` trailers, at 6 am, with a valid reading.
    fn empty_shelves(config: &MorpheusConfig, trailers: f64) -> Vec<f32> {
        let (s, d, c) = (config.skus, config.docks, config.carriers);
        let base = 4 * s + d + c;
        let mut obs = vec![0.0; base + 8];
        obs[4 * s..base].fill(1.0);
        obs[base] = (trailers / d as f64) as f32;
        obs[base + 3] = 1.0;
        obs[base + 7] = 1.0;
        obs
    }

    fn op(config: &MorpheusConfig, action: usize) -> Op {
        ActionLayout::of(config).decode(action).unwrap()
    }

    #[test]
    fn a_sku_just_reordered_waits_out_the_cooldown_before_it_is_reordered() {
        let config = MorpheusConfig::default();
        let obs = empty_shelves(&config, 0.0);
        let skus_ordered = |cooldown_hours: f64| {
            let mut agent = BaseStockAgent::new(
                &config,
                BaseStockParams {
                    repair_at: 0,
                    cooldown_hours,
                    ..BaseStockParams::default()
                },
            );
            (0..config.skus + 2)
                .map(|_| match op(&config, agent.choose(&obs)) {
                    Op::Reorder { sku, .. } => Some(sku),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        // A reading that does not show the orders asks for the same SKU every hour...
        assert!(skus_ordered(0.0).iter().all(|&s| s == Some(0)));
        // ...unless each SKU, once ordered, waits: then every SKU is ordered once, and
        // after the cooldown the first again.
        let paced = skus_ordered(config.skus as f64);
        let once: Vec<Option<u32>> = (0..config.skus as u32).map(Some).collect();
        assert_eq!(paced[..config.skus], once[..]);
        assert_eq!(paced[config.skus..], [None, Some(0)]);
    }

    #[test]
    fn a_full_yard_gets_a_broken_door_repaired_before_the_broken_count_does() {
        let config = MorpheusConfig::default();
        let params = BaseStockParams {
            repair_at: 2,
            repair_yard: 1.0,
            ..BaseStockParams::default()
        };
        let first_act = |trailers: f64| {
            let mut obs = empty_shelves(&config, trailers);
            obs[4 * config.skus + 1] = 0.0;
            let mut agent = BaseStockAgent::new(&config, params.clone());
            op(&config, agent.choose(&obs))
        };
        assert_eq!(
            first_act(config.docks as f64),
            Op::RepairDock { dock: 1 },
            "a trailer per door"
        );
        assert!(matches!(
            first_act(config.docks as f64 - 1.0),
            Op::Reorder { .. }
        ));
    }

    /// A window of `len` hours earning `reward` each, every reading `obs`.
    fn window(obs: &[f32], reward: f64, len: usize) -> Window<Vec<f32>, usize> {
        Window {
            obs: vec![obs.to_vec(); len],
            actions: vec![0; len],
            rewards: vec![reward; len],
            next_obs: vec![obs.to_vec(); len],
            terminated: vec![false; len],
            truncated: vec![false; len],
            ..Window::default()
        }
    }

    #[test]
    fn each_pair_plays_both_sides_and_alternates_which_goes_first() {
        let config = MorpheusConfig::default();
        let mut agent = AdaptiveBaseStock::new(&config, AdaptiveParams::default(), 3);
        let obs = empty_shelves(&config, 0.0);
        let mut sides = Vec::new();
        for _ in 0..4 {
            let theta = agent.theta[0];
            let played = agent.policy.params().reorder_hours.ln();
            sides.push((played - theta) * agent.direction[0] > 0.0);
            agent.update(&window(&obs, 0.0, 256));
        }
        // Equal rewards leave θ where it was: + then −, then − then +.
        assert_eq!(sides, [true, false, false, true]);
    }

    #[test]
    fn stock_bought_in_a_window_counts_at_cost_so_buying_is_not_a_loss() {
        let config = MorpheusConfig::default();
        let s = config.skus;
        let cost = config.sku_price(0) * config.unit_cost_ratio;
        let bought = 50.0;
        let mut w = window(&empty_shelves(&config, 0.0), 0.0, 256);
        // At hour 100 the window pays for 50 units of SKU 0, which show in its pipeline.
        w.rewards[100] = -bought * cost;
        for obs in &mut w.obs[101..] {
            obs[2 * s] = (bought / config.stock_scale) as f32;
        }
        let hours = 255.0 - 64.0;
        let profit = |value_stock| {
            let params = AdaptiveParams {
                value_stock,
                ..AdaptiveParams::default()
            };
            AdaptiveBaseStock::new(&config, params, 0).profit_per_hour(&w)
        };
        assert!(profit(true).abs() < 1e-6, "{}", profit(true));
        assert!((profit(false) + bought * cost / (hours + 1.0)).abs() < 1e-9);
    }

    #[test]
    fn it_climbs_towards_the_side_that_earns_more_and_repeats_itself() {
        let config = MorpheusConfig::default();
        let obs = empty_shelves(&config, 0.0);
        let climb = |seed| {
            let mut agent = AdaptiveBaseStock::new(&config, AdaptiveParams::default(), seed);
            let mut path = Vec::new();
            for _ in 0..200 {
                // More cover earns more, up to 40 hours.
                let reorder = agent.policy.params().reorder_hours;
                let reward = -(reorder.ln() - 40f64.ln()).powi(2);
                agent.update(&window(&obs, reward, 256));
                path.push(agent.learned().reorder_hours.to_bits());
            }
            path
        };
        let path = climb(5);
        let learned = f64::from_bits(path[199]);
        assert!((25.0..65.0).contains(&learned), "{learned}");
        assert_eq!(path, climb(5), "same seed, same path");
        assert_ne!(path, climb(6));
    }
}
