//! Small dense networks in `f32`: a tanh MLP with a hand-written batch backward pass, and Adam.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::kernel;

/// A multilayer perceptron: tanh hidden layers, a linear output layer.
///
/// All weights live in one flat vector (`params`), layer by layer, each layer a row-major
/// `out × in` weight matrix followed by its `out` biases. One flat vector lets the optimizer,
/// the EWC anchor and shrink-and-perturb treat the network as a single point in parameter
/// space, and keeps the memory contiguous for the batch loops.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mlp {
    sizes: Vec<usize>,
    /// The weights, layer by layer (see the type's docs for the layout).
    pub params: Vec<f32>,
}

/// Activations kept by [`Mlp::forward_batch`] for [`Mlp::backward_batch`].
#[derive(Clone, Debug, Default)]
pub struct Cache {
    batch: usize,
    /// `acts[0]` is the input, `acts[l]` the output of layer `l` (after tanh for hidden ones).
    acts: Vec<Vec<f32>>,
    delta: Vec<f32>,
    delta_prev: Vec<f32>,
    fw: ForwardWeights,
}

/// An [`Mlp`]'s weights laid out for its forward pass: each layer's matrix transposed to
/// `in × out` (so a layer is one product `x · Wᵀ` whose inner loop runs along contiguous
/// outputs), the biases as they are. It is a copy: rebuild it with [`Mlp::forward_weights`]
/// whenever the weights change.
#[derive(Clone, Debug, Default)]
pub struct ForwardWeights {
    w: Vec<f32>,
}

impl ForwardWeights {
    /// Whether it has the shape of `net`'s weights (not whether it is up to date).
    pub fn fits(&self, net: &Mlp) -> bool {
        self.w.len() == net.params.len()
    }
}

impl Cache {
    /// The output of the last forward pass, `batch × out`.
    pub fn output(&self) -> &[f32] {
        self.acts.last().map_or(&[], Vec::as_slice)
    }

    /// The hidden layers' activations of the last forward pass, first layer first, each
    /// `batch × width`.
    pub(crate) fn hidden(&self) -> impl Iterator<Item = &[f32]> {
        let layers = self.acts.len().saturating_sub(1);
        self.acts.iter().take(layers).skip(1).map(Vec::as_slice)
    }
}

impl Mlp {
    /// A network with layer widths `sizes` (input first, output last). Hidden weights are
    /// drawn with variance `2 / fan_in` (tanh with orthogonal-like gain √2); the output layer
    /// with variance `out_gain² / fan_in`, so a policy can start near uniform (small gain)
    /// and a value head near zero. Biases start at zero.
    pub fn new(sizes: &[usize], out_gain: f32, rng: &mut ChaCha8Rng) -> Self {
        let mut params = Vec::new();
        let layers = sizes.len().saturating_sub(1);
        for l in 0..layers {
            let (fan_in, fan_out) = (sizes[l], sizes[l + 1]);
            let gain = if l + 1 == layers {
                out_gain
            } else {
                std::f32::consts::SQRT_2
            };
            // Uniform on ±√3·σ has standard deviation σ.
            let bound = gain * (3.0 / fan_in.max(1) as f32).sqrt();
            params.extend((0..fan_in * fan_out).map(|_| rng.random_range(-bound..=bound)));
            params.extend(std::iter::repeat_n(0.0, fan_out));
        }
        Mlp {
            sizes: sizes.to_vec(),
            params,
        }
    }

    /// Input width.
    pub fn input_dim(&self) -> usize {
        self.sizes[0]
    }

    /// Output width.
    pub fn output_dim(&self) -> usize {
        self.sizes[self.sizes.len() - 1]
    }

    /// Number of weights and biases.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// True for a network without weights.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// Whether the weight vector has the length the layer widths call for.
    pub(crate) fn consistent(&self) -> bool {
        self.sizes.len() >= 2
            && self
                .sizes
                .windows(2)
                .map(|w| w[0] * w[1] + w[1])
                .sum::<usize>()
                == self.params.len()
    }

    fn layers(&self) -> usize {
        self.sizes.len() - 1
    }

    /// Fills `fw` with this network's weights laid out for the forward pass.
    pub fn forward_weights(&self, fw: &mut ForwardWeights) {
        fw.w.clear();
        fw.w.resize(self.params.len(), 0.0);
        let mut offset = 0;
        for l in 0..self.layers() {
            let (fan_in, fan_out) = (self.sizes[l], self.sizes[l + 1]);
            let size = fan_in * fan_out;
            let (w, b) = self.params[offset..offset + size + fan_out].split_at(size);
            let (wt, bt) = fw.w[offset..offset + size + fan_out].split_at_mut(size);
            for (o, row) in w.chunks_exact(fan_in).enumerate() {
                for (i, &v) in row.iter().enumerate() {
                    wt[i * fan_out + o] = v;
                }
            }
            bt.copy_from_slice(b);
            offset += size + fan_out;
        }
    }

