//! Stage `Outbound`: shipments reach customers, then orders are allocated, picked and shipped.

use bevy_ecs::prelude::{Commands, Entity, Local, Query, Res, ResMut};
use rand::RngExt;

use crate::morpheus::components::{Carrier, CustomerOrder, Shipment, Sku};
use crate::morpheus::resources::{
    Clock, CostKind, CurrentConditions, Dispatch, Goodwill, Ledger, OrderBook, Settings, Stats,
    WorldRng,
};

/// Delivers every shipment whose time has come: books revenue at today's prices, counts
/// late ones, charges their penalty, and moves goodwill.
#[expect(
    clippy::too_many_arguments,
    reason = "a system declares every resource it touches"
)]
pub fn deliver_shipments(
    settings: Res<Settings>,
    conditions: Res<CurrentConditions>,
    clock: Res<Clock>,
    mut ledger: ResMut<Ledger>,
    mut stats: ResMut<Stats>,
    mut goodwill: ResMut<Goodwill>,
    shipments: Query<(Entity, &Shipment)>,
    mut commands: Commands,
) {
    let (cfg, k, now) = (&settings.0, &conditions.0, clock.hour);
    let (mut value, mut delivered, mut late) = (0.0, 0u64, 0u64);
    for (entity, s) in &shipments {
        if s.eta <= now {
            value += s.units as f64 * s.unit_price;
            delivered += 1;
            late += u64::from(s.eta > s.due);
            commands.entity(entity).despawn();
        }
    }
    if delivered == 0 {
        return;
    }
    let revenue = value * k.price;
    ledger.earn(revenue);
    ledger.pay(
        CostKind::LatePenalties,
        late as f64 * cfg.late_penalty * k.cost_multiplier,
    );
    let on_time = (delivered - late) as f64;
    goodwill.0 = (goodwill.0 - late as f64 * cfg.goodwill_late_hit
        + on_time * cfg.goodwill_recovery)
        .clamp(cfg.goodwill_floor, 1.0);
    stats.hour.revenue = revenue;
    stats.hour.orders_delivered = delivered;
    stats.hour.late_orders = late;
    stats.total.orders_delivered += delivered;
    stats.total.late_orders += late;
}

/// Walks the order book oldest first: cancels those too far past due (lost sales), reserves
/// stock for the rest, and ships reserved orders on the chosen carrier while pick and
/// carrier capacity last (nothing ships when the carrier does not show up).
#[expect(
    clippy::too_many_arguments,
    reason = "a system declares every resource it touches"
)]
pub fn dispatch_orders(
    settings: Res<Settings>,
    conditions: Res<CurrentConditions>,
    clock: Res<Clock>,
    dispatch: Res<Dispatch>,
    mut rng: ResMut<WorldRng>,
    mut ledger: ResMut<Ledger>,
    mut stats: ResMut<Stats>,
    mut goodwill: ResMut<Goodwill>,
    mut book: ResMut<OrderBook>,
    mut orders: Query<&mut CustomerOrder>,
    mut skus: Query<&mut Sku>,
    carriers: Query<&Carrier>,
    mut commands: Commands,
    mut stock: Local<Vec<(u64, u64)>>,
) {
    let (cfg, k, now) = (&settings.0, &conditions.0, clock.hour);
    let carrier = carriers
        .iter()
        .find(|c| c.id == dispatch.carrier && c.absent_until <= now);
    let (mut capacity, transit, cost, on_time) = match carrier {
        Some(c) => (
            c.capacity.min(cfg.pick_capacity),
            c.transit_hours,
            c.cost_per_unit,
            (c.on_time * k.carrier_reliability).min(1.0),
        ),
        None => (0, 0, 0.0, 0.0),
    };
    stock.clear();
    stock.resize(cfg.skus, (0, 0));
    for s in &skus {
        if let Some(slot) = stock.get_mut(s.id as usize) {
            *slot = (s.on_hand, s.reserved);
        }
    }
    let (mut shipped_units, mut lost_orders) = (0u64, 0u64);
    book.0.retain(|&(_, entity)| {
        let Ok(mut order) = orders.get_mut(entity) else {
            return false;
        };
        let Some((on_hand, reserved)) = stock.get_mut(order.sku as usize) else {
            return true;
        };
        if now >= order.due.saturating_add(cfg.cancel_after_hours) {
            if order.allocated {
                *reserved -= order.units;
            }
            stats.hour.lost_units += order.units;
            stats.total.lost_units += order.units;
            lost_orders += 1;
            commands.entity(entity).despawn();
            return false;
        }
        if !order.allocated && *on_hand - *reserved >= order.units {
            order.allocated = true;
            *reserved += order.units;
        }
        if !(order.allocated && order.units <= capacity) {
            return true;
        }
        capacity -= order.units;
        *on_hand -= order.units;
        *reserved -= order.units;
        let arrive: f64 = rng.carriers.random();
        let length: f64 = rng.carriers.random();
        let delay = if arrive < on_time {
            0
        } else {
            1 + (length * cfg.carrier_delay_max_hours as f64) as u64
        };
        commands.spawn(Shipment {
            order: order.id,
            sku: order.sku,
            units: order.units,
            unit_price: cfg.sku_price(order.sku as usize),
            due: order.due,
            eta: now + transit + delay,
        });
        commands.entity(entity).despawn();
        shipped_units += order.units;
        stats.hour.orders_shipped += 1;
        false
    });
    for mut s in &mut skus {
        if let Some(&(on_hand, reserved)) = stock.get(s.id as usize)
            && (s.on_hand, s.reserved) != (on_hand, reserved)
        {
            s.on_hand = on_hand;
            s.reserved = reserved;
        }
    }
    stats.total.units_shipped += shipped_units;
    ledger.pay(
        CostKind::Shipping,
        shipped_units as f64 * cost * k.cost_multiplier,
    );
    if lost_orders > 0 {
        goodwill.0 =
            (goodwill.0 - lost_orders as f64 * cfg.goodwill_lost_hit).max(cfg.goodwill_floor);
    }
}
