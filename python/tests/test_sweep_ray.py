"""perennial.sweep and perennial.bench: the Ray backend writes the traces, manifest and eval
(the bench results) the local backend writes, on a local Ray that leaves nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from perennial import bench
from perennial.sweep import sweep

REPO = Path(__file__).resolve().parents[2]


def _sweep_file(folder: Path, agents: str = '"random", "actor-critic"') -> Path:
    path = folder / "small.toml"
    worlds = ", ".join(f'"{REPO / "worlds" / w}"' for w in ("cartpole-drift.toml", "warehouse.toml"))
    path.write_text(
        "[sweep]\n"
        'name = "small"\n'
        f"worlds = [{worlds}]\n"
        f"agents = [{agents}]\n"
        "seeds = { from = 0, count = 2 }\n"
        "steps = 1500\n"
        "checkpoint_every = 400\n"
    )
    return path


def _traces(out: Path) -> dict:
    # The run manifests beside the traces hold wall-clock times, and their lock files the
    # pid that held them; compare the traces only.
    return {
        p.name: p.read_bytes()
        for p in sorted((out / "traces").iterdir())
        if not p.name.endswith((".manifest.json", ".lock"))
    }


@pytest.fixture
def program(monkeypatch) -> str:
    given = os.environ.get("PERENNIAL_BIN") or str(REPO / "target" / "release" / "perennial")
    if not Path(given).is_file():
        pytest.fail(f"the perennial CLI is not at {given}: run `cargo build --release` or set PERENNIAL_BIN")
    monkeypatch.setenv("PERENNIAL_BIN", given)
    return given


def _processes_mentioning(text: str) -> list:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append((entry.name, cmdline))
    return found


@pytest.fixture
def local_ray(monkeypatch):
    """A local Ray with 2 CPUs whose files all stay in a short temp folder; shut down at the
    end, and checked to leave no process behind."""
    ray = pytest.importorskip("ray")
    # Ray's socket paths must stay under ~100 characters: its temp dir is a short folder.
    ray_tmp = tempfile.mkdtemp(prefix="pr-", dir="/tmp")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    try:
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=ray_tmp, log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()
        deadline = time.monotonic() + 30
        while _processes_mentioning(ray_tmp) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _processes_mentioning(ray_tmp) == []
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_the_ray_backend_writes_the_local_backends_traces_and_leaves_no_process(tmp_path, program, local_ray):
    file = _sweep_file(tmp_path)
    local = sweep(file, backend="local", out=tmp_path / "local", jobs=2)
    assert [r["status"] for r in local["runs"]] == ["done"] * 8

    remote = sweep(file, backend="ray", out=tmp_path / "ray")
    assert [r["status"] for r in remote["runs"]] == ["done"] * 8
    assert all(r["exit_code"] == 0 for r in remote["runs"])
    assert _traces(tmp_path / "ray") == _traces(tmp_path / "local")
    # Each run's trace and the events table beside it.
    files = _traces(tmp_path / "ray")
    assert len(files) == 16
    assert sum(".events." in name for name in files) == 8
    groups = json.loads((tmp_path / "ray" / "eval.json").read_text())["groups"]
    assert sorted((g["task"], g["algorithm_id"]) for g in groups) == [
        ("cartpole", "actor-critic"), ("cartpole", "random"),
        ("warehouse", "actor-critic"), ("warehouse", "random"),
    ]
    assert (tmp_path / "ray" / "plot.svg").is_file()


def test_a_run_whose_ray_worker_dies_is_retried_from_its_checkpoint(tmp_path, program, local_ray):
    file = tmp_path / "one.toml"
    file.write_text(
        "[sweep]\n"
        'name = "one"\n'
        f'worlds = ["{REPO / "worlds" / "warehouse.toml"}"]\n'
        'agents = ["random"]\n'
        "seeds = [5]\n"
        "steps = 60000\n"
        "checkpoint_every = 1000\n"
    )
    local = tmp_path / "local"
    sweep(file, backend="local", out=local)

    out = tmp_path / "ray"
    checkpoint = out / "checkpoints" / "warehouse-random-seed5.ckpt.json"
    outcome: dict = {}

    def drive() -> None:
        try:
            outcome["manifest"] = sweep(file, backend="ray", out=out)
        except BaseException as e:  # handed to the test thread
            outcome["error"] = e

    driver = threading.Thread(target=drive)
    driver.start()
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and driver.is_alive() and time.monotonic() < deadline:
        if checkpoint.is_file():
            for pid, cmdline in _processes_mentioning(str(out / "traces")):
                if " run " in f" {cmdline}":
                    worker = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                    os.kill(worker, signal.SIGKILL)
                    killed = worker
                    break
        time.sleep(0.02)
    driver.join(timeout=180)
    assert killed is not None, "the run finished before its worker could be killed"
    assert "error" not in outcome, outcome.get("error")
    assert [r["status"] for r in outcome["manifest"]["runs"]] == ["done"]
    log = (out / "logs" / "warehouse-random-seed5.log").read_text()
    assert "--resume" in log, log
    assert _traces(out) == _traces(local)


def test_an_agent_a_world_cannot_run_raises_value_error_before_anything_runs(tmp_path, program):
    file = _sweep_file(tmp_path, agents='"random", "no-such-agent"')
    with pytest.raises(ValueError, match=r"small.toml:4: field `sweep.agents\[1\]`"):
        sweep(file, out=tmp_path / "out", jobs=2)
    assert not (tmp_path / "out").exists()


def test_a_bad_sweep_file_raises_value_error_naming_line_and_field(tmp_path, program):
    file = _sweep_file(tmp_path)
    file.write_text(file.read_text().replace("steps = 1500", "steps = 0"))
    with pytest.raises(ValueError, match=r"small.toml:6: field `sweep.steps`"):
        sweep(file, out=tmp_path / "out")


def test_the_ray_backend_without_ray_says_what_to_install(tmp_path, program, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"perennial\[ray\]"):
        sweep(_sweep_file(tmp_path), backend="ray", out=tmp_path / "out")


def test_bench_on_ray_writes_the_results_files_the_local_backend_writes(tmp_path, program, local_ray):
    smoke = dict(agent="ppo", seeds=2, steps=2000)
    local = bench.run(["cartpole-drift"], out=tmp_path / "local", jobs=2, **smoke)
    remote = bench.run(["cartpole-drift"], out=tmp_path / "ray", backend="ray", **smoke)
    assert [p.name for p in remote] == [p.name for p in local] == ["cartpole-drift.none.ppo.json"]
    assert remote[0].read_bytes() == local[0].read_bytes()
    results = json.loads(remote[0].read_text())
    assert results["smoke"] is True and results["seeds"] == [0, 1] and results["steps"] == 2000
    # ppo has a network: its end-of-run plasticity is in the results.
    assert all("dormant_fraction" in r["plasticity"] for r in results["runs"])
    # Every run of the references and the agent is recorded done in its sweep's manifest.
    for sweep_dir in (tmp_path / "ray" / "runs" / "cartpole-drift" / "none").iterdir():
        manifest = json.loads((sweep_dir / "manifest.json").read_text())
        assert [r["status"] for r in manifest["runs"]] == ["done", "done"], sweep_dir

    # Again on Ray: everything is done, so nothing runs and the results stay as they are.
    again = bench.run(["cartpole-drift"], out=tmp_path / "ray", backend="ray", **smoke)
    assert again[0].read_bytes() == local[0].read_bytes()

    # The command line, joining the same Ray.
    address = local_ray.get_runtime_context().gcs_address
    cli = subprocess.run(
        [sys.executable, "-m", "perennial", "bench", "run", "cartpole-drift", "--agent", "ppo",
         "--seeds", "2", "--steps", "2000", "--out", str(tmp_path / "cli"),
         "--backend", "ray", "--address", address],
        capture_output=True, text=True, timeout=600,
    )
    assert cli.returncode == 0, cli.stderr
    assert "mean score" in cli.stdout
    written = tmp_path / "cli" / "results" / "cartpole-drift.none.ppo.json"
    assert written.read_bytes() == local[0].read_bytes()


def test_bench_refuses_a_bad_backend_or_jobs_on_ray_before_anything_runs(tmp_path, program):
    with pytest.raises(ValueError, match="backend"):
        bench.run(["cartpole-drift"], agent="ppo", out=tmp_path / "out", backend="slurm")
    with pytest.raises(ValueError, match="jobs"):
        bench.run(["cartpole-drift"], agent="ppo", out=tmp_path / "out", backend="ray", jobs=2)
    with pytest.raises(ValueError, match="no suite `no-such-suite`"):
        bench.run(["no-such-suite"], agent="ppo", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
