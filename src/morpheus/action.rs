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

/// An operation kind: the operations of one [`Op`] variant. An action table (the
/// single-agent one, or a role's in [`crate::morpheus::roles`]) holds the no-op, then each
/// of its kinds' operations in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// `reorder{sku, bucket}`.
    Reorder,
    /// `choose_carrier{carrier}`.
    ChooseCarrier,
    /// `expedite{sku}`.
    Expedite,
    /// `repair_dock{dock}`.
    RepairDock,
    /// `prioritize_sku{sku}`.
    PrioritizeSku,
    /// `hold_wave`.
    HoldWave,
}

impl OpKind {
    /// Every kind, in action-table order.
    pub const ALL: [OpKind; 6] = [
        OpKind::Reorder,
        OpKind::ChooseCarrier,
        OpKind::Expedite,
        OpKind::RepairDock,
        OpKind::PrioritizeSku,
        OpKind::HoldWave,
    ];

    /// The kinds of the single-agent table, which has none of the roles-only ones.
    const SINGLE_AGENT: [OpKind; 4] = [
        OpKind::Reorder,
        OpKind::ChooseCarrier,
        OpKind::Expedite,
        OpKind::RepairDock,
    ];

    /// Its name in a world file.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Reorder => "reorder",
            OpKind::ChooseCarrier => "choose_carrier",
            OpKind::Expedite => "expedite",
            OpKind::RepairDock => "repair_dock",
            OpKind::PrioritizeSku => "prioritize_sku",
            OpKind::HoldWave => "hold_wave",
        }
    }

    /// The kind named `name`, `None` for another name.
    pub fn parse(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kind of `op`, `None` for the no-op.
    pub fn of(op: Op) -> Option<OpKind> {
        match op {
            Op::Noop => None,
            Op::Reorder { .. } => Some(OpKind::Reorder),
            Op::ChooseCarrier { .. } => Some(OpKind::ChooseCarrier),
            Op::Expedite { .. } => Some(OpKind::Expedite),
            Op::RepairDock { .. } => Some(OpKind::RepairDock),
            Op::PrioritizeSku { .. } => Some(OpKind::PrioritizeSku),
            Op::HoldWave => Some(OpKind::HoldWave),
        }
    }

    /// How many operations of this kind `layout` has.
    fn count(self, layout: ActionLayout) -> usize {
        match self {
            OpKind::Reorder => layout.skus * layout.buckets,
            OpKind::ChooseCarrier => layout.carriers,
            OpKind::Expedite | OpKind::PrioritizeSku => layout.skus,
            OpKind::RepairDock => layout.docks,
            OpKind::HoldWave => 1,
        }
    }

    /// The `i`-th operation of this kind.
    fn op(self, i: usize, layout: ActionLayout) -> Op {
        let i32 = i as u32;
        match self {
            OpKind::Reorder => {
                let b = layout.buckets.max(1);
                Op::Reorder {
                    sku: (i / b) as u32,
                    bucket: (i % b) as u32,
                }
            }
            OpKind::ChooseCarrier => Op::ChooseCarrier { carrier: i32 },
            OpKind::Expedite => Op::Expedite { sku: i32 },
            OpKind::RepairDock => Op::RepairDock { dock: i32 },
            OpKind::PrioritizeSku => Op::PrioritizeSku { sku: i32 },
            OpKind::HoldWave => Op::HoldWave,
        }
    }

    /// The index of `op` among this kind's operations.
    fn index(self, op: Op, layout: ActionLayout) -> Option<usize> {
        let i = match (self, op) {
            (OpKind::Reorder, Op::Reorder { sku, bucket }) => {
                let b = layout.buckets;
                ((bucket as usize) < b).then(|| sku as usize * b + bucket as usize)?
            }
            (OpKind::ChooseCarrier, Op::ChooseCarrier { carrier }) => carrier as usize,
            (OpKind::Expedite, Op::Expedite { sku })
            | (OpKind::PrioritizeSku, Op::PrioritizeSku { sku }) => sku as usize,
            (OpKind::RepairDock, Op::RepairDock { dock }) => dock as usize,
            (OpKind::HoldWave, Op::HoldWave) => 0,
            _ => return None,
        };
        (i < self.count(layout)).then_some(i)
    }
}

/// The sizes that lay out the action table: `S` SKUs, `B` reorder buckets, `C` carriers,
/// `D` docks. [`ActionLayout::decode`] and [`ActionLayout::encode`] are the only code that
/// knows where each operation sits (a role's table too); agents build their actions
/// through it.
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
        self.len_in(&OpKind::SINGLE_AGENT)
    }

    /// Whether the table holds only `Noop` (never: it always holds it).
    pub fn is_empty(self) -> bool {
        false
    }

    /// The operation at `index`, or `None` outside the table.
    pub fn decode(self, index: usize) -> Option<Op> {
        self.decode_in(&OpKind::SINGLE_AGENT, index)
    }

    /// The index of `op`, or `None` when it names a SKU, bucket, carrier or dock the layout
    /// does not have. The inverse of [`ActionLayout::decode`].
    pub fn encode(self, op: Op) -> Option<usize> {
        self.encode_in(&OpKind::SINGLE_AGENT, op)
    }

    /// Number of actions in the table of `kinds`.
    pub(super) fn len_in(self, kinds: &[OpKind]) -> usize {
        1 + kinds.iter().map(|k| k.count(self)).sum::<usize>()
    }

    /// The operation at `index` in the table of `kinds`, or `None` outside it.
    pub(super) fn decode_in(self, kinds: &[OpKind], index: usize) -> Option<Op> {
        let Some(mut k) = index.checked_sub(1) else {
            return Some(Op::Noop);
        };
        for &kind in kinds {
            let n = kind.count(self);
            if k < n {
                return Some(kind.op(k, self));
            }
            k -= n;
        }
        None
    }

    /// The index of `op` in the table of `kinds`, or `None` when the table lacks it.
    pub(super) fn encode_in(self, kinds: &[OpKind], op: Op) -> Option<usize> {
        let Some(kind) = OpKind::of(op) else {
            return Some(0);
        };
        let mut base = 1;
        for &k in kinds {
            if k == kind {
                return kind.index(op, self).map(|i| base + i);
            }
            base += k.count(self);
        }
        None
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
