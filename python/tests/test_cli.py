"""The command line runs in-process from the package, and as the `perennial` console script."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perennial import _core


def test_cli_runs_in_process_with_the_clis_exit_codes(tmp_path, worlds_dir, capfd):
    assert _core.cli(["check", str(worlds_dir / "cartpole.toml")]) == 0
    assert "ok" in capfd.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text("[world]\nkind = \"nowhere\"\n")
    assert _core.cli(["check", str(bad)]) == 2
    assert "bad.toml" in capfd.readouterr().err


def test_the_console_script_runs_a_world_and_writes_its_trace(tmp_path, worlds_dir):
    script = shutil.which("perennial", path=str(Path(sys.executable).parent))
    assert script is not None, "pip install ./python installs the perennial console script"
    trace = tmp_path / "t.jsonl"
    proc = subprocess.run(
        [script, "run", str(worlds_dir / "cartpole.toml"), "--steps", "50", "--trace", str(trace)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(trace.read_text().splitlines()) == 50 or "episode" in proc.stdout


def test_agents_lists_what_the_cli_accepts_for_each_world(tmp_path, worlds_dir, capfd):
    import perennial

    pole = perennial.agents("perennial/CartPole-v1")
    store = perennial.agents("warehouse.toml")
    assert pole[:3] == store[:3] == ["random", "actor-critic", "ppo"]
    assert "balance" in pole and "base-stock" not in pole
    assert {"base-stock", "adaptive-base-stock", "oracle"} <= set(store)
    # The CLI's own list of valid agents, in its error for an unknown one, is the same.
    assert _core.cli(["run", str(worlds_dir / "cartpole.toml"), "--agent", "nobody", "--steps", "1"]) == 2
    err = capfd.readouterr().err
    assert err.strip().endswith("use one of: " + ", ".join(pole)), err
    with pytest.raises(perennial.WorldFileError):
        perennial.agents(tmp_path / "missing.toml")


def test_the_sweep_finds_the_console_script_beside_an_unactivated_interpreter(monkeypatch):
    # `.venv/bin/python script.py` without activating: the script is not on PATH.
    from perennial.sweep import _program

    monkeypatch.delenv("PERENNIAL_BIN", raising=False)
    monkeypatch.setenv("PATH", "")
    found = Path(_program())
    assert found.parent == Path(sys.executable).parent and found.name == "perennial"
    assert subprocess.run([str(found), "--help"], capture_output=True).returncode == 0
