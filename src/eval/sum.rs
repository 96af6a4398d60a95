//! Compensated sums and the rolling window the metrics share.

/// A running sum that carries the rounding error of every addition (Knuth's TwoSum).
///
/// Values added and later subtracted leave no drift, so a rolling mean after millions of
/// steps equals a fresh sum of its window to the last bit or so, and a hand-built trace
/// crosses a threshold exactly where the arithmetic on paper says.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sum {
    hi: f64,
    lo: f64,
}

impl Sum {
    pub(crate) fn add(&mut self, x: f64) {
        let s = self.hi + x;
        let b = s - self.hi;
        self.lo += (self.hi - (s - b)) + (x - b);
        self.hi = s;
    }

    pub(crate) fn merge(&mut self, other: Sum) {
        self.add(other.hi);
        self.lo += other.lo;
    }

    pub(crate) fn value(&self) -> f64 {
        self.hi + self.lo
    }
}

/// The last `width` values pushed, with their compensated sum.
#[derive(Clone, Debug)]
pub(crate) struct Rolling {
    buf: Vec<f64>,
    next: usize,
    len: usize,
    sum: Sum,
}

impl Rolling {
    pub(crate) fn new(width: usize) -> Self {
        Rolling {
            buf: vec![0.0; width],
            next: 0,
            len: 0,
            sum: Sum::default(),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.next = 0;
        self.len = 0;
        self.sum = Sum::default();
    }

    /// Pushes `x`; the mean of the last `width` values once there are that many.
    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        let width = self.buf.len();
        if self.len == width {
            self.sum.add(-self.buf[self.next]);
        } else {
            self.len += 1;
        }
        self.buf[self.next] = x;
        self.sum.add(x);
        self.next += 1;
        if self.next == width {
            self.next = 0;
        }
        (self.len == width).then(|| self.sum.value() / width as f64)
    }

    /// The mean of the values held (fewer than `width` early on); `None` when empty.
    pub(crate) fn partial_mean(&self) -> Option<f64> {
        (self.len > 0).then(|| self.sum.value() / self.len as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_mean_does_not_drift_over_a_million_steps() {
        let mut r = Rolling::new(10);
        let mut last = None;
        for i in 0..1_000_000u64 {
            last = r.push(0.1 * (i % 7) as f64);
        }
        let mut fresh = Sum::default();
        for i in 999_990..1_000_000u64 {
            fresh.add(0.1 * (i % 7) as f64);
        }
        let fresh = fresh.value() / 10.0;
        assert_eq!(last, Some(fresh));
    }

    #[test]
    fn compensated_sum_is_exact_for_tenths() {
        let mut s = Sum::default();
        for _ in 0..10 {
            s.add(0.1);
        }
        assert_eq!(s.value(), 1.0);
    }
}
