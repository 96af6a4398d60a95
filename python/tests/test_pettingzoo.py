"""perennial.parallel_env: the enterprise world's roles as a PettingZoo ParallelEnv."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")
from pettingzoo.test import parallel_api_test  # noqa: E402

import perennial  # noqa: E402

ROLES = ["warehouse", "logistics"]


def _enterprise_with_alpha(tmp_path, alpha):
    text = perennial.shipped_worlds()["enterprise.toml"].replace("alpha = 1.0", f"alpha = {alpha}")
    path = tmp_path / f"enterprise-alpha{alpha}.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("observe", [None, "own", "full"])
def test_parallel_api_test_passes(observe):
    env = perennial.parallel_env("perennial/Enterprise-v0", seed=0, observe=observe)
    assert isinstance(env, pettingzoo.ParallelEnv)
    # The test only warns about agents given too little or too much: a warning fails here.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(env, num_cycles=1000)


def test_agents_spaces_and_state():
    env = perennial.parallel_env("perennial/Enterprise-v0", seed=0)
    full = perennial.parallel_env("perennial/Enterprise-v0", seed=0, observe="full")
    assert env.possible_agents == ROLES
    for agent in ROLES:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent) is env.action_space(agent)
        # Each role sees a strict part of the state unless told to see it all.
        assert env.observation_space(agent).shape[0] < env.state_space.shape[0]
        assert full.observation_space(agent).shape == env.state_space.shape
    # Index 0 is each role's no-op; the two tables multiply to the joint action's size.
    joint = perennial.make("perennial/Enterprise-v0").action_space.n
    assert env.action_space("warehouse").n * env.action_space("logistics").n == joint
    with pytest.raises(ValueError, match="reset"):
        env.state()
    obs, infos = env.reset()
    assert set(obs) == set(infos) == set(ROLES) and env.agents == ROLES
    state = env.state()
    assert env.state_space.contains(state)
    full_obs, _ = full.reset()
    for agent in ROLES:
        np.testing.assert_array_equal(full_obs[agent], state)
        assert env.observation_space(agent).contains(obs[agent])


def _run(actions, **options):
    env = perennial.parallel_env("perennial/Enterprise-v0", **options)
    obs, infos = env.reset()
    seen = [(obs, infos)]
    for a in actions:
        seen.append(env.step(a))
        assert env.agents == ROLES
    return seen


def test_same_seed_and_actions_give_the_same_run():
    env = perennial.parallel_env("perennial/Enterprise-v0")
    rng = np.random.default_rng(7)
    actions = [
        {agent: int(rng.integers(env.action_space(agent).n)) for agent in ROLES} for _ in range(1000)
    ]
    first, second = _run(actions, seed=3), _run(actions, seed=3)
    other = _run(actions[:50], seed=4)
    assert len(first) == len(second) == 1001
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            if isinstance(next(iter(x.values())), np.ndarray):
                for agent in ROLES:
                    np.testing.assert_array_equal(x[agent], y[agent])
            else:
                assert x == y
    rewards = lambda run: [step[1] for step in run[1:51]]  # noqa: E731
    assert rewards(first) != rewards(other)


def test_an_unknown_agent_key_is_a_value_error_and_changes_nothing():
    env = perennial.parallel_env("perennial/Enterprise-v0", seed=0)
    env.reset()
    before = env.state()
    with pytest.raises(ValueError, match="'purchasing'"):
        env.step({"warehouse": 0, "purchasing": 1})
    with pytest.raises(ValueError, match="logistics"):
        env.step({"warehouse": 0, "logistics": env.action_space("logistics").n})
    with pytest.raises(ValueError, match="integer"):
        env.step({"warehouse": "reorder"})
    np.testing.assert_array_equal(env.state(), before)
    assert env._run.counters()[0] == 0


def test_a_missing_agent_takes_its_noop_flagged_in_its_infos():
    actions = [{"warehouse": 5} for _ in range(20)]
    flagged = _run(actions, seed=1)
    explicit = _run([{**a, "logistics": 0} for a in actions], seed=1)
    for (o1, r1, _, _, i1), (o2, r2, _, _, i2) in zip(flagged[1:], explicit[1:]):
        assert i1["logistics"].pop("missing_action") is True
        assert "missing_action" not in i1["warehouse"]
        assert i1 == i2 and r1 == r2
        for agent in ROLES:
            np.testing.assert_array_equal(o1[agent], o2[agent])


def test_role_rewards_partition_the_team_reward(tmp_path):
    env = perennial.parallel_env("perennial/Enterprise-v0", seed=2)
    env.reset()
    for _ in range(500):
        obs, rewards, _, _, infos = env.step({a: env.action_space(a).sample() for a in env.agents})
        assert all(env.observation_space(a).contains(obs[a]) for a in ROLES)
        team = infos["warehouse"]["team_reward"]
        own = sum(infos[a]["own_reward"] for a in ROLES)
        assert abs(own - team) <= 1e-9 * max(abs(team), 1.0)
        # alpha = 1 (the shipped file): every role learns from the team reward.
        assert all(rewards[a] == team for a in ROLES)
        assert all(infos[a]["team_reward"] == team for a in ROLES)
        assert all("time" not in key for a in ROLES for key in infos[a])


def test_alpha_zero_gives_each_role_its_own_reward(tmp_path):
    env = perennial.parallel_env(_enterprise_with_alpha(tmp_path, 0.0), seed=2)
    half = perennial.parallel_env(_enterprise_with_alpha(tmp_path, 0.5), seed=2)
    env.reset(), half.reset()
    for _ in range(200):
        actions = {a: env.action_space(a).sample() for a in ROLES}
        _, rewards, _, _, infos = env.step(actions)
        _, mixed, _, _, _ = half.step(actions)
        team = infos["warehouse"]["team_reward"]
        for a in ROLES:
            assert rewards[a] == infos[a]["own_reward"]
            assert mixed[a] == pytest.approx(0.5 * team + 0.5 * infos[a]["own_reward"], rel=1e-12, abs=1e-12)


def test_max_steps_truncates_every_role_together():
    env = perennial.parallel_env("perennial/Enterprise-v0", seed=0, max_steps=5)
    env.reset()
    for step in range(1, 6):
        _, _, terminations, truncations, _ = env.step({})
        assert not any(terminations.values())
        assert truncations == {a: step == 5 for a in ROLES}
    assert env.agents == []
    with pytest.raises(ValueError, match="reset"):
        env.step({})
    env.reset()
    assert env.agents == ROLES
    with pytest.raises(ValueError, match="max_steps"):
        perennial.parallel_env("perennial/Enterprise-v0", max_steps=0)


def test_a_world_without_roles_and_a_bad_observe_are_value_errors():
    with pytest.raises(ValueError, match="enterprise"):
        perennial.parallel_env("perennial/Warehouse-v0")
    with pytest.raises(ValueError, match="observe"):
        perennial.parallel_env("perennial/Enterprise-v0", observe="some")


def test_the_trace_has_one_row_per_hour_with_the_team_reward(tmp_path):
    trace = tmp_path / "roles.jsonl"
    env = perennial.parallel_env("perennial/Enterprise-v0", seed=0, trace=trace, notify="flag")
    env.reset()
    team = []
    for _ in range(30):
        _, _, _, _, infos = env.step({a: env.action_space(a).sample() for a in ROLES})
        team.append(infos["logistics"]["team_reward"])
    env.close()
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [r["reward"] for r in rows] == pytest.approx(team, rel=1e-12, abs=1e-12)
    assert rows[0]["notify"] == "flag"


def test_a_pickled_copy_is_a_fresh_env_with_the_same_options():
    env = perennial.parallel_env("perennial/Enterprise-v0", seed=5, observe="full", max_steps=3)
    copy = pickle.loads(pickle.dumps(env))
    assert copy.possible_agents == ROLES and copy.max_steps == 3
    assert copy.observation_space("warehouse").shape == env.state_space.shape
    a, _ = env.reset()
    b, _ = copy.reset()
    np.testing.assert_array_equal(a["logistics"], b["logistics"])


def test_recorded_transitions_match_the_cli_trace_for_the_same_seed_and_actions(run_cli, worlds_dir, tmp_path):
    # The CLI's roles agents pick the actions; the Python env replays them from its trace.
    cli = tmp_path / "cli.jsonl"
    run_cli(
        "run", worlds_dir / "enterprise.toml", "--agent", "warehouse=random,logistics=random",
        "--seed", "3", "--steps", "300", "--record-transitions", "--trace", cli, "--notify", "flag",
    )
    cli_rows = [json.loads(line) for line in cli.read_text().splitlines()]
    py = tmp_path / "py.jsonl"
    env = perennial.parallel_env(
        "perennial/Enterprise-v0", seed=3, trace=py, record_transitions=True, notify="flag"
    )
    obs, _ = env.reset()
    for row in cli_rows:
        # Each row holds the observation the action was chosen from: the one the env gave.
        for agent in ROLES:
            np.testing.assert_array_equal(np.asarray(row["obs"][agent], dtype=np.float32), obs[agent])
        obs, _, _, _, _ = env.step(row["action"])
    env.close()
    py_rows = [json.loads(line) for line in py.read_text().splitlines()]
    assert len(py_rows) == len(cli_rows) == 300
    identity = ("run_id", "algorithm_id")
    for a, b in zip(py_rows, cli_rows):
        assert {k: v for k, v in a.items() if k not in identity} == {k: v for k, v in b.items() if k not in identity}
    assert set(py_rows[0]["action"]) == set(py_rows[0]["obs"]) == set(ROLES)
