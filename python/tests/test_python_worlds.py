"""Worlds written in Python: ``perennial.wrap``, ``kind = "python"`` world files and
``python -m perennial``, with the scheduler, trace, events and metrics of any world."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import perennial

REPO = Path(__file__).resolve().parents[2]
WORLDS = REPO / "worlds" / "python"

TWO_GRAVITIES = dict(
    regimes={"earth": {"gravity": 9.8}, "heavy": {"gravity": 15.0}},
    schedule={"plan": "cycle", "labels": ["earth", "heavy"], "every": 1000},
)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _events(trace: Path) -> list[dict]:
    return perennial.load_events(trace)


def _python_cli(*args, cwd, check=True, env_extra=None):
    env = dict(os.environ)
    env.pop("PERENNIAL_BIN", None)  # runs of a sweep go through `python -m perennial run`
    env.update(env_extra or {})
    proc = subprocess.run(
        [sys.executable, "-m", "perennial", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _drive(env, steps: int, seed: int = 0):
    """Random actions with auto-reset; records gravity after every step."""
    rng = np.random.default_rng(seed)
    env.reset()
    gravity = []
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
        gravity.append(env.unwrapped.gravity)
        if terminated or truncated:
            env.reset()
    return gravity


def test_a_wrapped_gymnasium_cartpole_shifts_mid_episode_and_scores_one_interval_per_occurrence(tmp_path):
    trace = tmp_path / "wrapped.jsonl"
    env = perennial.wrap(gym.make("CartPole-v1"), seed=3, trace=trace, **TWO_GRAVITIES)
    assert isinstance(env, gym.Env) and isinstance(env.unwrapped, gym.envs.classic_control.CartPoleEnv)
    gravity = _drive(env, 10_000)
    env.close()

    rows = _rows(trace)
    assert len(rows) == 10_000
    shifts = [e for e in _events(trace) if e["event"] == "regime_shift"]
    assert [e["step"] for e in shifts] == list(range(1000, 10_000, 1000))
    by_step = {r["step"]: r for r in rows}
    # The shift lands inside an episode: the episode step goes on across it.
    mid = [e for e in shifts if by_step[e["step"]]["episode_step"] > 0]
    assert mid, "no shift landed mid-episode"
    for e in mid:
        before, at = by_step[e["step"] - 1], by_step[e["step"]]
        assert at["episode"] == before["episode"]
        assert at["episode_step"] == before["episode_step"] + 1
    # The env's own attribute changes at the shift steps.
    for e in shifts:
        want = 15.0 if e["to_regime"] == "heavy" else 9.8
        assert gravity[e["step"]] == want
        assert gravity[e["step"] - 1] != want
    report = perennial.evaluate(trace)
    intervals = report["runs"][0]["intervals"]
    assert len(intervals) == 10
    assert [i["regime"] for i in intervals] == ["earth", "heavy"] * 5


def test_the_same_world_as_a_file_through_python_m_perennial_run_gives_the_same_shifts(tmp_path):
    world = tmp_path / "cartpole-two.toml"
    world.write_text(
        perennial.world_text(**TWO_GRAVITIES).replace(
            'kind = "python"', 'kind = "python"\nentry_point = "CartPole-v1"'
        )
    )
    trace = tmp_path / "file.jsonl"
    _python_cli("run", world, "--steps", 10_000, "--auto-reset", "--trace", trace, cwd=tmp_path)
    rows = _rows(trace)
    assert len(rows) == 10_000
    shifts = [e["step"] for e in _events(trace) if e["event"] == "regime_shift"]
    assert shifts == list(range(1000, 10_000, 1000))
    assert any(r["episode_step"] > 0 for r in rows if r["step"] in set(shifts))
    scored = _python_cli("eval", trace, "--json", cwd=tmp_path)
    assert len(json.loads(scored.stdout)["runs"][0]["intervals"]) == 10


GRAVITY_LOG = """
from gymnasium.envs.classic_control import CartPoleEnv


class LoggedCartPole(CartPoleEnv):
    \"\"\"CartPole that logs the gravity each step is taken under.\"\"\"

    def __init__(self, log):
        super().__init__()
        self._log_path, self._log = log, None

    def step(self, action):
        if self._log is None:
            self._log = open(self._log_path, "a")
        self._log.write(f"{self.gravity}\\n")
        self._log.flush()
        return super().step(action)
