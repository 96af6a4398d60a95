"""Ray Tune over perennial runs: one `perennial run` per trial, metrics reported per window.

Each trial runs one agent on one seed of a world (the trial's config) as a `perennial run`
process and, every `window` steps of its trace, scores the trace so far with
`perennial eval --json` and hands Tune the run's metrics with `tune.report`: the mean
reward per step so far, the mean reward of the regime in force, and the number of steps.
Tune can then stop bad trials early (ASHA) or simply compare them; the traces stay under
`out/` for `perennial eval` or a sweep's `--collect` afterwards.

Reading the output: Tune's table, one row per trial (agent, seed) with its last
`mean_reward` and `steps`; the best trial's config is printed at the end.

Run it with the package installed (`pip install "perennial[ray]" "ray[tune]"`) or with
`PERENNIAL_BIN` pointing at the `perennial` executable:

    python python/examples/tune_sweep.py --world worlds/warehouse.toml --steps 20000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def perennial_program() -> str:
    return os.environ.get("PERENNIAL_BIN") or shutil.which("perennial") or "perennial"


def rows_in(trace: Path) -> int:
    try:
        with open(trace, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 16), b""))
    except FileNotFoundError:
        return 0


def score(program: str, trace: Path) -> dict:
    """The run's metrics from `perennial eval --json` on the trace so far."""
    proc = subprocess.run(
        [program, "eval", str(trace), "--json"], capture_output=True, text=True, check=True
    )
    run = json.loads(proc.stdout)["runs"][0]
    last = run["intervals"][-1]
    total = sum(c["mean_reward"] * c["steps"] for c in run["configurations"].values())
    return {
        "steps": run["steps"],
        "mean_reward": total / run["steps"],
        "regime": last["regime"],
        "regime_mean_reward": last["mean_reward"],
    }


def trial(config: dict) -> None:
    """A Tune function trainable: one perennial run, reported every `window` steps."""
    from ray import tune

    program = config["program"]
    out = Path(config["out"])
    out.mkdir(parents=True, exist_ok=True)
    run_id = f"{config['task']}-{config['agent']}-seed{config['seed']}"
    trace = out / f"{run_id}.jsonl"
    proc = subprocess.Popen(
        [program, "run", config["world"], "--agent", config["agent"], "--seed",
         str(config["seed"]), "--steps", str(config["steps"]), "--run-id", run_id,
         "--trace", str(trace)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        reported = 0
        while True:
            finished = proc.poll() is not None
            rows = rows_in(trace)
            if rows >= reported + config["window"] or (finished and rows > reported):
                reported = rows
                tune.report(score(program, trace))
            if finished:
                break
            time.sleep(0.2)
        if proc.returncode != 0:
            raise RuntimeError(f"perennial run {run_id} failed: {proc.stderr.read().strip()}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", default="worlds/warehouse.toml")
    parser.add_argument("--task", default="warehouse", help="the world's task id (names runs)")
    parser.add_argument("--agents", nargs="+", default=["random", "base-stock", "adaptive-base-stock"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--window", type=int, default=5_000)
    parser.add_argument("--out", default="runs/tune")
    parser.add_argument("--num-cpus", type=int, default=None)
    args = parser.parse_args()

    import ray
    from ray import tune

    ray.init(num_cpus=args.num_cpus, include_dashboard=False)
    try:
        tuner = tune.Tuner(
            trial,
            param_space={
                "program": os.path.abspath(perennial_program()),
                "world": os.path.abspath(args.world),
                "task": args.task,
                "agent": tune.grid_search(args.agents),
                "seed": tune.grid_search(list(range(args.seeds))),
                "steps": args.steps,
                "window": args.window,
                "out": os.path.abspath(args.out),
            },
            tune_config=tune.TuneConfig(metric="mean_reward", mode="max"),
            run_config=tune.RunConfig(storage_path=os.path.abspath(os.path.join(args.out, "tune")), verbose=1),
        )
        results = tuner.fit()
        if results.errors:
            print(f"{len(results.errors)} trial(s) failed: {results.errors[0]}", file=sys.stderr)
            return 1
        best = results.get_best_result()
        print(f"best: agent {best.config['agent']} seed {best.config['seed']}: "
              f"mean reward per step {best.metrics['mean_reward']:.4f} over {best.metrics['steps']} steps")
        return 0
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
