//! Step 8 of the derivation: stock comes in lots, so between two receipts an hour's order
//! is served from stock that has waited since the last receipt, or waits for the next.

use super::demand::poisson_masses;
use super::market::Market;

/// The longest gap between two receipts counted hour by hour; a longer one is bounded by
/// its first `LONGEST_GAP` hours and the least cost of an hour after them.
const LONGEST_GAP: usize = 96;

/// Above this demand cap the term counts nothing (the order sizes are summed one by one).
const LARGEST_CAP: u64 = 1000;

/// Bisection steps for the least cost per hour at one price of a receipt, and golden-section
/// steps for the price.
const BISECTIONS: usize = 24;
const PRICES: usize = 20;

/// Step 8: the least expected cost per hour that SKU `i`'s lots force on any policy, in
/// storage between receipts and in orders waiting for the next one (see the module docs).
/// `offered` is the SKU's mean demand per hour, spikes included. At least 0.
pub(super) fn cycle_stock(market: &Market<'_>, i: usize, offered: f64) -> f64 {
    let (cfg, k) = (market.cfg, market.k);
    let lot = cfg.reorder_quantities.iter().copied().min().unwrap_or(0) as f64;
    let largest = cfg.reorder_quantities.iter().copied().max().unwrap_or(0) as f64;
    let cap = cfg.max_units_per_sku_hour;
    if lot <= 0.0 || offered <= 0.0 || cap > LARGEST_CAP {
        return 0.0;
    }
    // ρ: receipts an hour at most, each a lot of at least `lot` units of what is sold.
    let receipts = offered / lot;
    // r: a unit-hour in the yard past the free hours or on the shelf.
    let yard = cfg.detention_rate * k.cost_multiplier / largest;
    let store = market.holding(i).min(yard);
    let free = cfg.detention_free_hours as f64;
    let expedite = cfg.expedite_fee * k.cost_multiplier / largest;
    // A purchase order placed after the hour's order reaches the yard `lead + 1` hours
    // later at the earliest.
    let supplier = i % cfg.suppliers.max(1);
    let lead = (cfg.supplier_lead_time(supplier) * k.lead_time)
        .ceil()
        .max(0.0) as usize;
    let reach = (lead + 1).min(LONGEST_GAP);
    let unit = market.unit(i);
    let f = |u: f64| market.order(unit, u, 0.0);
    let g = |u: f64, w: f64| (f(u) - market.order(unit, u, w)).max(0.0);
    let sizes = cap as usize;
    // masses[hour][u]: P(U = u) at that hour of the day, outside spikes.
    let masses: Vec<Vec<f64>> = (0..24)
        .map(|hour| {
            let mut p = vec![0.0; sizes + 1];
            for (u, mass) in poisson_masses(market.rate(i, hour), cap) {
                p[u as usize] += mass;
            }
            p
        })
        .collect();
    // The least cost of an order of u units placed `j` hours after the last receipt and
    // `w` before the next (w counted up to `reach`), made nondecreasing in u and no
    // steeper than f: c̃(u; j, w).
    let waited: Vec<Vec<f64>> = (0..=sizes)
        .map(|u| (0..=reach).map(|w| g(u as f64, w as f64)).collect())
        .collect();
    let least = |j: usize, w: usize, out: &mut Vec<f64>| {
        out.clear();
        out.extend((0..=sizes).map(|u| {
            let u_f = u as f64;
            let held = store * u_f * (j as f64 - free).max(0.0);
            let rushed = waited[u][w.div_ceil(2).max(1)] + expedite * u_f;
            held.min(waited[u][w.min(reach)]).min(rushed)
        }));
        out[0] = 0.0;
        for u in (1..sizes).rev() {
            out[u] = out[u].min(out[u + 1]);
        }
        for u in 1..=sizes {
            let step = (f(u as f64) - f(u as f64 - 1.0)).max(0.0);
            out[u] = out[u].min(out[u - 1] + step);
        }
    };
    // cost[j][w][hour]: κ, the expected least cost of the order of `hour` of the day,
    // `j` hours after a receipt and `w` (at most `reach`) before the next.
    let mut cost = vec![vec![vec![0.0; 24]; reach + 1]; LONGEST_GAP + 1];
    let mut scratch = Vec::with_capacity(sizes + 1);
    for (j, row) in cost.iter_mut().enumerate().skip(1) {
        for (w, cell) in row.iter_mut().enumerate().skip(1) {
            least(j, w, &mut scratch);
            for (c, p) in cell.iter_mut().zip(&masses) {
                *c = p.iter().zip(&scratch).map(|(p, c)| p * c).sum();
            }
        }
    }
    // gap[start][L]: the cost of the orders between a receipt at `start` and the next,
    // L hours later.
    let gap: Vec<Vec<f64>> = (0..24)
        .map(|start| {
            (0..=LONGEST_GAP)
                .map(|len| {
                    (1..len)
                        .map(|j| cost[j][(len - j).min(reach)][(start + j) % 24])
                        .sum()
                })
                .collect()
        })
        .collect();
    // Every hour of a longer gap from its LONGEST_GAP-th on, but its last `reach`, costs
    // at least this.
    let tail = cost[LONGEST_GAP][reach]
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let value = |price: f64| least_rate(&gap, tail, reach, price) - price * receipts;
    // The bound holds at every price; search the best one (golden section: the value is
    // concave in the price). Above tail / receipts it is negative.
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut lo, mut hi) = (0.0, tail / receipts);
    let (mut a, mut b) = (hi - phi * hi, phi * hi);
    let (mut va, mut vb) = (value(a), value(b));
    let mut best = va.max(vb);
    for _ in 0..PRICES {
        if va < vb {
            lo = a;
            (a, va) = (b, vb);
            b = lo + phi * (hi - lo);
            vb = value(b);
        } else {
            hi = b;
            (b, vb) = (a, va);
            a = hi - phi * (hi - lo);
            va = value(a);
        }
        best = best.max(va).max(vb);
    }
    best.max(0.0)
}

