//! CartPole steps/s through the `Env` trait beside a minimal hand-written physics loop.
//!
//! Both loops take the same actions (a fixed pseudo-random bit pattern, so action choice
//! costs the same) and reset on episode end. The ratio of their medians is the price of the
//! trait: spec checks, error handling, the `Transition` value.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perennial::prelude::*;
use std::hint::black_box;

const STEPS: u64 = 100_000;

/// The smallest loop that computes CartPole-v1: constants folded, no checks.
fn hand_loop(steps: u64) -> f64 {
    let (g, mc, mp, l, f, tau) = (9.8f64, 1.0f64, 0.1f64, 0.5f64, 10.0f64, 0.02f64);
    let (tm, pml) = (mp + mc, mp * l);
    let theta_max = 12.0 * 2.0 * std::f64::consts::PI / 360.0;
    let mut s = [0.01f64, 0.0, 0.02, 0.0];
    let mut bits = 0x9E37_79B9_7F4A_7C15u64;
    let mut total = 0.0;
    let mut t = 0u64;
    for _ in 0..steps {
        bits ^= bits << 13;
        bits ^= bits >> 7;
        bits ^= bits << 17;
        let force = if bits & 1 == 1 { f } else { -f };
        let [x, x_dot, theta, theta_dot] = s;
        let (c, sn) = (theta.cos(), theta.sin());
        let temp = (force + pml * (theta_dot * theta_dot) * sn) / tm;
        let thetaacc = (g * sn - c * temp) / (l * (4.0 / 3.0 - mp * (c * c) / tm));
        let xacc = temp - pml * thetaacc * c / tm;
        s = [
            x + tau * x_dot,
            x_dot + tau * xacc,
            theta + tau * theta_dot,
            theta_dot + tau * thetaacc,
        ];
        total += 1.0;
        t += 1;
        if s[0].abs() > 2.4 || s[2].abs() > theta_max || t >= 500 {
            s = [0.01, 0.0, -0.02, 0.0];
            t = 0;
        }
    }
    total + black_box(s[0]) * 0.0
}

fn trait_loop(env: &mut CartPole, steps: u64) -> f64 {
    let mut bits = 0x9E37_79B9_7F4A_7C15u64;
    let mut total = 0.0;
    let mut episode = 0;
    env.reset(episode);
    for _ in 0..steps {
        bits ^= bits << 13;
        bits ^= bits >> 7;
        bits ^= bits << 17;
        match env.step(&((bits & 1) as usize)) {
            Ok(t) => {
                total += t.reward;
                if t.terminated || t.truncated {
                    episode += 1;
                    env.reset(episode);
                }
            }
            Err(_) => unreachable!("actions are 0 or 1 and ended episodes are reset"),
        }
    }
    total
}

fn cartpole(c: &mut Criterion) {
    let mut group = c.benchmark_group("cartpole_100k_steps");
    group.throughput(Throughput::Elements(STEPS));
    group.bench_function("hand_loop", |b| b.iter(|| hand_loop(black_box(STEPS))));
    let mut env = CartPole::new(CartPoleParams::default());
    group.bench_function("env_trait", |b| {
        b.iter(|| trait_loop(&mut env, black_box(STEPS)))
    });
    group.finish();
}

criterion_group!(benches, cartpole);
criterion_main!(benches);
