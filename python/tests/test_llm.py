"""perennial.llm: the enterprise world as tools for language-model agents."""

from __future__ import annotations

import gc
import inspect
import json
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest

import perennial
from perennial import llm

IDENTITY = re.compile(r'"(run_id|algorithm_id)":"[^"]*"')


def without_identity(text: str) -> list[str]:
    return [IDENTITY.sub('"\\1":""', line) for line in text.splitlines()]


def test_base_stock_decisions_as_tool_calls_leave_the_base_stock_trace(run_cli, worlds_dir, tmp_path):
    world = worlds_dir / "warehouse.toml"
    hours = 2_000
    cli = tmp_path / "cli.jsonl"
    run_cli(
        "run", world, "--seed", 11, "--steps", hours, "--agent", "base-stock",
        "--record-transitions", "--trace", cli,
    )
    actions = [json.loads(line)["action"] for line in cli.read_text().splitlines()]
    assert len(actions) == hours
    assert len(set(actions)) > 3, "base-stock must take several kinds of decisions"

    factory = llm.tool_env(world, seed=11, hours=hours, trace=tmp_path / "llm.jsonl", record_transitions=True)
    env = factory()
    prompt = env.reset()
    assert "Hour" in prompt
    for action in actions:
        name, arguments = llm.action_call(world, action)
        try:
            getattr(env, name)(**arguments)
        except ValueError as e:
            # A decision the world refuses is refused the same way for the numeric agent.
            assert str(e).startswith(("409", "503")), e
    assert env.done
    traces = [p for p in sorted(tmp_path.glob("llm-r*.jsonl")) if ".events." not in p.name]
    assert len(traces) == 1, traces
    assert without_identity(traces[0].read_text()) == without_identity(cli.read_text())
    rewards = [json.loads(line)["reward"] for line in cli.read_text().splitlines()]
    assert math.isclose(env.reward, sum(rewards), rel_tol=1e-9, abs_tol=1e-6)


def test_every_public_method_but_reset_is_a_tool_that_get_json_schema_accepts():
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    env = llm.tool_env("warehouse.toml", hours=4)()
    public = {name for name, _ in inspect.getmembers(env, predicate=inspect.ismethod) if not name.startswith("_")}
    assert public == {"reset", *llm._TOOL_NAMES}
    catalogue = {t["function"]["name"]: t["function"] for t in llm.tools("warehouse.toml")}
    for name in public - {"reset"}:
        schema = get_json_schema(getattr(env, name))["function"]
        assert schema["name"] == name
        assert schema["description"]
        want = catalogue[name]["parameters"]["properties"]
        assert set(schema["parameters"].get("properties", {})) == set(want)
        for arg, prop in schema["parameters"].get("properties", {}).items():
            assert prop.get("type"), (name, arg)
            assert prop.get("description"), (name, arg)
            allowed = [v for v in want[arg].get("enum", []) if v is not None]
            if allowed:
                assert prop.get("enum") == allowed, (name, arg)


def test_the_mcp_form_validates_as_mcp_tools_and_matches_the_openai_form():
    types = pytest.importorskip("mcp.types")
    mcp_tools = llm.tools("warehouse.toml", form="mcp")
    openai = {t["function"]["name"]: t["function"] for t in llm.tools("warehouse.toml")}
    assert [t["name"] for t in mcp_tools] == list(openai)
    for tool in mcp_tools:
        parsed = types.Tool.model_validate(tool)
        assert parsed.name == tool["name"]
        assert tool["inputSchema"] == openai[tool["name"]]["parameters"]
    for fn in openai.values():
        assert fn["strict"] is True
        params = fn["parameters"]
        assert params["additionalProperties"] is False
        assert sorted(params["required"]) == sorted(params["properties"])


def test_tools_follow_the_layout_and_refuse_other_worlds(tmp_path):
    logistics = {t["function"]["name"]: t["function"] for t in llm.tools("logistics.toml")}
    warehouse = {t["function"]["name"]: t["function"] for t in llm.tools("warehouse.toml")}
    assert set(logistics) == set(warehouse)
    with pytest.raises(ValueError, match="enterprise world"):
        llm.tools("cartpole.toml")
    with pytest.raises(ValueError, match="form"):
        llm.tools("warehouse.toml", form="anthropic")
    with pytest.raises(ValueError, match="enterprise world"):
        llm.call(perennial.make("cartpole.toml"), "wait", {"hours": 1})


