//! Stage `Report`: signals are published, the clock advances, the observation is written.

use std::f64::consts::TAU;

use bevy_ecs::prelude::{Local, Query, Res, ResMut};

use crate::morpheus::components::{Carrier, CustomerOrder, Dock, PurchaseOrder, Sku, Trailer};
use crate::morpheus::resources::{
    CallNotes, Clock, CurrentConditions, FailureEngine, Goodwill, InfoLayer, KeyedStream, Ledger,
    ObservationBuffer, Settings, Signals, Stats, WorldRng,
};

/// Publishes the hour's signal values, in `signal_names()` order.
pub fn record_signals(
    ledger: Res<Ledger>,
    stats: Res<Stats>,
    calls: Res<CallNotes>,
    orders: Query<&CustomerOrder>,
    mut signals: ResMut<Signals>,
) {
    let h = &stats.hour;
    let c = &ledger.hour_costs;
    signals.0.clear();
    signals.0.extend_from_slice(&[
        h.orders_shipped as f64,
        h.orders_delivered as f64,
        h.late_orders as f64,
        h.lost_units as f64,
        h.failure_events as f64,
        f64::from(u8::from(h.rejected)),
        h.revenue,
        h.holding_cost,
        ledger.cash - ledger.hour_start_cash,
        ledger.cash,
        orders.iter().count() as f64,
        ledger.hour_revenue - c.total(),
        c.purchases,
        c.shipping,
        c.late_penalties,
        c.lost_sales,
        c.repair,
        c.expedite,
        c.detention,
        c.interest,
        calls.invalid as f64,
        calls.malformed as f64,
    ]);
}

/// Moves the clock to the next hour.
pub fn advance_clock(mut clock: ResMut<Clock>) {
    clock.hour += 1;
}

/// Per-SKU scratch space for [`write_observation`], kept between steps.
#[derive(Default)]
pub struct ObservationScratch {
    pipeline: Vec<u64>,
    backlog: Vec<u64>,
}

/// Writes the observation the agent sees before the next hour (layout in the module docs),
/// through the information layer: the stock block (on hand, reserved, pipeline, backlog)
/// may be `stale_hours` old or missing (zeroed, validity flag 0), each drawn per hour from
/// keyed streams so that every agent meets the same failures.
pub fn write_observation(
    settings: Res<Settings>,
    clock: Res<Clock>,
    ledger: Res<Ledger>,
    goodwill: Res<Goodwill>,
    engine: Res<FailureEngine>,
    mut stats: ResMut<Stats>,
    (rng, conditions, mut info): (Res<WorldRng>, Res<CurrentConditions>, ResMut<InfoLayer>),
    skus: Query<&Sku>,
    purchase_orders: Query<&PurchaseOrder>,
    trailers: Query<&Trailer>,
    orders: Query<&CustomerOrder>,
    docks: Query<&Dock>,
    carriers: Query<&Carrier>,
    mut out: ResMut<ObservationBuffer>,
    mut scratch: Local<ObservationScratch>,
) {
    let (cfg, now) = (&settings.0, clock.hour);
    let (s, d, c) = (cfg.skus, cfg.docks, cfg.carriers);
    let scale = cfg.stock_scale;
    let ObservationScratch { pipeline, backlog } = &mut *scratch;
    pipeline.clear();
    pipeline.resize(s, 0);
    backlog.clear();
    backlog.resize(s, 0);
    let add = |v: &mut Vec<u64>, sku: u32, units: u64| {
        if let Some(x) = v.get_mut(sku as usize) {
            *x += units;
        }
    };
    for po in &purchase_orders {
        add(pipeline, po.sku, po.units);
    }
    let mut yard = 0usize;
    for t in &trailers {
        add(pipeline, t.sku, t.units_left);
        yard += 1;
    }
    for o in &orders {
        add(backlog, o.sku, o.units);
    }
    let obs = &mut out.0;
    obs.clear();
    obs.resize(cfg.observation_len(), 0.0);
    let mut put = |i: usize, v: f64| {
        if let Some(x) = obs.get_mut(i) {
            *x = v as f32;
        }
    };
    for sku in &skus {
        let i = sku.id as usize;
        put(i, sku.on_hand as f64 / scale);
        put(s + i, sku.reserved as f64 / scale);
    }
    for i in 0..s {
        put(2 * s + i, pipeline[i] as f64 / scale);
        put(3 * s + i, backlog[i] as f64 / scale);
    }
    let k = &conditions.0;
    let block = 4 * s;
    let keep = cfg.stale_hours as usize + 1;
    let first = info.recorded != Some(now);
    if first {
        while info.readings.len() >= keep {
            info.readings.pop_front();
        }
        info.readings.push_back(obs[..block].to_vec());
        info.recorded = Some(now);
    }
    let stale = rng.keyed(KeyedStream::StaleReadings, now, 0, 0) < k.stale_rate;
    let missing = rng.keyed(KeyedStream::MissingReadings, now, 0, 0) < k.missing_rate;
    if missing {
        obs[..block].fill(0.0);
        stats.total.missing_readings += u64::from(first);
    } else if stale {
        // Until the world is `stale_hours` old, the oldest reading there is stands in.
        if let Some(old) = info.readings.front() {
            obs[..block].copy_from_slice(old);
        }
        stats.total.stale_readings += u64::from(first);
    }
    let mut put = |i: usize, v: f64| {
        if let Some(x) = obs.get_mut(i) {
            *x = v as f32;
        }
    };
    for dock in &docks {
        put(
            4 * s + dock.id as usize,
            f64::from(u8::from(dock.down_until <= now)),
        );
    }
    for carrier in &carriers {
        let up = carrier.absent_until <= now;
        put(4 * s + d + carrier.id as usize, f64::from(u8::from(up)));
    }
    let base = 4 * s + d + c;
    let angle = TAU * clock.hour_of_day() as f64 / 24.0;
    put(base, yard as f64 / d as f64);
    put(base + 1, ledger.cash / ledger.opening);
    put(base + 2, goodwill.0);
    put(base + 3, angle.sin());
    put(base + 4, angle.cos());
    put(base + 5, engine.recent);
    put(base + 6, f64::from(u8::from(stats.hour.rejected)));
    put(base + 7, f64::from(u8::from(!missing)));
}
