//! The arithmetic under the networks: two matrix products, `exp`, `tanh`, a sum of squares
//! and Adam's update, written as loops the compiler vectorizes, and run with AVX2 when the
//! CPU has it.
//!
//! # One order of operations everywhere
//!
//! Every output element is computed by one fixed formula whatever the tile, the vector width
//! or the path that computes it, and no multiply is ever fused with an add (Rust never
//! contracts them, and the AVX2 path does not enable FMA). So the AVX2 path and the portable
//! one give the same bits, one sample through a network gets the bits it gets inside a
//! batch, and a seeded run is reproducible on any x86-64 machine, with or without AVX2. The
//! formulas:
//!
//! - [`matmul_acc`] and [`matmul_tn_acc`]: each output starts from what it held and adds the
//!   products over the shared dimension from first to last. The tiles (4 rows by 16, 8 or 4
//!   columns; a lone row by 64, 32, 16, 8 or 4; 8 rows by 1 column for the last `n mod 4`)
//!   only decide which outputs are computed together, in vector registers;
//! - [`sum_squares`]: eight partial sums (element `k` in lane `k mod 8`, over whole chunks of
//!   eight), folded pairwise in a fixed order, then the leftover elements in order;
//! - [`exp`] and [`tanh`]: elementwise, with a polynomial of this module's own (so no
//!   platform `libm` decides the bits).

/// Runs `$portable` or, on x86-64 with AVX2, the same body compiled for AVX2 (`$avx2`, a
/// `#[target_feature(enable = "avx2")]` copy of it).
macro_rules! dispatch {
    ($avx2:ident, $portable:ident, ($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked just above; the body is the portable one.
                return unsafe { $avx2($($arg),*) };
            }
        }
        $portable($($arg),*)
    }};
}

/// Declares `pub fn $name` (dispatching), its AVX2 copy and its portable body.
macro_rules! kernel {
    (
        $(#[$doc:meta])*
        fn $name:ident / $avx2:ident ($($arg:ident : $ty:ty),*) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$doc])*
        pub fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn portable($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn $avx2($($arg: $ty),*) $(-> $ret)? {
                portable($($arg),*)
            }
            dispatch!($avx2, portable, ($($arg),*))
        }
    };
}

/// The pairwise fold of eight partial sums: `((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7))`.
#[inline(always)]
fn fold8(a: [f32; 8]) -> f32 {
    let s = [a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]];
    (s[0] + s[2]) + (s[1] + s[3])
}

/// The `R × W` tile of `c` (row-major, `n` columns) at row `i`, column `j`.
#[inline(always)]
fn load_tile<const R: usize, const W: usize>(
    c: &[f32],
    n: usize,
    (i, j): (usize, usize),
) -> [[f32; W]; R] {
    let mut acc = [[0.0f32; W]; R];
    for r in 0..R {
        acc[r].copy_from_slice(&c[(i + r) * n + j..(i + r) * n + j + W]);
    }
    acc
}

/// Writes `acc` back where [`load_tile`] read it.
#[inline(always)]
fn store_tile<const R: usize, const W: usize>(
    acc: &[[f32; W]; R],
    c: &mut [f32],
    n: usize,
    (i, j): (usize, usize),
) {
    for r in 0..R {
        c[(i + r) * n + j..(i + r) * n + j + W].copy_from_slice(&acc[r]);
    }
}

/// `c[i..i+R][j..j+W] += Σ_k a[i+r][k] · b[k][j..j+W]`, k from first to last, with
/// `left = (a, k)` and `a` row-major `m × k`.
#[inline(always)]
fn nn_tile<const R: usize, const W: usize>(
    (a, k): (&[f32], usize),
    b: &[f32],
    c: &mut [f32],
    n: usize,
    (i, j): (usize, usize),
) {
    let mut acc = load_tile::<R, W>(c, n, (i, j));
    let arows: [&[f32]; R] = std::array::from_fn(|r| &a[(i + r) * k..][..k]);
    for (kk, brow) in b.chunks_exact(n).take(k).enumerate() {
        let bv: &[f32; W] = brow[j..j + W]
            .try_into()
            .expect("a tile's slice has the tile's width");
        for r in 0..R {
            let av = arows[r][kk];
            for l in 0..W {
                acc[r][l] += av * bv[l];
            }
        }
    }
    store_tile(&acc, c, n, (i, j));
}

