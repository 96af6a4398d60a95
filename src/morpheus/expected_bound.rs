//! The expected-reward bound: an upper bound on the long-run average profit per hour that any policy can earn under the conditions in force.
//!
//! The hard ceiling ([`super::bounds`]) bounds one hour's reward over every action
//! sequence; it is valid but far above anything a policy earns on average. This bound is
//! a *fluid relaxation* of the long-run average of the default reward (the hour's profit,
//! [`default_reward_spec`](super::default_reward_spec)): it keeps what no policy can
//! escape (the demand the market offers, the margin a unit can earn, the shipping and the
//! late risk an order meets even when it ships the hour it is placed, the capacities, the
//! waiting or the stock that supplier delays force) and drops every other constraint, so
//! it bounds every policy from above.
//!
//! # Derivation
//!
//! Write `p_i = sku_price(i)·price` for what a unit of SKU `i` sells for, `c_i =
//! sku_price(i)·unit_cost_ratio·cost_multiplier` for what it costs to buy, and for carrier
//! `k`: `σ_k = carrier_cost(k)·cost_multiplier` per unit shipped, transit `τ_k`, on-time
//! probability `o_k = min(1, carrier_on_time(k)·carrier_reliability)`. An order is due
//! `s = round(promise_hours·promise)` hours after it is placed; a late shipment is delayed
//! by `1..=D` hours (`D = carrier_delay_max_hours`), each equally likely.
//!
//! 1. **Every unit sold was bought.** Over a long run the initial stock is negligible, so
//!    each unit delivered costs `c_i` and earns at most `p_i` (revenue is booked at the
//!    price in force at delivery).
//! 2. **Every order ships on some carrier, at the earliest in the hour it is placed** (the
//!    demand stage runs before the outbound stage). Shipping later only makes it later, so
//!    its late probability is at least `π_k = 1` if `τ_k > s`, else `(1 − o_k)·(D −
//!    min(s − τ_k, D))/D`, and it pays `σ_k` per unit and `late_penalty·late_penalty
//!    (condition)·cost_multiplier = L` per late order. The delay draws are keyed by the
//!    order and the carrier and unseen by the agent, so no policy beats these odds. An
//!    order of `u` units is worth at most `f_i(u) = max(0, max_k (u·(p_i − c_i − σ_k) −
//!    π_k·L))`: its best carrier, or not selling it (lost-sale charges, holding, detention,
//!    repairs, expediting and interest are costs a policy may avoid, so they count as 0).
//!    `f_i` is convex with `f_i(0) = 0 ≤ f_i`, hence nondecreasing.
//! 3. **Demand.** SKU `i` gets one order an hour of `min(X, max_units_per_sku_hour)` units,
//!    `X ~ Poisson(λ)` with `λ = sku_demand(i)·demand_rate·(1 + a·sin(2π(h − 6)/24))·φ`,
//!    `φ = demand_spike_factor` while a spike is in force, else 1; goodwill (at most 1)
//!    only thins the draw, and `f_i` is nondecreasing, so goodwill 1 bounds it. A spike
//!    drawn at hour `t` with `1..=H` hours (`H = demand_spike_hours`) is in force at `t ..
//!    t + duration`, so an hour is spiked with probability `1 − ∏_{j<H} (1 − q·(H − j)/H)`,
//!    `q` the per-SKU spike probability per hour. The expected value of SKU `i`'s orders
//!    per hour, `V_i`, averages `E f_i(min(X, cap))` over the 24 hours of the day and the
//!    two spike states; `U_i` is the expected units of the orders worth selling.
//! 4. **Capacities.** Over a long run the units sold per hour are at most `min(pick
//!    capacity, carrier capacity)` (what one hour can ship), `docks·⌊dock_unload_rate·
//!    dock_capacity⌋` (what the doors can unload, with every broken door repaired at
//!    once), and `max(reorder_quantities)·min(op_budget, 24)/24` (one reorder an
//!    operation). With `Cap` their minimum, the bound is `min(Σ V_i, K)` where `K` fills
//!    `Cap` with the SKUs' units in decreasing order of their best per-unit margin
//!    `max_k (p_i − c_i − σ_k)` (a fractional knapsack; each `f_i(u)/u` is below that
//!    margin).
//!
//! 5. **Supplier delays.** A delay drawn for supplier `j` at hour `t₀` with duration `T`
//!    (uniform on `1..=H_s`, `H_s = supplier_delay_hours`, fired with probability `p` per
//!    hour) holds every purchase order of `j`'s SKUs until `t₀ + T`: nothing of theirs
//!    reaches the yard in `t₀ .. t₀ + T`, however early it was ordered or expedited. An
//!    order of one of those SKUs placed at `t₀ + a` is then served from `Y`, the units of
//!    `j`'s SKUs on hand or in the yard at the end of hour `t₀ − 1`, or waits at least `T
//!    − a` hours. Waiting `w` hours turns the order's best value `f(u)` into `v(u, w) =
//!    max(0, max_k (u·(p_i − c_i − σ_k) − π_k(w)·L))` (`π_k(w)` is step 2's late
//!    probability with the slack cut by `w`; `v = 0` once the order would be cancelled,
//!    `w ≥ s + cancel_after_hours`), a loss `g(u, w) = f(u) − v(u, w) ≥ 0`. Each order is
//!    counted for the last delay of its supplier drawn at or before its hour only (the
//!    next draw at `t₀ + b` comes with probability `1 − (1 − p)^b`), so no order is
//!    counted twice. Whichever orders `Y` covers, a unit saves at most `ρ(T) = max_u g(u,
//!    T)/u`, so the window loses at least `max(0, G(T) − ρ(T)·Y)` in expectation (Jensen),
//!    with `G(T) = Σ_a (1 − p)^a Σ_i E g(U_i(t₀ + a), T − a)` over the daily profile and
//!    the spike share (`v` is nondecreasing in `u`, so goodwill below 1 only lowers the
//!    value too). Keeping `Y` costs at least `r = min(min_i h_i, detention_rate /
//!    max(reorder_quantities))` per unit and hour, `h_i` the holding cost of a unit on hand
//!    (a trailer pays detention whatever it holds once it is `detention_free_hours` old),
//!    less the units still in their free yard hours, at most `detention_free_hours` times
//!    the units sold per hour (units bought and never sold cost their price, far more).
//!    The draw at `t₀` is independent of `Y`, so for each hour of the day the delays meet
//!    the time-average stock, and the loss per hour is at least
//!    `(1/24) Σ_start min_y (r·y + p·E_T max(0, G(T) − ρ(T)·y)) − r·detention_free_hours·d_j`,
//!    `d_j` the mean demand of `j`'s SKUs (a convex piecewise-linear minimum, taken at its
//!    breakpoints `y = G(T)/ρ(T)`). Delays longer than 96 hours count as 96 (receipts are blocked at least
//!    that long), to bound the work. The supplier terms add up (their SKUs are disjoint),
//!    and are subtracted from `Σ V_i`, the expected order value they are losses against.
//!
//! 6. **Lot sizes at slow doors.** Every reorder brings one trailer of `q` units (`q` one
//!    of `reorder_quantities`), and at most `R = min(op_budget, 24)/24` reorders are
//!    accepted an hour on average. The doors unload at most `C = docks·⌊dock_unload_rate·
//!    dock_capacity⌋` units an hour, first come first served, so a trailer takes at least
//!    `⌈q/C⌉` hours and pays detention for at least `δ(q) = detention_rate·max(0, ⌈q/C⌉
//!    − 1 − F)` of them (`F = detention_free_hours`; waiting behind other trailers or
//!    broken doors only adds hours). Bringing `S` units an hour in lots of at most `R` an
//!    hour costs at least `D(S) = R·h(S/R)`, `h` the lower convex envelope of `(0, 0)` and
//!    the points `(q, δ(q))` (`x·h(S/x)` falls as the number of lots `x` grows, so `R` of
//!    them do best). Every unit sold was bought, so a policy selling `S` units an hour
//!    earns at most `min(Σ V_i, K(S)) − D(S)`, `K(S)` step 4's knapsack with capacity
//!    `S`; the largest value over `0 ≤ S ≤ Cap` is a second bound. (It leaves out step 5:
//!    a trailer waiting in the yard is also stock held against a delay, and the two terms
//!    would count its detention twice.) In the warehouse's `dock_meltdown` (doors of 4
//!    units, 12 operations a day) lots of 20 cost nothing but bring only 10 units an hour,
//!    so some lots must be larger; in the other shipped regimes lots the doors unload
//!    within the free hours suffice, and the term is 0.
//!
//! The bound is the lower of the two. Both bound every policy, so it is valid. It leaves out the safety stock and the lot sizes that the
//! stochastic demand and the reorder buckets force a real policy to hold. Over a finite
//! interval a policy can exceed it by what it sells from stock bought before the
//! interval; the validity test allows for that.
//!
//! # What it leaves out, and why
//!
//! Where the oracle earns least against the bound, the difference is detention in the
//! dock regimes (about 6 per hour of the warehouse's `dock_meltdown`: trailers queue while
//! doors are down), the holding of its safety and cycle stock in `service_crunch` and
//! `lean_market` (4 to 10 per hour) with late penalties beyond step 2's in
//! `service_crunch`, and, in the async worlds, the hours after a shift (a shift into
//! `supplier_crisis` triples the lead time of the stock still to come). None of these is
//! in the bound, because none is yet proved unavoidable:
//!
//! - **Safety stock.** A newsvendor argument needs the stock that can arrive by an hour
//!   to be fixed some hours before it, while the demand in between is still unknown. An
//!   expedite halves a purchase order's remaining lead time (once, for
//!   `expedite_fee`), so a purchase is committed only `⌊ℓ/2⌋` hours before it can
//!   arrive, and an expedite moves stock forward after the demand is seen. And a
//!   shortage is cheap per unit: an order can wait `s − τ` hours at no cost, is late
//!   (one `L` per order, of up to `max_units_per_sku_hour` units) after that, and is
//!   lost only `cancel_after_hours` past due, so the shortage cost per unit-hour a
//!   valid argument can charge is at most `min(L / cap, margin + lost_sale_penalty) /
//!   (s + cancel_after_hours − (s − τ))`, about 0.02 in the warehouse's
//!   `service_crunch`, no more than holding. The term it yields is a few tenths per hour.
//! - **Lot sizes.** A reorder brings at least `min(reorder_quantities)` units at once,
//!   but stock can wait in the yard, where a trailer pays `detention_rate` per hour
//!   whatever it holds, so storage costs at least `min(h_i, detention_rate /
//!   max(reorder_quantities))` per unit-hour (0.025 in `lean_market`, against `h_i` of
//!   0.08 to 0.15), and an adaptive policy under Poisson demand can time its lots; the
//!   fluid cycle-stock figure is not a bound on it.
//! - **Detention and failures.** Beyond what step 6 forces, detention comes from doors
//!   that are down, and repairs (one operation and `repair_cost` each) restore a door; the
//!   expected capacity the failures leave exceeds the expected demand in every shipped
//!   regime, so the capacity term does not bind, and a queue that breakdowns build is one
//!   a timely repair clears.
//! - **Transients.** The bound is a long-run average under one configuration; the cost
//!   of rebuilding stock after a shift belongs to the schedule, not the configuration.
//!
//! A world with another reward specification has no expected bound.

