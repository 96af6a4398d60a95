//! Stage `Outbound`: shipments reach customers, then orders are allocated, picked and shipped.

use bevy_ecs::prelude::{Commands, Entity, Local, Query, Res, ResMut};

use super::Hour;
use crate::morpheus::components::{Carrier, CustomerOrder, Shipment, Sku};
use crate::morpheus::resources::{
    CostKind, Dispatch, Goodwill, KeyedStream, Ledger, OrderBook, Stats, WorldRng,
};

/// Hours a shipment arrives after its transit time: 0 with probability `on_time`, else 1 to
/// `max_hours`. The draws are keyed by the order (its placement hour and SKU: a SKU gets at
/// most one order an hour) and the carrier, so a carrier's delay for an order is the same
/// whatever shipped before it and whenever it ships.
pub fn carrier_delay(rng: &WorldRng, key: (u64, u64, u64), on_time: f64, max_hours: u64) -> u64 {
    let (placed, sku, carrier) = key;
    if rng.keyed(KeyedStream::CarrierOnTime, placed, sku, carrier) < on_time {
        return 0;
    }
    let length = rng.keyed(KeyedStream::CarrierDelay, placed, sku, carrier);
    1 + (length * max_hours as f64) as u64
}

/// Delivers every shipment whose time has come: books revenue at today's prices, counts
/// late ones, charges their penalty, and moves goodwill.
pub fn deliver_shipments(
    hour: Hour,
    mut ledger: ResMut<Ledger>,
    mut stats: ResMut<Stats>,
    mut goodwill: ResMut<Goodwill>,
    shipments: Query<(Entity, &Shipment)>,
    mut commands: Commands,
) {
    let (cfg, k, now) = hour.parts();
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
        late as f64 * cfg.late_penalty * k.late_penalty * k.cost_multiplier,
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
/// carrier capacity last (nothing ships when the carrier does not show up). In a roles
/// world, a prioritized SKU's orders take capacity first, a held wave ships nothing, and
/// the wave after a held one ships at a discount.
pub fn dispatch_orders(
    hour: Hour,
    mut dispatch: ResMut<Dispatch>,
    rng: Res<WorldRng>,
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
    let (cfg, k, now) = hour.parts();
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
    let held = std::mem::take(&mut dispatch.hold);
    let consolidated = !held && std::mem::take(&mut dispatch.consolidated);
    let cost = if held {
        capacity = 0;
        dispatch.consolidated = true;
        cost
    } else if consolidated {
        cost * crate::morpheus::roles::CONSOLIDATION_DISCOUNT
    } else {
        cost
    };
    let priority = match dispatch.priority {
        Some((sku, until)) if now < until => Some(sku),
        Some(_) => {
            dispatch.priority = None;
            None
        }
        None => None,
    };
    stock.clear();
    stock.resize(cfg.skus, (0, 0));
    for s in &skus {
        if let Some(slot) = stock.get_mut(s.id as usize) {
            *slot = (s.on_hand, s.reserved);
        }
    }
    // The capacity kept for the prioritized SKU's orders: what they ask for, within the
    // wave and the SKU's stock.
    let mut kept_for_priority = match priority {
        Some(p) => {
            let asked: u64 = book
                .0
                .iter()
                .filter(|(o, _)| o.sku == p)
                .map(|(o, _)| o.units)
                .sum();
            let on_hand = stock.get(p as usize).map_or(0, |s| s.0);
            asked.min(on_hand).min(capacity)
        }
        None => 0,
    };
    let (mut shipped_units, mut lost_orders, mut lost_units) = (0u64, 0u64, 0u64);
    // Compacts the book in place: the orders that stay move down to `kept`, in order.
    let book = &mut book.0;
    let mut kept = 0;
    for read in 0..book.len() {
        let (order, entity) = &mut book[read];
        let entity = *entity;
        let first = priority == Some(order.sku);
        let room = if first {
            capacity
        } else {
            capacity - kept_for_priority
        };
        let stays = 'order: {
            let Some((on_hand, reserved)) = stock.get_mut(order.sku as usize) else {
                break 'order true;
            };
            let cancelled = now >= order.due.saturating_add(cfg.cancel_after_hours);
            // Most hours leave most orders as they are: neither cancelled, nor allocatable,
            // nor shippable.
            let waits = if order.allocated {
                order.units > room
            } else {
                *on_hand - *reserved < order.units
            };
            if !cancelled && waits {
                break 'order true;
            }
            if cancelled {
                if order.allocated {
                    *reserved -= order.units;
                }
                stats.hour.lost_units += order.units;
                stats.total.lost_units += order.units;
                lost_units += order.units;
                lost_orders += 1;
                commands.entity(entity).despawn();
                break 'order false;
            }
            if !order.allocated {
                order.allocated = true;
                *reserved += order.units;
            }
            if order.units > room {
                // It stays open, allocated: its component learns of it.
                if let Ok(mut component) = orders.get_mut(entity) {
                    component.allocated = true;
                }
                break 'order true;
            }
            capacity -= order.units;
            if first {
                kept_for_priority = kept_for_priority.saturating_sub(order.units);
            }
            *on_hand -= order.units;
            *reserved -= order.units;
            let key = (
                order.placed,
                u64::from(order.sku),
                u64::from(dispatch.carrier),
            );
            let delay = carrier_delay(&rng, key, on_time, cfg.carrier_delay_max_hours);
            commands.spawn(Shipment {
                order: order.id,
                sku: order.sku,
                units: order.units,
                unit_price: cfg.sku_price(order.sku as usize),
                due: order.due,
                eta: now + transit + delay,
                carrier: dispatch.carrier,
            });
            commands.entity(entity).despawn();
            shipped_units += order.units;
            stats.hour.orders_shipped += 1;
            false
        };
        if stays {
            if kept < read {
                book[kept] = book[read].clone();
            }
            kept += 1;
        }
    }
    book.truncate(kept);
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
    ledger.pay(
        CostKind::LostSales,
        lost_units as f64 * cfg.lost_sale_penalty * k.cost_multiplier,
    );
    if lost_orders > 0 {
        goodwill.0 =
            (goodwill.0 - lost_orders as f64 * cfg.goodwill_lost_hit).max(cfg.goodwill_floor);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_carriers_delay_depends_on_the_order_and_carrier_only() {
        let rng = WorldRng::new(5);
        let delays: Vec<u64> = (0..200)
            .map(|h| carrier_delay(&rng, (h, 3, 1), 0.5, 12))
            .collect();
        let again: Vec<u64> = (0..200)
            .rev()
            .map(|h| carrier_delay(&rng, (h, 3, 1), 0.5, 12))
            .rev()
            .collect();
        assert_eq!(delays, again, "drawing in another order changes nothing");
        let late = delays.iter().filter(|&&d| d > 0).count();
        assert!((70..130).contains(&late), "{late} of 200 late at p = 0.5");
        assert!(delays.iter().all(|&d| d <= 12));
        let other: Vec<u64> = (0..200)
            .map(|h| carrier_delay(&rng, (h, 3, 2), 0.5, 12))
            .collect();
        assert_ne!(delays, other, "another carrier meets other delays");
        let reseeded = WorldRng::new(6);
        assert_ne!(
            delays,
            (0..200)
                .map(|h| carrier_delay(&reseeded, (h, 3, 1), 0.5, 12))
                .collect::<Vec<_>>()
        );
    }
}
