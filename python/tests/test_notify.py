"""Notification as a variable: ``info["notify"]`` on exactly the first step of a new regime,
as much as the level tells, and the level in the trace's identity."""

from __future__ import annotations

import json

import pytest

import perennial

WORLD = """[world]
kind = "cartpole"

[[regimes]]
label = "earth"

[[regimes]]
label = "heavy"
conditions = { gravity = 12.0, length = 0.8 }

[schedule]
plan = "cycle"
labels = ["earth", "heavy"]
every = 50
"""


def _world(tmp_path, notify=None):
    path = tmp_path / "world.toml"
    text = WORLD if notify is None else WORLD + f'\n[notify]\nlevel = "{notify}"\n'
    path.write_text(text)
    return str(path)


def _notifications(env, steps=160):
    """Steps the env with a balancing policy across episode ends; returns {step: info["notify"]}."""
    heard = {}
    obs, info = env.reset()
    assert "notify" not in info
    for step in range(steps):
        action = int(obs[2] + 0.5 * obs[3] > 0.0)
        obs, _, terminated, truncated, info = env.step(action)
        if "notify" in info:
            heard[step] = info["notify"]
        if terminated or truncated:
            obs, _ = env.reset()
    return heard


@pytest.mark.parametrize("level", ["flag", "delta", "label"])
def test_info_holds_the_notification_on_exactly_the_shift_steps(tmp_path, level):
    env = perennial.make(_world(tmp_path), seed=0, notify=level)
    assert env.unwrapped.notify == level
    heard = _notifications(env)
    assert sorted(heard) == [50, 100, 150]
    to_heavy = {"gravity": {"from": 9.8, "to": 12.0}, "length": {"from": 0.5, "to": 0.8}}
    to_earth = {k: {"from": v["to"], "to": v["from"]} for k, v in to_heavy.items()}
    for step, label, delta in [(50, "heavy", to_heavy), (100, "earth", to_earth), (150, "heavy", to_heavy)]:
        assert heard[step] == {
            "level": level,
            "step": step,
            "label": label if level == "label" else None,
            "delta": delta if level == "delta" else None,
        }


def test_level_none_and_the_default_never_put_notify_in_info(tmp_path):
    assert _notifications(perennial.make(_world(tmp_path), seed=0)) == {}
    assert _notifications(perennial.make(_world(tmp_path, "label"), seed=0, notify="none")) == {}


def test_the_world_files_level_is_the_default_and_is_written_in_the_trace(tmp_path):
    trace = tmp_path / "run.jsonl"
    env = perennial.make(_world(tmp_path, "delta"), seed=0, trace=str(trace))
    assert sorted(_notifications(env)) == [50, 100, 150]
    env.close()
    first = json.loads(trace.read_text().splitlines()[0])
    assert list(first)[:6] == ["run_id", "seed", "algorithm_id", "task", "notify", "step"]
    assert first["notify"] == "delta"
    report = perennial.evaluate([str(trace)])
    assert report["runs"][0]["notify"] == "delta"
    assert report["groups"][0]["notify"] == "delta"


def test_an_unknown_level_is_a_value_error_listing_the_levels(tmp_path):
    with pytest.raises(ValueError, match="use one of: none, flag, delta, label"):
        perennial.make(_world(tmp_path), notify="loud")
    with pytest.raises(perennial.WorldFileError, match="notify.level"):
        perennial.make(_world(tmp_path, "loud"))