use std::f64::consts::TAU;

use super::conditions::MorpheusConditions;
use super::config::MorpheusConfig;

/// Above this demand rate per SKU and hour the exact sum over order sizes is replaced by
/// its linear upper bound `margin·min(λ, cap)` (off by the per-order late risk only), and
/// the delay term counts no loss.
const EXACT_RATE: f64 = 1000.0;

/// The longest supplier delay the delay term looks at: a longer delay blocks receipts for
/// at least this many hours, which is all the term uses.
const LONGEST_DELAY: u64 = 96;

/// The long-run average profit per hour no policy can exceed under `k` (see the module
/// docs for the derivation). Finite and at least 0 for every valid configuration.
///
/// # Examples
///
/// ```
/// use perennial::morpheus::{MorpheusConditions, MorpheusConfig, expected_bound};
///
/// let cfg = MorpheusConfig::default();
/// let base = expected_bound(&cfg, &MorpheusConditions::default());
/// let busy = MorpheusConditions { demand_rate: 2.0, ..MorpheusConditions::default() };
/// assert!(base > 0.0 && expected_bound(&cfg, &busy) > base);
/// ```
pub fn expected_bound(cfg: &MorpheusConfig, k: &MorpheusConditions) -> f64 {
    let market = Market::new(cfg, k);
    let spiked = spiked_share(k.probability(k.demand_spike_rate), cfg.demand_spike_hours);
    let cap = cfg.max_units_per_sku_hour;
    let mut value = 0.0;
    let mut skus = Vec::with_capacity(cfg.skus);
    let mut demand = Vec::with_capacity(cfg.skus);
    for i in 0..cfg.skus {
        let unit = market.unit(i);
        let order = |u: f64| market.order(unit, u, 0.0);
        let margin = market
            .carriers
            .iter()
            .map(|c| unit - c.ship)
            .fold(0.0, f64::max);
        let (mut v, mut units, mut offered) = (0.0, 0.0, 0.0);
        for hour in 0..24 {
            let rate = market.rate(i, hour);
            for (share, factor) in [(1.0 - spiked, 1.0), (spiked, cfg.demand_spike_factor)] {
                if share > 0.0 {
                    let (ev, eu) = order_value(rate * factor, cap, margin, &order);
                    v += share * ev / 24.0;
                    units += share * eu / 24.0;
                    offered += share * (rate * factor).min(cap as f64) / 24.0;
                }
            }
        }
        value += v;
        skus.push((margin, units));
        demand.push(offered);
    }
    let ship = cfg.pick_capacity.min(cfg.carrier_capacity) as f64;
    let doors = cfg.docks as f64 * (cfg.dock_unload_rate * k.dock_capacity).floor();
    let q_max = cfg.reorder_quantities.iter().copied().max().unwrap_or(0) as f64;
    let buying = q_max * k.op_budget.min(24.0) / 24.0;
    let delays = (0..cfg.suppliers)
        .map(|j| supplier_delay_loss(&market, j, spiked, &demand))
        .sum::<f64>();
    let most = ship.min(doors).min(buying);
    skus.sort_by(|a, b| b.0.total_cmp(&a.0));
    let fluid = (value - delays).min(knapsack(&skus, most));
    fluid
        .min(lot_bound(&skus, value, most, &Lots::new(cfg, k)))
        .max(0.0)
}

