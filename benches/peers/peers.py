"""The peers' side of benches/peers/compare.sh: CartPole-v1 env-steps/s in Gymnasium and EnvPool.

Every workload takes uniformly random actions sampled inside the timed loop and resets each
episode when the env ends it: the single env by `reset()`, the vector envs by their own
autoreset (next-step, the default of both). A short untimed warm-up runs first, then each
workload runs --repeats times (default 5) and the median time is reported, as
examples/peer_workload.rs does for perennial.

    python benches/peers/peers.py run --steps 1000000 --repeats 5   # one line per workload
    python benches/peers/peers.py table RESULTS_FILE                # the comparison table

`run` prints `NAME ENV_STEPS steps MEDIAN_SECONDS s`, or `NAME unavailable REASON` for a workload
whose library is missing (EnvPool has no wheel for some Pythons and platforms).
"""

import argparse
import sys
import time
import warnings

SEED = 0


def median(timed, repeats):
    """The median of `repeats` calls of `timed`, each returning seconds."""
    secs = sorted(timed() for _ in range(max(repeats, 1)))
    return secs[len(secs) // 2]


def gymnasium_single(steps, repeats):
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.action_space.seed(SEED)
    env.reset(seed=SEED)

    def timed(n):
        env.reset(seed=SEED)
        start = time.perf_counter()
        for _ in range(n):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        return time.perf_counter() - start

    timed(max(steps // 50, 1))
    return steps, median(lambda: timed(steps), repeats)


def gymnasium_vector(num_envs, steps, repeats):
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    env = CartPoleVectorEnv(num_envs=num_envs)
    env.action_space.seed(SEED)
    batches = -(-steps // num_envs)

    def timed(n):
        env.reset(seed=SEED)
        start = time.perf_counter()
        for _ in range(n):
            env.step(env.action_space.sample())
        return time.perf_counter() - start

    timed(max(batches // 50, 1))
    return batches * num_envs, median(lambda: timed(batches), repeats)


def envpool_vector(num_envs, steps, repeats):
    import envpool
    import numpy as np

    env = envpool.make(
        "CartPole-v1",
        env_type="gymnasium",
        num_envs=num_envs,
        batch_size=num_envs,
        num_threads=1,
        seed=SEED,
    )
    rng = np.random.default_rng(SEED)
    batches = -(-steps // num_envs)

    def timed(n):
        env.reset()
        start = time.perf_counter()
        for _ in range(n):
            env.step(rng.integers(0, 2, size=num_envs, dtype=np.int32))
        return time.perf_counter() - start

    timed(max(batches // 50, 1))
    return batches * num_envs, median(lambda: timed(batches), repeats)


WORKLOADS = {
    "gymnasium_single": gymnasium_single,
    "gymnasium_vector_4096": lambda steps, repeats: gymnasium_vector(4096, steps, repeats),
    "envpool_64": lambda steps, repeats: envpool_vector(64, steps, repeats),
    "envpool_4096": lambda steps, repeats: envpool_vector(4096, steps, repeats),
}


def run(steps, repeats):
    for name, workload in WORKLOADS.items():
        try:
            env_steps, secs = workload(steps, repeats)
        except ImportError as e:
            print(f"{name} unavailable {e}", flush=True)
            continue
        print(f"{name} {env_steps} steps {secs:.6f} s", flush=True)


def table(path):
    """The table of a results file; a workload listed several times (several rounds) gets
    the median of its times."""
    times, missing = {}, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[2] == "steps" and parts[4] == "s":
                times.setdefault(parts[0], (int(parts[1]), []))[1].append(float(parts[3]))
            elif len(parts) >= 2 and parts[1] == "unavailable" and parts[0] not in missing:
                missing.append(parts[0])
    rates = {name: (n, sorted(t)[len(t) // 2]) for name, (n, t) in times.items()}
    base = rates.get("gymnasium_single")
    print("| workload | env-steps | median seconds | runs | env-steps/s | vs gymnasium_single |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (n, secs) in rates.items():
        rate = n / secs
        ratio = f"{rate / (base[0] / base[1]):,.1f}x" if base else "n/a"
        runs = len(times[name][1])
        print(f"| {name} | {n:,} | {secs:.4f} | {runs} | {rate:,.0f} | {ratio} |")
    for name in missing:
        print(f"| {name} | unavailable | | | | |")

    def ratio(a, b):
        if a in rates and b in rates:
            ra, rb = (n / s for n, s in (rates[a], rates[b]))
            return f"{ra / rb:,.2f}x"
        return "n/a (a workload is missing)"

    print()
    print(f"perennial_single / gymnasium_single: {ratio('perennial_single', 'gymnasium_single')} (target >= 100x)")
    print(
        f"perennial_vec_4096 / gymnasium_vector_4096: {ratio('perennial_vec_4096', 'gymnasium_vector_4096')} (target >= 1.5x)"
    )
    print(f"perennial_vec_64 / envpool_64: {ratio('perennial_vec_64', 'envpool_64')}")
    print(f"perennial_vec_4096 / envpool_4096: {ratio('perennial_vec_4096', 'envpool_4096')}")


def main():
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="run every peer workload")
    run_p.add_argument("--steps", type=int, default=1_000_000, help="env-steps per workload")
    run_p.add_argument("--repeats", type=int, default=5, help="timed runs per workload")
    table_p = sub.add_parser("table", help="print the comparison table of a results file")
    table_p.add_argument("results")
    args = parser.parse_args()
    if args.command == "run":
        run(args.steps, args.repeats)
    else:
        table(args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
