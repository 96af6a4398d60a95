//! The performance-profile plot of a bench table: per agent and track, the fraction of
//! its (suite, seed) scores above τ with its 95% bootstrap band (stratified by suite),
//! drawn by eval's plot. The bytes depend only on the scores.

use std::collections::BTreeMap;

use super::report::{BOOTSTRAP_SEED, RESAMPLES, Table};
use crate::eval::{PROFILE_POINTS, ProfileCurve, profile_curves_svg, profile_interval};

/// The profile of `table` as SVG text: one line per agent (and track other than `none`),
/// its scores pooled over the suites, τ from min(0, lowest score) to max(1, highest score),
/// with the random agent's 0 and the oracle's 1 marked.
pub fn profile_svg(table: &Table) -> String {
    // Per curve, a column of scores per suite: the bootstrap's strata.
    let mut columns: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    for sec in &table.sections {
        for r in &sec.rows {
            let name = if sec.track.is_none() {
                r.agent.clone()
            } else {
                format!("{}+notify={}", r.agent, sec.track)
            };
            columns.entry(name).or_default().push(r.scores.clone());
        }
    }
    let all = columns.values().flatten().flatten();
    let lo = all.clone().copied().fold(0.0_f64, f64::min);
    let hi = all.copied().fold(1.0_f64, f64::max);
    let taus: Vec<f64> = (0..PROFILE_POINTS)
        .map(|i| lo + (hi - lo) * i as f64 / (PROFILE_POINTS - 1) as f64)
        .collect();
    let points: Vec<(&String, Vec<_>)> = columns
        .iter()
        .map(|(name, m)| {
            let seeds = [name.as_str(), "profile"];
            (
                name,
                profile_interval(m, &taus, RESAMPLES, BOOTSTRAP_SEED, &seeds),
            )
        })
        .collect();
    let curves: Vec<ProfileCurve<'_>> = points
        .iter()
        .map(|(name, p)| ProfileCurve {
            name: name.as_str(),
            points: p,
        })
        .collect();
    profile_curves_svg(
        "performance profile: fraction of (suite, seed) scores &gt; τ",
        &curves,
        &[(0.0, "random"), (1.0, "oracle")],
    )
}
