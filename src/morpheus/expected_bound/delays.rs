//! Step 5 of the derivation: the loss that supplier delays force on every policy.

use super::demand::EXACT_RATE;
use super::demand::poisson_masses;
use super::market::Market;

/// The longest supplier delay the delay term looks at: a longer delay blocks receipts for
/// at least this many hours, which is all the term uses.
const LONGEST_DELAY: u64 = 96;

/// Step 5: the least expected loss per hour that supplier `j`'s delays cost any policy
/// (its SKUs' orders waiting out a delay, or the stock held against it); see the module
/// docs. `spiked` is the share of spiked hours, `demand[i]` SKU `i`'s mean units per hour.
pub(super) fn supplier_delay_loss(
    market: &Market<'_>,
    j: usize,
    spiked: f64,
    demand: &[f64],
) -> f64 {
    let cfg = market.cfg;
    let skus: Vec<usize> = (0..cfg.skus)
        .filter(|i| i % cfg.suppliers.max(1) == j)
        .collect();
    let apart: f64 = skus
        .iter()
        .map(|&i| delay_loss(market, &[i], spiked, demand))
        .sum();
    apart.max(delay_loss(market, &skus, spiked, demand))
}

/// Step 5's loss for the orders of `skus`, served from their stock: for one SKU, from its
/// own; for several, from stock pooled at the cheapest holding and the largest saving.
fn delay_loss(market: &Market<'_>, skus: &[usize], spiked: f64, demand: &[f64]) -> f64 {
    let (cfg, k) = (market.cfg, market.k);
    let p = k.probability(k.supplier_delay_rate);
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
    let yard = cfg.detention_rate * k.cost_multiplier
        / cfg
            .reorder_quantities
            .iter()
            .copied()
            .max()
            .unwrap_or(1)
            .max(1) as f64;
    let hold = skus.iter().map(|&i| market.holding(i)).fold(yard, f64::min);
    // θ = r/p: what holding one unit costs per delay it could cover.
    let theta = hold / p;
    // loss[i][hour][w - 1]: E g(U, w) for SKU i's order placed at `hour` of the day;
    // capped[i][hour][w - 1]: E min(g(U, w), θ·U).
    let mut loss = vec![vec![vec![0.0; span]; 24]; skus.len()];
    let mut capped = loss.clone();
    // rho[w - 1]: the most a unit covering one of these orders can save, max g(u, w) / u.
    let mut rho = vec![0.0f64; span];
    for (n, &i) in skus.iter().enumerate() {
        let unit = market.unit(i);
        let g = |u: f64, w: f64| (market.order(unit, u, 0.0) - market.order(unit, u, w)).max(0.0);
        // Orders above `sizes` units save at most `f(u)/u <= margin` per unit, and at most
        // `L/u` before they would be cancelled (they lose at most the late fee then).
        let sizes = cap.min(EXACT_RATE as u64);
        // losses[u - 1][w - 1] = g(u, w), computed once for every order size and wait.
        let losses: Vec<Vec<f64>> = (1..=sizes)
            .map(|u| (1..=span).map(|w| g(u as f64, w as f64)).collect())
            .collect();
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
            for (u, row) in losses.iter().enumerate() {
                *r = r.max(row[w] / (u + 1) as f64);
            }
        }
        for hour in 0..24 {
            let rate = market.rate(i, hour as u64);
            for (share, factor) in [(1.0 - spiked, 1.0), (spiked, cfg.demand_spike_factor)] {
                if share <= 0.0 {
                    continue;
                }
                for (u, mass) in poisson_masses(rate * factor, cap) {
                    let row = losses.get(u as usize - 1);
                    for w in 0..span {
                        let lost = row.map_or_else(|| g(u, (w + 1) as f64), |row| row[w]);
                        loss[n][hour][w] += share * mass * lost;
                        capped[n][hour][w] += share * mass * lost.min(theta * u);
                    }
                }
            }
        }
    }
    let flow: f64 = skus.iter().map(|&i| demand[i]).sum();
    let mut total = 0.0;
    let (mut lost, mut covered) = (vec![0.0; span], vec![0.0; span]);
    // The expected (capped) loss of the orders a window of t hours opening at `start`
    // counts, each attributed to the last delay drawn before it.
    let window_sum = |table: &[Vec<Vec<f64>>], start: usize, t: usize| -> f64 {
        (0..t)
            .map(|a| {
                let hour = (start + a) % 24;
                let kept = (1.0 - p).powi(a as i32);
                kept * table.iter().map(|sku| sku[hour][t - a - 1]).sum::<f64>()
            })
            .sum()
    };
    for start in 0..24 {
        for t in 1..=span {
            lost[t - 1] = window_sum(&loss, start, t);
            covered[t - 1] = window_sum(&capped, start, t);
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
        // At θ = r/p every unit of stock costs as much as it can save, whatever the level.
        let priced = p * (0..span).map(|t| window[t] * covered[t]).sum::<f64>();
        total += best.max(priced) / 24.0;
    }
    (total - hold * cfg.detention_free_hours as f64 * flow).max(0.0)
}