def test_each_role_of_a_world_with_roles_gets_its_own_tools_as_strict_mcp_tools():
    types = pytest.importorskip("mcp.types")
    names = lambda tools: [t["function"]["name"] for t in tools]  # noqa: E731
    queries = ["query_inventory", "query_orders", "query_ledger", "query_carriers"]
    logistics = llm.tools("perennial/Enterprise-v0", role="logistics")
    assert names(logistics) == ["choose_carrier", "prioritize_sku", "hold_wave", "wait", *queries]
    assert names(llm.tools("enterprise.toml", role="warehouse")) == [
        "reorder", "expedite", "repair_dock", "wait", *queries
    ]
    by_name = {t["function"]["name"]: t["function"] for t in logistics}
    assert by_name["prioritize_sku"]["parameters"]["properties"]["sku"]["enum"] == list(range(8))
    assert by_name["hold_wave"]["parameters"] == {
        "type": "object", "properties": {}, "required": [], "additionalProperties": False
    }
    for tool in llm.tools("enterprise.toml", form="mcp", role="logistics"):
        assert types.Tool.model_validate(tool).name == tool["name"]
    with pytest.raises(ValueError, match="name one: warehouse, logistics"):
        llm.tools("enterprise.toml")
    with pytest.raises(ValueError, match="no role `sales`"):
        llm.tools("enterprise.toml", role="sales")
    with pytest.raises(ValueError, match="has no roles"):
        llm.tools("warehouse.toml", role="logistics")
    assert "hold_wave" not in names(llm.tools("warehouse.toml"))


def test_the_reply_table(tmp_path):
    env = perennial.make("warehouse.toml", seed=3)
    env.reset()
    ok = llm.call(env, "query_ledger", {})
    assert ok["status"] == 200 and ok["success"] and ok["error"] is None
    assert llm.call(env, "reorder", "[1, 2]")["status"] == 400
    assert llm.call(env, "reorder", "{not json")["status"] == 400
    missing = llm.call(env, "teleport", {})
    assert missing["status"] == 404 and "reorder" in missing["error"]
    bad = llm.call(env, "repair_dock", {"dock": 99})
    assert bad["status"] == 422 and "dock" in bad["error"]
    assert llm.call(env, "reorder", {"sku": 0})["status"] == 422
    assert llm.call(env, "reorder", {"sku": 0, "quantity": 20, "extra": 1})["status"] == 422
    works = llm.call(env, "repair_dock", {"dock": 0})
    assert works["status"] == 409 and "works" in works["error"]
    assert llm.counts(env)["invalid_calls"] == 4
    assert llm.counts(env)["malformed_calls"] == 2
    # The hour's calls run out: the call beyond them is refused and the hour passes.
    hour = env.unwrapped._run.counters()[0]
    replies = [llm.call(env, "query_ledger", {}) for _ in range(20)]
    assert [r["status"] for r in replies].count(409) >= 1
    assert env.unwrapped._run.counters()[0] > hour
    routed = llm.request(env, {"path": "/ledger", "method": "GET", "body": {}})
    assert routed["status"] == 200
    assert llm.request(env, "garbage")["status"] == 400


def test_a_call_written_as_text_is_answered_and_text_holding_no_call_is_malformed():
    env = perennial.make("warehouse.toml", seed=3)
    env.reset()
    assert llm.text_call('Sure: {"name": "wait", "arguments": {"hours": 1}} and done') == {"name": "wait", "arguments": {"hours": 1}}
    assert llm.call_text(env, '```json\n{"name": "query_ledger", "arguments": {}}\n```')["status"] == 200
    assert llm.call_text(env, '{"path": "/ledger", "method": "GET"}')["status"] == 200
    hour = env.unwrapped._run.counters()[0]
    no_call = [
        "I will reorder SKU 3 now.",
        'reorder(sku=2, quantity=20)',
        '{"name": "reorder", "arguments": {"sku": 2, "quantity": ',
        '{"tool": "reorder", "arguments": {"sku": 2}}',
        "",
        "{" * 10_000,
    ]
    for text in no_call:
        reply = llm.call_text(env, text)
        assert reply["status"] == 400 and not reply["success"], (text, reply)
    # A well-formed call naming no tool of the world is invalid, not malformed.
    assert llm.call_text(env, '{"name": "teleport", "arguments": {}}')["status"] == 404
    assert llm.call_text(env, '{"name": "reorder", "arguments": {"sku": 0}}')["status"] == 422
    assert env.unwrapped._run.counters()[0] == hour
    assert llm.counts(env)["malformed_calls"] == len(no_call)
    assert llm.counts(env)["invalid_calls"] == 2
    assert llm.call_text(env, '{"name": "wait", "arguments": "{\\"hours\\": 2}"}')["status"] == 200
    assert env.unwrapped._run.counters()[0] == hour + 2


