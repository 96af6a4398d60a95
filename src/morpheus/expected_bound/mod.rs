//! The expected-reward bound: an upper bound on the long-run average profit per hour that any policy can earn under the conditions in force.
//!
//! The hard ceiling ([`super::bounds`]) bounds one hour's reward over every action
//! sequence; it is valid but far above anything a policy earns on average. This bound is
//! a *fluid relaxation* of the long-run average of the default reward (the hour's profit,
//! [`default_reward_spec`](super::default_reward_spec)): it keeps what no policy can
//! escape (the demand the market offers, the margin a unit can earn, the shipping and the
//! late risk an order meets even when it ships the hour it is placed, the capacities, the
//! waiting or the stock that supplier delays and lot sizes force) and drops every other constraint, so
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
//!    breakpoints `y = G(T)/ρ(T)`). Pricing the stock gives a second lower bound: for any
//!    `θ ≥ 0` the orders `Y` covers save at most `θ·Y + Σ_o max(0, g_o − θ·u_o)`, so the
//!    window loses at least `Σ_o min(g_o, θ·u_o) − θ·Y`; at `θ = r/p` the holding `r·y`
//!    pays for all that `y` saves, and the loss per hour is at least `p·E_T M(T)`, `M(T) =
//!    Σ_a (1 − p)^a Σ_i E min(g(U_i(t₀ + a), T − a), θ·U_i)`, whatever the stock. The
//!    larger of the two counts, hour of the day by hour of the day. Delays longer than 96
//!    hours count as 96 (receipts are blocked at least that long), to bound the work. An
//!    order of SKU `i` is served from SKU `i`'s stock only, so the same argument holds SKU
//!    by SKU, with `Y_i`, `h_i`, `ρ_i` and `d_i` of that SKU alone, and the sum over the
//!    supplier's SKUs is a second count: the larger of the pooled and the per-SKU count
//!    is the supplier's term. The supplier terms add up (their SKUs are disjoint), and are
//!    subtracted from `Σ V_i`, the expected order value they are losses against.
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
//!    within the free hours suffice, and the term is 0. (In `dock_meltdown` step 8's
//!    charge is now larger, so this bound does not bind in any shipped regime.)
//!
//! 7. **An hour's stock is set before its order.** The stock of SKU `i` on hand after an
//!    hour's receipts, `A`, is fixed before the hour's order `U` is drawn (the operation,
//!    the failures and the receipts come first, and see the demand of earlier hours only).
//!    An order served in its own hour needs `U ≤ A`; one that is not waits at least an
//!    hour and loses at least `ĝ(U) = min(g(U, 1), f(U) − f(U − 1) + h_i)` (the second
//!    term keeps the relaxed value nondecreasing in `U`, so goodwill below 1 only lowers
//!    it). The hour ends with `A` on hand less what ships: the order if served, and orders
//!    that waited, each unit of which is so held one hour less, once. The hour costs at
//!    least `N(A) = h_i·(A − E U) + Σ_{u > A} P(U = u)·ĝ(u)` in holding and waiting, and
//!    SKU `i` at least the average of `min_A N(A)` over the hours of the day and the spike
//!    states (at least 0). Step 7 charges no detention, so step 6's bound subtracts it too.
//!
//! 8. **Stock comes in lots.** Every purchase order brings at least `J =
//!    min(reorder_quantities)` units of one SKU to the yard at once. Call an hour in which
//!    some of SKU `i` reaches the yard a *receipt*; a receipt brings at least `J` units, and
//!    over a long run every unit received is sold (stock that grows without end costs
//!    holding without end), so receipts come at most `ρ_i = d_i / J` an hour, `d_i` the
//!    mean demand of step 5. Take SKU `i`'s order `U` of hour `t`, `j` hours after the
//!    last receipt and `k` before the next (`j = k = 0` in a receipt hour: cost 0). A unit
//!    costs at least `r_i = min(h_i, detention_rate / max(reorder_quantities))` per hour
//!    from its receipt to its shipment, but for its first `F = detention_free_hours` (as
//!    in step 5), so the order
//!    - ships from stock received at or before `t − j`: at least `r_i·U·(j − F)⁺`; or
//!    - waits for the next receipt: at least `g(U, min(k, ℓ + 1))`, `ℓ =
//!      ⌈supplier_lead_time·lead_time⌉` (a purchase order placed after the hour's order
//!      arrives `ℓ + 1` hours later at the earliest; `ℓ + 1` counts as at most 96, to bound
//!      the work); or
//!    - ships from a purchase order expedited after it was placed. An expedite at `e`
//!      brings an order due at `η ≥ t + k` to `e + ⌊(η − e)/2⌋ ≥ t + ⌈k/2⌉` (one placed
//!      after `t` to at least `t + 1 + ⌊ℓ/2⌋`), and costs `expedite_fee`, at least
//!      `e_q = expedite_fee / max(reorder_quantities)` a unit: at least `g(U, max(1,
//!      ⌈min(k, ℓ + 1)/2⌉)) + e_q·U` (units from stock instead cost `r_i·(j − F)⁺` each,
//!      covered by the first case when that is less).
//!
//!    Call the least of the three `c(U; j, k)`, and replace it by its largest minorant
//!    `c̃` that is nondecreasing in `U` and rises no faster than `f` (`c̃(u) ≤ c̃(u − 1) +
//!    f(u) − f(u − 1)`), so that spikes (more demand) only raise it and goodwill below 1
//!    (less) only lowers `f − c̃`. Whether a receipt comes in hour `t` and when the next
//!    one would come without an expedite after `t` (capped at `ℓ + 1`) are set before the
//!    hour's order is drawn (by the orders' due hours and the supplier delays), so the
//!    hour costs at least `κ_h(j, k) = E c̃(U_h; j, min(k, ℓ + 1))` in expectation, `U_h`
//!    the order at hour `h` of the day outside spikes, and using the actual gap for `k`
//!    only lowers it. A gap of `L` hours opening at hour `h₀` then costs at least `C(h₀,
//!    L) = Σ_{0<j<L} κ_{h₀+j}(j, L − j)`, and for any price `μ ≥ 0` per receipt the long
//!    run costs at least `γ(μ) − μ·ρ_i` an hour, `γ(μ)` the least cost per hour of any
//!    cycle of gaps, each gap costing `C + μ` (a cycle through the 24 hours of the day at
//!    which gaps open; found by bisection on `γ` with a negative-cycle test). Gaps longer
//!    than 96 hours are bounded below by their first 96 hours plus `min_h κ_h(96, ℓ + 1)`
//!    for each later hour but the last `ℓ + 1` (`κ` is nondecreasing in `j` and `k`). The
//!    term is the largest value over the prices searched (golden section), at least 0.
//!    Steps 7 and 8 both charge SKU `i`'s storage and waiting: the larger of the two
//!    counts, SKU by SKU; and steps 5 and 7–8 both charge a supplier's SKUs' holding and
//!    waiting: the larger of the two counts, supplier by supplier. Step 8 may charge
//!    detention, so step 6's bound subtracts step 7 only.
//!
//! The bound is the lower of the two. Both bound every policy, so it is valid. It leaves
//! out the safety stock that the stochastic demand and the lead times force a real policy
//! to hold, and charges the lots' cycle stock only up to what the order it serves is worth
//! (step 8 cannot tell stock carried across a receipt from stock received at it). Over a finite
//! interval a policy can exceed it by what it sells from stock bought before the
//! interval; the validity test allows for that.
//!
//! # What it leaves out, and why
//!
//! Where the oracle earns least against the bound, the difference is detention in the
//! dock regimes (about 6 per hour of the warehouse's `dock_meltdown`: trailers queue while
//! doors are down), the holding of its safety stock in `service_crunch`,
//! `supplier_crisis` and `lean_market` (the oracle holds 4 to 9 per hour; step 8 charges
//! under 1) with late penalties beyond step 2's in `service_crunch`, and, in the async
//! worlds, the hours after a shift (a shift into `supplier_crisis` triples the lead time
//! of the stock still to come). None of these is in the bound, because none is yet proved
//! unavoidable:
//!
//! - **Safety stock.** Step 7 is a newsvendor over one hour. Over longer, it needs the
//!   stock that can arrive by an hour to be fixed some hours before it, while the demand
//!   in between is still unknown. An
//!   expedite halves a purchase order's remaining lead time (once, for
//!   `expedite_fee`), so a purchase is committed only `⌊ℓ/2⌋` hours before it can
//!   arrive, and an expedite moves stock forward after the demand is seen. And a
//!   shortage is cheap per unit: an order can wait `s − τ` hours at no cost, is late
//!   (one `L` per order, of up to `max_units_per_sku_hour` units) after that, and is
//!   lost only `cancel_after_hours` past due, so the shortage cost per unit-hour a
//!   valid argument can charge is at most `min(L / cap, margin + lost_sale_penalty) /
//!   (s + cancel_after_hours − (s − τ))`, about 0.02 in the warehouse's
//!   `service_crunch`, no more than holding. The term it yields is a few tenths per hour.
//! - **Safety stock across receipts.** Step 8 charges a unit from the last receipt before
//!   its order only; stock carried across a receipt because the lead time hid the demand
//!   (an inventory-position argument) would need the order book's first-come order and
//!   the per-order late fees in one count, which is not done.
//! - **Detention and failures.** Beyond what step 6 forces, detention comes from doors
//!   that are down, and repairs (one operation and `repair_cost` each) restore a door; the
//!   expected capacity the failures leave exceeds the expected demand in every shipped
//!   regime, so the capacity term does not bind, and a queue that breakdowns build is one
//!   a timely repair clears.
//! - **Transients.** The bound is a long-run average under one configuration; the cost
//!   of rebuilding stock after a shift belongs to the schedule, not the configuration.
//!
//! A world with another reward specification has no expected bound.