/// Step 6, a second bound: the most that selling `S` units an hour (at most `most`) can
/// earn, `min(value, K(S))`, less the detention `D(S)` their lots force. The first is
/// concave in `S` and the second convex, so the maximum is at a corner of one or the
/// other: where a SKU's units run out, where `K(S)` reaches `value`, or where the best
/// mix of lot sizes changes.
fn lot_bound(skus: &[(f64, f64)], value: f64, most: f64, lots: &Lots) -> f64 {
    let mut corners = vec![0.0, most, units_to_earn(skus, value)];
    corners.extend(skus.iter().scan(0.0, |sum, &(_, units)| {
        *sum += units;
        Some(*sum)
    }));
    corners.extend(lots.points.iter().map(|&(q, _)| q * lots.orders));
    corners
        .into_iter()
        .filter(|&s| s <= most)
        .map(|s| value.min(knapsack(skus, s)) - lots.detention(s))
        .fold(f64::NEG_INFINITY, f64::max)
}

/// Step 6: what the lot sizes force in detention. Every reorder is one trailer, at most
/// `orders` reorders an hour on average, and a trailer of `q` units pays detention for
/// at least `max(0, ⌈q / C⌉ − 1 − F)` hours, `C` the doors' full capacity and `F` the
/// free hours.
struct Lots {
    /// Reorders an hour at most: `min(op_budget, 24) / 24`.
    orders: f64,
    /// `(0, 0)` and `(q, δ(q))` for each reorder size: its units and least detention.
    points: Vec<(f64, f64)>,
}

