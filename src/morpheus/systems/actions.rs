//! Stage `Act`: the hour's counters are cleared and the agent's operation is applied.

use bevy_ecs::prelude::{Commands, Query, Res, ResMut};

use super::Hour;
use crate::morpheus::Op;
use crate::morpheus::components::{Dock, PurchaseOrder, Sku, Supplier};
use crate::morpheus::resources::{
    Clock, CostKind, Dispatch, FailureEngine, HourStats, Ids, InfoLayer, Ledger, PendingAction,
    Stats,
};

/// Clears the hour's counters and notes the cash the hour starts with.
pub fn begin_hour(
    clock: Res<Clock>,
    mut stats: ResMut<Stats>,
    mut ledger: ResMut<Ledger>,
    mut info: ResMut<InfoLayer>,
) {
    if clock.hour_of_day() == 0 {
        info.ops_today = 0;
    }
    stats.hour = HourStats::default();
    ledger.begin_hour();
}

/// Applies the hour's operations in order (one per role in a roles world), each counted as
/// rejected when it is infeasible now.
pub fn apply_action(
    action: Res<PendingAction>,
    hour: Hour,
    engine: Res<FailureEngine>,
    mut ledger: ResMut<Ledger>,
    mut stats: ResMut<Stats>,
    mut dispatch: ResMut<Dispatch>,
    mut ids: ResMut<Ids>,
    mut info: ResMut<InfoLayer>,
    skus: Query<&Sku>,
    suppliers: Query<&Supplier>,
    mut orders: Query<&mut PurchaseOrder>,
    mut docks: Query<&mut Dock>,
    mut commands: Commands,
) {
    for &op in &action.0 {
        if op == Op::Noop {
            continue;
        }
        let (cfg, k, now) = hour.parts();
        let up = now >= engine.outage_until;
        info.ops_today += 1;
        if f64::from(info.ops_today) > k.op_budget {
            stats.hour.rejected = true;
            stats.hour.rate_limited = true;
            stats.total.rejected_actions += 1;
            stats.total.rate_limited += 1;
            continue;
        }
        let done = up
            && match op {
                Op::Noop => true,
                Op::Reorder { sku, bucket } => {
                    let item = skus.iter().find(|s| s.id == sku);
                    let units = cfg.reorder_quantities.get(bucket as usize).copied();
                    match (item, units) {
                        (Some(item), Some(units)) => {
                            let cost = units as f64 * item.unit_cost * k.cost_multiplier;
                            if !ledger.can_pay(cost, cfg.credit_limit) {
                                false
                            } else {
                                let lead = suppliers
                                    .iter()
                                    .find(|p| p.id == item.supplier)
                                    .map_or(cfg.lead_time_hours, |p| p.lead_time_hours);
                                ledger.pay(CostKind::Purchases, cost);
                                commands.spawn(PurchaseOrder {
                                    id: ids.next_po,
                                    sku,
                                    supplier: item.supplier,
                                    units,
                                    placed: now,
                                    eta: now.saturating_add((lead * k.lead_time).ceil() as u64),
                                    expedited: false,
                                });
                                ids.next_po += 1;
                                stats.total.units_ordered += units;
                                true
                            }
                        }
                        _ => false,
                    }
                }
                Op::ChooseCarrier { carrier } => {
                    if dispatch.carrier != carrier && dispatch.switch_fee > 0.0 {
                        ledger.pay(CostKind::Shipping, dispatch.switch_fee * k.cost_multiplier);
                    }
                    dispatch.carrier = carrier;
                    true
                }
                Op::Expedite { sku } => {
                    match orders
                        .iter_mut()
                        .filter(|o| o.sku == sku && !o.expedited && o.eta > now)
                        .min_by_key(|o| o.id)
                    {
                        Some(mut order) => {
                            order.eta = now + order.eta.saturating_sub(now) / 2;
                            order.expedited = true;
                            ledger.pay(CostKind::Expedite, cfg.expedite_fee * k.cost_multiplier);
                            true
                        }
                        None => false,
                    }
                }
                Op::RepairDock { dock } => {
                    match docks
                        .iter_mut()
                        .find(|d| d.id == dock && d.down_until > now)
                    {
                        Some(mut d) => {
                            d.down_until = now;
                            ledger.pay(CostKind::Repair, cfg.repair_cost * k.cost_multiplier);
                            true
                        }
                        None => false,
                    }
                }
                Op::PrioritizeSku { sku } => {
                    let known = (sku as usize) < cfg.skus;
                    if known {
                        let until = now + crate::morpheus::roles::PRIORITY_HOURS;
                        dispatch.priority = Some((sku, until));
                    }
                    known
                }
                Op::HoldWave => !std::mem::replace(&mut dispatch.hold, true),
            };
        if !done {
            stats.hour.rejected = true;
            stats.total.rejected_actions += 1;
        }
    }
}
