"""`perennial eval`'s aggregate statistics agree with rliable's own functions.

Synthetic JSON Lines traces are written with known per-run, per-label scores (every row of a
label's interval carries the score as its reward, so the per-label mean reward is exactly
the score), evaluated with `perennial eval --json`, and the aggregate section is compared
with `rliable.metrics` on the same (runs x tasks) matrices: IQM, mean, median, optimality
gap and probability of improvement to 1e-9, and the stratified-bootstrap CIs of
`rliable.library` within bootstrap noise.

The binary is `$PERENNIAL_BIN`, else `target/release/perennial` in the repository.
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from rliable import library as rly
from rliable import metrics

ROOT = Path(__file__).resolve().parents[2]
ALGORITHMS = {"alpha": 0.0, "beta": 0.4, "gamma": 0.9}
LABELS = ["calm", "drought", "flood", "heat", "storm"]
RUNS = 10
ROWS_PER_INTERVAL = 2


def perennial_bin():
    return os.environ.get("PERENNIAL_BIN", str(ROOT / "target" / "release" / "perennial"))


def score_matrices():
    """Per algorithm a (runs x tasks) matrix; tasks in the order perennial sorts them."""
    rng = np.random.RandomState(20211207)
    return {
        name: shift + rng.standard_normal((RUNS, len(LABELS))) * np.linspace(0.5, 1.5, len(LABELS))
        for name, shift in ALGORITHMS.items()
    }


def write_trace(path, run_id, algorithm, seed, scores):
    with open(path, "w", encoding="utf-8") as f:
        step = 0
        for label, score in zip(LABELS, scores):
            for _ in range(ROWS_PER_INTERVAL):
                row = {
                    "run_id": run_id,
                    "seed": seed,
                    "algorithm_id": algorithm,
                    "task": "synthetic",
                    "step": step,
                    "episode": 0,
                    "episode_step": step,
                    "reward": float(score),
                    "components": {},
                    "payout": {},
                    "regime": label,
                    "regime_origin": "initial" if step == 0 else "scheduled",
                    "terminated": False,
                    "truncated": False,
                    "ceiling": None,
                }
                f.write(json.dumps(row) + "\n")
                step += 1


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rliable")
    matrices = score_matrices()
    paths = []
    for name, matrix in matrices.items():
        for run, scores in enumerate(matrix):
            path = folder / f"{name}-{run}.jsonl"
            write_trace(path, f"{name}-{run}", name, run, scores)
            paths.append(str(path))
    out = subprocess.run(
        [perennial_bin(), "eval", "--json", "--window", "1", *paths],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    return matrices, report["aggregate"]


def by_algorithm(aggregate):
    return {a["algorithm"]: a for a in aggregate["algorithms"]}


def test_the_task_columns_are_the_labels_in_order(evaluated):
    _, aggregate = evaluated
    assert aggregate["score"] == "mean_reward"
    assert aggregate["tasks"] == [f"synthetic/{label}" for label in LABELS]


def test_point_estimates_agree_with_rliable_to_1e_9(evaluated):
    matrices, aggregate = evaluated
    ours = by_algorithm(aggregate)
    for name, scores in matrices.items():
        a = ours[name]
        assert a["scores"] == scores.size
        assert a["iqm"]["estimate"] == pytest.approx(metrics.aggregate_iqm(scores), abs=1e-9)
        assert a["mean"]["estimate"] == pytest.approx(metrics.aggregate_mean(scores), abs=1e-9)
        assert a["median"]["estimate"] == pytest.approx(metrics.aggregate_median(scores), abs=1e-9)
        assert a["optimality_gap"]["estimate"] == pytest.approx(
            metrics.aggregate_optimality_gap(scores, 1.0), abs=1e-9
        )


def test_probability_of_improvement_agrees_with_rliable_to_1e_9(evaluated):
    matrices, aggregate = evaluated
    pairs = {(i["x"], i["y"]): i for i in aggregate["improvement"]}
    assert len(pairs) == len(ALGORITHMS) * (len(ALGORITHMS) - 1)
    for (x, y), entry in pairs.items():
        expected = metrics.probability_of_improvement(matrices[x], matrices[y])
        assert entry["tasks"] == len(LABELS)
        assert entry["probability"]["estimate"] == pytest.approx(expected, abs=1e-9)


def test_performance_profile_counts_scores_above_tau(evaluated):
    matrices, aggregate = evaluated
    for a in aggregate["algorithms"]:
        taus = np.array([p["tau"] for p in a["profile"]])
        expected = rly.create_performance_profile({"x": matrices[a["algorithm"]]}, taus, reps=10)[0]["x"]
        assert [p["fraction"] for p in a["profile"]] == pytest.approx(list(expected), abs=1e-12)


def close_within_noise(ours, theirs, width):
    """Two bootstrap CI bounds from different generators agree to a tenth of the CI width."""
    return abs(ours - theirs) <= 0.1 * width


def test_stratified_bootstrap_cis_agree_within_bootstrap_noise(evaluated):
    matrices, aggregate = evaluated
    ours = by_algorithm(aggregate)
    # IQM and mean only: each rliable bootstrap costs seconds.
    functions = {"iqm": metrics.aggregate_iqm, "mean": metrics.aggregate_mean}
    for name, scores in matrices.items():
        for key, f in functions.items():
            _, cis = rly.get_interval_estimates(
                {name: scores},
                lambda x, f=f: np.array([f(x)]),
                reps=2000,
                random_state=np.random.RandomState(0),
            )
            low, high = cis[name][0][0], cis[name][1][0]
            width = high - low
            mine = ours[name][key]
            assert close_within_noise(mine["ci_low"], low, width), (name, key, mine, low, high)
            assert close_within_noise(mine["ci_high"], high, width), (name, key, mine, low, high)


def test_probability_of_improvement_ci_agrees_within_bootstrap_noise(evaluated):
    matrices, aggregate = evaluated
    entry = next(i for i in aggregate["improvement"] if i["x"] == "gamma" and i["y"] == "alpha")
    _, cis = rly.get_interval_estimates(
        {"gamma,alpha": [matrices["gamma"], matrices["alpha"]]},
        lambda x, y: np.array([metrics.probability_of_improvement(x, y)]),
        # scipy's Mann-Whitney test per task and resample is slow: fewer resamples, still
        # well inside the tolerance.
        reps=500,
        random_state=np.random.RandomState(0),
    )
    low, high = cis["gamma,alpha"][0][0], cis["gamma,alpha"][1][0]
    width = high - low
    assert close_within_noise(entry["probability"]["ci_low"], low, width), (entry, low, high)
    assert close_within_noise(entry["probability"]["ci_high"], high, width), (entry, low, high)
