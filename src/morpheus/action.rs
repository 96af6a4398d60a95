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
        let (s, b) = (config.skus, config.reorder_quantities.len());
        let (c, d) = (config.carriers, config.docks);
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
}
