"""Steps per second from a Python loop: perennial against Gymnasium, measured in one run.

Run it after `pip install ./python` (scripts/test.sh leaves one in .venv/):

    .venv/bin/python python/bench/compare.py [--steps 200000] [--vec-steps 300]

It prints two tables. The first compares `gym.make("perennial/CartPole-v1")` with
`gym.make("CartPole-v1")` (both through the wrappers gym.make adds) and `make_vec` at 4,096
envs with Gymnasium's numpy `CartPoleVectorEnv`; targets are 5x and 3x. The second splits
perennial's per-step time into layers, each row measured by stepping that layer alone:
the Rust call (world step plus building the numpy array and the result tuple), the
`PerennialEnv` Python method around it, and the wrappers gym.make adds. Each figure is
the best of `--repeats` timed passes, taken round-robin over the workloads, so a busy
machine disturbs them alike.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

import perennial

NUM_ENVS = 4096


def single_loop(step, reset, actions: np.ndarray) -> float:
    """Seconds for len(actions) steps, resetting where an episode ends: seeded once, then
    unseeded, as a training loop does."""
    reset(0)
    acts = actions.tolist()
    start = time.perf_counter()
    for a in acts:
        r = step(a)
        if r[2] or r[3]:
            reset(None)
    return time.perf_counter() - start


def vector_loop(envs, actions: np.ndarray) -> float:
    envs.reset(seed=0)
    start = time.perf_counter()
    for row in actions:
        envs.step(row)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000, help="single-env steps per pass")
    parser.add_argument("--vec-steps", type=int, default=300, help="vector steps per pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes; the best counts")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, size=args.steps)
    vec_actions = rng.integers(0, 2, size=(args.vec_steps, NUM_ENVS))

    theirs = gym.make("CartPole-v1")
    ours = gym.make("perennial/CartPole-v1")
    unwrapped = ours.unwrapped
    core = unwrapped._run

    gym_vec = CartPoleVectorEnv(num_envs=NUM_ENVS)
    our_vec = perennial.make_vec("perennial/CartPole-v1", NUM_ENVS)
    core_vec = our_vec._vec

    def core_vec_loop() -> float:
        core_vec.reset(0)
        start = time.perf_counter()
        for row in vec_actions:
            core_vec.step(row)
        return time.perf_counter() - start

    # Round-robin passes: a load change on a shared machine hits every workload alike.
    workloads = {
        "gym": lambda: single_loop(theirs.step, lambda s: theirs.reset(seed=s), actions),
        "ours": lambda: single_loop(ours.step, lambda s: ours.reset(seed=s), actions),
        "env": lambda: single_loop(unwrapped.step, lambda s: unwrapped.reset(seed=s), actions),
        "core": lambda: single_loop(core.step, core.reset, actions),
        "gym_vec": lambda: vector_loop(gym_vec, vec_actions),
        "our_vec": lambda: vector_loop(our_vec, vec_actions),
        "core_vec": core_vec_loop,
    }
    times = {name: float("inf") for name in workloads}
    for _ in range(args.repeats):
        for name, run in workloads.items():
            times[name] = min(times[name], run())
    t_gym, t_ours, t_env, t_core = times["gym"], times["ours"], times["env"], times["core"]
    t_gym_vec, t_our_vec, t_core_vec = times["gym_vec"], times["our_vec"], times["core_vec"]

    n, m = args.steps, args.vec_steps * NUM_ENVS
    print(f"{'workload':<52} {'steps/s':>12} {'vs Gymnasium':>13}")
    print(f"{'gym.make(CartPole-v1), Gymnasium':<52} {n / t_gym:>12,.0f} {'1.00x':>13}")
    print(f"{'gym.make(perennial/CartPole-v1)':<52} {n / t_ours:>12,.0f} {t_gym / t_ours:>12.2f}x")
    print(f"{'CartPoleVectorEnv, 4,096 envs, Gymnasium':<52} {m / t_gym_vec:>12,.0f} {'1.00x':>13}")
    print(f"{'make_vec(perennial/CartPole-v1, 4,096)':<52} {m / t_our_vec:>12,.0f} {t_gym_vec / t_our_vec:>12.2f}x")
    layers(
        "where perennial single-env step time goes",
        "us/step",
        n,
        [
            ("Rust call: step, numpy array, result tuple", t_core),
            ("PerennialEnv.step around it (info dict, unpacking)", t_env - t_core),
            ("gym.make wrappers (OrderEnforcing, env checker)", t_ours - t_env),
        ],
    )
    print(f"{'total through gym.make':<52} {1e6 * t_ours / n:>12.3f} {'100%':>13}")
    layers(
        "where make_vec step time goes (4,096 envs)",
        "us/batch",
        args.vec_steps,
        [
            ("Rust call: steps, four numpy arrays", t_core_vec),
            ("PerennialVectorEnv.step around it", t_our_vec - t_core_vec),
        ],
    )


def layers(title: str, unit: str, count: int, parts: list) -> None:
    """Prints where the time of `count` calls goes, layer by layer, with each layer's share."""
    total = sum(t for _, t in parts)
    print()
    print(f"{title:<52} {unit:>12} {'share':>13}")
    for name, t in parts:
        print(f"{name:<52} {1e6 * t / count:>12.3f} {t / total:>12.0%}")


if __name__ == "__main__":
    main()