def test_an_outage_refuses_operations_with_503_and_queries_still_answer():
    env = perennial.make("warehouse.toml", seed=5)
    env.reset()
    for _ in range(3_000):
        before = llm.render(env, "json")
        reply = llm.call(env, "expedite", {"sku": 0})
        if reply["status"] == 503:
            assert "outage" in reply["error"]
            assert llm.call(env, "query_inventory", {"sku": None})["status"] == 200
            return
        assert before is not None
    pytest.fail("no outage in 3,000 hours of seed 5")


def test_5000_hostile_calls_never_raise_and_are_counted(tmp_path):
    rng = random.Random(17)
    names = [*llm._TOOL_NAMES, "", "reorder ", "REORDER", "x" * 100_000, "query_inventory\x00", "__init__"]
    junk_values = [
        None, True, -1, 0, 1, 7, 8, 2**70, -(2**70), 3.5, float("nan"), float("inf"), "3", "",
        "x" * 50_000, [], [1, 2], {}, {"a": {"b": [None]}}, "\u202e\ud7ff",
    ]
    fields = ["sku", "quantity", "carrier", "dock", "hours", "kind", "limit", "extra", "", "x" * 1000]
    factory = llm.tool_env("warehouse.toml", seed=2, hours=400, trace=tmp_path / "hostile.jsonl")
    tool_env = factory()
    tool_env.reset()
    env = perennial.make("warehouse.toml", seed=2)
    env.reset()
    statuses = {}
    for i in range(5_000):
        name = rng.choice(names)
        kind = rng.random()
        if kind < 0.15:
            arguments = rng.choice(["{", "[]", "null", "1", '"s"', "{'a': 1}", "\xff\xfe", "{" * 10_000, "NaN"])
        else:
            arguments = {rng.choice(fields): rng.choice(junk_values) for _ in range(rng.randint(0, 4))}
        reply = llm.call(env, name, arguments)
        assert set(reply) == {"status", "success", "data", "error"}
        assert reply["status"] in (200, 400, 404, 409, 422, 503), reply
        statuses[reply["status"]] = statuses.get(reply["status"], 0) + 1
        if isinstance(arguments, dict) and name in llm._TOOL_NAMES and not tool_env.done:
            try:
                getattr(tool_env, name)(**arguments)
            except ValueError:
                pass
            except TypeError:
                # Python refuses an unknown keyword before the tool runs, as it would in TRL.
                pass
    counted = llm.counts(env)
    assert counted["calls"] == 5_000
    assert counted["invalid_calls"] == statuses.get(404, 0) + statuses.get(422, 0)
    assert counted["malformed_calls"] == statuses.get(400, 0)
    assert statuses.get(400) and statuses.get(404) and statuses.get(422) and statuses.get(200)
    # The run went on: the world is still stepping and its state renders.
    assert env.unwrapped._run.counters()[0] > 0
    assert "Hour" in llm.render(env)


def test_tool_env_raises_value_error_and_goes_on():
    env = llm.tool_env("warehouse.toml", seed=1, hours=3)()
    with pytest.raises(ValueError, match="reset"):
        env.query_ledger()
    env.reset()
    with pytest.raises(ValueError, match="^422"):
        env.repair_dock(dock=40)
    with pytest.raises(ValueError, match="^422"):
        env.reorder(sku="three", quantity=20)
    assert json.loads(env.query_ledger())["cash"] is not None
    env.wait(hours=24)
    assert env.done
    with pytest.raises(ValueError, match="hours are spent"):
        env.wait(hours=1)
    assert env.query_inventory() is not None
    assert env.reward != 0.0


def test_reset_takes_dataset_columns_seed_and_snapshot(tmp_path):
    factory = llm.tool_env("warehouse.toml", hours=5)
    a, b = factory(), factory()
    assert a.reset(seed=4, prompt="ignored") == b.reset(seed=4)
    a.reset(seed=4)
    b.reset(seed=5)
    assert a.wait(hours=4) != b.wait(hours=4), "another seed gives another world"
    source = perennial.make("warehouse.toml", seed=9)
    source.reset()
    for _ in range(30):
        source.step(0)
    snap = source.unwrapped.snapshot()
    from_object = factory()
    text = from_object.reset(snapshot=snap)
    assert "Hour 30 " in text
    from_json = factory()
    assert from_json.reset(snapshot=snap.to_json()) == text
    # Both rollouts from one snapshot meet the same hours.
    assert from_object.wait(hours=5) == from_json.wait(hours=5)


