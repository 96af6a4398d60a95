//! What the tools read: the queries' answers and the hour rendered as text or JSON.
//!
//! Everything here reads what an ERP, WMS or TMS screen would show: stock through the
//! information layer (the same readings, stale or missing, as the numeric observation),
//! orders, the ledger, the carriers' nominal terms and their punctuality observed on
//! deliveries. Nothing reads the regime label, the conditions, the failure log or a random
//! stream, so one world state renders to the same bytes under any regime.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use bevy_ecs::prelude::{Component, World};
use serde_json::{Value, json};

use super::call::OrderKind;
use crate::morpheus::components::{
    Carrier, CustomerOrder, Dock, PurchaseOrder, Shipment, Sku, Trailer,
};
use crate::morpheus::resources::{
    Clock, Dispatch, FailureEngine, Goodwill, Ledger, ObservationBuffer, Signals,
};
use crate::morpheus::{Morpheus, MorpheusConfig};

/// Hours over which [`Deliveries`] measures punctuality.
pub const PUNCTUALITY_HOURS: u64 = 24;

/// SKUs the text rendering lists one by one; a larger layout lists only those that need
/// attention.
pub const TEXT_SKUS: usize = 12;

/// Deliveries observed hour by hour: the carriers' on-time rate over the last
/// [`PUNCTUALITY_HOURS`] hours, as a TMS would report it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Deliveries {
    /// Shipments on their way: order id → (carrier, on time, delivery hour).
    in_transit: BTreeMap<u64, (u32, bool, u64)>,
    /// Deliveries of the last hours, oldest first: (hour, carrier, on time).
    recent: VecDeque<(u64, u32, bool)>,
}

impl Deliveries {
    /// Notes the shipments now on their way and the deliveries of the hours just passed;
    /// call it after every hour.
    pub fn observe(&mut self, env: &Morpheus) {
        let Some(w) = env.ecs() else { return };
        let now = hour(w);
        for s in each::<Shipment>(w) {
            self.in_transit
                .insert(s.order, (s.carrier, s.eta <= s.due, s.eta));
        }
        // A shipment is delivered in the first hour at or after its eta.
        let delivered: Vec<u64> = self
            .in_transit
            .iter()
            .filter(|(_, (_, _, eta))| *eta < now)
            .map(|(id, _)| *id)
            .collect();
        for id in delivered {
            if let Some((carrier, on_time, eta)) = self.in_transit.remove(&id) {
                self.recent.push_back((eta, carrier, on_time));
            }
        }
        while self
            .recent
            .front()
            .is_some_and(|(h, _, _)| h + PUNCTUALITY_HOURS < now)
        {
            self.recent.pop_front();
        }
    }

    /// Deliveries and on-time deliveries of `carrier` over the last hours.
    fn of(&self, carrier: u32) -> (u64, u64) {
        self.recent
            .iter()
            .filter(|(_, c, _)| *c == carrier)
            .fold((0, 0), |(n, ok), (_, _, on_time)| {
                (n + 1, ok + u64::from(*on_time))
            })
    }
}

fn each<T: Component>(w: &World) -> Vec<&T> {
    w.try_query::<&T>()
        .map(|mut q| q.iter(w).collect())
        .unwrap_or_default()
}

/// The sorted ids of the `T`s out of service at hour `now`, given each one's id and the
/// hour it is out until.
fn out_of_service<T: Component>(
    w: &World,
    now: u64,
    id_until: impl Fn(&T) -> (u32, u64),
) -> Vec<u32> {
    let mut ids: Vec<u32> = each::<T>(w)
        .into_iter()
        .map(id_until)
        .filter(|&(_, until)| until > now)
        .map(|(id, _)| id)
        .collect();
    ids.sort_unstable();
    ids
}

fn hour(w: &World) -> u64 {
    w.get_resource::<Clock>().map_or(0, |c| c.hour)
}

/// One SKU's stock as the readings show it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Stock {
    on_hand: u64,
    reserved: u64,
    pipeline: u64,
    backlog: u64,
}

/// The stock block of the observation, in units: what the readings show this hour.
fn readings(w: &World, cfg: &MorpheusConfig) -> (Vec<Stock>, bool) {
    let s = cfg.skus;
    let obs = w
        .get_resource::<ObservationBuffer>()
        .map_or(&[][..], |o| &o.0[..]);
    let units = |i: usize| {
        obs.get(i).map_or(0, |x| {
            (f64::from(*x) * cfg.stock_scale).round().max(0.0) as u64
        })
    };
    let stock = (0..s)
        .map(|i| Stock {
            on_hand: units(i),
            reserved: units(s + i),
            pipeline: units(2 * s + i),
            backlog: units(3 * s + i),
        })
        .collect();
    let valid = obs.last().is_none_or(|v| *v > 0.5);
    (stock, valid)
}