impl Lots {
    fn new(cfg: &MorpheusConfig, k: &MorpheusConditions) -> Self {
        let full = cfg.docks as f64 * (cfg.dock_unload_rate * k.dock_capacity).floor();
        let rate = cfg.detention_rate * k.cost_multiplier;
        let free = cfg.detention_free_hours as f64;
        let mut points = vec![(0.0, 0.0)];
        for &q in &cfg.reorder_quantities {
            let hours = if full > 0.0 {
                (q as f64 / full).ceil()
            } else {
                f64::INFINITY
            };
            if hours.is_finite() {
                points.push((q as f64, rate * (hours - 1.0 - free).max(0.0)));
            }
        }
        Lots {
            orders: k.op_budget.min(24.0) / 24.0,
            points,
        }
    }

    /// `D(S)`: the least detention per hour of lots that bring `units` units an hour, at
    /// most `orders` of them: `orders × h(units / orders)`, `h` the lower convex envelope
    /// of the points (a mix of two sizes does best; fewer lots than allowed never helps,
    /// since `(0, 0)` is a point). 0 where no mix brings that many (the buying capacity
    /// of step 4 rules those out).
    fn detention(&self, units: f64) -> f64 {
        if units <= 0.0 || self.orders <= 0.0 {
            return 0.0;
        }
        let y = units / self.orders;
        let mut least = f64::INFINITY;
        for &(a, da) in &self.points {
            for &(b, db) in &self.points {
                if a <= y && y <= b {
                    let cost = if b > a {
                        da + (db - da) * (y - a) / (b - a)
                    } else {
                        da
                    };
                    least = least.min(cost);
                }
            }
        }
        if least.is_finite() {
            self.orders * least
        } else {
            0.0
        }
    }
}

/// The fewest units, taken in decreasing order of margin, whose margins add up to
/// `target` (all of them when they fall short): where `K(S)` reaches `target`.
fn units_to_earn(skus: &[(f64, f64)], target: f64) -> f64 {
    let (mut units, mut earned) = (0.0, 0.0);
    for &(margin, n) in skus {
        if earned + margin * n >= target && margin > 0.0 {
            return units + (target - earned).max(0.0) / margin;
        }
        units += n;
        earned += margin * n;
    }
    units
}

/// A carrier as an order meets it: shipping cost per unit, transit hours and on-time
/// probability under the conditions in force.
struct Carrier {
    ship: f64,
    transit: f64,
    on_time: f64,
}

/// What the market pays and what delivering costs under one configuration: the terms of
/// steps 1 and 2 of the derivation.
struct Market<'a> {
    cfg: &'a MorpheusConfig,
    k: &'a MorpheusConditions,
    carriers: Vec<Carrier>,
    /// `s`: hours from an order's placement to its due time.
    slack: f64,
    /// `D` (at least 1): the longest carrier delay.
    spread: f64,
    /// `L`: the penalty per late order.
    late_fee: f64,
}