def test_each_rollout_gets_its_own_trace_and_the_trace_ends_with_the_hours(tmp_path):
    factory = llm.tool_env("warehouse.toml", seed=1, hours=6, trace=tmp_path / "r-{n}.jsonl")
    env = factory()
    env.reset()
    env.wait(hours=6)
    first = [p for p in sorted(tmp_path.glob("r-*.jsonl")) if ".events." not in p.name]
    assert len(first) == 1 and len(first[0].read_text().splitlines()) == 6
    env.reset()
    env.wait(hours=2)
    del env
    gc.collect()
    traces = [p for p in sorted(tmp_path.glob("r-*.jsonl")) if ".events." not in p.name]
    assert len(traces) == 2
    assert sorted(len(t.read_text().splitlines()) for t in traces) == [2, 6]


def test_render_never_shows_the_regime_and_stays_short():
    env = perennial.make("warehouse.toml", seed=8)
    env.reset()
    longest = 0
    for hour in range(500):
        text = llm.render(env)
        longest = max(longest, len(text))
        data = llm.render(env, "json")
        blob = text + json.dumps(data)
        assert env.unwrapped.regime not in blob
        assert "regime" not in blob.lower()
        env.step(0 if hour % 5 else 1)
    assert longest < 600
    with pytest.raises(ValueError, match="format"):
        llm.render(env, "html")


def test_rllm_env_shape():
    env = llm.RllmEnv.from_dict({"world": "warehouse.toml", "seed": 3, "hours": 3})
    assert llm.RllmEnv.is_multithread_safe()
    obs, info = env.reset()
    assert "Hour" in obs["observation"] and info["hours"] == 3
    calls = [
        {"id": "a", "type": "function", "function": {"name": "query_ledger", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "reorder", "arguments": '{"sku": 1, "quantity": 50}'}},
        {"id": "c", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
    ]
    obs, reward, done, info = env.step(calls)
    assert set(obs["tool_outputs"]) == {"a", "b", "c"}
    assert json.loads(obs["tool_outputs"]["c"])["status"] == 404
    assert isinstance(reward, float) and not done
    obs, reward, done, info = env.step({"name": "wait", "arguments": {"hours": 24}})
    assert done and info["counts"]["invalid_calls"] == 1
    env.close()


def test_action_call_covers_the_action_table():
    names = set()
    for action in range(48):
        name, arguments = llm.action_call("warehouse.toml", action)
        names.add(name)
        assert isinstance(arguments, dict)
    assert names == {"wait", "reorder", "choose_carrier", "expedite", "repair_dock"}
    with pytest.raises(ValueError, match="outside"):
        llm.action_call("warehouse.toml", 48)
    with pytest.raises(ValueError):
        llm.action_call("warehouse.toml", -1)


def test_transcript_lines_follow_the_documented_format(tmp_path):
    with llm.Transcript.beside(tmp_path / "t.jsonl", "run-a") as transcript:
        transcript.record(
            step=0, hours=1, model="stand-in", messages=[{"role": "user", "content": "Hour 0"}],
            content=None, tool_calls=[{"id": "c0", "type": "function", "function": {"name": "wait", "arguments": '{"hours": 1}'}}],
            replies=[{"tool_call_id": "c0", "status": 200, "success": True, "data": {}, "error": None}],
            finish_reason="tool_calls", usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        )
    lines = (tmp_path / "run-a.transcript.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    assert set(record) == {
        "run_id", "call", "step", "hours", "model", "messages", "content", "reasoning",
        "tool_calls", "replies", "finish_reason", "usage",
    }
    assert record["call"] == 0 and record["run_id"] == "run-a"


def test_render_text_export_is_sft_data_rllm_loads(run_cli, worlds_dir, tmp_path):
    trace = tmp_path / "bs.jsonl"
    run_cli("run", worlds_dir / "warehouse.toml", "--agent", "base-stock", "--seed", 4, "--steps", 60, "--record-transitions", "--trace", trace)
    out = tmp_path / "sft.jsonl"
    run_cli("episodes", trace, "--render", "text", "--out", out)
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    steps = [s for e in episodes for t in e["trajectories"] for s in t["steps"]]
    assert len(steps) == 60
    for s in steps:
        last = s["chat_completions"][-1]
        assert last["role"] == "assistant" and last["tool_calls"]
        assert any(m["role"] == "user" and m["content"].startswith("Hour") for m in s["chat_completions"])
    from test_examples import _rllm_episode

    Episode = _rllm_episode()
    if Episode is None:
        pytest.skip("rLLM is not installed (set RLLM_SRC to a checkout) for the from_dict half")
    loaded = [Episode.from_dict(e) for e in episodes]
    assert sum(len(t.steps) for e in loaded for t in e.trajectories) == 60