mod cycle;
mod delays;
mod demand;
mod lots;
mod market;
mod shortfall;

use super::conditions::MorpheusConditions;
use super::config::MorpheusConfig;
use cycle::cycle_stock;
use delays::supplier_delay_loss;
use demand::{knapsack, order_value, spiked_share};
use lots::{Lots, lot_bound};
use market::Market;
use shortfall::stock_shortfall;

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
    bound_at(cfg, k, 1.0)
}

/// [`expected_bound`] for a world whose waves may be held (a world with roles, where the
/// logistics role owns `hold_wave`): the wave after a held one ships at
/// [`CONSOLIDATION_DISCOUNT`](crate::morpheus::roles::CONSOLIDATION_DISCOUNT) of its
/// carrier's cost, so step 2 prices every unit at that discount. Holding a wave also
/// ships nothing that hour; the bound does not count that loss, so it stays an upper bound
/// on every policy of such a world.
///
/// ```
/// use perennial::morpheus::{MorpheusConditions, MorpheusConfig, expected_bound, expected_bound_consolidating};
/// let (cfg, k) = (MorpheusConfig::default(), MorpheusConditions::default());
/// assert!(expected_bound_consolidating(&cfg, &k) >= expected_bound(&cfg, &k));
/// ```
pub fn expected_bound_consolidating(cfg: &MorpheusConfig, k: &MorpheusConditions) -> f64 {
    bound_at(cfg, k, crate::morpheus::roles::CONSOLIDATION_DISCOUNT)
}

