"""The run options are declared once (``perennial.RunOptions``) and every env takes them the
same way: an unknown one is a TypeError that names it and lists the ones there are."""

import gymnasium as gym
import pytest

import perennial


@pytest.mark.parametrize(
    "build",
    [
        lambda: perennial.parallel_env("perennial/Enterprise-v0", sead=1),
        lambda: perennial.wrap(gym.make("CartPole-v1"), sead=1),
    ],
)
def test_an_unknown_run_option_is_named_with_the_ones_there_are(build):
    with pytest.raises(TypeError) as e:
        build()
    assert "'sead'" in str(e.value)
    assert "seed, trace, run_id, algorithm_id" in str(e.value)


def test_the_envs_record_the_same_run_options(tmp_path):
    options = dict(seed=4, run_id="opts", algorithm_id="mine", notify="flag")
    single = perennial.make("perennial/Warehouse-v0", trace=tmp_path / "a.jsonl", **options)
    roles = perennial.parallel_env("perennial/Enterprise-v0", trace=tmp_path / "b.jsonl", **options)
    for env in (single, roles):
        assert env.notify == "flag"
    single.reset()
    single.step(0)
    single.close()
    roles.reset()
    roles.step({agent: 0 for agent in roles.agents})
    roles.close()
    import json

    for name in ("a.jsonl", "b.jsonl"):
        row = json.loads((tmp_path / name).read_text().splitlines()[0])
        assert (row["run_id"], row["seed"], row["algorithm_id"], row["notify"]) == ("opts", 4, "mine", "flag")
    # Every field of RunOptions is a keyword both take.
    fields = [f for f in perennial.RunOptions.__dataclass_fields__]
    assert fields == ["seed", "trace", "run_id", "algorithm_id", "record_transitions", "trace_format",
                      "reveal_regime", "notify", "part_seconds"]