    /// The output for one input, written to `out`, with `fw` the forward weights of this
    /// network as it is now ([`Mlp::forward_weights`]); `scratch` is reused between calls so
    /// a rollout step allocates nothing. The bits equal those the same input gets inside
    /// [`Mlp::forward_batch`].
    pub fn forward_one(
        &self,
        fw: &ForwardWeights,
        x: &[f32],
        scratch: &mut [Vec<f32>; 2],
        out: &mut Vec<f32>,
    ) {
        let [cur, next] = scratch;
        cur.clear();
        cur.extend_from_slice(&x[..self.sizes[0]]);
        let mut offset = 0;
        for l in 0..self.layers() {
            let (fan_in, fan_out) = (self.sizes[l], self.sizes[l + 1]);
            let (wt, b) =
                fw.w[offset..offset + fan_in * fan_out + fan_out].split_at(fan_in * fan_out);
            offset += fan_in * fan_out + fan_out;
            next.clear();
            next.extend_from_slice(b);
            kernel::matmul_acc(cur, wt, next, 1, fan_in, fan_out);
            if l + 1 < self.layers() {
                kernel::tanh_in_place(next);
            }
            std::mem::swap(cur, next);
        }
        out.clear();
        out.extend_from_slice(cur);
    }

    /// Forward pass over `batch` inputs laid out row by row in `x`; keeps what the backward
    /// pass needs in `cache`.
    pub fn forward_batch(&self, x: &[f32], batch: usize, cache: &mut Cache) {
        self.forward_weights(&mut cache.fw);
        cache.batch = batch;
        cache.acts.resize_with(self.sizes.len(), Vec::new);
        cache.acts[0].clear();
        cache.acts[0].extend_from_slice(&x[..batch * self.sizes[0]]);
        let mut offset = 0;
        for l in 0..self.layers() {
            let (fan_in, fan_out) = (self.sizes[l], self.sizes[l + 1]);
            let (wt, b) =
                cache.fw.w[offset..offset + fan_in * fan_out + fan_out].split_at(fan_in * fan_out);
            offset += fan_in * fan_out + fan_out;
            let (before, after) = cache.acts.split_at_mut(l + 1);
            let output = &mut after[0];
            output.clear();
            for _ in 0..batch {
                output.extend_from_slice(b);
            }
            kernel::matmul_acc(&before[l], wt, output, batch, fan_in, fan_out);
            if l + 1 < self.layers() {
                kernel::tanh_in_place(output);
            }
        }
    }

    /// Backward pass for the last [`Mlp::forward_batch`]: given `d_out`, the loss's gradient
    /// with respect to each output (`batch × out`), adds the gradient with respect to every
    /// weight to `grad` (same layout as `params`).
    pub fn backward_batch(&self, cache: &mut Cache, d_out: &[f32], grad: &mut [f32]) {
        let batch = cache.batch;
        let layers = self.layers();
        cache.delta.clear();
        cache
            .delta
            .extend_from_slice(&d_out[..batch * self.output_dim()]);
        let mut end = self.params.len();
        for l in (0..layers).rev() {
            let (fan_in, fan_out) = (self.sizes[l], self.sizes[l + 1]);
            let offset = end - (fan_in * fan_out + fan_out);
            end = offset;
            let input = &cache.acts[l];
            let (gw, rest) = grad[offset..].split_at_mut(fan_in * fan_out);
            let gb = &mut rest[..fan_out];
            kernel::matmul_tn_acc(&cache.delta, input, gw, batch, fan_out, fan_in);
            for d in cache.delta.chunks_exact(fan_out) {
                for (g, d) in gb.iter_mut().zip(d) {
                    *g += d;
                }
            }
            if l == 0 {
                break;
            }
            // Through the weights to the previous layer's tanh output, then through tanh.
            let w = &self.params[offset..offset + fan_in * fan_out];
            cache.delta_prev.clear();
            cache.delta_prev.resize(batch * fan_in, 0.0);
            kernel::matmul_acc(
                &cache.delta,
                w,
                &mut cache.delta_prev,
                batch,
                fan_out,
                fan_in,
            );
            for (p, a) in cache.delta_prev.iter_mut().zip(input) {
                *p *= 1.0 - a * a;
            }
            std::mem::swap(&mut cache.delta, &mut cache.delta_prev);
        }
    }
}

/// Adam with global-norm gradient clipping, over a flat parameter vector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adam {
    m: Vec<f32>,
    v: Vec<f32>,
    t: u64,
}