/// The bound with every carrier's cost per unit multiplied by `ship_scale`.
fn bound_at(cfg: &MorpheusConfig, k: &MorpheusConditions, ship_scale: f64) -> f64 {
    let market = Market::new(cfg, k, ship_scale);
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
    // Steps 5 and 7 both charge the holding and the waiting of a supplier's SKUs: the
    // larger of the two counts, per supplier.
    let shortfall: Vec<f64> = (0..cfg.skus)
        .map(|i| stock_shortfall(&market, i, spiked))
        .collect();
    // Steps 7 and 8 both charge a SKU's storage and waiting: the larger of the two.
    let held: Vec<f64> = (0..cfg.skus)
        .map(|i| cycle_stock(&market, i, demand[i]).max(shortfall[i]))
        .collect();
    let suppliers = cfg.suppliers.max(1);
    let (mut delays, mut stock) = (0.0, 0.0);
    for j in 0..suppliers {
        let own: f64 = held.iter().skip(j).step_by(suppliers).sum();
        delays += supplier_delay_loss(&market, j, spiked, &demand).max(own);
        stock += shortfall.iter().skip(j).step_by(suppliers).sum::<f64>();
    }
    let most = ship.min(doors).min(buying);
    skus.sort_by(|a, b| b.0.total_cmp(&a.0));
    let fluid = (value - delays).min(knapsack(&skus, most));
    fluid
        .min(lot_bound(&skus, value - stock, most, &Lots::new(cfg, k)))
        .max(0.0)
}

