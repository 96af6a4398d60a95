"""Train a numpy REINFORCE agent on CartPole whose physics drift, then score its trace.

What it shows: any Python training loop run through ``perennial.make(..., trace=...)``
leaves a trace that ``perennial.evaluate`` scores per configuration interval, with the
regimes shifting inside the env without the agent being told.

How to read the output: one line per configuration interval of the run (regime label,
steps, mean reward, adaptation steps, forgetting where the label came back). Higher mean
reward is better; adaptation is how many steps the rolling mean took to reach 90% of its
way from the interval's head to its tail.

    python python/examples/drift_reinforce.py [--steps 20000] [--trace runs/drift-py.jsonl]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import perennial


def run(steps: int, trace: str, seed: int) -> int:
    env = perennial.make("perennial/CartPoleDrift-v0", seed=seed, trace=trace, algorithm_id="reinforce-numpy")
    rng = np.random.default_rng(seed)
    theta = np.zeros((4, 2))
    obs, _ = env.reset()
    observations, actions, rewards = [], [], []
    for _ in range(steps):
        logits = obs.astype(np.float64) @ theta
        p = np.exp(logits - logits.max())
        p /= p.sum()
        action = int(rng.random() < p[1])
        observations.append(obs)
        actions.append(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        rewards.append(reward)
        if terminated or truncated:
            returns = np.cumsum(np.asarray(rewards)[::-1])[::-1]
            o = np.asarray(observations, dtype=np.float64)
            z = o @ theta
            probs = np.exp(z - z.max(axis=1, keepdims=True))
            probs /= probs.sum(axis=1, keepdims=True)
            score = np.eye(2)[actions] - probs
            theta += 0.001 * o.T @ (score * (returns - returns.mean())[:, None]) / len(rewards)
            observations, actions, rewards = [], [], []
            obs, _ = env.reset()
    env.close()

    report = perennial.evaluate([trace], window=100)
    for interval in report["runs"][0]["intervals"]:
        print(
            f"{interval['regime']:<14} steps {interval['steps']:>6}  mean reward {interval['mean_reward']:8.4f}  "
            f"adaptation {interval['adaptation_steps']}  forgetting {interval['forgetting']}"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--trace", default="runs/drift-py.jsonl")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        return run(args.steps, args.trace, args.seed)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
