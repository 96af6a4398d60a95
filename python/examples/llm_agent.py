"""A language model runs the warehouse through tools for 48 hours.

With ``--base-url`` it talks to any OpenAI-compatible chat endpoint (a vLLM or llama.cpp
server, or a hosted one; the key is read from ``$OPENAI_API_KEY`` when set):

    python python/examples/llm_agent.py --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-8B

Without it, a scripted stand-in plays: it sends base-stock's decisions (what
``perennial run --agent base-stock`` does on the same seed) as tool calls, queries the
inventory now and then, and makes a share of malformed and invalid calls, as a real model
does, so the example and its test run offline.

Each hour the model sees the hour's text rendering and may call tools; an operation or
``wait`` ends the hour. The run writes, under ``--out``:

- ``<run-id>.jsonl``: the trace, one row per hour, as for any agent;
- ``<run-id>.transcript.jsonl``: one line per model call (docs/llm-agents.md,
  "Transcripts");
- ``episodes.jsonl``: rLLM episodes whose Steps carry the model's messages
  (``perennial episodes TRACE --transcripts T``);

and prints the evaluation of the trace (``perennial eval``) and the calls it made.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import perennial
from perennial import llm

SYSTEM = (
    "You run a warehouse and its outbound logistics. Each hour you see its state; call the "
    "query tools (free) if you need more, then one operation (reorder, choose_carrier, "
    "expedite, repair_dock) or wait, which ends the hour. Cash below the credit line refuses "
    "purchases. Your reward is profit."
)


def quietly(fn, *args):
    """Calls ``fn`` with this process's standard output sent to /dev/null (the command line
    prints its summary there)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            return fn(*args)
    finally:
        os.dup2(saved, 1)
        os.close(saved)