/// `c[i..i+R][j..j+W] += Σ_m a[m][i+r] · b[m][j..j+W]`, m from first to last, with
/// `left = (a, p, i)` and `a` row-major `m × p`.
#[inline(always)]
fn tn_tile<const R: usize, const W: usize>(
    (a, p, _): (&[f32], usize, usize),
    b: &[f32],
    c: &mut [f32],
    n: usize,
    (i, j): (usize, usize),
) {
    let mut acc = load_tile::<R, W>(c, n, (i, j));
    for (arow, brow) in a.chunks_exact(p).zip(b.chunks_exact(n)) {
        let bv: &[f32; W] = brow[j..j + W]
            .try_into()
            .expect("a tile's slice has the tile's width");
        let av = &arow[i..i + R];
        for r in 0..R {
            for l in 0..W {
                acc[r][l] += av[r] * bv[l];
            }
        }
    }
    store_tile(&acc, c, n, (i, j));
}

/// The tile of `R` rows at column `$j`, as wide as the columns before `$end` (a multiple of
/// 4 ahead) allow: 16, 8 or 4; evaluates to its width.
macro_rules! row_tile {
    ($tile:ident, $r:literal, $left:expr, $b:expr, $c:expr, $n:expr, ($i:expr, $j:expr), $end:expr) => {
        match $end - $j {
            16.. => {
                $tile::<$r, 16>($left, $b, $c, $n, ($i, $j));
                16
            }
            8.. => {
                $tile::<$r, 8>($left, $b, $c, $n, ($i, $j));
                8
            }
            _ => {
                $tile::<$r, 4>($left, $b, $c, $n, ($i, $j));
                4
            }
        }
    };
}

/// Walks `rows × n`: the columns up to the last multiple of 4 in tiles of 4 rows and 16, 8
/// or 4 columns (a lone row, as when acting on one observation: 64, 32, 16, 8 or 4 columns,
/// so 8 vectors of sums are in flight), then the last `n mod 4` columns one at a time in
/// tiles of 8 rows (or 4, or 1), so a narrow output (a policy head of 2, a value head of 1)
/// still has 8 independent sums in flight. `$tile` takes `(left, $b, $c, n, (i, j))`, with `left` the
/// value of `$left` for the row block starting at `$i`.
macro_rules! tiles {
    ($tile:ident, |$i:ident| $left:expr, $b:expr, $c:expr, $rows:expr, $n:expr) => {{
        let (rows, n) = ($rows, $n);
        let wide = n - n % 4;
        let mut $i = 0;
        while $i < rows && wide > 0 {
            let four = rows - $i >= 4;
            let left = $left;
            let mut j = 0;
            while j < wide {
                j += if four {
                    row_tile!($tile, 4, left, $b, $c, n, ($i, j), wide)
                } else {
                    match wide - j {
                        64.. => {
                            $tile::<1, 64>(left, $b, $c, n, ($i, j));
                            64
                        }
                        32.. => {
                            $tile::<1, 32>(left, $b, $c, n, ($i, j));
                            32
                        }
                        _ => row_tile!($tile, 1, left, $b, $c, n, ($i, j), wide),
                    }
                };
            }
            $i += if four { 4 } else { 1 };
        }
        let mut $i = 0;
        while $i < rows && wide < n {
            let left = $left;
            let height = match rows - $i {
                8.. => 8,
                4.. => 4,
                _ => 1,
            };
            for j in wide..n {
                match height {
                    8 => $tile::<8, 1>(left, $b, $c, n, ($i, j)),
                    4 => $tile::<4, 1>(left, $b, $c, n, ($i, j)),
                    _ => $tile::<1, 1>(left, $b, $c, n, ($i, j)),
                }
            }
            $i += height;
        }
    }};
}