impl Adam {
    /// An optimizer for `n` parameters, with zero moments.
    pub fn new(n: usize) -> Self {
        Adam {
            m: vec![0.0; n],
            v: vec![0.0; n],
            t: 0,
        }
    }

    /// Number of parameters it optimises.
    pub fn len(&self) -> usize {
        self.m.len()
    }

    /// True when it optimises no parameter.
    pub fn is_empty(&self) -> bool {
        self.m.is_empty()
    }

    /// One step of size `lr` against `grad` (β = 0.9, 0.999; ε = 1e-5), after scaling the
    /// gradient down to a global norm of `max_norm` when it is longer (no clipping when
    /// `max_norm` is not positive).
    pub fn step(&mut self, params: &mut [f32], grad: &[f32], lr: f32, max_norm: f32) {
        let norm = kernel::sum_squares(grad).sqrt();
        let scale = if max_norm > 0.0 && norm > max_norm {
            max_norm / norm
        } else {
            1.0
        };
        if self.v.len() != self.m.len() {
            return;
        }
        self.t += 1;
        let (b1, b2) = (0.9f32, 0.999f32);
        let c1 = 1.0 - b1.powi(self.t.min(i32::MAX as u64) as i32);
        let c2 = 1.0 - b2.powi(self.t.min(i32::MAX as u64) as i32);
        let step = lr * c2.sqrt() / c1;
        kernel::adam_update(params, grad, &mut self.m, &mut self.v, scale, step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed::{self, Stream};

    /// Loss = Σ c_k · out_k over a batch, so d_out = c; compares the analytic gradient with
    /// central differences computed in f64 around the f32 weights.
    fn check_gradient(sizes: &[usize]) {
        let mut rng = seed::rng(3, Stream::Agent);
        let net = Mlp::new(sizes, 1.0, &mut rng);
        let batch = 5;
        let x: Vec<f32> = (0..batch * sizes[0])
            .map(|_| rng.random_range(-1.5f32..1.5))
            .collect();
        let c: Vec<f32> = (0..batch * net.output_dim())
            .map(|_| rng.random_range(-1.0f32..1.0))
            .collect();
        let mut cache = Cache::default();
        net.forward_batch(&x, batch, &mut cache);
        let mut grad = vec![0.0; net.len()];
        net.backward_batch(&mut cache, &c, &mut grad);
        let loss = |params: &[f32]| -> f64 {
            let probe = Mlp {
                sizes: sizes.to_vec(),
                params: params.to_vec(),
            };
            let mut cache = Cache::default();
            probe.forward_batch(&x, batch, &mut cache);
            cache
                .output()
                .iter()
                .zip(&c)
                .map(|(o, c)| f64::from(*o) * f64::from(*c))
                .sum()
        };
        let h = 1e-2f32;
        let mut worst = 0.0f64;
        for i in 0..net.len() {
            let mut plus = net.params.clone();
            plus[i] += h;
            let mut minus = net.params.clone();
            minus[i] -= h;
            let numeric = (loss(&plus) - loss(&minus)) / f64::from(2.0 * h);
            let err = (numeric - f64::from(grad[i])).abs() / (1.0 + numeric.abs());
            worst = worst.max(err);
        }
        assert!(worst < 2e-3, "worst relative gradient error {worst}");
    }

    #[test]
    fn backward_pass_matches_finite_differences_for_two_hidden_layers() {
        check_gradient(&[4, 16, 16, 3]);
    }

    #[test]
    fn backward_pass_matches_finite_differences_for_a_linear_layer() {
        check_gradient(&[6, 2]);
    }

    #[test]
    fn one_input_forward_equals_the_batch_forward() {
        let mut rng = seed::rng(1, Stream::Agent);
        let net = Mlp::new(&[5, 64, 64, 2], 0.01, &mut rng);
        let x: Vec<f32> = (0..3 * 5).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut cache = Cache::default();
        net.forward_batch(&x, 3, &mut cache);
        let mut scratch = [Vec::new(), Vec::new()];
        let mut out = Vec::new();
        let mut fw = ForwardWeights::default();
        net.forward_weights(&mut fw);
        for s in 0..3 {
            net.forward_one(&fw, &x[s * 5..(s + 1) * 5], &mut scratch, &mut out);
            assert_eq!(out.as_slice(), &cache.output()[s * 2..(s + 1) * 2]);
        }
    }

    #[test]
    fn adam_moves_a_quadratic_towards_its_minimum() {
        let mut p = vec![3.0f32, -2.0];
        let mut adam = Adam::new(2);
        for _ in 0..2000 {
            let g: Vec<f32> = p.iter().map(|x| 2.0 * x).collect();
            adam.step(&mut p, &g, 0.01, 0.0);
        }
        assert!(p.iter().all(|x| x.abs() < 0.05), "{p:?}");
    }
}