"""


def test_a_python_world_file_sets_the_envs_gravity_at_the_shift_steps(tmp_path):
    (tmp_path / "gravity_log.py").write_text(GRAVITY_LOG)
    world = tmp_path / "logged.toml"
    world.write_text(
        perennial.world_text(**TWO_GRAVITIES).replace(
            'kind = "python"',
            'kind = "python"\nentry_point = "gravity_log:LoggedCartPole"\n\n[world.params]\nlog = "gravity.txt"',
        )
    )
    trace = tmp_path / "logged.jsonl"
    _python_cli("run", world, "--steps", 10_000, "--auto-reset", "--trace", trace, cwd=tmp_path)
    gravity = [float(g) for g in (tmp_path / "gravity.txt").read_text().split()]
    assert len(gravity) == 10_000
    rows = _rows(trace)
    shifts = [e for e in _events(trace) if e["event"] == "regime_shift"]
    assert [e["step"] for e in shifts] == list(range(1000, 10_000, 1000))
    for e in shifts:
        want = 15.0 if e["to_regime"] == "heavy" else 9.8
        assert gravity[e["step"]] == want and gravity[e["step"] - 1] != want
    assert any(rows[e["step"]]["episode_step"] > 0 for e in shifts), "no shift landed mid-episode"
    intervals = perennial.evaluate(trace)["runs"][0]["intervals"]
    assert [i["regime"] for i in intervals] == ["earth", "heavy"] * 5


@pytest.mark.parametrize("name", ["cartpole.toml", "mountain-car.toml", "acrobot.toml"])
def test_the_shipped_python_worlds_run_and_pass_both_checkers(tmp_path, name):
    path = WORLDS / name
    env = perennial.make(path, seed=0)
    gym_check_env(env, skip_render_check=True)
    report = perennial.check_env(path, steps=300)
    assert "shift-ends-no-episode" in report["passed"]
    trace = tmp_path / "t.jsonl"
    _python_cli("run", path, "--steps", 3000, "--trace", trace, cwd=tmp_path)
    assert len(_rows(trace)) == 3000


def test_a_wrapped_env_passes_gymnasiums_checker_and_perennials_contract():
    env = perennial.wrap(gym.make("CartPole-v1"), **TWO_GRAVITIES)
    gym_check_env(env, skip_render_check=True)
    report = perennial.check_env(lambda: gym.make("CartPole-v1"), steps=300)
    assert set(report["passed"]) >= {"reset-is-deterministic", "reset-destroys", "restore-gives-same-future"}


def test_the_custom_world_example_runs_and_passes_the_contract(tmp_path):
    example = REPO / "python" / "examples" / "custom_world.py"
    trace = tmp_path / "thermostat.jsonl"
    proc = subprocess.run(
        [sys.executable, str(example), "--steps", "4000", "--trace", str(trace)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 4
    sys.path.insert(0, str(example.parent))
    try:
        import custom_world
    finally:
        sys.path.pop(0)
    perennial.check_env(custom_world.Thermostat, steps=300)


class _GlobalRandom(gym.Env):
    """Breaks reset-is-deterministic: draws from numpy's global stream, not its seed."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.array([np.random.uniform(-1, 1)], dtype=np.float32), {}

    def step(self, action):
        return np.array([np.random.uniform(-1, 1)], dtype=np.float32), 0.0, False, False, {}


