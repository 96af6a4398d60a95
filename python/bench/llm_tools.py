"""Tool calls per second from Python, and the size of the text rendering per hour.

Run it after `pip install ./python` (scripts/test.sh leaves one in .venv/):

    .venv/bin/python python/bench/llm_tools.py [--calls 20000] [--hours 2000] [--tokenizer MODEL.gguf]

It prints two tables. The first: tool calls per second through `perennial.llm.call` (a
query that costs no time; an hour of base-stock decisions sent as operations; a mix of
three queries and one operation per hour, as a model does) and through a `ToolEnv`'s
methods (the same mix, as TRL calls them): calls per wall-clock second and CPU time per
call (the process's, which a busy machine disturbs less). Each is the best of `--repeats` passes.
The second: characters of `render_text` per hour over `--hours` hours of base-stock's
decisions (mean and largest), and, with `--tokenizer` naming a GGUF model file and
llama-cpp-python installed, its tokens per hour under that model's tokenizer
(`scripts/local_llm.sh` passes SmolLM2-135M's).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import perennial
from perennial import llm

WORLD = "warehouse.toml"


def base_stock_calls(hours: int, seed: int) -> list:
    """Base-stock's decisions over ``hours`` hours, as tool calls (name, arguments)."""
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / WORLD
        world.write_text(perennial.shipped_worlds()[WORLD])
        trace = Path(tmp) / "bs.jsonl"
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                code = perennial._core.cli([
                    "run", str(world), "--agent", "base-stock", "--seed", str(seed),
                    "--steps", str(hours), "--record-transitions", "--trace", str(trace),
                ])
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        if code != 0:
            raise SystemExit(f"perennial run exited {code}")
        actions = [json.loads(line)["action"] for line in trace.read_text().splitlines()]
    return [llm.action_call(WORLD, a) for a in actions]


def best(repeats: int, fn) -> tuple:
    """The best (wall seconds, CPU seconds) of ``repeats`` passes of ``fn``."""
    passes = []
    for _ in range(repeats):
        cpu = time.process_time()
        wall = fn()
        passes.append((wall, time.process_time() - cpu))
    return min(p[0] for p in passes), min(p[1] for p in passes)


def time_queries(calls: int) -> float:
    env = perennial.make(WORLD, seed=1)
    env.reset()
    start = time.perf_counter()
    for _ in range(calls):
        llm.call(env, "query_ledger", {})
    return time.perf_counter() - start


def time_operations(ops: list) -> float:
    env = perennial.make(WORLD, seed=1)
    env.reset()
    start = time.perf_counter()
    for name, arguments in ops:
        llm.call(env, name, arguments)
    return time.perf_counter() - start


MIX = [("query_inventory", {"sku": None}), ("query_orders", {"kind": "purchase", "sku": None, "limit": 10}), ("query_carriers", {})]


def time_mix(ops: list) -> float:
    env = perennial.make(WORLD, seed=1)
    env.reset()
    start = time.perf_counter()
    for name, arguments in ops:
        for q, qa in MIX:
            llm.call(env, q, qa)
        llm.call(env, name, arguments)
    return time.perf_counter() - start


def time_tool_env(ops: list) -> float:
    env = llm.tool_env(WORLD, seed=1, hours=len(ops))()
    env.reset()
    start = time.perf_counter()
    for name, arguments in ops:
        env.query_inventory(sku=None)
        env.query_orders(kind="purchase", sku=None, limit=10)
        env.query_carriers()
        try:
            getattr(env, name)(**arguments)
        except ValueError:
            pass
    return time.perf_counter() - start


def rendering_sizes(ops: list, tokenizer: str | None) -> dict:
    env = perennial.make(WORLD, seed=1)
    env.reset()
    texts = []
    for name, arguments in ops:
        texts.append(llm.render(env))
        llm.call(env, name, arguments)
    sizes = [len(t) for t in texts]
    out = {"hours": len(texts), "mean_chars": sum(sizes) / len(sizes), "max_chars": max(sizes)}
    if tokenizer:
        from llama_cpp import Llama

        model = Llama(model_path=tokenizer, vocab_only=True, verbose=False)
        tokens = [len(model.tokenize(t.encode(), add_bos=False)) for t in texts]
        out.update(mean_tokens=sum(tokens) / len(tokens), max_tokens=max(tokens))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="query calls per pass (20000)")
    parser.add_argument("--hours", type=int, default=2_000, help="hours of base-stock decisions (2000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes; the best is kept (3)")
    parser.add_argument("--tokenizer", help="a GGUF model file whose tokenizer counts tokens per hour")
    args = parser.parse_args()
    ops = base_stock_calls(args.hours, seed=1)
    rows = [
        ("`llm.call`, `query_ledger`", args.calls, best(args.repeats, lambda: time_queries(args.calls))),
        ("`llm.call`, one base-stock operation per hour", len(ops), best(args.repeats, lambda: time_operations(ops))),
        ("`llm.call`, 3 queries + 1 operation per hour", 4 * len(ops), best(args.repeats, lambda: time_mix(ops))),
        ("`ToolEnv` methods, 3 queries + 1 operation per hour", 4 * len(ops), best(args.repeats, lambda: time_tool_env(ops))),
    ]
    print("| workload | calls/s | CPU µs/call |")
    print("|---|---:|---:|")
    for name, calls, (wall, cpu) in rows:
        print(f"| {name} | {calls / wall:,.0f} | {1e6 * cpu / calls:.1f} |")
    sizes = rendering_sizes(ops, args.tokenizer)
    print()
    print("| text rendering, per hour | mean | largest |")
    print("|---|---:|---:|")
    print(f"| characters ({sizes['hours']} hours) | {sizes['mean_chars']:.0f} | {sizes['max_chars']} |")
    if "mean_tokens" in sizes:
        print(f"| tokens ({Path(args.tokenizer).name}) | {sizes['mean_tokens']:.0f} | {sizes['max_tokens']} |")


if __name__ == "__main__":
    main()
