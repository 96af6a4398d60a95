//! A run of rows that continue an open interval, column by column, as pass 1 hands them to
//! [`RunScan::push_span`](super::run::RunScan::push_span).

/// Rows that continue a run's open interval, column by column ([`RunScan::push_span`]).
pub(crate) struct Span<'a> {
    /// The first row's step; each next row's is one more.
    pub(crate) step: u64,
    pub(crate) episodes: &'a [u64],
    pub(crate) rewards: &'a [f64],
    /// x_t of each row.
    pub(crate) xs: &'a [f64],
    /// True when `xs` is `rewards` (payouts counted, or none).
    pub(crate) x_is_reward: bool,
    /// Each component's name and its values in these rows.
    pub(crate) components: Vec<(&'a str, &'a [f64])>,
    /// Each row's gap reference: its bound, else its ceiling.
    pub(crate) gap_reference: GapReference<'a>,
    /// How many of the rows have a bound.
    pub(crate) bound_rows: u64,
}

/// The gap references of a [`Span`]'s rows (each row's bound, else its ceiling).
pub(crate) enum GapReference<'a> {
    /// No row has one.
    Absent,
    /// Every row has one.
    Dense(&'a [f64]),
    /// Row k's, or `None`.
    Sparse(&'a dyn Fn(usize) -> Option<f64>),
}

impl GapReference<'_> {
    #[inline(always)]
    pub(crate) fn get(&self, k: usize) -> Option<f64> {
        match self {
            GapReference::Absent => None,
            GapReference::Dense(c) => Some(c[k]),
            GapReference::Sparse(f) => f(k),
        }
    }
}
