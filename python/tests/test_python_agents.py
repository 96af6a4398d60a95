"""``python -m perennial run WORLD --agent module:Class``: Python agents run through the
run core, with the trace, events table and manifest of any run, and clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import perennial

REPO = Path(__file__).resolve().parents[2]
CARTPOLE = REPO / "worlds" / "cartpole.toml"
PY_CARTPOLE = REPO / "worlds" / "python" / "cartpole.toml"

AGENTS = textwrap.dedent(
    '''
    import json

    import numpy as np


    class Replay:
        """Acts the actions of a recorded trace, and logs its windows' lengths."""

        algorithm_id = "random"

        def __init__(self, action_space, observation_space, actions, log):
            self.actions = [json.loads(line)["action"] for line in open(actions)]
            self.log, self.t = log, 0
            assert action_space.n == 2 and observation_space.shape == (4,)

        def act(self, obs):
            assert obs.dtype == np.float32 and obs.shape == (4,)
            self.t += 1
            return self.actions[self.t - 1]

        def update(self, window):
            assert set(window) == {"obs", "actions", "rewards", "terminated", "truncated", "next_obs"}
            n = len(window["rewards"])
            assert window["obs"].shape == (n, 4) and window["next_obs"].shape == (n, 4)
            with open(self.log, "a") as f:
                f.write(f"{n}\\n")


    class Alternate:
        def __init__(self, action_space, observation_space, bad_at=-1, raise_at=-1):
            self.t, self.bad_at, self.raise_at = 0, bad_at, raise_at

        def act(self, obs):
            self.t += 1
            if self.t - 1 == self.raise_at:
                raise ZeroDivisionError("the policy blew up")
            if self.t - 1 == self.bad_at:
                return 7
            return self.t % 2


    class NoAct:
        def __init__(self, action_space, observation_space):
            pass
    '''
)


def _cli(*args, cwd, check=True):
    env = dict(os.environ)
    env.pop("PERENNIAL_BIN", None)
    proc = subprocess.run(
        [sys.executable, "-m", "perennial", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=300, env=env,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def agents(tmp_path):
    (tmp_path / "my_agents.py").write_text(AGENTS)
    return tmp_path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_python_agent_writes_the_trace_events_and_manifest_a_rust_run_writes(agents):
    common = ["--seed", 3, "--steps", 2500, "--auto-reset", "--run-id", "r", "--record-transitions"]
    rust = agents / "rust.jsonl"
    _cli("run", CARTPOLE, "--agent", "random", *common, "--trace", rust, cwd=agents)
    py = agents / "py.jsonl"
    log = agents / "windows.txt"
    out = _cli(
        "run", CARTPOLE, "--agent", "my_agents:Replay", *common, "--trace", py,
        "--window-steps", 1000, "--agent-opt", f'actions="{rust}"', "--agent-opt", f'log="{log}"',
        cwd=agents,
    )
    assert py.read_bytes() == rust.read_bytes()
    events = lambda t: t.with_name(t.stem + ".events.jsonl").read_bytes()  # noqa: E731
    assert events(py) == events(rust)
    # update() got every window, the last partial one at the end.
    assert log.read_text().split() == ["1000", "1000", "500"]
    manifest = json.loads((agents / "py.manifest.json").read_text())
    assert manifest["agent"] == "my_agents:Replay"
    assert manifest["exit_status"] == "completed" and manifest["steps_done"] == 2500
    assert manifest["options"]["steps"] == 2500 and manifest["options"]["auto_reset"] is True
    assert manifest["world_file"]["hash"] == json.loads((agents / "rust.manifest.json").read_text())["world_file"]["hash"]
    assert "score it:  perennial eval" in out.stdout


def test_a_python_agent_in_a_python_world_shifts_mid_episode_and_scores(agents):
    trace = agents / "t.jsonl"
    _cli("run", PY_CARTPOLE, "--agent", "my_agents:Alternate", "--steps", 10_000, "--trace", trace, cwd=agents)
    rows = _rows(trace)
    assert len(rows) == 10_000 and rows[0]["algorithm_id"] == "Alternate"
    shifts = [e["step"] for e in perennial.load_events(trace) if e["event"] == "regime_shift"]
    assert shifts == list(range(2000, 10_000, 2000))
    report = perennial.evaluate(trace)
    assert [i["regime"] for i in report["runs"][0]["intervals"]] == ["earth", "heavy", "earth", "weak_push", "earth"]


def test_the_default_run_id_and_trace_follow_perennial_run(agents):
    out = _cli("run", CARTPOLE, "--agent", "my_agents:Alternate", "--steps", 300, "--auto-reset", "--seed", 4, cwd=agents)
    trace = agents / "runs" / "cartpole-Alternate-seed4.jsonl"
    assert len(_rows(trace)) == 300
    assert str(trace) in out.stdout


@pytest.mark.parametrize(
    "agent, opts, step, says",
    [
        ("no_such_module:Agent", [], None, "module `no_such_module` cannot be imported"),
        ("my_agents:Missing", [], None, "has no `Missing`"),
        ("my_agents:NoAct", [], None, "`NoAct` has no method `act"),
        ("my_agents:Alternate", ["--agent-opt", "bad_at=50"], 50, "step 50: invalid action 7"),
        ("my_agents:Alternate", ["--agent-opt", "raise_at=40"], 40, "step 40: agent my_agents:Alternate raised ZeroDivisionError in act: the policy blew up"),
    ],
)
def test_bad_agents_are_clear_errors_and_keep_the_rows(agents, agent, opts, step, says):
    trace = agents / "bad.jsonl"
    proc = _cli("run", CARTPOLE, "--agent", agent, *opts, "--steps", 400, "--auto-reset", "--trace", trace, cwd=agents, check=False)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and agent in proc.stderr
    if step is None:
        assert not trace.exists()
        return
    rows = _rows(trace)
    assert len(rows) == step and rows[-1]["step"] == step - 1
    manifest = json.loads((agents / "bad.manifest.json").read_text())
    assert manifest["exit_status"].startswith("failed: ") and says in manifest["exit_status"]
    assert manifest["steps_done"] == step
    perennial.evaluate(trace)  # the rows written stay a readable trace


@pytest.mark.parametrize("flag", [["--checkpoint-every", "100"], ["--resume", "x.json"]])
def test_flags_that_do_not_apply_to_a_python_agent_are_refused(agents, flag):
    proc = _cli("run", CARTPOLE, "--agent", "my_agents:Alternate", *flag, cwd=agents, check=False)
    assert proc.returncode == 2
    assert flag[0] in proc.stderr and "Python agent" in proc.stderr


def test_other_flags_reach_the_run(agents):
    trace = agents / "t.csv"
    _cli(
        "run", CARTPOLE, "--agent", "my_agents:Alternate", "--steps", 50, "--format", "csv",
        "--trace", trace, "--notify", "flag", cwd=agents,
    )
    lines = trace.read_text().splitlines()
    assert len(lines) == 51
    proc = _cli("run", CARTPOLE, "--agent", "my_agents:Alternate", "--trace", agents / "t.jsonl", "--format", "csv", cwd=agents, check=False)
    assert proc.returncode == 2 and "the extension says jsonl" in proc.stderr