/// The bounds computed last, by layout and conditions: a world built or restored again
/// under the same layout and conditions (every rollout of a fork, every restore of a
/// snapshot) reads its bound here instead of summing the order sizes anew. Kept small,
/// since a process rarely runs more than a few layouts at once.
#[allow(clippy::type_complexity)]
static RECENT: std::sync::Mutex<Vec<(MorpheusConfig, MorpheusConditions, u64, f64)>> =
    std::sync::Mutex::new(Vec::new());

/// How many (layout, conditions) pairs [`RECENT`] keeps.
const RECENT_CAP: usize = 8;

/// [`expected_bound`] (or, with `consolidating`, [`expected_bound_consolidating`]),
/// remembered for the last few layouts and conditions: the same value, bit for bit, as
/// computing it (the function is pure).
pub(crate) fn expected_bound_cached(
    cfg: &MorpheusConfig,
    k: &MorpheusConditions,
    consolidating: bool,
) -> f64 {
    let scale = if consolidating {
        crate::morpheus::roles::CONSOLIDATION_DISCOUNT
    } else {
        1.0
    };
    if let Ok(recent) = RECENT.lock()
        && let Some((_, _, _, bound)) = recent
            .iter()
            .find(|(c, kk, s, _)| *s == scale.to_bits() && kk == k && c == cfg)
    {
        return *bound;
    }
    let bound = bound_at(cfg, k, scale);
    if let Ok(mut recent) = RECENT.lock() {
        if recent.len() >= RECENT_CAP {
            recent.remove(0);
        }
        recent.push((cfg.clone(), k.clone(), scale.to_bits(), bound));
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
    fn without_supplier_delays_the_warehouse_baseline_bound_is_about_the_margin_on_expected_demand()
    {
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
        // Less what the stock costs: lots of 20 at least, so between two receipts each
        // SKU holds stock or lets orders wait (step 8), under a tenth an hour a SKU.
        let stock = expected - got;
        assert!(stock > 0.4 && stock < 0.8, "{got} vs {expected}");
        assert!((got - 43.279).abs() < 0.01, "{got}");
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
        // The baseline's rare delays cost less than the lots' cycle stock (step 8), which
        // the bound charges instead; the crisis's five times as many, a lot more (the loss
        // is not linear in the rate: stock held for one delay serves the next).
        assert!(b <= fluid && b > fluid - 0.5, "{b} vs {fluid}");
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
        // Free holding, so that no stock term (steps 7 and 8) counts: yard and shelf are free.
        let base = MorpheusConditions {
            holding_cost: 0.0,
            ..base
        };
        let slow = MorpheusConditions {
            supplier_delay_rate: 0.0,
            dock_capacity: 0.4,
            ..base.clone()
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
        let meltdown = MorpheusConditions {
            holding_cost: 0.0,
            ..meltdown
        };
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
                    expected_bound_cached(&cfg, &k, false).to_bits(),
                    want,
                    "round {round}"
                );
                assert_eq!(
                    expected_bound_cached(&cfg, &k, false).to_bits(),
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
            expected_bound_cached(&other, &busy, false).to_bits(),
            expected_bound(&other, &busy).to_bits()
        );
    }
}
