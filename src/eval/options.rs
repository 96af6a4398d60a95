//! How to evaluate: the options of [`evaluate`](super::evaluate).

use std::path::PathBuf;

/// How to evaluate. Build with `Default` and struct update syntax.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalOptions {
    /// The smoothing window W (100). At least 1.
    pub window: usize,
    /// Count episode-end payouts in x_t (off: x_t = reward - sum(payout)).
    pub include_payout: bool,
    /// Bootstrap resamples for the cross-run CIs (2000).
    pub bootstrap_resamples: usize,
    /// Seed of the bootstrap's ChaCha8 generator (0).
    pub bootstrap_seed: u64,
    /// Reference traces: each run is paired with the reference run of its task and seed
    /// (none).
    pub references: Vec<PathBuf>,
    /// Floor traces, paired the same way, for `normalized_regret` and normalized scores
    /// (none).
    pub floors: Vec<PathBuf>,
    /// The γ of the aggregate optimality gap (1.0, rliable's default, meant for normalized
    /// scores).
    pub gamma: f64,
    /// Measure this role's own reward (the trace's `role_rewards` column) instead of the
    /// team reward (none). Ceilings and bounds bound the team reward, not a role's, so the
    /// gap metrics are left out.
    pub role: Option<String>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            window: 100,
            include_payout: false,
            bootstrap_resamples: 2000,
            bootstrap_seed: 0,
            references: Vec::new(),
            floors: Vec::new(),
            gamma: 1.0,
            role: None,
        }
    }
}