impl<'a> Market<'a> {
    fn new(cfg: &'a MorpheusConfig, k: &'a MorpheusConditions) -> Self {
        let carriers = (0..cfg.carriers)
            .map(|c| Carrier {
                ship: cfg.carrier_cost(c) * k.cost_multiplier,
                transit: cfg.carrier_transit(c) as f64,
                on_time: (cfg.carrier_on_time(c) * k.carrier_reliability).min(1.0),
            })
            .collect();
        Market {
            cfg,
            k,
            carriers,
            slack: (cfg.promise_hours as f64 * k.promise).round(),
            spread: cfg.carrier_delay_max_hours.max(1) as f64,
            late_fee: cfg.late_penalty * k.late_penalty * k.cost_multiplier,
        }
    }

    /// `p_i − c_i`: what a unit of SKU `i` sells for less what it costs to buy.
    fn unit(&self, i: usize) -> f64 {
        let list = self.cfg.sku_price(i);
        list * self.k.price - list * self.cfg.unit_cost_ratio * self.k.cost_multiplier
    }

    /// `h_i`: the holding cost of a unit of SKU `i` on hand for an hour.
    fn holding(&self, i: usize) -> f64 {
        let k = self.k;
        self.cfg.sku_price(i)
            * self.cfg.unit_cost_ratio
            * self.cfg.holding_rate
            * k.holding_cost
            * k.cost_multiplier
    }

    /// The mean order size of SKU `i` at `hour` of the day, outside spikes, goodwill 1.
    fn rate(&self, i: usize, hour: u64) -> f64 {
        let daily = 1.0 + self.cfg.daily_amplitude * (TAU * (hour as f64 - 6.0) / 24.0).sin();
        self.cfg.sku_demand(i) * self.k.demand_rate * daily
    }

    /// The probability that an order shipped on `c` `wait` hours after it was placed is
    /// late.
    fn late(&self, c: &Carrier, wait: f64) -> f64 {
        let room = self.slack - wait - c.transit;
        if room < 0.0 {
            1.0
        } else {
            (1.0 - c.on_time) * (self.spread - room.min(self.spread)) / self.spread
        }
    }

    /// `v(u, w)`: the most an order of `u` units earning `unit` per unit can make when it
    /// ships `wait` hours after it was placed (0 once it would have been cancelled, or
    /// when shipping it loses money). `v(u, 0)` is step 2's `f(u)`.
    fn order(&self, unit: f64, u: f64, wait: f64) -> f64 {
        if wait >= self.slack + self.cfg.cancel_after_hours as f64 {
            return 0.0;
        }
        self.carriers
            .iter()
            .map(|c| u * (unit - c.ship) - self.late(c, wait) * self.late_fee)
            .fold(0.0, f64::max)
    }
}

