//! The lowest block means of an interval, kept in a bounded heap, for `cvar05`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::sum::Sum;

/// A block mean ordered by `total_cmp`, for the heap of the lowest ones.
#[derive(Clone, Copy, PartialEq)]
pub(crate) struct Block(f64);

impl Eq for Block {}

impl PartialOrd for Block {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Block {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Adds block mean `b` to `heap`, which keeps the `lowest` lowest.
pub(crate) fn keep_lowest(heap: &mut BinaryHeap<Block>, b: f64, lowest: usize) {
    heap.push(Block(b));
    if heap.len() > lowest {
        heap.pop();
    }
}

/// cvar05: the mean of the `lowest` block means `heap` kept, summed from the lowest up.
pub(crate) fn lowest_mean(heap: BinaryHeap<Block>, lowest: usize) -> f64 {
    heap.into_sorted_vec()
        .into_iter()
        .map(|b| b.0)
        .collect::<Sum>()
        .mean(lowest as f64)
}
