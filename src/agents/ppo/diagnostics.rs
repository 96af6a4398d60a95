//! Plasticity diagnostics of a network on a window's inputs: dormant units and effective rank.

/// Fraction of the units of `layers` (each `n × width` activations, row by row) that are
/// τ-dormant (Sokar et al. 2023): a unit's score is its mean absolute activation over the
/// `n` rows divided by the mean of those over its layer, and a unit scoring at most `tau`
/// is dormant. A layer whose units are all zero counts all of them dormant.
pub(super) fn dormant_fraction<'a>(
    layers: impl Iterator<Item = &'a [f32]>,
    n: usize,
    tau: f64,
) -> f64 {
    let (mut dormant, mut units) = (0usize, 0usize);
    for acts in layers {
        let width = acts.len() / n.max(1);
        if width == 0 {
            continue;
        }
        let mut mean_abs = vec![0.0f64; width];
        for row in acts.chunks_exact(width) {
            for (m, &a) in mean_abs.iter_mut().zip(row) {
                *m += f64::from(a.abs());
            }
        }
        let layer_mean = mean_abs.iter().sum::<f64>() / width as f64;
        dormant += if layer_mean > 0.0 {
            mean_abs.iter().filter(|&&m| m / layer_mean <= tau).count()
        } else {
            width
        };
        units += width;
    }
    if units == 0 {
        0.0
    } else {
        dormant as f64 / units as f64
    }
}

/// Effective rank `srank_δ` (Kumar et al. 2021) of the `n × width` matrix `acts` (row by
/// row): the fewest of its singular values, largest first, whose sum reaches `1 − δ` of
/// their total; 0 for a zero matrix. The singular values are the square roots of the
/// eigenvalues of the `width × width` Gram matrix, found by cyclic Jacobi rotations in
/// `f64`.
pub(super) fn effective_rank(acts: &[f32], n: usize, delta: f64) -> f64 {
    let width = acts.len() / n.max(1);
    if width == 0 {
        return 0.0;
    }
    let mut gram = vec![0.0f64; width * width];
    for row in acts.chunks_exact(width) {
        for i in 0..width {
            let ri = f64::from(row[i]);
            if ri == 0.0 {
                continue;
            }
            for j in i..width {
                gram[i * width + j] += ri * f64::from(row[j]);
            }
        }
    }
    for i in 0..width {
        for j in 0..i {
            gram[i * width + j] = gram[j * width + i];
        }
    }
    let mut sigma: Vec<f64> = symmetric_eigenvalues(&mut gram, width)
        .into_iter()
        .map(|l| l.max(0.0).sqrt())
        .collect();
    sigma.sort_by(|a, b| b.total_cmp(a));
    let total: f64 = sigma.iter().sum();
    if total <= 0.0 {
        return 0.0;
    }
    let mut sum = 0.0;
    for (k, s) in sigma.iter().enumerate() {
        sum += s;
        if sum >= (1.0 - delta) * total {
            return (k + 1) as f64;
        }
    }
    width as f64
}

/// The eigenvalues of the symmetric `n × n` matrix `a` (destroyed, row-major): a
/// Householder reduction to tridiagonal form, then QL iterations with implicit shifts
/// (about `4n³/3` operations for the reduction, against Jacobi's `~6n³` per sweep).
fn symmetric_eigenvalues(a: &mut [f64], n: usize) -> Vec<f64> {
    let (mut d, mut e) = tridiagonalize(a, n);
    tridiagonal_eigenvalues(&mut d, &mut e);
    d
}

