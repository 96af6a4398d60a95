//! Stage `Ledger`: the hour's holding cost and interest are booked.

use bevy_ecs::prelude::{Query, Res, ResMut};

use crate::morpheus::components::Sku;
use crate::morpheus::resources::{CostKind, CurrentConditions, Ledger, Settings, Stats};

/// Charges holding cost on every unit on hand (unit cost × `holding_rate` × the regime's
/// holding and cost multipliers), then interest on a negative balance, on at most
/// `credit_limit` of it: debt run up beyond the line costs no interest, so a policy that
/// keeps losing money sees its debt grow linearly, not compound without bound.
pub fn charge_holding(
    settings: Res<Settings>,
    conditions: Res<CurrentConditions>,
    mut ledger: ResMut<Ledger>,
    mut stats: ResMut<Stats>,
    skus: Query<&Sku>,
) {
    let (cfg, k) = (&settings.0, &conditions.0);
    let value: f64 = skus.iter().map(|s| s.on_hand as f64 * s.unit_cost).sum();
    let cost = value * cfg.holding_rate * k.holding_cost * k.cost_multiplier;
    ledger.pay(CostKind::Holding, cost);
    stats.hour.holding_cost = cost;
    if ledger.cash < 0.0 {
        let interest = (-ledger.cash).min(cfg.credit_limit) * cfg.interest_rate;
        ledger.pay(CostKind::Interest, interest);
    }
}
