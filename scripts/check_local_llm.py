#!/usr/bin/env python3
"""Checks what scripts/local_llm.sh produced and prints its figures.

    python scripts/check_local_llm.py --out DIR --hours 24 [--seconds-free S] [--seconds-constrained S]

DIR holds `free/` and `constrained/` (python/examples/llm_agent.py --local runs, the second
with a fork group under `fork-*/`) and `baselines/` (random and base-stock traces of the
same seed and hours). It checks that

- every trace ran its hours: no call stopped a run;
- every invalid (404, 422) and malformed (400) reply in a transcript was counted, in the
  trace's `invalid_calls` / `malformed_calls` components when the trace has them;
- every reply whose text holds no call got 400 (malformed), and every well-formed call
  naming a tool the world does not have got 404 (invalid);
- rLLM's own `Episode.from_dict` loads every exported episode (rLLM on the path), each
  Step's `chat_completions` ending in the assistant message that carries the tool call;
- rLLM's GRPO function gives the fork group's exported advantages;

and prints seconds, tokens (sent, and evaluated after the server's prompt cache, from its
log) and valid calls per hour and the reward per hour against random and base-stock.
Exits 1 after listing every failed check.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from pathlib import Path

from perennial import llm

failures: list[str] = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_files(folder: Path) -> tuple[Path, Path, Path]:
    transcript = next(folder.glob("*.transcript.jsonl"))
    run_id = transcript.name[: -len(".transcript.jsonl")]
    return folder / f"{run_id}.jsonl", transcript, folder / f"{run_id}.episodes.jsonl"


def load_rllm():
    try:
        from rllm.types import Episode
    except ImportError as e:
        raise SystemExit(f"error: rLLM cannot be imported ({e}); set RLLM_SRC (see scripts/local_llm.sh)") from e
    return Episode


def rllm_grpo():
    """rLLM's per-group GRPO function, loaded from its file (rllm.trainer's package imports
    the whole trainer stack)."""
    import rllm

    path = Path(rllm.__file__).parent / "trainer" / "algorithms" / "rl_algo.py"
    spec = importlib.util.spec_from_file_location("rllm_rl_algo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.calculate_grpo_advantages_per_group


def check_run(name: str, folder: Path, hours: int, Episode) -> dict:
    trace, transcript, episodes = run_files(folder)
    trace_rows = rows(trace)
    check(len(trace_rows) == hours, f"{name}: the trace has {len(trace_rows)} rows, not {hours}")
    calls = rows(transcript)
    statuses = [r["status"] for c in calls for r in c["replies"]]
    malformed = statuses.count(400)
    invalid = statuses.count(404) + statuses.count(422)
    for column, want in (("malformed_calls", malformed), ("invalid_calls", invalid)):
        got = [r.get("components", {}).get(column) for r in trace_rows]
        check(all(g is not None for g in got), f"{name}: the trace has no {column} component (run with --charge-bad-calls)")
        if all(g is not None for g in got):
            check(round(-sum(got)) == want or round(sum(got)) == want,
                  f"{name}: the trace's {column} add up to {sum(got)}, the transcript has {want}")
    names = {t["function"]["name"] for t in llm.tools("warehouse.toml")}
    for c in calls:
        found = llm.text_call(c["content"])
        status = c["replies"][0]["status"] if c["replies"] else None
        if found is None:
            check(status == 400, f"{name}: call {c['call']} holds no call ({c['content']!r:.60}) and got {status}, not 400")
        elif found.get("name") is not None and found["name"] not in names:
            check(status == 404, f"{name}: call {c['call']} names no tool of the world ({found['name']!r}) and got {status}, not 404")
    loaded = 0
    for line in episodes.read_text().splitlines():
        episode = Episode.from_dict(json.loads(line))
        for trajectory in episode.trajectories:
            for step in trajectory.steps:
                chat = step.chat_completions
                check(bool(chat) and chat[-1]["role"] == "assistant" and chat[-1].get("tool_calls"),
                      f"{name}: a Step's chat_completions does not end in the assistant's tool call")
                loaded += 1
    check(loaded == len(calls), f"{name}: {loaded} Steps loaded, the transcript has {len(calls)} calls")
    return {
        "unparsed": sum(llm.text_call(c["content"]) is None for c in calls),
        "calls": len(statuses),
        "valid": statuses.count(200),
        "malformed": malformed,
        "invalid": invalid,
        "rejected": statuses.count(409) + statuses.count(503),
        # The profit: the reward without the charges for bad calls, as the baselines earn it.
        "reward_per_hour": sum(
            r["reward"] - r.get("components", {}).get("invalid_calls", 0.0) - r.get("components", {}).get("malformed_calls", 0.0)
            for r in trace_rows
        ) / max(len(trace_rows), 1),
        "steps": loaded,
    }


HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit")


def tokens_per_hour(folder: Path, hours: int) -> tuple:
    """Tokens per hour played in ``folder`` (its run and forks): those sent and generated,
    and those the server evaluated (less the prompt tokens its log says its prompt cache
    kept)."""
    usage = [(c.get("usage") or {}) for t in folder.rglob("*.transcript.jsonl") for c in rows(t)]
    sent = sum(u.get("prompt_tokens", 0) for u in usage)
    generated = sum(u.get("completion_tokens", 0) for u in usage)
    log = folder / "llama-server.log"
    kept = sum(int(m.group(1)) for m in HIT.finditer(log.read_text(errors="replace"))) if log.is_file() else 0
    check(log.is_file(), f"{folder}: no llama-server.log")
    return (sent + generated) / hours, (sent - kept + generated) / hours


def check_fork(folder: Path, Episode) -> dict:
    grpo = rllm_grpo()
    import numpy as np

    groups: dict = {}
    for path in folder.glob("episodes.jsonl"):
        for line in path.read_text().splitlines():
            episode = Episode.from_dict(json.loads(line))
            for trajectory in episode.trajectories:
                advantage = trajectory.steps[0].advantage if trajectory.steps else None
                groups.setdefault(episode.task_id, []).append((trajectory.reward, advantage))
    check(len(groups) == 1, f"fork: {len(groups)} GRPO groups, want 1")
    for task, members in groups.items():
        rewards = np.array([m[0] for m in members], dtype=float)
        want, _ = grpo(rewards)
        got = np.array([m[1] for m in members], dtype=float)
        check(np.allclose(got, want, rtol=1e-6, atol=1e-6), f"fork {task}: advantages {got} are not rLLM's {want}")
    return {"rollouts": sum(len(m) for m in groups.values())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--seconds-free", type=float)
    parser.add_argument("--seconds-constrained", type=float)
    parser.add_argument("--fork-hours", type=int, default=12)
    args = parser.parse_args()
    Episode = load_rllm()
    figures = {}
    for name in ("free", "constrained"):
        figures[name] = check_run(name, args.out / name, args.hours, Episode)
    forks = sorted((args.out / "constrained").glob("fork-*"))
    check(len(forks) == 1, "constrained: no fork folder")
    fork = check_fork(forks[0], Episode) if forks else {"rollouts": 0}
    baselines = {
        agent: sum(r["reward"] for r in rows(args.out / "baselines" / f"{agent}.jsonl")) / args.hours
        for agent in ("random", "base-stock")
    }
    seconds = {
        "free": args.seconds_free / args.hours if args.seconds_free else None,
        "constrained": (args.seconds_constrained / (args.hours + fork["rollouts"] * args.fork_hours))
        if args.seconds_constrained else None,
    }
    served = {"free": args.hours, "constrained": args.hours + fork["rollouts"] * args.fork_hours}
    print("| decoding | s per hour | tokens per hour, sent / evaluated | valid calls | malformed | invalid | rejected | profit per hour |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, f in figures.items():
        s = f"{seconds[name]:.2f}" if seconds[name] is not None else "-"
        share = f"{f['valid']} of {f['calls']}"
        sent, evaluated = tokens_per_hour(args.out / name, served[name])
        print(f"| {name} | {s} | {sent:,.0f} / {evaluated:,.0f} | {share} | {f['malformed']} | {f['invalid']} | {f['rejected']} | {f['reward_per_hour']:+.2f} |")
    for agent, per_hour in baselines.items():
        print(f"| {agent} (numeric) | | | | | | | {per_hour:+.2f} |")
    print(f"free: {figures['free']['unparsed']} replies held no call, each counted malformed")
    print(f"fork group: {fork['rollouts']} rollouts, advantages checked against rLLM's GRPO")
    if failures:
        for f in failures:
            print(f"FAILED: {f}", file=sys.stderr)
        return 1
    print("check_local_llm: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
