//! Stage `Disrupt`: the failure engine draws and applies this hour's failures.

use bevy_ecs::prelude::{Local, Query, ResMut};
use rand::RngExt;

use super::Hour;
use crate::morpheus::components::{Carrier, Dock, Sku, Supplier};
use crate::morpheus::resources::{
    FailureEngine, FailureEvent, FailureKind, FreshFailures, Stats, WorldRng,
};

/// Draws every failure slot (each dock, carrier, supplier, the system, each SKU: two draws
/// apiece, whatever happens), applies the failures that fire and keeps this hour's events
/// for the events table.
pub fn inject_failures(
    hour: Hour,
    mut engine: ResMut<FailureEngine>,
    mut fresh: ResMut<FreshFailures>,
    mut rng: ResMut<WorldRng>,
    mut stats: ResMut<Stats>,
    mut docks: Query<&mut Dock>,
    mut carriers: Query<&mut Carrier>,
    mut suppliers: Query<&mut Supplier>,
    mut skus: Query<&mut Sku>,
    mut hits: Local<Vec<u64>>,
) {
    let (cfg, k, now) = hour.parts();
    let groups = [
        (
            FailureKind::DockBreakdown,
            cfg.docks,
            k.dock_breakdown_rate,
            cfg.dock_breakdown_hours,
        ),
        (
            FailureKind::CarrierNoShow,
            cfg.carriers,
            k.carrier_no_show_rate,
            cfg.carrier_no_show_hours,
        ),
        (
            FailureKind::SupplierDelay,
            cfg.suppliers,
            k.supplier_delay_rate,
            cfg.supplier_delay_hours,
        ),
        (
            FailureKind::SystemOutage,
            1,
            k.outage_rate,
            cfg.outage_hours,
        ),
        (
            FailureKind::DemandSpike,
            cfg.skus,
            k.demand_spike_rate,
            cfg.demand_spike_hours,
        ),
    ];
    hits.clear();
    fresh.0.clear();
    let mut events = 0;
    for (kind, slots, rate, max_hours) in groups {
        let p = k.probability(rate);
        for target in 0..slots {
            let fire: f64 = rng.failures.random();
            let length: f64 = rng.failures.random();
            let duration = if fire < p {
                1 + (length * max_hours as f64) as u64
            } else {
                0
            };
            hits.push(duration);
            if duration > 0 {
                events += 1;
                let target = (kind != FailureKind::SystemOutage).then_some(target as u32);
                let event = FailureEvent {
                    kind,
                    target,
                    start: now,
                    duration,
                };
                engine.record(event, cfg.failure_log_len);
                fresh.0.push(event);
            }
        }
    }
    let until = |offset: usize, id: u32| {
        hits.get(offset + id as usize)
            .copied()
            .filter(|&h| h > 0)
            .map(|h| now + h)
    };
    for mut d in &mut docks {
        if let Some(t) = until(0, d.id) {
            d.down_until = d.down_until.max(t);
        }
    }
    let offset = cfg.docks;
    for mut c in &mut carriers {
        if let Some(t) = until(offset, c.id) {
            c.absent_until = c.absent_until.max(t);
        }
    }
    let offset = offset + cfg.carriers;
    for mut s in &mut suppliers {
        if let Some(t) = until(offset, s.id) {
            s.delayed_until = s.delayed_until.max(t);
        }
    }
    let offset = offset + cfg.suppliers;
    if let Some(t) = until(offset, 0) {
        engine.outage_until = engine.outage_until.max(t);
    }
    let offset = offset + 1;
    for mut s in &mut skus {
        if let Some(t) = until(offset, s.id) {
            s.spike_until = s.spike_until.max(t);
        }
    }
    engine.recent = engine.recent * (-1.0f64 / 24.0).exp() + events as f64;
    stats.hour.failure_events = events;
}
