#!/usr/bin/env python3
"""The expected-reward bound of the enterprise worlds, checked: validity, tightness, separation.

For every world file given (default: the two shipped enterprise worlds and their -async
variants), every agent and every seed, runs `perennial run` for HOURS hours, then scores
each agent's traces with `perennial eval --json --floor <random's traces>` and prints three
Markdown tables:

1. Validity: per world and regime, the bound and each agent's highest interval mean
   (over seeds and the regime's intervals). A cell is marked `!` when that mean exceeds
   the bound by more than 3 standard errors (the standard error of an interval mean is
   its block means' population std over sqrt(blocks), blocks of `window_steps`).
2. Tightness: per regime, the oracle's mean reward (over seeds) as a share of the bound.
3. Separation: per regime, the mean `normalized_gap` (bound - mean_r) / (bound - floor)
   of the oracle, base-stock and random (floor: random's interval on the same seed), and
   whether the oracle is 0.1 below base-stock and below random.

With `--grid`, the tuned grid of `examples/regime_separation.rs` is checked too: each
regime's tuned policy, held in its regime, must not earn more than the bound.

Usage (from the repository root, after `cargo build --release`):

    python3 scripts/bound_table.py --seeds 5 --hours 20000 --out runs/bound
    python3 scripts/bound_table.py --seeds 3 --hours 20000 --agents oracle base-stock random

Traces already in --out are reused, so an interrupted table resumes.
"""

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

WORLDS = ["warehouse", "logistics", "warehouse-async", "logistics-async"]
AGENTS = ["oracle", "base-stock", "adaptive-base-stock", "random", "ppo"]


def run_agent(args, world, agent, seed):
    trace = Path(args.out) / f"{world}-{agent}-seed{seed}.jsonl"
    if not trace.exists():
        tmp = trace.with_suffix(".partial.jsonl")
        cmd = [args.bin, "run", f"worlds/{world}.toml", "--agent", agent, "--seed", str(seed),
               "--steps", str(args.hours), "--trace", str(tmp)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        tmp.rename(trace)
        events = tmp.with_name(tmp.name.replace(".jsonl", ".events.jsonl"))
        if events.exists():
            events.rename(trace.with_name(trace.name.replace(".jsonl", ".events.jsonl")))
    return trace


def evaluate(args, traces, floors):
    cmd = [args.bin, "eval", *map(str, traces), "--json", "--window", str(args.window)]
    if floors:
        cmd += ["--floor", *map(str, floors)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["runs"]


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def fmt(v, digits=2):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def grid_scores(world):
    """Each regime's tuned policy's profit per hour in its own regime, from the example."""
    out = Path(f"/tmp/bound-grid-{world}.json")
    if not out.exists():
        subprocess.run(["cargo", "run", "--release", "--example", "regime_separation", "--",
                        "--world", f"worlds/{world}.toml", "--json", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
    data = json.loads(out.read_text())
    return {label: data["profit"][i][i] for i, label in enumerate(data["labels"])}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default="target/release/perennial")
    p.add_argument("--worlds", nargs="+", default=WORLDS)
    p.add_argument("--agents", nargs="+", default=AGENTS)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--hours", type=int, default=20000)
    p.add_argument("--window", type=int, default=256, help="the eval's window_steps")
    p.add_argument("--out", default="runs/bound")
    p.add_argument("--grid", action="store_true", help="also check the tuned grid")
    args = p.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    agents = list(dict.fromkeys(["random", *args.agents]))

    validity, tightness, separation = [], [], []
    failures = 0
    for world in args.worlds:
        traces = {a: [run_agent(args, world, a, s) for s in range(args.seeds)] for a in agents}
        reports = {a: evaluate(args, traces[a], traces["random"]) for a in agents}
        # A stochastic schedule may leave a regime out of a seed's run.
        order = [i["regime"] for run in reports[agents[0]] for i in run["intervals"]]
        labels = list(dict.fromkeys(order))
        grid = grid_scores(world) if args.grid and not world.endswith("-async") else {}
        for label in labels:
            bounds = [r["configurations"][label].get("bound")
                      for r in reports[agents[0]] if label in r["configurations"]]
            bound = mean(b for b in bounds if b is not None)
            row = [world, label, fmt(bound)]
            for a in agents:
                worst, worst_z = -math.inf, -math.inf
                for run in reports[a]:
                    for i in run["intervals"]:
                        if i["regime"] != label or i.get("bound") is None:
                            continue
                        blocks = max(i["steps"] // args.window, 1)
                        se = i["stability_std"] / math.sqrt(blocks)
                        excess = i["mean_reward"] - i["bound"]
                        z = excess / se if se > 0 else (math.inf if excess > 0 else -math.inf)
                        worst = max(worst, i["mean_reward"])
                        worst_z = max(worst_z, z)
                bad = worst_z > 3.0
                failures += bad
                row.append(fmt(worst) + (" !" if bad else ""))
            if grid:
                g = grid.get(label)
                bad = g is not None and g > bound
                failures += bad
                row.append(fmt(g) + (" !" if bad else ""))
            validity.append(row)
            if "oracle" in reports:
                oracle = mean(r["configurations"][label]["mean_reward"]
                              for r in reports["oracle"] if label in r["configurations"])
                tightness.append([world, label, fmt(bound), fmt(oracle), fmt(oracle / bound, 3)])
            gaps = {a: mean(r["configurations"][label]["normalized_gap"] for r in reports[a]
                            if r["configurations"].get(label, {}).get("normalized_gap") is not None)
                    for a in ("oracle", "base-stock", "random") if a in reports}
            if len(gaps) == 3:
                vs_bs = gaps["base-stock"] - gaps["oracle"]
                vs_rand = gaps["random"] - gaps["oracle"]
                separation.append([world, label, fmt(gaps["oracle"], 3), fmt(gaps["base-stock"], 3),
                                   fmt(gaps["random"], 3), fmt(vs_bs, 3),
                                   "yes" if vs_bs >= 0.1 else "no",
                                   "yes" if vs_rand > 0 else "no"])

    def table(head, rows):
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        print()

    print(f"{args.seeds} seeds, {args.hours} hours per run\n")
    print("Validity: the highest interval mean of each agent (`!`: above the bound by more "
          "than 3 standard errors)\n")
    table(["world", "regime", "bound", *agents, *(["tuned grid"] if args.grid else [])], validity)
    if tightness:
        print("Tightness: the oracle's mean reward as a share of the bound\n")
        table(["world", "regime", "bound", "oracle mean_r", "share"], tightness)
    if separation:
        print("Separation: mean normalized_gap = (bound - mean_r) / (bound - random's mean_r)\n")
        table(["world", "regime", "oracle", "base-stock", "random", "base-stock - oracle",
               ">= 0.1", "oracle < random"], separation)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
