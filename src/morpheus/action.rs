//! The action table: how a `Discrete` index decodes to a typed operation.

use serde::{Deserialize, Serialize};

use super::config::MorpheusConfig;

/// A typed operation, decoded from an action index by [`Op::decode`].
///
/// With `S` SKUs, `B` reorder buckets, `C` carriers and `D` docks, the table is:
///
/// | index | operation |
/// |---|---|
/// | `0` | [`Op::Noop`] |
/// | `1 + s·B + b` | [`Op::Reorder`] `{ sku: s, bucket: b }` |
/// | `1 + S·B + c` | [`Op::ChooseCarrier`] `{ carrier: c }` |
/// | `1 + S·B + C + s` | [`Op::Expedite`] `{ sku: s }` |
/// | `1 + S·B + C + S + d` | [`Op::RepairDock`] `{ dock: d }` |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Do nothing.
    #[default]
    Noop,
    /// Buy `reorder_quantities[bucket]` units of `sku` from its supplier, paid now; rejected
    /// when cash cannot pay.
    Reorder {
        /// SKU index.
        sku: u32,
        /// Index into `reorder_quantities`.
        bucket: u32,
    },
    /// Use `carrier` for the outbound waves from now on.
    ChooseCarrier {
        /// Carrier index.
        carrier: u32,
    },
    /// Halve the remaining lead time of the oldest unexpedited purchase order of `sku` still
    /// before its arrival time, for `expedite_fee`; rejected when there is none.
    Expedite {
        /// SKU index.
        sku: u32,
    },
    /// Repair a broken dock door so it works this hour, for `repair_cost`; rejected when the
    /// door works.
    RepairDock {
        /// Dock index.
        dock: u32,
    },
    /// Ship `sku`'s orders first in the outbound waves of the next
    /// [`PRIORITY_HOURS`](crate::morpheus::roles::PRIORITY_HOURS) hours. Only a roles world
    /// ([`crate::morpheus::roles`]) offers it; the single-agent table has no index for it.
    PrioritizeSku {
        /// SKU index.
        sku: u32,
    },
    /// Hold this hour's outbound wave to consolidate it with the next, which ships at a
    /// discount ([`CONSOLIDATION_DISCOUNT`](crate::morpheus::roles::CONSOLIDATION_DISCOUNT)).
    /// Only a roles world offers it.
    HoldWave,
}

/// The sizes that lay out the action table: `S` SKUs, `B` reorder buckets, `C` carriers,
/// `D` docks. [`ActionLayout::decode`] and [`ActionLayout::encode`] are the only code that
/// knows where each operation sits; agents build their actions through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionLayout {
    /// SKUs (`S`).
    pub skus: usize,
    /// Reorder buckets, the length of `reorder_quantities` (`B`).
    pub buckets: usize,
    /// Carriers (`C`).
    pub carriers: usize,
    /// Dock doors (`D`).
    pub docks: usize,
}

impl ActionLayout {
    /// The layout of `config`'s world.
    pub fn of(config: &MorpheusConfig) -> Self {
        ActionLayout {
            skus: config.skus,
            buckets: config.reorder_quantities.len(),
            carriers: config.carriers,
            docks: config.docks,
        }
    }

    /// Number of actions: `1 + S·B + C + S + D`.
    pub fn len(self) -> usize {
        1 + self.skus * self.buckets + self.carriers + self.skus + self.docks
    }

    /// Whether the table holds only `Noop` (never: it always holds it).
    pub fn is_empty(self) -> bool {
        false
    }

    /// The operation at `index`, or `None` outside the table.
    pub fn decode(self, index: usize) -> Option<Op> {
        let (s, b, c, d) = (self.skus, self.buckets, self.carriers, self.docks);
        let Some(mut k) = index.checked_sub(1) else {
            return Some(Op::Noop);
        };
        if k < s * b {
            return Some(Op::Reorder {
                sku: (k / b) as u32,
                bucket: (k % b) as u32,
            });
        }
        k -= s * b;
        if k < c {
            return Some(Op::ChooseCarrier { carrier: k as u32 });
        }
        k -= c;
        if k < s {
            return Some(Op::Expedite { sku: k as u32 });
        }
        k -= s;
        (k < d).then_some(Op::RepairDock { dock: k as u32 })
    }