/// Householder reduction of the symmetric `a` to a tridiagonal matrix: its diagonal `d`
/// and its off-diagonal `e` (`e[i]` joins rows `i` and `i + 1`; `e[n - 1]` is 0).
fn tridiagonalize(a: &mut [f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut e = vec![0.0; n];
    for i in (1..n).rev() {
        let l = i - 1;
        if l == 0 {
            e[i] = a[i * n + l];
            continue;
        }
        let scale: f64 = (0..=l).map(|k| a[i * n + k].abs()).sum();
        if scale == 0.0 {
            e[i] = a[i * n + l];
            continue;
        }
        let mut h = 0.0;
        for k in 0..=l {
            a[i * n + k] /= scale;
            h += a[i * n + k] * a[i * n + k];
        }
        let f = a[i * n + l];
        let g = if f >= 0.0 { -h.sqrt() } else { h.sqrt() };
        e[i] = scale * g;
        h -= f * g;
        a[i * n + l] = f - g;
        // p = A u / h, then K = uᵀp / 2h, q = p − K u; A ← A − q uᵀ − u qᵀ (lower triangle).
        let mut f = 0.0;
        for j in 0..=l {
            let mut g = 0.0;
            for k in 0..=j {
                g += a[j * n + k] * a[i * n + k];
            }
            for k in j + 1..=l {
                g += a[k * n + j] * a[i * n + k];
            }
            e[j] = g / h;
            f += e[j] * a[i * n + j];
        }
        let hh = f / (h + h);
        for j in 0..=l {
            let f = a[i * n + j];
            let g = e[j] - hh * f;
            e[j] = g;
            for k in 0..=j {
                a[j * n + k] -= f * e[k] + g * a[i * n + k];
            }
        }
    }
    let d = (0..n).map(|i| a[i * n + i]).collect();
    e.rotate_left(1.min(n));
    if let Some(last) = e.last_mut() {
        *last = 0.0;
    }
    (d, e)
}

/// Overwrites `d` with the eigenvalues of the symmetric tridiagonal matrix with diagonal `d`
/// and off-diagonal `e` (destroyed), by QL iterations with implicit Wilkinson shifts.
fn tridiagonal_eigenvalues(d: &mut [f64], e: &mut [f64]) {
    let n = d.len();
    for l in 0..n {
        for _ in 0..64 {
            let mut m = l;
            while m + 1 < n {
                let dd = d[m].abs() + d[m + 1].abs();
                if e[m].abs() <= f64::EPSILON * dd {
                    break;
                }
                m += 1;
            }
            if m == l {
                break;
            }
            let mut g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            let mut r = g.hypot(1.0);
            g = d[m] - d[l] + e[l] / (g + r.copysign(g));
            let (mut s, mut c, mut p) = (1.0, 1.0, 0.0);
            let mut deflated = false;
            for i in (l..m).rev() {
                let f = s * e[i];
                let b = c * e[i];
                r = f.hypot(g);
                e[i + 1] = r;
                if r == 0.0 {
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    deflated = true;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
            }
            if deflated {
                continue;
            }
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_rank_counts_the_directions_that_carry_the_mass() {
        // Rows along three orthogonal directions with equal weight: rank 3 at δ = 0.01.
        let mut acts = Vec::new();
        for i in 0..30 {
            let mut row = [0.0f32; 5];
            row[i % 3] = 1.0;
            acts.extend_from_slice(&row);
        }
        assert_eq!(effective_rank(&acts, 30, 0.01), 3.0);
        // One direction far larger than the rest: the small ones fall inside δ.
        let mut skewed = Vec::new();
        for i in 0..30 {
            let v = if i % 3 == 0 { 1000.0 } else { 0.001 };
            skewed.extend_from_slice(&[v, (i % 3) as f32 * 0.001, 0.0]);
        }
        assert_eq!(effective_rank(&skewed, 30, 0.01), 1.0);
        assert_eq!(effective_rank(&[0.0; 12], 4, 0.01), 0.0);
    }

    /// A slow reference: cyclic Jacobi sweeps until the off-diagonal mass is negligible.
    fn jacobi_eigenvalues(a: &mut [f64], n: usize) -> Vec<f64> {
        let scale: f64 = a.iter().map(|v| v * v).sum::<f64>().sqrt();
        for _ in 0..50 {
            let off: f64 = (0..n)
                .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
                .map(|(i, j)| a[i * n + j] * a[i * n + j])
                .sum::<f64>()
                .sqrt();
            if off <= 1e-9 * scale || scale == 0.0 {
                break;
            }
            for p in 0..n {
                for q in p + 1..n {
                    let apq = a[p * n + q];
                    if apq.abs() <= 1e-300 {
                        continue;
                    }
                    let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                    let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                    let t = if theta == 0.0 { 1.0 } else { t };
                    let c = 1.0 / (t * t + 1.0).sqrt();
                    let s = t * c;
                    for k in 0..n {
                        let (akp, akq) = (a[k * n + p], a[k * n + q]);
                        a[k * n + p] = c * akp - s * akq;
                        a[k * n + q] = s * akp + c * akq;
                    }
                    for k in 0..n {
                        let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                        a[p * n + k] = c * apk - s * aqk;
                        a[q * n + k] = s * apk + c * aqk;
                    }
                }
            }
        }
        (0..n).map(|i| a[i * n + i]).collect()
    }

    #[test]
    fn the_eigenvalues_are_those_of_known_matrices_and_of_the_jacobi_reference() {
        // [[2, 1], [1, 2]] has eigenvalues 1 and 3.
        let mut l = symmetric_eigenvalues(&mut [2.0, 1.0, 1.0, 2.0], 2);
        l.sort_by(f64::total_cmp);
        assert!(
            (l[0] - 1.0).abs() < 1e-12 && (l[1] - 3.0).abs() < 1e-12,
            "{l:?}"
        );
        assert_eq!(symmetric_eigenvalues(&mut [5.0], 1), [5.0]);
        // A Gram matrix of pseudo-random rows, 12 x 12.
        let n = 12;
        let rows: Vec<f64> = (0..40 * n)
            .map(|i| ((i * 7919 % 1000) as f64 / 500.0 - 1.0) * if i % 5 == 0 { 3.0 } else { 1.0 })
            .collect();
        let mut gram = vec![0.0; n * n];
        for r in rows.chunks_exact(n) {
            for i in 0..n {
                for j in 0..n {
                    gram[i * n + j] += r[i] * r[j];
                }
            }
        }
        let mut fast = symmetric_eigenvalues(&mut gram.clone(), n);
        let mut slow = jacobi_eigenvalues(&mut gram, n);
        fast.sort_by(f64::total_cmp);
        slow.sort_by(f64::total_cmp);
        for (f, s) in fast.iter().zip(&slow) {
            assert!((f - s).abs() < 1e-7 * slow[n - 1], "{fast:?} {slow:?}");
        }
    }

    #[test]
    fn a_unit_that_never_fires_is_dormant_and_a_busy_one_is_not() {
        // Two rows of a three-unit layer: unit 2 is always 0, unit 1 is tiny.
        let acts = [1.0, 0.001, 0.0, -1.0, 0.001, 0.0];
        // Layer mean of |a| = (1 + 0.001 + 0) / 3; unit 1 scores 0.003, unit 2 scores 0.
        assert_eq!(
            dormant_fraction([&acts[..]].into_iter(), 2, 0.025),
            2.0 / 3.0
        );
        assert_eq!(dormant_fraction([&acts[..]].into_iter(), 2, 0.0), 1.0 / 3.0);
        assert_eq!(
            dormant_fraction([&[0.0f32; 4][..]].into_iter(), 2, 0.025),
            1.0
        );
    }
}