class _EndsOnShift(gym.Env):
    """Breaks shift-ends-no-episode: a changed `level` terminates the episode."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.level = 1.0
        self._seen = 1.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._seen = self.level
        return np.array([self.level], dtype=np.float32), {}

    def step(self, action):
        ended = self.level != self._seen
        return np.array([self.level], dtype=np.float32), 0.0, ended, False, {}


@pytest.mark.parametrize(
    "world, rule",
    [(_GlobalRandom, "reset-is-deterministic"), (_EndsOnShift, "shift-ends-no-episode")],
)
def test_the_contract_checker_names_the_broken_rule(world, rule):
    with pytest.raises(perennial.ContractError) as e:
        perennial.check_env(world, steps=50)
    assert e.value.rule == rule


def _world_file(tmp_path, body: str) -> Path:
    path = tmp_path / "w.toml"
    path.write_text(body)
    return path


def test_an_entry_point_that_does_not_import_names_the_file_line_and_field(tmp_path):
    path = _world_file(tmp_path, '[world]\nkind = "python"\nentry_point = "no_such_module:Env"\n')
    with pytest.raises(perennial.WorldFileError) as e:
        perennial.make(path)
    assert e.value.line == 3 and e.value.field == "world.entry_point"
    assert "no_such_module" in str(e.value) and "does not import" in str(e.value)


def test_a_class_that_is_not_a_gymnasium_env_is_refused(tmp_path):
    path = _world_file(tmp_path, '[world]\nkind = "python"\nentry_point = "collections:OrderedDict"\n')
    with pytest.raises(perennial.WorldFileError) as e:
        perennial.make(path)
    assert e.value.field == "world.entry_point" and "not a gymnasium.Env" in str(e.value)


def test_a_condition_naming_a_missing_attribute_names_its_line(tmp_path):
    body = '[world]\nkind = "python"\nentry_point = "CartPole-v1"\n\n[[regimes]]\nlabel = "x"\nconditions = { gravty = 3.0 }\n'
    with pytest.raises(perennial.WorldFileError) as e:
        perennial.make(_world_file(tmp_path, body))
    assert e.value.line == 7 and "gravty" in e.value.field and "gravity" in str(e.value)
    with pytest.raises(perennial.WorldFileError):
        perennial.wrap(gym.make("CartPole-v1"), regimes={"x": {"gravty": 3.0}})


def test_values_of_the_wrong_type_are_refused_at_load(tmp_path):
    # A string where a number goes, and a fraction for an int attribute (Acrobot's
    # `book_or_nips` is a str, MountainCar's `goal_velocity` an int).
    body = '[world]\nkind = "python"\nentry_point = "CartPole-v1"\n\n[[regimes]]\nlabel = "x"\nconditions = { gravity = "high" }\n'
    with pytest.raises(perennial.WorldFileError) as e:
        perennial.make(_world_file(tmp_path, body))
    assert e.value.line == 7
    with pytest.raises(perennial.WorldFileError) as e:
        perennial.wrap(gym.make("MountainCar-v0"), regimes={"x": {"goal_velocity": 0.5}})
    assert "whole number" in str(e.value)


class _Raises(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == 40:
            raise ZeroDivisionError("the model blew up")
        return np.zeros(1, dtype=np.float32), 1.0, False, False, {}


def test_a_world_whose_step_raises_names_the_step_and_keeps_the_rows(tmp_path):
    trace = tmp_path / "raises.jsonl"
    env = perennial.wrap(_Raises(), trace=trace)
    env.reset()
    for _ in range(39):
        env.step(0)
    with pytest.raises(RuntimeError) as e:
        env.step(0)
    assert "step 39" in str(e.value) and "ZeroDivisionError: the model blew up" in str(e.value)
    env.close()
    assert len(_rows(trace)) == 39


def test_a_killed_python_world_run_resumes_to_the_uninterrupted_trace(tmp_path):
    world = WORLDS / "cartpole.toml"
    steps = 60_000
    whole, part = tmp_path / "whole.jsonl", tmp_path / "part.jsonl"
    ck = tmp_path / "ck.json"
    common = ["--steps", steps, "--run-id", "r", "--checkpoint-every", 2000]
    _python_cli("run", world, *common, "--trace", whole, "--checkpoint", tmp_path / "w.json", cwd=tmp_path)
    env = dict(os.environ)
    env.pop("PERENNIAL_BIN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "perennial", "run", str(world), *map(str, common),
         "--trace", str(part), "--checkpoint", str(ck)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if ck.exists() and part.exists() and part.stat().st_size > 0:
                break
            time.sleep(0.02)
        proc.kill()
    finally:
        proc.wait(timeout=30)
    _python_cli("run", "--resume", ck, cwd=tmp_path)
    assert part.read_bytes() == whole.read_bytes()


def test_the_perennial_binary_says_how_to_run_a_python_world(run_cli):
    proc = run_cli("check", WORLDS / "cartpole.toml", check=False)
    assert proc.returncode == 2
    assert "python -m perennial" in proc.stderr


def test_a_sweep_over_two_wrapped_gymnasium_worlds_and_two_seeds_runs_and_scores(tmp_path):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        "[sweep]\n"
        'name = "python-worlds"\n'
        f'worlds = ["{WORLDS / "cartpole.toml"}", "{WORLDS / "mountain-car.toml"}"]\n'
        'agents = ["random"]\n'
        "seeds = [0, 1]\n"
        "steps = 3000\n"
        'format = "jsonl"\n'
    )
    out = tmp_path / "out"
    _python_cli("sweep", sweep, "--out", out, "--jobs", 2, cwd=tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["runs"]) == 4
    assert all(r["status"] == "done" for r in manifest["runs"])
    report = json.loads((out / "eval.json").read_text())
    assert len(report["runs"]) == 4


def test_a_wrapped_env_snapshot_restores_the_same_future_in_another_env():
    def make():
        return perennial.wrap(gym.make("CartPole-v1"), seed=5, **TWO_GRAVITIES)

    env = make()
    env.reset()
    for _ in range(300):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()
    snap = pickle.loads(pickle.dumps(env.snapshot()))
    actions = np.random.default_rng(1).integers(0, 2, size=200)

    def future(e):
        out = []
        for a in actions:
            obs, reward, terminated, truncated, _ = e.step(int(a))
            out.append((np.asarray(obs).tobytes(), reward, terminated, truncated, e.unwrapped.gravity))
            if terminated or truncated:
                e.reset()
        return out

    other = make()
    other.reset()
    other.restore(snap)
    assert future(other) == future(env)


class _Evil:
    """Unpickling this runs code: what a forged saved state could hold."""

    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_a_saved_state_not_tagged_with_this_users_key_is_refused_and_never_unpickled(tmp_path, monkeypatch):
    from perennial._adapter import PythonWorldError, WorldAdapter

    monkeypatch.chdir(tmp_path)
    adapter = WorldAdapter(gym.make("CartPole-v1"))
    adapter.reset(0)
    good = adapter.save()
    forged = good[:32] + pickle.dumps(_Evil())
    with pytest.raises(PythonWorldError, match="not written by this user"):
        adapter.load(forged)
    assert not (tmp_path / "pwned").exists()
    adapter.load(good)  # its own saved state loads