fn money(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// `query_inventory`: stock of one SKU or all, and the cash available for purchases.
pub fn inventory(env: &Morpheus, sku: Option<u32>) -> Value {
    let Some(w) = env.ecs() else {
        return Value::Null;
    };
    let cfg = env.config();
    let (stock, valid) = readings(w, cfg);
    let mut items: Vec<&Sku> = each::<Sku>(w);
    items.sort_unstable_by_key(|s| s.id);
    let skus: Vec<Value> = items
        .iter()
        .filter(|s| sku.is_none_or(|k| k == s.id))
        .map(|s| {
            let st = stock.get(s.id as usize).copied().unwrap_or_default();
            json!({
                "sku": s.id,
                "on_hand": st.on_hand,
                "reserved": st.reserved,
                "available": st.on_hand.saturating_sub(st.reserved),
                "pipeline": st.pipeline,
                "backlog": st.backlog,
                "list_price": money(s.price),
                "list_unit_cost": money(s.unit_cost),
            })
        })
        .collect();
    let cash = w.get_resource::<Ledger>().map_or(0.0, |l| l.cash);
    json!({
        "hour": hour(w),
        "readings_valid": valid,
        "cash": money(cash),
        "credit_line": money(cfg.credit_limit),
        "cash_available": money(cash + cfg.credit_limit),
        "reorder_quantities": cfg.reorder_quantities,
        "skus": skus,
    })
}

/// One order `query_orders` may list.
enum OrderRow<'a> {
    Customer(&'a CustomerOrder),
    Purchase(&'a PurchaseOrder),
    Yard(&'a Trailer),
    Shipment(&'a Shipment),
}

impl OrderRow<'_> {
    fn to_json(&self) -> Value {
        match self {
            OrderRow::Customer(o) => {
                json!({"id": o.id, "sku": o.sku, "units": o.units, "placed": o.placed, "due": o.due, "reserved": o.allocated})
            }
            OrderRow::Purchase(p) => {
                json!({"id": p.id, "sku": p.sku, "units": p.units, "placed": p.placed, "expected": p.eta, "expedited": p.expedited, "status": "in_transit"})
            }
            OrderRow::Yard(t) => {
                json!({"id": t.po, "sku": t.sku, "units": t.units_left, "arrived": t.arrived, "status": "in_yard"})
            }
            OrderRow::Shipment(s) => {
                json!({"order": s.order, "sku": s.sku, "units": s.units, "due": s.due, "carrier": s.carrier})
            }
        }
    }
}

/// `query_orders`: up to `limit` orders of one kind, oldest first, and how many there are.
pub fn orders(env: &Morpheus, kind: OrderKind, sku: Option<u32>, limit: u32) -> Value {
    let Some(w) = env.ecs() else {
        return Value::Null;
    };
    let keep = |s: u32| sku.is_none_or(|k| k == s);
    // Orders are sorted and cut to `limit` first; only the listed ones become JSON, so a
    // world with thousands of open orders answers in the time of `limit` of them.
    let rows: Vec<(u64, OrderRow<'_>)> = match kind {
        OrderKind::Customer => each::<CustomerOrder>(w)
            .into_iter()
            .filter(|o| keep(o.sku))
            .map(|o| (o.id, OrderRow::Customer(o)))
            .collect(),
        OrderKind::Purchase => each::<PurchaseOrder>(w)
            .into_iter()
            .filter(|p| keep(p.sku))
            .map(|p| (p.id, OrderRow::Purchase(p)))
            .chain(
                each::<Trailer>(w)
                    .into_iter()
                    .filter(|t| keep(t.sku))
                    .map(|t| (t.po, OrderRow::Yard(t))),
            )
            .collect(),
        OrderKind::Shipment => each::<Shipment>(w)
            .into_iter()
            .filter(|s| keep(s.sku))
            .map(|s| (s.order, OrderRow::Shipment(s)))
            .collect(),
    };
    let total = rows.len();
    let limit = (limit as usize).min(total);
    // Ties keep the query's order, as a stable sort would: the key carries the position.
    let mut keyed: Vec<(u64, usize, OrderRow<'_>)> = rows
        .into_iter()
        .enumerate()
        .map(|(i, (id, row))| (id, i, row))
        .collect();
    if limit < total {
        keyed.select_nth_unstable_by_key(limit, |(id, i, _)| (*id, *i));
        keyed.truncate(limit);
    }
    keyed.sort_unstable_by_key(|(id, i, _)| (*id, *i));
    let listed: Vec<Value> = keyed.iter().map(|(_, _, row)| row.to_json()).collect();
    json!({"hour": hour(w), "total": total, "orders": listed})
}

/// `query_ledger`: cash, revenue and costs since reset and in the last hour.
pub fn ledger(env: &Morpheus) -> Value {
    let Some(w) = env.ecs() else {
        return Value::Null;
    };
    let Some(l) = w.get_resource::<Ledger>() else {
        return Value::Null;
    };
    let c = &l.costs;
    let signals = env.signals();
    let sig = |i: usize| money(signals.get(i).copied().unwrap_or(0.0));
    json!({
        "hour": hour(w),
        "cash": money(l.cash),
        "opening_cash": money(l.opening),
        "credit_line": money(env.config().credit_limit),
        "revenue": money(l.revenue),
        "costs": {
            "purchases": money(c.purchases), "holding": money(c.holding),
            "shipping": money(c.shipping), "late_penalties": money(c.late_penalties),
            "lost_sales": money(c.lost_sales), "repair": money(c.repair),
            "expedite": money(c.expedite), "detention": money(c.detention),
            "interest": money(c.interest),
        },
        "profit": money(l.revenue - c.total()),
        "last_hour": {
            "revenue": sig(6), "profit": sig(11), "purchases": sig(12), "holding": sig(7),
            "shipping": sig(13), "late_penalties": sig(14), "lost_sales": sig(15),
            "repair": sig(16), "expedite": sig(17), "detention": sig(18), "interest": sig(19),
        },
    })
}

/// `query_carriers`: nominal terms, presence and observed punctuality of every carrier.
pub fn carriers(env: &Morpheus, deliveries: &Deliveries) -> Value {
    let Some(w) = env.ecs() else {
        return Value::Null;
    };
    let now = hour(w);
    let chosen = w.get_resource::<Dispatch>().map_or(0, |d| d.carrier);
    let mut list = each::<Carrier>(w);
    list.sort_unstable_by_key(|c| c.id);
    let rows: Vec<Value> = list
        .iter()
        .map(|c| {
            let (n, ok) = deliveries.of(c.id);
            let rate = (n > 0).then(|| money(ok as f64 / n as f64));
            json!({
                "carrier": c.id,
                "chosen": c.id == chosen,
                "present": c.absent_until <= now,
                "transit_hours": c.transit_hours,
                "list_cost_per_unit": money(c.cost_per_unit),
                "list_on_time_rate": money(c.on_time),
                "capacity_per_hour": c.capacity,
                "deliveries_24h": n,
                "on_time_rate_24h": rate,
            })
        })
        .collect();
    json!({"hour": now, "carriers": rows})
}

/// The hour as the tools show it, structured: one struct both renderings are written from.
struct Screen {
    hour: u64,
    cash: f64,
    credit_line: f64,
    goodwill: f64,
    carrier: u32,
    valid: bool,
    stock: Vec<Stock>,
    attention: Vec<bool>,
    docks_down: Vec<u32>,
    carriers_absent: Vec<u32>,
    yard: usize,
    recent_failures: f64,
    last: [f64; 5],
    refused: bool,
}

fn screen(env: &Morpheus) -> Option<Screen> {
    let w = env.ecs()?;
    let cfg = env.config();
    let now = hour(w);
    let (stock, valid) = readings(w, cfg);
    let mut items: Vec<&Sku> = each::<Sku>(w);
    items.sort_unstable_by_key(|s| s.id);
    let attention = items
        .iter()
        .map(|s| {
            let st = stock.get(s.id as usize).copied().unwrap_or_default();
            let net = (st.on_hand + st.pipeline) as f64 - st.backlog as f64;
            net < s.base_demand * cfg.lead_time_hours
        })
        .collect();
    let docks_down = out_of_service(w, now, |d: &Dock| (d.id, d.down_until));
    let carriers_absent = out_of_service(w, now, |c: &Carrier| (c.id, c.absent_until));
    let signals = w.get_resource::<Signals>().map_or(&[][..], |s| &s.0[..]);
    let sig = |i: usize| signals.get(i).copied().unwrap_or(0.0);
    Some(Screen {
        hour: now,
        cash: w.get_resource::<Ledger>().map_or(0.0, |l| l.cash),
        credit_line: cfg.credit_limit,
        goodwill: w.get_resource::<Goodwill>().map_or(1.0, |g| g.0),
        carrier: w.get_resource::<Dispatch>().map_or(0, |d| d.carrier),
        valid,
        stock,
        attention,
        docks_down,
        carriers_absent,
        yard: each::<Trailer>(w).len(),
        recent_failures: w.get_resource::<FailureEngine>().map_or(0.0, |e| e.recent),
        last: [sig(0), sig(1), sig(2), sig(3), sig(11)],
        refused: sig(5) > 0.0,
    })
}

/// The hour as JSON: clock, cash, goodwill, carrier, stock per SKU, docks, carriers, yard,
/// recent failures and the last hour's outcome.
pub fn render_json(env: &Morpheus) -> Value {
    let Some(s) = screen(env) else {
        return Value::Null;
    };
    let skus: Vec<Value> = s
        .stock
        .iter()
        .enumerate()
        .map(|(i, st)| {
            json!({
                "sku": i, "on_hand": st.on_hand, "reserved": st.reserved,
                "pipeline": st.pipeline, "backlog": st.backlog,
                "needs_attention": s.attention.get(i).copied().unwrap_or(false),
            })
        })
        .collect();
    let [shipped, delivered, late, lost, profit] = s.last;
    json!({
        "hour": s.hour,
        "day": s.hour / 24,
        "hour_of_day": s.hour % 24,
        "cash": money(s.cash),
        "cash_available": money(s.cash + s.credit_line),
        "goodwill": money(s.goodwill),
        "carrier": s.carrier,
        "readings_valid": s.valid,
        "skus": skus,
        "docks_down": s.docks_down,
        "carriers_absent": s.carriers_absent,
        "yard_trailers": s.yard,
        "recent_failures": money(s.recent_failures),
        "last_hour": {
            "shipped": shipped, "delivered": delivered, "late": late, "lost_units": lost,
            "profit": money(profit), "operation_refused": s.refused,
        },
    })
}

fn list(ids: &[u32]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The hour as a few hundred characters of text, the default prompt. A layout of more than
/// [`TEXT_SKUS`] SKUs lists only those whose stock and pipeline, net of backlog, fall short
/// of their nominal demand over a lead time, and points to `query_inventory` for the rest.
///
/// # Examples
///
/// ```
/// use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
/// use perennial::morpheus::api::render_text;
/// use perennial::prelude::*;
///
/// let mut env = Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap();
/// env.reset(7);
/// let text = render_text(&env);
/// assert!(text.starts_with("Hour 0 (day 0, 00:00)."));
/// assert!(text.len() < 600);
/// ```
pub fn render_text(env: &Morpheus) -> String {
    let Some(s) = screen(env) else {
        return String::new();
    };
    let mut t = String::with_capacity(512);
    let _ = writeln!(
        t,
        "Hour {} (day {}, {:02}:00). Cash {:.0} (credit line {:.0}). Goodwill {:.2}. Carrier {}.",
        s.hour,
        s.hour / 24,
        s.hour % 24,
        s.cash,
        s.credit_line,
        s.goodwill,
        s.carrier
    );
    if !s.valid {
        t.push_str("Stock readings are missing this hour.\n");
    } else {
        let shown: Vec<usize> = if s.stock.len() <= TEXT_SKUS {
            (0..s.stock.len()).collect()
        } else {
            (0..s.stock.len())
                .filter(|i| s.attention.get(*i).copied().unwrap_or(false))
                .take(TEXT_SKUS)
                .collect()
        };
        t.push_str("SKU on/res/pipe/backlog:");
        for (n, i) in shown.iter().enumerate() {
            let st = s.stock[*i];
            let sep = if n == 0 { " " } else { "; " };
            let _ = write!(
                t,
                "{sep}{i} {}/{}/{}/{}",
                st.on_hand, st.reserved, st.pipeline, st.backlog
            );
        }
        if s.stock.len() > TEXT_SKUS {
            let need = s.attention.iter().filter(|a| **a).count();
            let _ = write!(
                t,
                " ({need} of {} SKUs need attention; query_inventory for all)",
                s.stock.len()
            );
        }
        t.push('\n');
    }
    let [shipped, delivered, late, lost, profit] = s.last;
    let _ = write!(
        t,
        "Docks down: {}. Carriers absent: {}. Yard {} trailers. Recent failures {:.1}.\nLast hour: shipped {shipped}, delivered {delivered} ({late} late), lost {lost} units, profit {profit:+.0}{}.",
        list(&s.docks_down),
        list(&s.carriers_absent),
        s.yard,
        s.recent_failures,
        if s.refused {
            "; the operation was refused"
        } else {
            ""
        }
    );
    t
}