/// Step 5: the least expected loss per hour that supplier `j`'s delays cost any policy
/// (its SKUs' orders waiting out a delay, or the stock held against it); see the module
/// docs. `spiked` is the share of spiked hours, `demand[i]` SKU `i`'s mean units per hour.
fn supplier_delay_loss(market: &Market<'_>, j: usize, spiked: f64, demand: &[f64]) -> f64 {
    let (cfg, k) = (market.cfg, market.k);
    let p = k.probability(k.supplier_delay_rate);
    let skus: Vec<usize> = (0..cfg.skus)
        .filter(|i| i % cfg.suppliers.max(1) == j)
        .collect();
    if p <= 0.0 || skus.is_empty() {
        return 0.0;
    }
    let longest = cfg.supplier_delay_hours.max(1);
    let span = longest.min(LONGEST_DELAY) as usize;
    // P(the window is t hours long), t = 1..=span: a delay of T >= span counts as span.
    let window: Vec<f64> = (1..=span)
        .map(|t| {
            if t < span {
                1.0 / longest as f64
            } else {
                (longest - span as u64 + 1) as f64 / longest as f64
            }
        })
        .collect();
    let cap = cfg.max_units_per_sku_hour;
    // loss[i][hour][w - 1]: E g(U, w) for SKU i's order placed at `hour` of the day.
    let mut loss = vec![vec![vec![0.0; span]; 24]; skus.len()];
    // rho[w - 1]: the most a unit covering one of these orders can save, max g(u, w) / u.
    let mut rho = vec![0.0f64; span];
    for (n, &i) in skus.iter().enumerate() {
        let unit = market.unit(i);
        let g = |u: f64, w: f64| (market.order(unit, u, 0.0) - market.order(unit, u, w)).max(0.0);
        // Orders above `sizes` units save at most `f(u)/u <= margin` per unit, and at most
        // `L/u` before they would be cancelled (they lose at most the late fee then).
        let sizes = cap.min(EXACT_RATE as u64);
        let margin = market
            .carriers
            .iter()
            .map(|c| unit - c.ship)
            .fold(0.0, f64::max);
        for (w, r) in rho.iter_mut().enumerate() {
            let wait = (w + 1) as f64;
            if cap > sizes {
                let cancelled = wait >= market.slack + cfg.cancel_after_hours as f64;
                *r = r.max(if cancelled {
                    margin
                } else {
                    market.late_fee / sizes as f64
                });
            }
            for u in 1..=sizes {
                *r = r.max(g(u as f64, wait) / u as f64);
            }
        }
        for (hour, row) in loss[n].iter_mut().enumerate() {
            let rate = market.rate(i, hour as u64);
            for (share, factor) in [(1.0 - spiked, 1.0), (spiked, cfg.demand_spike_factor)] {
                if share <= 0.0 {
                    continue;
                }
                for (u, mass) in poisson_masses(rate * factor, cap) {
                    for (w, cell) in row.iter_mut().enumerate() {
                        *cell += share * mass * g(u, (w + 1) as f64);
                    }
                }
            }
        }
    }
    let yard = cfg.detention_rate * k.cost_multiplier
        / cfg
            .reorder_quantities
            .iter()
            .copied()
            .max()
            .unwrap_or(1)
            .max(1) as f64;
    let hold = skus.iter().map(|&i| market.holding(i)).fold(yard, f64::min);
    let flow: f64 = skus.iter().map(|&i| demand[i]).sum();
    let mut total = 0.0;
    let mut lost = vec![0.0; span];
    for start in 0..24 {
        // lost[t - 1]: the expected loss of the orders a window of t hours opening at
        // `start` counts, each attributed to the last delay drawn before it.
        for (t, cell) in lost.iter_mut().enumerate() {
            let t = t + 1;
            *cell = (0..t)
                .map(|a| {
                    let hour = (start + a) % 24;
                    let kept = (1.0 - p).powi(a as i32);
                    kept * (0..skus.len())
                        .map(|n| loss[n][hour][t - a - 1])
                        .sum::<f64>()
                })
                .sum();
        }
        let cost = |y: f64| {
            hold * y
                + p * (0..span)
                    .map(|t| window[t] * (lost[t] - y * rho[t]).max(0.0))
                    .sum::<f64>()
        };
        let best = (0..span)
            .filter(|&t| rho[t] > 0.0)
            .map(|t| cost(lost[t] / rho[t]))
            .fold(cost(0.0), f64::min);
        total += best / 24.0;
    }
    (total - hold * cfg.detention_free_hours as f64 * flow).max(0.0)
}

/// The stationary share of hours with a spike in force, for a per-hour probability `q` and
/// durations uniform on `1..=hours`.
fn spiked_share(q: f64, hours: u64) -> f64 {
    let h = hours as f64;
    let calm: f64 = (0..hours).map(|j| 1.0 - q * (h - j as f64) / h).product();
    (1.0 - calm).clamp(0.0, 1.0)
}

/// `(u, P(min(X, cap) = u))` for `u >= 1` and `X ~ Poisson(rate)`, leaving out mass more
/// than 40 standard deviations above the mean (below `1e-300`); nothing above
/// [`EXACT_RATE`].
fn poisson_masses(rate: f64, cap: u64) -> Vec<(f64, f64)> {
    if rate <= 0.0 || rate > EXACT_RATE || cap == 0 {
        return Vec::new();
    }
    let last = (rate + 40.0 * rate.sqrt() + 40.0) as u64;
    let ln_rate = rate.ln();
    let (mut ln_p, mut below) = (-rate, (-rate).exp());
    let mut out = Vec::new();
    for u in 1..cap.min(last + 1) {
        ln_p += ln_rate - (u as f64).ln();
        let p = ln_p.exp();
        below += p;
        out.push((u as f64, p));
    }
    if cap <= last {
        out.push((cap as f64, (1.0 - below).max(0.0)));
    }
    out
}

/// `(E f(min(X, cap)), E[min(X, cap)·1{f > 0}])` for `X ~ Poisson(rate)` and the
/// nondecreasing order value `f`. Above [`EXACT_RATE`] both are bounded by their linear
/// upper bounds, `margin·min(rate, cap)` and `min(rate, cap)`.
fn order_value(rate: f64, cap: u64, margin: f64, f: &impl Fn(f64) -> f64) -> (f64, f64) {
    if rate <= 0.0 {
        return (0.0, 0.0);
    }
    if rate > EXACT_RATE {
        let mean = rate.min(cap as f64);
        return (margin * mean, mean);
    }
    let last = (rate + 40.0 * rate.sqrt() + 40.0) as u64;
    let top = cap.min(last);
    let ln_rate = rate.ln();
    let (mut ln_p, mut below, mut value, mut units) = (-rate, (-rate).exp(), 0.0, 0.0);
    for u in 1..top {
        ln_p += ln_rate - (u as f64).ln();
        let p = ln_p.exp();
        below += p;
        let v = f(u as f64);
        if v > 0.0 {
            value += p * v;
            units += p * u as f64;
        }
    }
    // The rest of the mass sits at `top` or beyond, where `f` is largest at `cap`.
    let rest = (1.0 - below).max(0.0);
    let v = f(cap as f64);
    if v > 0.0 {
        value += rest * v;
        units += rest * cap as f64;
    }
    (value, units)
}

