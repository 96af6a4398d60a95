//! The entities of the enterprise world, one component per kind.
//!
//! Every entity kind has exactly one component and never gains or loses one, so each kind
//! lives in one table. Logic never reads `Entity` ids: entities are named by their own
//! `id` fields, which is what makes a snapshot restorable.

use bevy_ecs::prelude::Component;
use serde::{Deserialize, Serialize};

/// A stock-keeping unit and its stock in the warehouse.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sku {
    /// Index `0..skus`.
    pub id: u32,
    /// Units on the shelves, reserved ones included.
    pub on_hand: u64,
    /// Units on hand already allocated to open customer orders.
    pub reserved: u64,
    /// Selling price before the regime's multiplier, currency per unit.
    pub price: f64,
    /// Purchase cost before the regime's multiplier, currency per unit.
    pub unit_cost: f64,
    /// Mean demand before multipliers, units per hour.
    pub base_demand: f64,
    /// The supplier this SKU is bought from.
    pub supplier: u32,
    /// Hour until which a demand spike is in force (exclusive).
    pub spike_until: u64,
}

/// A supplier of SKUs.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Supplier {
    /// Index `0..suppliers`.
    pub id: u32,
    /// Lead time before the regime's multiplier, hours.
    pub lead_time_hours: f64,
    /// Hour until which the supplier is delayed: nothing it sends arrives before (exclusive).
    pub delayed_until: u64,
}

/// A purchase order in transit from a supplier.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PurchaseOrder {
    /// Unique id, increasing in order of placement.
    pub id: u64,
    /// SKU ordered.
    pub sku: u32,
    /// Supplier shipping it.
    pub supplier: u32,
    /// Units ordered.
    pub units: u64,
    /// Hour the order was placed.
    pub placed: u64,
    /// Hour the trailer reaches the yard, unless the supplier is delayed.
    pub eta: u64,
    /// Whether it has been expedited (an order is expedited at most once).
    pub expedited: bool,
}

/// An inbound trailer queued in the yard, waiting for a dock door.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trailer {
    /// Id of the purchase order it carries.
    pub po: u64,
    /// SKU carried.
    pub sku: u32,
    /// Units still to unload.
    pub units_left: u64,
    /// Hour it reached the yard.
    pub arrived: u64,
}

/// An inbound dock door.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dock {
    /// Index `0..docks`.
    pub id: u32,
    /// Hour until which the door is broken (exclusive); it works when this is in the past.
    pub down_until: u64,
}

/// A customer order waiting to be picked and shipped.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CustomerOrder {
    /// Unique id, increasing in order of placement.
    pub id: u64,
    /// SKU ordered.
    pub sku: u32,
    /// Units ordered.
    pub units: u64,
    /// Hour placed.
    pub placed: u64,
    /// Hour due at the customer.
    pub due: u64,
    /// Whether stock on hand is reserved for it.
    pub allocated: bool,
}

/// An outbound carrier.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Carrier {
    /// Index `0..carriers`.
    pub id: u32,
    /// Shipping cost before the regime's multiplier, currency per unit.
    pub cost_per_unit: f64,
    /// Base on-time probability.
    pub on_time: f64,
    /// Transit time of an on-time shipment, hours.
    pub transit_hours: u64,
    /// Units collected per hourly wave.
    pub capacity: u64,
    /// Hour until which the carrier does not show up (exclusive).
    pub absent_until: u64,
}

/// An outbound shipment: one customer order on its way.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shipment {
    /// Id of the customer order.
    pub order: u64,
    /// SKU shipped.
    pub sku: u32,
    /// Units shipped.
    pub units: u64,
    /// Selling price before the regime's multiplier (applied at delivery), per unit.
    pub unit_price: f64,
    /// Hour due at the customer.
    pub due: u64,
    /// Hour of delivery.
    pub eta: u64,
    /// Carrier carrying it.
    #[serde(default)]
    pub carrier: u32,
}
