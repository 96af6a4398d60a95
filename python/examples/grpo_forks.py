"""GRPO on forks of the warehouse, offline: generate, group, advantage, update.

A small stochastic policy (a softmax over the warehouse's discrete actions, uniform at
first) plays ``K`` rollouts of ``H`` hours forked from one saved state of a live warehouse
(``perennial.fork``): the rollouts meet the same demand, failures and delays, so their
returns differ only by the policy's draws. ``perennial.export_episodes(...,
advantage="grpo")`` groups the K traces as one fork (task ``<task>@s<step>``) and gives
each rollout its GRPO advantage; the policy moves towards the actions of the rollouts that
beat their group (a REINFORCE step weighted by the advantages). The live world then runs on
``H`` hours under the policy, and the next iteration forks its new state.

Each line prints the iteration, the saved step, the policy's mean return over its K
rollouts and, on the same fork, the mean return of K rollouts of the starting (uniform)
policy; the last line compares the mean gap over the first and the last fifth of the
iterations. This policy reads no observation, so it can only learn which actions pay on
average: on the default warehouse it does not yet beat the uniform policy clearly (a live
world played this way soon reaches states where no action changes the reward). The loop
is the point: swap in a policy that reads the observation.

    python python/examples/grpo_forks.py --iterations 200
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

import perennial


def play(env, obs, logits, hours, rng):
    """Plays ``hours`` steps of the softmax policy; returns (return, counts of actions)."""
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    counts = np.zeros_like(logits)
    total = 0.0
    for _ in range(hours):
        a = int(rng.choice(len(probs), p=probs))
        counts[a] += 1
        _, reward, terminated, truncated, _ = env.step(a)
        total += reward
        if terminated or truncated:
            env.reset()
    return total, counts


def grpo_advantages(traces, out):
    """Rollout index -> GRPO advantage, as ``perennial episodes --advantage grpo`` gives it."""
    perennial.export_episodes(traces, out, advantage="grpo")
    advantages = {}
    for line in Path(out).read_text().splitlines():
        episode = json.loads(line)
        _task, k = episode["id"].split(":", 1)
        step = episode["trajectories"][0]["steps"][0]
        advantages[int(k)] = step["advantage"]
    return advantages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=8, help="K, rollouts per fork")
    parser.add_argument("--hours", type=int, default=24, help="H, hours per rollout")
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--print-every", type=int, default=10)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    world = perennial.make("perennial/Warehouse-v0", seed=args.seed)
    world.reset()
    n = int(world.action_space.n)
    logits = np.zeros(n)
    uniform = np.zeros(n)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'iter':>4} {'step':>6} {'policy':>12} {'uniform':>12} {'gap':>10}")
        gaps = []
        for it in range(args.iterations):
            snapshot = world.unwrapped.snapshot()
            # Generate: K rollouts of the policy from one saved state.
            envs = perennial.fork(
                world,
                args.rollouts,
                trace=f"{tmp}/it{it}-rollout-{{k}}.jsonl",
                record_transitions=True,
            )
            returns, counts = [], []
            for env in envs:
                r, c = play(env, snapshot.observation, logits, args.hours, rng)
                env.close()
                returns.append(r)
                counts.append(c)
            base = float(
                np.mean(
                    [
                        play(env, snapshot.observation, uniform, args.hours, rng)[0]
                        for env in perennial.fork(world, args.rollouts)
                    ]
                )
            )
            # Group and advantage: one fork, one group.
            traces = [f"{tmp}/it{it}-rollout-{k}.jsonl" for k in range(args.rollouts)]
            adv = grpo_advantages(traces, f"{tmp}/it{it}-episodes.jsonl")
            # Update: REINFORCE with the GRPO advantages.
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            grad = sum(adv[k] * (counts[k] - args.hours * probs) for k in range(args.rollouts))
            logits += args.lr * grad / (args.rollouts * args.hours)
            mean = float(np.mean(returns))
            gap = mean - base
            gaps.append(gap)
            if it % args.print_every == 0 or it == args.iterations - 1:
                print(f"{it:>4} {snapshot.step:>6} {mean:>12.1f} {base:>12.1f} {gap:>+10.1f}", flush=True)
            # The live world goes on under the policy; the next fork is of its new state.
            play(world, None, logits, args.hours, rng)
    fifth = max(1, len(gaps) // 5)
    early, late = float(np.mean(gaps[:fifth])), float(np.mean(gaps[-fifth:]))
    print(f"mean gap to the uniform policy: first fifth {early:+.1f}, last fifth {late:+.1f}")


if __name__ == "__main__":
    main()
