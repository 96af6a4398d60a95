//! `InSpace`: checking an action against a space without stepping, so a bad batch steps nothing.

use crate::env::Space;

/// An action that can be checked against a [`Space`] before any world is stepped.
///
/// [`VecEnv`](super::VecEnv) checks the whole batch first, so that a bad action for one copy
/// leaves every copy unchanged. Implement it for your own action type to put your world in
/// a vector.
///
/// # Rules for implementors
///
/// `in_space` must be true exactly for the actions the env's `step` accepts, so that a
/// checked batch never makes a copy return [`EnvError::InvalidAction`](crate::env::EnvError).
///
/// # Examples
///
/// ```
/// use perennial::env::Space;
/// use perennial::vector::InSpace;
///
/// assert!(1usize.in_space(&Space::Discrete { n: 2 }));
/// assert!(!2usize.in_space(&Space::Discrete { n: 2 }));
/// ```
pub trait InSpace {
    /// Whether this action lies in `space`.
    fn in_space(&self, space: &Space) -> bool;
}

impl InSpace for usize {
    fn in_space(&self, space: &Space) -> bool {
        space.contains_index(*self)
    }
}

impl InSpace for Vec<usize> {
    fn in_space(&self, space: &Space) -> bool {
        matches!(space, Space::MultiDiscrete { nvec }
            if nvec.len() == self.len() && self.iter().zip(nvec).all(|(a, n)| a < n))
    }
}

impl InSpace for Vec<f32> {
    fn in_space(&self, space: &Space) -> bool {
        matches!(space, Space::Box { low, high, .. }
            if low.len() == self.len()
                && self
                    .iter()
                    .zip(low.iter().zip(high))
                    .all(|(&a, (&lo, &hi))| (lo..=hi).contains(&f64::from(a))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Dtype;

    #[test]
    fn multi_discrete_checks_length_and_every_element() {
        let space = Space::MultiDiscrete { nvec: vec![2, 3] };
        assert!(vec![1, 2].in_space(&space));
        assert!(!vec![1, 3].in_space(&space));
        assert!(!vec![1].in_space(&space));
        assert!(!vec![1usize, 2].in_space(&Space::Discrete { n: 3 }));
    }

    #[test]
    fn box_checks_length_bounds_and_nan() {
        let space = Space::Box {
            low: vec![-1.0, 0.0],
            high: vec![1.0, f64::INFINITY],
            dtype: Dtype::F32,
        };
        assert!(vec![0.5f32, 1e30].in_space(&space));
        assert!(!vec![1.5f32, 0.0].in_space(&space));
        assert!(!vec![f32::NAN, 0.0].in_space(&space));
        assert!(!vec![0.0f32].in_space(&space));
    }
}