    /// The index of `op`, or `None` when it names a SKU, bucket, carrier or dock the layout
    /// does not have. The inverse of [`ActionLayout::decode`].
    pub fn encode(self, op: Op) -> Option<usize> {
        let (s, b, c, d) = (self.skus, self.buckets, self.carriers, self.docks);
        let within = |i: u32, n: usize| (i as usize) < n;
        match op {
            Op::Noop => Some(0),
            Op::Reorder { sku, bucket } => (within(sku, s) && within(bucket, b))
                .then(|| 1 + sku as usize * b + bucket as usize),
            Op::ChooseCarrier { carrier } => {
                within(carrier, c).then(|| 1 + s * b + carrier as usize)
            }
            Op::Expedite { sku } => within(sku, s).then(|| 1 + s * b + c + sku as usize),
            Op::RepairDock { dock } => within(dock, d).then(|| 1 + s * b + c + s + dock as usize),
            Op::PrioritizeSku { .. } | Op::HoldWave => None,
        }
    }
}

impl Op {
    /// Decodes an action index under `config`'s layout, or `None` outside the table.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::morpheus::{MorpheusConfig, Op};
    ///
    /// let cfg = MorpheusConfig::default();
    /// assert_eq!(Op::decode(0, &cfg), Some(Op::Noop));
    /// assert_eq!(Op::decode(6, &cfg), Some(Op::Reorder { sku: 1, bucket: 1 }));
    /// assert_eq!(Op::decode(cfg.action_count(), &cfg), None);
    /// ```
    pub fn decode(index: usize, config: &MorpheusConfig) -> Option<Op> {
        ActionLayout::of(config).decode(index)
    }

    /// The action index of this operation under `config`'s layout, or `None` when it lies
    /// outside the layout.
    ///
    /// ```
    /// use perennial::morpheus::{MorpheusConfig, Op};
    ///
    /// let cfg = MorpheusConfig::default();
    /// assert_eq!(Op::Reorder { sku: 1, bucket: 1 }.encode(&cfg), Some(6));
    /// assert_eq!(Op::RepairDock { dock: 99 }.encode(&cfg), None);
    /// ```
    pub fn encode(self, config: &MorpheusConfig) -> Option<usize> {
        ActionLayout::of(config).encode(self)
    }
}

impl MorpheusConfig {
    /// Number of actions: `1 + skus × buckets + carriers + skus + docks`.
    pub fn action_count(&self) -> usize {
        ActionLayout::of(self).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_in_the_table_decodes_and_none_beyond() {
        let cfg = MorpheusConfig::default();
        let n = cfg.action_count();
        let ops: Vec<Op> = (0..n).map(|i| Op::decode(i, &cfg).unwrap()).collect();
        assert_eq!(ops[1], Op::Reorder { sku: 0, bucket: 0 });
        assert_eq!(ops[32], Op::Reorder { sku: 7, bucket: 3 });
        assert_eq!(ops[33], Op::ChooseCarrier { carrier: 0 });
        assert_eq!(ops[36], Op::Expedite { sku: 0 });
        assert_eq!(ops[44], Op::RepairDock { dock: 0 });
        assert_eq!(ops[n - 1], Op::RepairDock { dock: 3 });
        assert_eq!(Op::decode(n, &cfg), None);
        assert_eq!(Op::decode(usize::MAX, &cfg), None);
    }

    #[test]
    fn encode_inverts_decode_and_refuses_what_the_layout_lacks() {
        for cfg in [
            MorpheusConfig::default(),
            MorpheusConfig::default().scaled(3),
        ] {
            let layout = ActionLayout::of(&cfg);
            assert_eq!(layout.len(), cfg.action_count());
            for i in 0..layout.len() {
                let op = layout.decode(i).unwrap();
                assert_eq!(layout.encode(op), Some(i), "{op:?}");
            }
        }
        let layout = ActionLayout::of(&MorpheusConfig::default());
        let (s, b) = (layout.skus as u32, layout.buckets as u32);
        assert_eq!(layout.encode(Op::Reorder { sku: s, bucket: 0 }), None);
        assert_eq!(layout.encode(Op::Reorder { sku: 0, bucket: b }), None);
        assert_eq!(
            layout.encode(Op::ChooseCarrier {
                carrier: layout.carriers as u32
            }),
            None
        );
        assert_eq!(layout.encode(Op::Expedite { sku: s }), None);
        assert_eq!(
            layout.encode(Op::RepairDock {
                dock: layout.docks as u32
            }),
            None
        );
    }
}