class Endpoint:
    """An OpenAI-compatible ``/chat/completions`` endpoint, spoken to with the standard
    library only."""

    def __init__(self, base_url: str, model: str, timeout: float) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = timeout
        self.key = os.environ.get("OPENAI_API_KEY")

    def complete(self, messages: list, tools: list) -> dict:
        body = json.dumps({"model": self.model, "messages": messages, "tools": tools, "tool_choice": "auto"})
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        req = urllib.request.Request(self.url, data=body.encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                reply = json.loads(response.read())
        except urllib.error.URLError as e:
            raise SystemExit(f"error: {self.url}: {e}; is the server running (--base-url)?") from e
        choice = reply["choices"][0]
        message = choice["message"]
        return {
            "model": reply.get("model", self.model),
            "content": message.get("content"),
            "reasoning": message.get("reasoning_content") or message.get("reasoning"),
            "tool_calls": message.get("tool_calls") or [],
            "finish_reason": choice.get("finish_reason"),
            "usage": reply.get("usage"),
        }


class ScriptedModel:
    """Stands in for a model: base-stock's decisions as tool calls, with a query every
    sixth hour, a malformed call every ninth and an invalid one every thirteenth."""

    model = "scripted-base-stock"

    def __init__(self, world: str, seed: int, hours: int) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "base-stock.jsonl"
            world_path = world
            if world.startswith("shipped:"):
                # The command line reads files: write the shipped world's text out.
                world_path = str(Path(tmp) / world.removeprefix("shipped:"))
                Path(world_path).write_text(perennial.shipped_worlds()[world.removeprefix("shipped:")])
            code = quietly(perennial._core.cli, [
                "run", world_path, "--agent", "base-stock", "--seed", str(seed), "--steps", str(hours),
                "--record-transitions", "--trace", str(trace),
            ])
            if code != 0:
                raise SystemExit(f"error: perennial run --agent base-stock exited {code}")
            self.actions = [json.loads(line)["action"] for line in trace.read_text().splitlines()]
        self.world = world
        self.hour = 0
        self.in_hour = 0
        self.calls = 0

    def complete(self, messages: list, tools: list) -> dict:
        hour, step = self.hour, self.in_hour
        self.in_hour += 1
        self.calls += 1
        extra = []
        if hour % 6 == 0:
            extra.append(("query_inventory", json.dumps({"sku": None})))
        if hour % 9 == 4:
            extra.append(("reorder", '{"sku": 2, "quantity": '))
        if hour % 13 == 7:
            extra.append(("repair_dock", json.dumps({"dock": 99})))
        if step < len(extra):
            name, arguments = extra[step]
        else:
            name, args = llm.action_call(self.world, self.actions[min(hour, len(self.actions) - 1)])
            name, arguments = name, json.dumps(args)
            self.hour += 1
            self.in_hour = 0
        return {
            "model": self.model,
            "content": None,
            "reasoning": None,
            "tool_calls": [{"id": f"call_{self.calls}", "type": "function", "function": {"name": name, "arguments": arguments}}],
            "finish_reason": "tool_calls",
            "usage": None,
        }


def play(model, world: str, seed: int, hours: int, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    run_id = f"llm-{model.model.replace('/', '_')}-seed{seed}"
    trace = out / f"{run_id}.jsonl"
    env = perennial.make(world, seed=seed, trace=trace, run_id=run_id, algorithm_id=model.model)
    env.reset()
    run = env.unwrapped._run
    tools = llm.tools(world)
    new_messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": llm.render(env)}]
    history: list = []
    with llm.Transcript.beside(trace, run_id) as transcript:
        idle_calls = 0
        while run.counters()[0] < hours:
            history += new_messages
            answer = model.complete(history, tools)
            step = run.counters()[0]
            assistant = {"role": "assistant", "content": answer["content"], "tool_calls": answer["tool_calls"] or None}
            history.append(assistant)
            replies, tool_messages = [], []
            for tool_call in answer["tool_calls"]:
                if run.counters()[0] >= hours:
                    reply = {"status": 409, "success": False, "data": None, "error": f"the run's {hours} hours are spent"}
                else:
                    function = tool_call.get("function", {})
                    reply = llm.call(env, function.get("name", ""), function.get("arguments", "{}"))
                replies.append({"tool_call_id": tool_call.get("id"), **reply})
                tool_messages.append({"role": "tool", "tool_call_id": tool_call.get("id"), "content": json.dumps(reply)})
            hours_passed = run.counters()[0] - step
            if not answer["tool_calls"]:
                # A reply without a tool call: remind the model, and let an hour pass after
                # three in a row so a silent model cannot stall the world.
                idle_calls += 1
                tool_messages.append({"role": "user", "content": "Call a tool: an operation or wait ends the hour."})
                if idle_calls >= 3:
                    llm.call(env, "wait", {"hours": 1})
                    hours_passed = run.counters()[0] - step
            else:
                idle_calls = 0
            transcript.record(
                step=step, hours=hours_passed, model=answer["model"], messages=new_messages,
                content=answer["content"], reasoning=answer["reasoning"], tool_calls=answer["tool_calls"],
                replies=replies, finish_reason=answer["finish_reason"], usage=answer["usage"],
            )
            new_messages = tool_messages
            if hours_passed and run.counters()[0] < hours:
                new_messages = [*new_messages, {"role": "user", "content": llm.render(env)}]
    calls = llm.counts(env)
    env.close()
    return {"trace": trace, "transcript": transcript.path, "calls": calls, "model_calls": transcript.calls}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (default: the scripted stand-in)")
    parser.add_argument("--model", default="default", help="the model name the endpoint serves")
    parser.add_argument("--world", default="warehouse.toml", help="an enterprise world file (default: the shipped warehouse)")
    parser.add_argument("--hours", type=int, default=48, help="simulated hours to play (48)")
    parser.add_argument("--seed", type=int, default=0, help="the run seed (0)")
    parser.add_argument("--out", type=Path, default=Path("runs/llm"), help="where trace, transcript and episodes go (runs/llm)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one model reply (120)")
    args = parser.parse_args()
    if args.hours < 1:
        parser.error("--hours must be at least 1")
    world = perennial.world_file(args.world)
    model = Endpoint(args.base_url, args.model, args.timeout) if args.base_url else ScriptedModel(world, args.seed, args.hours)
    result = play(model, world, args.seed, args.hours, args.out)
    episodes = args.out / "episodes.jsonl"
    code = perennial._core.cli([
        "episodes", str(result["trace"]), "--transcripts", str(result["transcript"]), "--out", str(episodes),
    ])
    if code != 0:
        print(f"error: perennial episodes exited {code}", file=sys.stderr)
        return code
    report = perennial.evaluate([result["trace"]])
    calls = result["calls"]
    print(f"trace       {result['trace']}")
    print(f"transcript  {result['transcript']} ({result['model_calls']} model calls)")
    print(f"episodes    {episodes}")
    print(
        f"calls       {calls['calls']} tool calls, {calls['hours']} hours, "
        f"{calls['invalid_calls']} invalid, {calls['malformed_calls']} malformed, {calls['refused']} refused"
    )
    total = sum(json.loads(line)["reward"] for line in Path(result["trace"]).read_text().splitlines())
    print(f"return      {total:.1f} over {args.hours} hours")
    print(json.dumps(report.get("runs", report), indent=None)[:2000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