/// The most `margin × units` that `capacity` units per hour can earn, taking each SKU's
/// `(margin, units)` in the order given, decreasing margin.
fn knapsack(skus: &[(f64, f64)], capacity: f64) -> f64 {
    let mut left = capacity;
    let mut total = 0.0;
    for &(margin, units) in skus.iter() {
        let take = units.min(left).max(0.0);
        total += margin * take;
        left -= take;
    }
    total
}

/// The bounds computed last, by layout and conditions: a world built or restored again
/// under the same layout and conditions (every rollout of a fork, every restore of a
/// snapshot) reads its bound here instead of summing the order sizes anew. Kept small,
/// since a process rarely runs more than a few layouts at once.
static RECENT: std::sync::Mutex<Vec<(MorpheusConfig, MorpheusConditions, f64)>> =
    std::sync::Mutex::new(Vec::new());

/// How many (layout, conditions) pairs [`RECENT`] keeps.
const RECENT_CAP: usize = 8;

/// [`expected_bound`], remembered for the last few layouts and conditions: the same value,
/// bit for bit, as computing it (the function is pure).
pub(crate) fn expected_bound_cached(cfg: &MorpheusConfig, k: &MorpheusConditions) -> f64 {
    if let Ok(recent) = RECENT.lock()
        && let Some((_, _, bound)) = recent.iter().find(|(c, kk, _)| kk == k && c == cfg)
    {
        return *bound;
    }
    let bound = expected_bound(cfg, k);
    if let Ok(mut recent) = RECENT.lock() {
        if recent.len() >= RECENT_CAP {
            recent.remove(0);
        }
        recent.push((cfg.clone(), k.clone(), bound));
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(kind: &str, label: &str) -> (MorpheusConfig, MorpheusConditions) {
        let path = format!("{}/worlds/{kind}.toml", env!("CARGO_MANIFEST_DIR"));
        let file: toml::Value = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let cfg: MorpheusConfig = file["world"]["params"].clone().try_into().unwrap();
        let regime = file["regimes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"].as_str() == Some(label))
            .unwrap();
        (cfg, regime["conditions"].clone().try_into().unwrap())
    }

    #[test]
    fn without_supplier_delays_the_warehouse_baseline_bound_is_the_margin_on_expected_demand() {
        let (cfg, k) = shipped("warehouse", "baseline");
        let k = MorpheusConditions {
            supplier_delay_rate: 0.0,
            ..k
        };
        // Demand 11.25 units an hour, 2.6% more for spikes; a margin of 30% of the price
        // less 0.3 shipping on the slow carrier, which is never late at a 24-hour promise.
        let spikes = spiked_share(0.002, 12);
        let plain = 0.3 * 153.75 - 0.3 * 11.25;
        let expected = plain * (1.0 + 2.0 * spikes);
        let got = expected_bound(&cfg, &k);
        assert!(
            (got - expected).abs() < 0.02 * expected,
            "{got} vs {expected}"
        );
        assert!((got - 43.855).abs() < 0.01, "{got}");
    }

    #[test]
    fn supplier_delays_cost_what_waiting_them_out_or_stocking_against_them_costs() {
        let (cfg, base) = shipped("warehouse", "baseline");
        let (_, crisis) = shipped("warehouse", "supplier_crisis");
        let fluid = expected_bound(
            &cfg,
            &MorpheusConditions {
                supplier_delay_rate: 0.0,
                ..base.clone()
            },
        );
        let (b, c) = (expected_bound(&cfg, &base), expected_bound(&cfg, &crisis));
        // The baseline's rare delays cost a little; the crisis's five times as many, a lot
        // more (the loss is not linear in the rate: stock held for one delay serves the next).
        assert!(b < fluid && b > fluid - 0.5, "{b} vs {fluid}");
        assert!(c < b - 1.0 && c > 0.8 * fluid, "{c} vs {b}");
        // Stock is what the term trades against: free stock leaves only the free yard hours.
        let free = MorpheusConditions {
            holding_cost: 0.0,
            ..crisis.clone()
        };
        assert!(expected_bound(&cfg, &free) > c);
        // Every delay blocks receipts for at least 96 hours: the term stays finite and the
        // bound positive however long delays may last.
        let long = MorpheusConfig {
            supplier_delay_hours: 100_000,
            ..cfg.clone()
        };
        let slow = expected_bound(&long, &crisis);
        assert!(slow.is_finite() && slow > 0.0 && slow < c, "{slow}");
    }

    #[test]
    fn a_tighter_promise_and_dearer_lateness_lower_the_bound() {
        let (cfg, base) = shipped("warehouse", "baseline");
        let (_, crunch) = shipped("warehouse", "service_crunch");
        assert!(expected_bound(&cfg, &crunch) < 0.7 * expected_bound(&cfg, &base));
    }

    #[test]
    fn lots_the_doors_cannot_unload_in_the_free_hours_cost_their_detention() {
        let (cfg, base) = shipped("warehouse", "baseline");
        // Lots of 50 only, through 4 doors of 4 units an hour: 4 hours to unload, the last
        // one charged (5): 0.1 per unit sold, whatever the mix, with one lot an hour allowed.
        let cfg = MorpheusConfig {
            reorder_quantities: vec![50],
            ..cfg
        };
        let slow = MorpheusConditions {
            supplier_delay_rate: 0.0,
            dock_capacity: 0.4,
            ..base
        };
        let free = MorpheusConfig {
            detention_rate: 0.0,
            ..cfg.clone()
        };
        let charged = expected_bound(&free, &slow) - expected_bound(&cfg, &slow);
        // The units sold: 11.25 an hour and the spikes' share, less those not worth selling.
        assert!(charged > 0.1 * 11.0 && charged < 0.1 * 11.6, "{charged}");
        // Doors of 10 units an hour unload a lot of 50 in the free hours: nothing is forced.
        let fast = MorpheusConditions {
            dock_capacity: 1.0,
            ..slow
        };
        assert_eq!(expected_bound(&cfg, &fast), expected_bound(&free, &fast));
        // The shipped dock_meltdown: lots of 20 are free but twelve a day bring 10 units an
        // hour, so some must be larger.
        let (cfg, meltdown) = shipped("warehouse", "dock_meltdown");
        let (b, m) = (expected_bound(&cfg, &base), expected_bound(&cfg, &meltdown));
        assert!(m < b - 0.05 && m > b - 0.5, "{m} vs {b}");
    }

    #[test]
    fn capacity_caps_the_bound() {
        let cfg = MorpheusConfig {
            pick_capacity: 2,
            ..MorpheusConfig::default()
        };
        let k = MorpheusConditions::default();
        let best_margin = cfg.sku_price(3) * (1.0 - cfg.unit_cost_ratio) - cfg.carrier_cost(2);
        assert!(expected_bound(&cfg, &k) <= 2.0 * best_margin + 1e-9);
        assert!(expected_bound(&cfg, &k) < expected_bound(&MorpheusConfig::default(), &k));
    }

    #[test]
    fn no_margin_means_no_bound_above_zero() {
        let k = MorpheusConditions {
            price: 0.0,
            ..MorpheusConditions::default()
        };
        assert_eq!(expected_bound(&MorpheusConfig::default(), &k), 0.0);
    }

    #[test]
    fn huge_demand_stays_finite_and_capped() {
        let cfg = MorpheusConfig {
            base_demand: 1e9,
            max_units_per_sku_hour: 1_000_000_000,
            ..MorpheusConfig::default()
        };
        let k = MorpheusConditions {
            demand_rate: 10.0,
            ..MorpheusConditions::default()
        };
        let b = expected_bound(&cfg, &k);
        assert!(b.is_finite() && b > 0.0);
        assert!(b <= 30.0 * cfg.sku_price(3) * (1.0 - cfg.unit_cost_ratio));
    }

    #[test]
    fn the_remembered_bound_is_the_computed_one_bit_for_bit() {
        let cfg = MorpheusConfig::default();
        let busy = MorpheusConditions {
            demand_rate: 1.7,
            ..MorpheusConditions::default()
        };
        // More pairs than are kept, twice: every read, remembered or not, is the sum's.
        for round in 0..2 {
            for n in 0..(RECENT_CAP + 2) {
                let k = MorpheusConditions {
                    price: 1.0 + n as f64 / 16.0,
                    ..busy.clone()
                };
                let want = expected_bound(&cfg, &k).to_bits();
                assert_eq!(
                    expected_bound_cached(&cfg, &k).to_bits(),
                    want,
                    "round {round}"
                );
                assert_eq!(
                    expected_bound_cached(&cfg, &k).to_bits(),
                    want,
                    "round {round}"
                );
            }
        }
        let other = MorpheusConfig {
            skus: cfg.skus + 1,
            ..cfg.clone()
        };
        assert_eq!(
            expected_bound_cached(&other, &busy).to_bits(),
            expected_bound(&other, &busy).to_bits()
        );
    }
}
