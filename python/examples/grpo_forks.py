"""GRPO on forks of the warehouse, offline: generate, group, advantage, update.

A small stochastic policy, a softmax over a few base-stock settings (the target stock
level a simple base-stock controller orders up to; uniform at first), plays ``K``
rollouts of ``H`` hours forked from one saved state of a live warehouse
(``perennial.fork``), each rollout at a target drawn from the policy. The rollouts meet the
same demand, failures and delays, so their returns differ only by the targets.
``perennial.export_episodes(..., advantage="grpo")`` groups the K traces as one fork (task
``<task>@s<step>``) and gives each rollout its GRPO advantage; the policy moves towards
the targets of the rollouts that beat their group (REINFORCE weighted by the advantages).
The live world then runs on ``H`` hours at the policy's likeliest target, and the next
iteration forks its new state.

Each printed line: the iteration, the saved step, the policy's mean return over its K
rollouts, the mean return of the starting policy (every target once) on the same fork,
the gap, and the policy's probabilities. The last line compares the mean gap over the
first and the last fifth of the iterations. The horizon matters: with ``--hours 24`` the
policy learns never to reorder (a reorder is paid now and sells later), with a week
(the default) a small stock level. About 5 seconds in release:

    python python/examples/grpo_forks.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

import perennial


#: The default warehouse's layout (worlds/warehouse.toml): SKUs, reorder buckets,
#: carriers, docks, the units one observation unit stands for, the reorder quantities.
SKUS, BUCKETS, CARRIERS, DOCKS, STOCK_SCALE = 8, 4, 3, 4, 100.0
QUANTITIES = [20, 50, 100, 200]
#: The settings the policy chooses among: base-stock target levels (units per SKU).
TARGETS = [0, 25, 50, 100, 200, 400, 800]


def base_stock(obs, target):
    """A base-stock controller: reorder the SKU furthest below ``target`` (inventory
    position = on hand + pipeline - backlog), else repair a broken dock, else no-op."""
    position = (obs[:SKUS] + obs[2 * SKUS : 3 * SKUS] - obs[3 * SKUS : 4 * SKUS]) * STOCK_SCALE
    short = target - position
    s = int(np.argmax(short))
    if short[s] >= QUANTITIES[0]:
        b = max(i for i, q in enumerate(QUANTITIES) if q <= short[s])
        return 1 + s * BUCKETS + b
    docks = obs[4 * SKUS : 4 * SKUS + DOCKS]
    broken = [d for d in range(DOCKS) if docks[d] < 0.5]
    if broken:
        return 1 + SKUS * BUCKETS + CARRIERS + SKUS + broken[0]
    return 0


def softmax(logits):
    p = np.exp(logits - logits.max())
    return p / p.sum()


def play(env, obs, target, hours):
    """Plays ``hours`` steps of base-stock at ``target`` from ``obs``; returns the return."""
    total = 0.0
    for _ in range(hours):
        obs, reward, terminated, truncated, _ = env.step(base_stock(obs, target))
        total += reward
        if terminated or truncated:
            obs, _ = env.reset()
    return total, obs


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
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--rollouts", type=int, default=8, help="K, rollouts per fork")
    parser.add_argument("--hours", type=int, default=168, help="H, hours per rollout")
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--print-every", type=int, default=10)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    world = perennial.make("perennial/Warehouse-v0", seed=args.seed)
    obs, _ = world.reset()
    logits = np.zeros(len(TARGETS))
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'iter':>4} {'step':>6} {'policy':>10} {'uniform':>10} {'gap':>9}  P(target)")
        gaps = []
        for it in range(args.iterations):
            snapshot = world.unwrapped.snapshot()
            probs = softmax(logits)
            # Generate: K rollouts from one saved state, each at a target drawn from the policy.
            envs = perennial.fork(
                world,
                args.rollouts,
                trace=f"{tmp}/it{it}-rollout-{{k}}.jsonl",
                record_transitions=True,
            )
            picks = rng.choice(len(TARGETS), size=args.rollouts, p=probs)
            returns = []
            for env, pick in zip(envs, picks):
                returns.append(play(env, snapshot.observation, TARGETS[pick], args.hours)[0])
                env.close()
            # The starting policy (every target alike) on the same fork.
            uniform = float(
                np.mean(
                    [
                        play(env, snapshot.observation, TARGETS[i % len(TARGETS)], args.hours)[0]
                        for i, env in enumerate(perennial.fork(world, len(TARGETS)))
                    ]
                )
            )
            # Group and advantage: one fork, one group.
            traces = [f"{tmp}/it{it}-rollout-{k}.jsonl" for k in range(args.rollouts)]
            adv = grpo_advantages(traces, f"{tmp}/it{it}-episodes.jsonl")
            # Update: REINFORCE on the choice of target, weighted by the GRPO advantages.
            grad = sum(adv[k] * (np.eye(len(TARGETS))[picks[k]] - probs) for k in range(args.rollouts))
            logits += args.lr * grad / args.rollouts
            mean = float(np.mean(returns))
            gaps.append(mean - uniform)
            if it % args.print_every == 0 or it == args.iterations - 1:
                shown = " ".join(f"{t}:{p:.2f}" for t, p in zip(TARGETS, softmax(logits)))
                print(f"{it:>4} {snapshot.step:>6} {mean:>10.1f} {uniform:>10.1f} {mean - uniform:>+9.1f}  {shown}", flush=True)
            # The live world goes on under the policy's likeliest target; the next fork is
            # of its new state.
            _, obs = play(world, obs, TARGETS[int(np.argmax(logits))], args.hours)
    fifth = max(1, len(gaps) // 5)
    early, late = float(np.mean(gaps[:fifth])), float(np.mean(gaps[-fifth:]))
    print(f"mean gap to the uniform policy: first fifth {early:+.1f}, last fifth {late:+.1f}")


if __name__ == "__main__":
    main()
