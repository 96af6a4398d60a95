//! Compensated sums and the rolling window the metrics share.

/// A running sum that carries the rounding error of every addition (Knuth's TwoSum).
///
/// Values added and later subtracted leave no drift, so a rolling mean after millions of
/// steps equals a fresh sum of its window to the last bit or so, and a hand-built trace
/// crosses a threshold exactly where the arithmetic on paper says.
///
/// Values are held scaled by 2^-64, an exact power of two, so a sum of up to 2^64 finite
/// values never overflows (rewards of 1e306 once summed to infinity, then to NaN), and
/// [`Sum::mean`] and [`Sum::ratio`] stay finite whenever the true mean or ratio is. For
/// values of ordinary size the scaling changes no bit of any result.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sum {
    hi: f64,
    lo: f64,
}

/// 2^-64 and its inverse.
const DOWN: f64 = 1.0 / 18_446_744_073_709_551_616.0;
const UP: f64 = 18_446_744_073_709_551_616.0;

/// `x` scaled as a [`Sum`] holds it, for [`Sum::add_scaled`].
#[inline(always)]
pub(crate) fn scaled(x: f64) -> f64 {
    x * DOWN
}

impl Sum {
    #[inline]
    pub(crate) fn add(&mut self, x: f64) {
        self.add_scaled(x * DOWN);
    }

    /// Adds `x`, already scaled by 2^-64 ([`scaled`]).
    #[inline(always)]
    pub(crate) fn add_scaled(&mut self, x: f64) {
        let s = self.hi + x;
        let b = s - self.hi;
        self.lo += (self.hi - (s - b)) + (x - b);
        self.hi = s;
    }

    pub(crate) fn merge(&mut self, other: Sum) {
        let (hi, lo) = (self.hi + other.hi, self.lo + other.lo);
        let b = hi - self.hi;
        self.lo = lo + ((self.hi - (hi - b)) + (other.hi - b));
        self.hi = hi;
    }

    /// The sum itself (infinite when it exceeds `f64::MAX`; prefer [`Sum::mean`]).
    #[inline]
    pub(crate) fn value(&self) -> f64 {
        (self.hi + self.lo) * UP
    }

    /// The sum divided by `n`.
    #[inline]
    pub(crate) fn mean(&self, n: f64) -> f64 {
        ((self.hi + self.lo) / n) * UP
    }

    /// This sum divided by `other`.
    pub(crate) fn ratio(&self, other: &Sum) -> f64 {
        (self.hi + self.lo) / (other.hi + other.lo)
    }
}

impl FromIterator<f64> for Sum {
    /// The compensated sum of `values`, added in order.
    fn from_iter<I: IntoIterator<Item = f64>>(values: I) -> Self {
        let mut s = Sum::default();
        values.into_iter().for_each(|v| s.add(v));
        s
    }
}

/// The mean of `values`, their compensated sum divided by their count; `None` when there
/// is none.
pub(crate) fn mean_of(values: &[f64]) -> Option<f64> {
    (!values.is_empty())
        .then(|| values.iter().copied().collect::<Sum>().value() / values.len() as f64)
}

/// The last `width` values pushed, with their compensated sum.
#[derive(Clone, Debug)]
pub(crate) struct Rolling {
    /// The values, scaled as [`Sum`] holds them (exactly: a power of two).
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
    #[inline]
    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        self.push_full(x).then(|| self.full_mean())
    }

    /// Pushes `x`; true once `width` values are held. [`Rolling::full_mean`] is then the
    /// mean [`Rolling::push`] returns, computed only when asked for (a division).
    #[inline]
    pub(crate) fn push_full(&mut self, x: f64) -> bool {
        let width = self.buf.len();
        let x = x * DOWN;
        if self.len == width {
            self.sum.add_scaled(-self.buf[self.next]);
        } else {
            self.len += 1;
        }
        self.buf[self.next] = x;
        self.sum.add_scaled(x);
        self.next += 1;
        if self.next == width {
            self.next = 0;
        }
        self.len == width
    }

    /// How many values [`Rolling::quiet`] can take now: none until `width` values are
    /// held, then those before the ring wraps.
    #[inline]
    pub(crate) fn quiet_room(&self) -> usize {
        let width = self.buf.len();
        if self.len == width {
            width - self.next
        } else {
            0
        }
    }

    /// For a caller pushing `m` values itself (`m` at most [`Rolling::quiet_room`]): the
    /// next `m` slots, each holding the scaled value its push drops, and the sum. Each
    /// push, as [`Rolling::push_full`] does it: `sum.add_scaled(-slot)`, `slot = x`,
    /// `sum.add_scaled(x)`, with `x` [`scaled`].
    #[inline]
    pub(crate) fn quiet(&mut self, m: usize) -> (&mut [f64], &mut Sum) {
        let from = self.next;
        self.next += m;
        if self.next == self.buf.len() {
            self.next = 0;
        }
        (&mut self.buf[from..from + m], &mut self.sum)
    }

    /// The mean of the last `width` values (of fewer before there are that many).
    #[inline]
    pub(crate) fn full_mean(&self) -> f64 {
        self.sum.mean(self.buf.len() as f64)
    }

    /// The mean of the values held (fewer than `width` early on); `None` when empty.
    #[inline]
    pub(crate) fn partial_mean(&self) -> Option<f64> {
        (self.len > 0).then(|| self.sum.mean(self.len as f64))
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
    fn quiet_pushes_match_push_full_to_the_bit() {
        let value = |i: u64| ((i * 7919) % 1013) as f64 * 0.37 - 150.0;
        let (mut a, mut b) = (Rolling::new(7), Rolling::new(7));
        let mut i = 0;
        while i < 1000 {
            let room = b.quiet_room();
            if room == 0 {
                a.push_full(value(i));
                b.push_full(value(i));
                i += 1;
                continue;
            }
            let m = room.min(3);
            let (slots, sum) = b.quiet(m);
            for (k, slot) in slots.iter_mut().enumerate() {
                let x = scaled(value(i + k as u64));
                sum.add_scaled(-*slot);
                *slot = x;
                sum.add_scaled(x);
                a.push_full(value(i + k as u64));
            }
            i += m as u64;
            assert_eq!(a.full_mean().to_bits(), b.full_mean().to_bits());
        }
        assert!(i >= 1000);
    }

    #[test]
    fn compensated_sum_is_exact_for_tenths() {
        let mut s = Sum::default();
        for _ in 0..10 {
            s.add(0.1);
        }
        assert_eq!(s.value(), 1.0);
    }

    #[test]
    fn sums_of_huge_finite_values_stay_finite() {
        let mut s = Sum::default();
        for _ in 0..1000 {
            s.add(1.7e308);
        }
        assert_eq!(s.mean(1000.0), 1.7e308);
        let mut r = Rolling::new(4);
        let mut last = None;
        for i in 0..10 {
            last = r.push(if i % 2 == 0 { 1e307 } else { -1e307 });
        }
        assert_eq!(last, Some(0.0));
        let mut gap = Sum::default();
        gap.add(1e308);
        gap.add(1e308);
        let mut ceiling = Sum::default();
        ceiling.add(1e308);
        assert_eq!(gap.ratio(&ceiling), 2.0);
    }
}