/// The least average cost per hour over every sequence of gaps between receipts, each
/// receipt priced at `price`: the largest `γ` (up to `tail`, found by bisection) such that
/// no cycle of gaps costs less than `γ` an hour, `gap[start][L]` the cost of a gap of `L`
/// hours opening at hour `start` of the day. A gap of `L > M = LONGEST_GAP` hours costs at
/// least its first `M` hours' cost and `tail` for each of its hours `M ..= L − reach`, so
/// for `γ <= tail` it weighs at least `gap[start][M] + price − γ·(M + reach)`, and may
/// end at any hour of the day.
fn least_rate(gap: &[Vec<f64>], tail: f64, reach: usize, price: f64) -> f64 {
    let cycles_below = |rate: f64| -> bool {
        let mut d = [[f64::INFINITY; 24]; 24];
        for (start, row) in gap.iter().enumerate() {
            for (len, &c) in row.iter().enumerate().skip(1) {
                let w = c + price - rate * len as f64;
                let end = (start + len) % 24;
                d[start][end] = d[start][end].min(w);
            }
            let long = row[LONGEST_GAP] + price - rate * (LONGEST_GAP + reach) as f64;
            for end in d[start].iter_mut() {
                *end = end.min(long);
            }
        }
        for m in 0..24 {
            let through = d[m];
            for row in d.iter_mut() {
                let via = row[m];
                if via.is_infinite() {
                    continue;
                }
                for (cell, next) in row.iter_mut().zip(through) {
                    *cell = cell.min(via + next);
                }
            }
        }
        (0..24).any(|a| d[a][a] < 0.0)
    };
    if !cycles_below(tail) {
        return tail;
    }
    let (mut lo, mut hi) = (0.0, tail);
    for _ in 0..BISECTIONS {
        let mid = 0.5 * (lo + hi);
        if cycles_below(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::morpheus::{MorpheusConditions, MorpheusConfig};

    #[test]
    fn the_least_rate_is_that_of_the_cheapest_cycle_of_gaps() {
        // A gap of L hours costs L² wherever it opens, a receipt 16: the best cycle repeats
        // gaps of 4 hours, (16 + 16) / 4 = 8 an hour.
        let gap: Vec<Vec<f64>> = (0..24)
            .map(|_| (0..=LONGEST_GAP).map(|l| (l * l) as f64).collect())
            .collect();
        let rate = least_rate(&gap, 100.0, 1, 16.0);
        assert!((rate - 8.0).abs() < 1e-3, "{rate}");
        // Gaps opening at hour 0 and lasting 24 hours cost nothing: a day-long cycle of them
        // costs the receipt only.
        let mut cheap = gap.clone();
        cheap[0][24] = 0.0;
        let rate = least_rate(&cheap, 100.0, 1, 16.0);
        assert!((rate - 16.0 / 24.0).abs() < 1e-3, "{rate}");
        // Never above the cost a long gap's hours are known to reach.
        assert!(least_rate(&gap, 3.0, 1, 16.0) <= 3.0);
    }

    #[test]
    fn lots_cost_the_stock_between_receipts_and_less_when_storage_is_free() {
        let cfg = MorpheusConfig {
            daily_amplitude: 0.0,
            ..MorpheusConfig::default()
        };
        let k = MorpheusConditions {
            promise: 0.5,
            late_penalty: 6.0,
            demand_spike_rate: 0.0,
            ..MorpheusConditions::default()
        };
        let market = Market::new(&cfg, &k, 1.0);
        let demand = cfg.sku_demand(3);
        let of = |cfg: &MorpheusConfig| cycle_stock(&Market::new(cfg, &k, 1.0), 3, demand);
        let base = cycle_stock(&market, 3, demand);
        // Below the fluid cycle stock: half a lot held at the holding cost, or less.
        let lot = *cfg.reorder_quantities.iter().min().unwrap() as f64;
        assert!(base > 0.0 && base < 0.5 * lot * market.holding(3), "{base}");
        // Larger lots force more stock; free holding and a free yard force none.
        let large = MorpheusConfig {
            reorder_quantities: vec![40, 100],
            ..cfg.clone()
        };
        assert!(of(&large) > base, "{} vs {base}", of(&large));
        let free = MorpheusConfig {
            holding_rate: 0.0,
            ..cfg.clone()
        };
        assert_eq!(of(&free), 0.0);
    }
}