kernel! {
    /// `c += a · b` for row-major `a` (`m × k`), `b` (`k × n`) and `c` (`m × n`).
    fn matmul_acc / matmul_acc_avx2(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
        let (a, b) = (&a[..m * k], &b[..k * n]);
        tiles!(nn_tile, |i| (a, k), b, c, m, n);
    }
}

kernel! {
    /// `c += aᵀ · b` for row-major `a` (`m × p`), `b` (`m × n`) and `c` (`p × n`).
    fn matmul_tn_acc / matmul_tn_acc_avx2(a: &[f32], b: &[f32], c: &mut [f32], m: usize, p: usize, n: usize) {
        let (a, b) = (&a[..m * p], &b[..m * n]);
        tiles!(tn_tile, |i| (a, p, i), b, c, p, n);
    }
}

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two: the high part has enough trailing zero bits that `r · LN2_HI` is exact
/// for every `|r| <= 128`.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
/// 1.5 · 2^23: adding it rounds a float below 2^22 in magnitude to an integer, which then
/// sits in the low bits of the sum's representation.
const ROUND: f32 = 12_582_912.0;

/// `e^x` to about one part in 10^7, for any `x` (clamped to [-87, 88], so the result stays
/// a normal float); NaN stays NaN.
///
/// `x = r ln 2 + f` with `r` an integer and `|f| <= ln 2 / 2`; `e^f` by its Taylor series to
/// the `f^7` term (the rest is below 10^-8), and `2^r` built in the exponent bits.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let t = x * LOG2E + ROUND;
    let r = t - ROUND;
    let f = (x - r * LN2_HI) - r * LN2_LO;
    let mut p = 1.0 / 5040.0;
    p = p * f + 1.0 / 720.0;
    p = p * f + 1.0 / 120.0;
    p = p * f + 1.0 / 24.0;
    p = p * f + 1.0 / 6.0;
    p = p * f + 0.5;
    p = p * f + 1.0;
    p = p * f + 1.0;
    let scale = f32::from_bits(
        t.to_bits()
            .wrapping_sub(ROUND.to_bits())
            .wrapping_add(127)
            .wrapping_shl(23),
    );
    p * scale
}

/// `tanh x` as `(1 - e^{-2|x|}) / (1 + e^{-2|x|})` with the sign of `x`, within about 10^-7.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let e = exp(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

kernel! {
    /// [`exp`] of every element, in place.
    fn exp_in_place / exp_in_place_avx2(x: &mut [f32]) {
        for v in x.iter_mut() {
            *v = exp(*v);
        }
    }
}

kernel! {
    /// [`tanh`] of every element, in place.
    fn tanh_in_place / tanh_in_place_avx2(x: &mut [f32]) {
        for v in x.iter_mut() {
            *v = tanh(*v);
        }
    }
}

kernel! {
    /// `Σ x²` (see the module docs for the order).
    fn sum_squares / sum_squares_avx2(x: &[f32]) -> f32 {
        let mut acc = [0.0f32; 8];
        let chunks = x.chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            for l in 0..8 {
                acc[l] += c[l] * c[l];
            }
        }
        let mut s = fold8(acc);
        for v in rest {
            s += v * v;
        }
        s
    }
}

