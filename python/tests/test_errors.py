"""Bad input becomes a Python exception with the core crate's message; no panic crosses."""

from __future__ import annotations

import numpy as np
import pytest

import perennial


def test_an_action_outside_the_space_is_a_value_error_that_changes_nothing():
    env = perennial.make("perennial/CartPole-v1", seed=0)
    env.reset()
    before = env.unwrapped._run.counters()
    for bad in (2, -1, 10**30, "left", 0.5, None):
        with pytest.raises(ValueError, match="invalid action"):
            env.step(bad)
    assert env.unwrapped._run.counters() == before
    obs, *_ = env.step(np.int64(1))
    assert obs.shape == (4,)


def test_negative_actions_name_the_space_as_other_invalid_actions_do():
    env = perennial.make("perennial/CartPole-v1", seed=0)
    env.reset()
    for bad in (2, -1, 2**70, np.uint64(2**64 - 1)):
        with pytest.raises(ValueError, match=r"outside the action space Discrete\(2\); the world is unchanged"):
            env.step(bad)
    vec = perennial.make_vec("perennial/CartPole-v1", num_envs=2)
    vec.reset(seed=0)
    for bad in ([0, 2], [0, -1]):
        with pytest.raises(ValueError, match=r"copy 1: invalid action (2|-1): it is outside the action space Discrete\(2\)"):
            vec.step(np.array(bad))


def test_stepping_before_reset_or_after_the_end_is_a_value_error():
    env = perennial.make("perennial/CartPole-v1", seed=0)
    with pytest.raises(ValueError, match="before reset"):
        env.step(0)
    env.reset()
    while True:
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            break
    with pytest.raises(ValueError, match="after the episode ended"):
        env.step(0)
    env.reset()
    env.step(0)


def test_a_bad_world_file_raises_world_file_error_naming_file_line_and_field(tmp_path):
    world = tmp_path / "bad.toml"
    world.write_text('[world]\nkind = "cartpole"\n[world.params]\ngravity = -3.0\n\n[[regimes]]\nlabel = "a"\n')
    with pytest.raises(perennial.WorldFileError) as caught:
        perennial.make(world)
    err = caught.value
    assert isinstance(err, ValueError)
    assert err.file == str(world)
    assert err.line == 4
    assert err.field is not None and "gravity" in err.field
    assert str(world) in str(err) and "gravity" in str(err)


def test_a_missing_world_file_raises_world_file_error(tmp_path):
    with pytest.raises(perennial.WorldFileError, match="nothing.toml"):
        perennial.make(tmp_path / "nothing.toml")


def test_bad_options_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="seed"):
        perennial.make("perennial/CartPole-v1", seed=-1)
    with pytest.raises(ValueError, match="trace format"):
        perennial.make("perennial/CartPole-v1", trace=tmp_path / "t.xlsx")
    with pytest.raises(ValueError, match="render"):
        perennial.make("perennial/CartPole-v1", render_mode="human")
    with pytest.raises(TypeError):
        perennial.make("perennial/CartPole-v1", gravity=3.0)
    with pytest.raises(ValueError, match="not a manual"):
        perennial.make("perennial/CartPoleDrift-v0").shift("earth")


def test_seeds_and_copy_counts_outside_their_range_are_value_errors():
    env = perennial.make("perennial/CartPole-v1", seed=2**64 - 1)
    for bad in (-1, 2**64, 1.5, True, "3"):
        with pytest.raises(ValueError, match="a seed is an integer from 0 to 2\\*\\*64 - 1"):
            env.reset(seed=bad)
    with pytest.raises(ValueError, match="a run seed is an integer"):
        perennial.make("perennial/CartPole-v1", seed=2**64)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="num_envs"):
            perennial.make_vec("perennial/CartPole-v1", num_envs=bad)
    vec = perennial.make_vec("perennial/CartPole-v1", num_envs=3)
    # Copy i runs with seed s + i: the last copy's seed must fit in 64 bits too.
    assert vec.reset(seed=2**64 - 3)[0].shape == (3, 4)
    with pytest.raises(ValueError, match="2\\*\\*64 - 3"):
        vec.reset(seed=2**64 - 2)


def test_a_closed_traced_env_refuses_more_steps_and_keeps_its_trace(tmp_path):
    path = tmp_path / "t.jsonl"
    env = perennial.make("perennial/CartPole-v1", seed=0, trace=path)
    env.reset()
    for _ in range(5):
        env.step(0)
    env.close()
    # Steps after close would not be recorded: they are refused, and the trace is whole.
    for call in (lambda: env.step(0), lambda: env.reset()):
        with pytest.raises(ValueError, match="the env is closed"):
            call()
    env.close()
    assert len(path.read_text().splitlines()) == 5
    # Without a trace there is nothing to lose: the env goes on, as Gymnasium's do.
    untraced = perennial.make("perennial/CartPole-v1", seed=0)
    untraced.reset()
    untraced.close()
    assert untraced.step(0)[0].shape == (4,)


def test_reseeding_a_traced_run_after_it_wrote_rows_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    env = perennial.make("perennial/CartPole-v1", seed=0, trace=path)
    env.reset(seed=4)
    env.step(0)
    with pytest.raises(ValueError, match="one run with one seed"):
        env.reset(seed=5)
    env.close()
    assert '"seed":4' in path.read_text()


def test_evaluate_and_export_report_bad_traces_as_value_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n{}\n")
    with pytest.raises(ValueError, match="bad.jsonl"):
        perennial.evaluate(bad)
    with pytest.raises(ValueError):
        perennial.evaluate(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="advantage"):
        perennial.export_episodes(bad, tmp_path / "out.jsonl", advantage="ppo")


def test_stepping_an_ended_copy_says_how_to_reset_it_from_python():
    vec = perennial.make_vec("perennial/CartPole-v1", num_envs=2, autoreset_mode="disabled")
    vec.reset(seed=0)
    done = np.zeros(2, dtype=bool)
    while not done.any():
        _, _, terminated, truncated, _ = vec.step(np.zeros(2, dtype=np.int64))
        done = terminated | truncated
    copy = int(np.flatnonzero(done)[0])
    with pytest.raises(ValueError, match=rf'copy {copy}: its episode has ended.*reset_mask.*mask\[{copy}\]') as err:
        vec.step(np.zeros(2, dtype=np.int64))
    assert "reset_copy" not in str(err.value)
    vec.reset(options={"reset_mask": done})
    vec.step(np.zeros(2, dtype=np.int64))


def test_a_vector_of_a_trillion_copies_is_refused_before_any_allocation():
    for n in (10**12, 2**70):
        with pytest.raises(ValueError, match=rf"num_envs={n}: a vector holds at most 1048576 copies"):
            perennial.make_vec("perennial/CartPole-v1", num_envs=n)
