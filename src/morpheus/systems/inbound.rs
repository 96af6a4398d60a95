//! Stage `Inbound`: purchase orders reach the yard as trailers, and dock doors unload them.

use bevy_ecs::prelude::{Commands, Entity, Local, Query, Res, ResMut};

use super::Hour;
use crate::morpheus::components::{Dock, PurchaseOrder, Sku, Supplier, Trailer};
use crate::morpheus::resources::{Clock, CostKind, Ledger, Stats};

/// Turns each purchase order that is due, and whose supplier is not delayed, into a
/// trailer queued in the yard.
pub fn receive_purchase_orders(
    clock: Res<Clock>,
    orders: Query<(Entity, &PurchaseOrder)>,
    suppliers: Query<&Supplier>,
    mut commands: Commands,
    mut delayed: Local<Vec<u64>>,
) {
    let now = clock.hour;
    delayed.clear();
    for s in &suppliers {
        let i = s.id as usize;
        if delayed.len() <= i {
            delayed.resize(i + 1, 0);
        }
        delayed[i] = s.delayed_until;
    }
    for (entity, po) in &orders {
        let held = delayed.get(po.supplier as usize).is_some_and(|&t| t > now);
        if po.eta <= now && !held {
            commands.entity(entity).despawn();
            commands.spawn(Trailer {
                po: po.id,
                sku: po.sku,
                units_left: po.units,
                arrived: now,
            });
        }
    }
}

/// Scratch space for [`unload_trailers`], kept between steps to avoid allocating.
#[derive(Default)]
pub struct YardScratch {
    queue: Vec<(u64, u64, Entity)>,
    received: Vec<u64>,
}

/// Unloads trailers first come, first served with the working doors' capacity, puts the
/// units on the shelves, and charges detention for trailers waiting past the free time.
pub fn unload_trailers(
    hour: Hour,
    mut ledger: ResMut<Ledger>,
    mut stats: ResMut<Stats>,
    mut trailers: Query<(Entity, &mut Trailer)>,
    docks: Query<&Dock>,
    mut skus: Query<&mut Sku>,
    mut commands: Commands,
    mut scratch: Local<YardScratch>,
) {
    let (cfg, k, now) = hour.parts();
    let per_door = (cfg.dock_unload_rate * k.dock_capacity).floor() as u64;
    let working = docks.iter().filter(|d| d.down_until <= now).count() as u64;
    let mut capacity = per_door.saturating_mul(working);
    let YardScratch { queue, received } = &mut *scratch;
    queue.clear();
    queue.extend(trailers.iter().map(|(e, t)| (t.arrived, t.po, e)));
    queue.sort_unstable();
    received.clear();
    received.resize(cfg.skus, 0);
    let mut waiting = 0u64;
    for &(arrived, _, entity) in queue.iter() {
        let Ok((_, mut trailer)) = trailers.get_mut(entity) else {
            continue;
        };
        let take = capacity.min(trailer.units_left);
        if take > 0 {
            trailer.units_left -= take;
            capacity -= take;
            if let Some(r) = received.get_mut(trailer.sku as usize) {
                *r += take;
            }
        }
        if trailer.units_left == 0 {
            commands.entity(entity).despawn();
        } else if now - arrived >= cfg.detention_free_hours {
            waiting += 1;
        }
    }
    for mut s in &mut skus {
        if let Some(&r) = received.get(s.id as usize)
            && r > 0
        {
            s.on_hand += r;
            stats.total.units_received += r;
        }
    }
    ledger.pay(
        CostKind::Detention,
        waiting as f64 * cfg.detention_rate * k.cost_multiplier,
    );
}