kernel! {
    /// One Adam step over flat vectors (β1 = 0.9, β2 = 0.999, ε = 1e-5): with `g` scaled by
    /// `scale`, `m ← β1 m + (1-β1) g`, `v ← β2 v + (1-β2) g²`, `θ ← θ - step · m / (√v + ε)`.
    fn adam_update / adam_update_avx2(
        params: &mut [f32],
        grad: &[f32],
        m: &mut [f32],
        v: &mut [f32],
        scale: f32,
        step: f32
    ) {
        let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-5f32);
        for (((p, g), m), v) in params.iter_mut().zip(grad).zip(m.iter_mut()).zip(v.iter_mut()) {
            let g = g * scale;
            *m = b1 * *m + (1.0 - b1) * g;
            *v = b2 * *v + (1.0 - b2) * g * g;
            *p -= step * *m / (v.sqrt() + eps);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| ((i as f32 + 0.5) * 0.618 + seed as f32 * 0.37).sin() * 1.7)
            .collect()
    }

    #[test]
    fn exp_and_tanh_agree_with_the_standard_library() {
        let mut worst_exp = 0.0f64;
        let mut worst_tanh = 0.0f64;
        for i in -20_000..=20_000 {
            let x = i as f32 * 0.004;
            let e = f64::from(x).exp();
            worst_exp = worst_exp.max((f64::from(exp(x)) - e).abs() / e);
            worst_tanh = worst_tanh.max((f64::from(tanh(x)) - f64::from(x).tanh()).abs());
        }
        assert!(worst_exp < 3e-7, "exp relative error {worst_exp}");
        assert!(worst_tanh < 3e-7, "tanh error {worst_tanh}");
        assert_eq!(tanh(60.0), 1.0);
        assert_eq!(tanh(-60.0), -1.0);
        assert!(exp(-1000.0) > 0.0 && exp(1000.0).is_finite());
        assert!(exp(f32::NAN).is_nan() && tanh(f32::NAN).is_nan());
    }

    #[test]
    fn products_match_their_definitions_at_awkward_sizes() {
        for (m, k, n) in [
            (1, 1, 1),
            (5, 3, 19),
            (9, 46, 48),
            (7, 64, 2),
            (4, 4, 64),
            (21, 64, 1),
            (13, 7, 3),
            (64, 64, 2),
            (1, 64, 64),
            (6, 9, 100),
            (1, 46, 48),
        ] {
            let (a, b) = (numbers(m * k, 1), numbers(k * n, 2));
            // c[i][j] plus Σ_kk left(i, kk) b[kk][j], kk from first to last.
            let expect = |seed, left: &dyn Fn(usize, usize) -> f32| {
                let mut c = numbers(m * n, seed);
                for i in 0..m {
                    for j in 0..n {
                        for kk in 0..k {
                            c[i * n + j] += left(i, kk) * b[kk * n + j];
                        }
                    }
                }
                c
            };
            let mut c = numbers(m * n, 3);
            matmul_acc(&a, &b, &mut c, m, k, n);
            assert_eq!(c, expect(3, &|i, kk| a[i * k + kk]), "{m}x{k}x{n}");
            // aᵀ b with a seen as k × m: c2[i][j] = Σ_kk a[kk][i] b[kk][j].
            let mut c2 = numbers(m * n, 4);
            matmul_tn_acc(&a, &b, &mut c2, k, m, n);
            let expect2 = expect(4, &|i, kk| a[kk * m + i]);
            assert_eq!(c2, expect2, "tn {m}x{k}x{n}");
        }
    }

    #[test]
    fn a_row_gets_the_same_bits_alone_as_inside_a_batch() {
        let (batch, k, n) = (7, 46, 21);
        let (x, w, c) = (
            numbers(batch * k, 5),
            numbers(k * n, 6),
            numbers(batch * n, 7),
        );
        let mut all = c.clone();
        matmul_acc(&x, &w, &mut all, batch, k, n);
        for b in 0..batch {
            let mut one = c[b * n..(b + 1) * n].to_vec();
            matmul_acc(&x[b * k..(b + 1) * k], &w, &mut one, 1, k, n);
            assert_eq!(one, &all[b * n..(b + 1) * n]);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_path_gives_the_portable_bits() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        // The portable bodies, called directly through the non-dispatching inner copies.
        fn portable_tanh(x: &mut [f32]) {
            for v in x.iter_mut() {
                *v = tanh(*v);
            }
        }
        let mut fast = numbers(1000, 8)
            .iter()
            .map(|v| v * 20.0)
            .collect::<Vec<_>>();
        let mut slow = fast.clone();
        tanh_in_place(&mut fast);
        portable_tanh(&mut slow);
        assert_eq!(
            fast.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            slow.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
