"""Language-model agents in the enterprise world, through tools.

The enterprise world (kind ``morpheus``) speaks ``Discrete(48)`` and 46 floats to numeric
agents; this module gives the same world, with the same trace, to a language model as
tools it calls. Every tool is defined once in Rust (``perennial::morpheus::api``); this
module only carries calls and replies across.

- ``ToolEnv`` / ``tool_env(...)``: the env TRL's ``GRPOTrainer(environment_factory=...)``
  takes as it is: a no-argument constructor, ``reset(**columns) -> str``, and one public
  method per tool, typed and documented for ``transformers.utils.get_json_schema``.
- ``tools(world, form)``: the schemas, as OpenAI strict function tools or MCP ``Tool``
  objects; ``call(env, name, arguments)`` and ``request(env, request)``: the reply
  envelope ``{status, success, data, error}``; ``call_text(env, text)``: a call a model
  wrote as text, where text holding no call is malformed (400); ``render(env, format)``: the hour as text
  or JSON; for any other loop (the OpenAI client, the Agents SDK, a hand-written ReAct).
- ``RllmEnv``: the rLLM environment shape (``reset() -> (obs, info)``,
  ``step(tool_calls) -> (obs, reward, done, info)``, ``from_dict``,
  ``is_multithread_safe``) without importing rLLM.
- ``Transcript``: writes ``<run-id>.transcript.jsonl`` beside a trace, one line per model
  call, for ``perennial episodes TRACE --transcripts``.

One turn is one simulated hour and one trace row: an operation (``reorder``,
``choose_carrier``, ``expedite``, ``repair_dock``) is the hour's action, ``wait`` lets
hours pass, queries cost no time. Sending a numeric agent's decisions as tool calls leaves
the trace that agent leaves.
"""

import inspect
import itertools
import json
import os
import weakref
from typing import Any, Optional, Union

from . import _core
from ._worlds import resolve
from .env import PerennialEnv

__all__ = [
    "DEFAULT_HOURS",
    "DEFAULT_WORLD",
    "RllmEnv",
    "ToolEnv",
    "Transcript",
    "action_call",
    "call",
    "call_text",
    "counts",
    "render",
    "request",
    "text_call",
    "tool_env",
    "tools",
]

#: The world a ``ToolEnv`` runs unless told otherwise: the shipped warehouse.
DEFAULT_WORLD = "warehouse.toml"
#: The hours a ``ToolEnv`` rollout lasts unless told otherwise: two simulated days.
DEFAULT_HOURS = 48
#: How many calls one hour answers by default, queries and errors included.
DEFAULT_MAX_CALLS_PER_HOUR = 16

_FORMS = ("openai", "mcp")
_OBS_FORMATS = ("text", "json")


def tools(
    world: Union[str, os.PathLike] = DEFAULT_WORLD, form: str = "openai", role: Optional[str] = None
) -> list:
    """The tools of an enterprise world file (a path, a shipped name or a registered id):
    ``form="openai"`` gives OpenAI Chat Completions function tools in strict form (every
    field required, ``additionalProperties: false``, ``enum`` for indices and quantities),
    ``form="mcp"`` MCP ``Tool`` objects (``name``, ``description``, ``inputSchema``); one
    definition, both forms. The indices and quantities are the world's own layout. In a
    world with roles (``perennial/Enterprise-v0``) ``role`` names the role whose tools
    these are: its operations (logistics: ``choose_carrier``, ``prioritize_sku``,
    ``hold_wave``), ``wait`` and the queries.

    Raises ``ValueError`` for another form, a world that is not the enterprise world, a
    missing or unknown ``role`` in a world with roles or a ``role`` in a world without, and
    ``perennial.WorldFileError`` for a world file that cannot be used.
    """
    if form not in _FORMS:
        raise ValueError(f"form={form!r}; use \"openai\" or \"mcp\"")
    return json.loads(_core.tools(resolve(world), form, role))


def action_call(world: Union[str, os.PathLike], action: int) -> tuple:
    """The tool call that does what action index ``action`` does (``perennial run``'s
    ``Discrete`` table): ``(name, arguments)``; the no-op is ``wait`` for one hour. This is
    how a numeric agent's decisions become tool calls."""
    if isinstance(action, bool) or not isinstance(action, int):
        raise ValueError(f"action={action!r}: pass an integer index of the world's action table")
    if action < 0:
        raise ValueError(f"action={action}: action indices start at 0")
    name, arguments = _core.action_call(resolve(world), action)
    return name, json.loads(arguments)


class _DeskState:
    """The desk answering calls against one env, and where that env stood after the last
    call, so a ``reset()`` or ``restore()`` in between is noticed."""

    def __init__(self, run: Any, max_calls_per_hour: int) -> None:
        self.desk = _core.Desk(run, max_calls_per_hour)
        self.at = run.counters()

    def sync(self, run: Any) -> None:
        step, episode, _ = run.counters()
        last_step, last_episode, _ = self.at
        if episode != last_episode or step < last_step:
            self.desk.restart()


_desks: "weakref.WeakKeyDictionary[Any, _DeskState]" = weakref.WeakKeyDictionary()


def _base(env: Any) -> Any:
    """The ``PerennialEnv`` under ``env`` (a gymnasium env, a wrapper, or a ``ToolEnv``)."""
    if isinstance(env, (ToolEnv, RllmEnv)):
        env = env._env
        if env is None:
            raise ValueError("the ToolEnv has no world yet: call reset() first")
    base = getattr(env, "unwrapped", env)
    if not isinstance(base, PerennialEnv):
        raise ValueError(f"{type(env).__name__} is not a perennial env; make one with perennial.make(world)")
    return base


def _desk(env: Any, max_calls_per_hour: int = DEFAULT_MAX_CALLS_PER_HOUR) -> _DeskState:
    base = _base(env)
    state = _desks.get(base)
    if state is None:
        state = _DeskState(base._run, max_calls_per_hour)
        _desks[base] = state
    else:
        state.sync(base._run)
    return state


def _arguments_text(arguments: Any) -> str:
    """Arguments as the JSON text the desk parses. A string is passed as written (the model's
    own text); anything else is encoded, and what cannot be encoded reaches the desk as
    text that is not JSON, so it gets the documented 400 reply."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, (str, bytes)):
        return arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments
    try:
        return json.dumps(arguments, allow_nan=False)
    except (TypeError, ValueError) as e:
        return f"<arguments that are not JSON: {type(e).__name__}>"


def _hour_reward(reply: dict) -> Optional[float]:
    """The reward of the hours a reply says passed, or None for a reply that let none pass."""
    data = reply.get("data")
    if isinstance(data, dict) and data.get("hours_passed") and isinstance(data.get("reward"), (int, float)):
        return float(data["reward"])
    return None


def call(env: Any, name: Any, arguments: Any = None) -> dict:
    """Answers one tool call against ``env`` (made with ``perennial.make`` from an enterprise
    world file, or a ``ToolEnv``): ``arguments`` a dict or its JSON text. Returns the reply
    envelope ``{status, success, data, error}``: 200 done, 400 arguments not a JSON object,
    404 no such tool, 422 an invalid argument, 409 refused by the world (or the hour's calls
    spent), 503 system outage. An operation or ``wait`` steps ``env`` (one trace row per
    hour); a query changes nothing. Bad calls never raise: they get their reply and are
    counted (``counts(env)``).

    Raises ``ValueError`` only for an env that is not the enterprise world."""
    state = _desk(env)
    run = _base(env)._run
    reply = json.loads(state.desk.call(run, name if isinstance(name, str) else repr(name), _arguments_text(arguments)))
    state.at = run.counters()
    return reply


def request(env: Any, request: Any) -> dict:
    """Answers a MORPHEUS-style request ``{"path": "/inventory/reorder", "method": "POST",
    "body": {...}}`` (a dict or its JSON text) as ``call`` answers a named call."""
    state = _desk(env)
    run = _base(env)._run
    reply = json.loads(state.desk.request(run, _arguments_text(request)))
    state.at = run.counters()
    return reply


def text_call(text: Any) -> Optional[dict]:
    """The call a model wrote as text (a model decoding freely, without a native tool-call
    format): the first JSON object in ``text``, bare or among other words or in a code
    fence, that has a string ``"name"`` (its arguments under ``"arguments"`` or
    ``"parameters"``, missing meaning none) or MORPHEUS's string ``"path"`` and
    ``"method"``. Returns ``{"name", "arguments"}`` or the request object, else None."""
    if not isinstance(text, str):
        return None
    decoder = json.JSONDecoder()
    at = text.find("{")
    # A model's reply is short; a text with more openings than this is not looked through.
    for _ in range(256):
        if at == -1:
            break
        try:
            found, _ = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            found = None
        if isinstance(found, dict):
            if isinstance(found.get("name"), str):
                arguments = found.get("arguments", found.get("parameters"))
                return {"name": found["name"], "arguments": {} if arguments is None else arguments}
            if isinstance(found.get("path"), str) and isinstance(found.get("method"), str):
                return found
        at = text.find("{", at + 1)
    return None


def call_text(env: Any, text: Any) -> dict:
    """Answers a call a model wrote as text (``text_call`` finds it) as ``call`` or
    ``request`` answer it. Text that holds no call (prose, a truncated object, an object
    naming no tool) is a malformed call: the desk refuses it with 400 and counts it in
    ``malformed_calls``, as it refuses a request that is not an object; a well-formed call
    naming a tool the world does not have is invalid (404)."""
    found = text_call(text)
    if found is None:
        # The desk's request path refuses anything but a request object as malformed.
        return request(env, json.dumps(text if isinstance(text, str) else repr(text)))
    if "name" in found:
        return call(env, found["name"], found["arguments"])
    return request(env, found)


def counts(env: Any) -> dict:
    """The calls ``env``'s desk answered: ``calls``, ``malformed_calls`` (400),
    ``invalid_calls`` (404, 422), ``refused`` (409, 503) and ``hours``."""
    return dict(_desk(env).desk.counts())


def render(env: Any, format: str = "text") -> Union[str, dict]:
    """The hour ``env`` stands at, as a prompt shows it: ``"text"`` (a few hundred
    characters: clock, cash, goodwill, carrier, stock per SKU, docks, carriers, yard, recent
    failures, last hour's outcome) or ``"json"`` (the same, as a dict). Never the regime,
    the conditions or the failure log."""
    if format not in _OBS_FORMATS:
        raise ValueError(f"format={format!r}; use \"text\" or \"json\"")
    text = _core.render(_base(env)._run, format)
    return text if format == "text" else json.loads(text)


# ---------------------------------------------------------------------------------------
# ToolEnv: TRL's environment_factory contract.

_INTRO = (
    "You run a warehouse and its outbound logistics for {hours} simulated hours. Each hour "
    "you may query (inventory, orders, ledger, carriers: free) and then take one operation "
    "(reorder, choose_carrier, expedite, repair_dock), which ends the hour; wait lets hours "
    "pass with no operation. Profit is your reward.\n\n"
)

_rollouts = itertools.count()


class ToolEnv:
    """The enterprise world as tools, in the shape TRL's ``GRPOTrainer(environment_factory=
    ToolEnv)`` takes: a no-argument constructor, ``reset(**columns) -> str`` (the first
    prompt), and one public method per tool, each with typed arguments and a docstring
    with an ``Args:`` section (TRL turns every public method but ``reset`` into a tool, so
    the class has no other public method). Configure it with ``tool_env(...)``, which
    returns a subclass.

    A rollout lasts ``hours`` simulated hours; ``reward`` holds its return so far and
    ``done`` whether its hours are spent (then operations raise ``ValueError`` and
    queries still answer). Every hour is one trace row when a ``trace`` option is given;
    the trace ends when the hours are spent or the object is collected.

    A tool whose call is refused raises ``ValueError`` with the reply's status and
    message (TRL hands it back to the model); the run goes on, and the call is counted
    (``perennial.llm.counts(env)``). A successful operation returns its reply and the new
    hour's rendering.
    """

    world = DEFAULT_WORLD
    seed: Optional[int] = None
    hours = DEFAULT_HOURS
    snapshot: Any = None
    obs_format = "text"
    max_calls_per_hour = DEFAULT_MAX_CALLS_PER_HOUR
    make_options: dict = {}

    def __init__(self) -> None:
        self.reward = 0.0
        self.done = False
        self._env: Optional[PerennialEnv] = None
        self._start = 0

    def reset(self, **kwargs: Any) -> str:
        """Ends the previous rollout and starts one: a new world with ``seed`` (a dataset
        column, else the configured seed), or the state a ``snapshot`` column holds (a
        ``perennial.Snapshot`` or its ``to_json()`` text). Other columns are ignored.
        Returns the first prompt: what the job is and the first hour's rendering."""
        self._close()
        seed = kwargs.get("seed", self.seed)
        snapshot = kwargs.get("snapshot", self.snapshot)
        if isinstance(snapshot, str):
            snapshot = _core.Snapshot(snapshot)
        options = dict(self.make_options)
        n = next(_rollouts)
        trace = options.get("trace")
        if trace is not None:
            options["trace"] = _rollout_path(os.fspath(trace), n)
            options.setdefault("run_id", f"{_stem(options['trace'])}")
        options.setdefault("algorithm_id", "llm")
        if seed is not None:
            options["seed"] = int(seed)
        if snapshot is not None:
            options["snapshot"] = snapshot
        env = PerennialEnv(self.world, **options)
        if snapshot is None:
            env.reset()
        self._env = env
        _desks[env] = _DeskState(env._run, self.max_calls_per_hour)
        self._start = env._run.counters()[0]
        self.reward = 0.0
        self.done = False
        return _INTRO.format(hours=self.hours) + self._observation()

    def _observation(self) -> str:
        shown = render(self._env, self.obs_format)
        return shown if isinstance(shown, str) else json.dumps(shown)

    def _left(self) -> int:
        return self.hours - (self._env._run.counters()[0] - self._start)

    def _close(self) -> None:
        if self._env is not None:
            self._env.close()

    def _use(self, name: str, arguments: dict) -> str:
        if self._env is None:
            raise ValueError("no rollout is running: reset() starts one")
        operation = not name.startswith("query_")
        if operation and self.done:
            raise ValueError(f"this rollout's {self.hours} hours are spent; queries still answer")
        if name == "wait" and isinstance(arguments.get("hours"), int) and not isinstance(arguments["hours"], bool):
            arguments = {"hours": min(arguments["hours"], max(self._left(), 1))}
        reply = call(self._env, name, arguments)
        data = reply.get("data")
        earned = _hour_reward(reply)
        passed = earned is not None
        if passed:
            self.reward += earned
        if passed and self._left() <= 0:
            self.done = True
            self._close()
        if not reply["success"]:
            message = f"{reply['status']}: {reply['error']}"
            if passed and not self.done:
                message += "\n\n" + self._observation()
            raise ValueError(message)
        text = json.dumps(data)
        if passed and not self.done:
            text += "\n\n" + self._observation()
        elif self.done:
            text += f"\n\nThe rollout's {self.hours} hours are spent."
        return text

    # The tools. Their docstrings are the default layout's; tool_env() rewrites them for
    # the world it is given (its SKU, carrier and dock indices and reorder quantities).

    def reorder(self, sku: int, quantity: int) -> str:
        """Buy units of one SKU from its supplier, paid now; they arrive after the lead time. Ends the hour.

        Args:
            sku: The SKU to buy (choices: [0, 1, 2, 3, 4, 5, 6, 7])
            quantity: How many units (choices: [20, 50, 100, 200])
        """
        return self._use("reorder", {"sku": sku, "quantity": quantity})

    def choose_carrier(self, carrier: int) -> str:
        """Use this carrier for the outbound waves from now on. Ends the hour.

        Args:
            carrier: The carrier to use (choices: [0, 1, 2])
        """
        return self._use("choose_carrier", {"carrier": carrier})

    def expedite(self, sku: int) -> str:
        """Halve the remaining lead time of the SKU's oldest purchase order in transit, for a fee. Ends the hour.

        Args:
            sku: The SKU whose order to expedite (choices: [0, 1, 2, 3, 4, 5, 6, 7])
        """
        return self._use("expedite", {"sku": sku})

    def repair_dock(self, dock: int) -> str:
        """Repair a broken dock door, for the repair cost. Ends the hour.

        Args:
            dock: The dock to repair (choices: [0, 1, 2, 3])
        """
        return self._use("repair_dock", {"dock": dock})

    def wait(self, hours: int) -> str:
        """Let hours pass with no operation.

        Args:
            hours: How many hours, from 1 to 24
        """
        return self._use("wait", {"hours": hours})

    def query_inventory(self, sku: Optional[int] = None) -> str:
        """Stock per SKU (on hand, reserved, pipeline, backlog), list prices and the cash available for purchases. Costs no time.

        Args:
            sku: One SKU, or null for every SKU
        """
        return self._use("query_inventory", {"sku": sku})

    def query_orders(self, kind: str, sku: Optional[int] = None, limit: int = 10) -> str:
        """Open orders of one kind, oldest first. Costs no time.

        Args:
            kind: Which orders (choices: ["customer", "purchase", "shipment"])
            sku: Only this SKU's orders, or null for all
            limit: At most this many orders, from 1 to 50
        """
        return self._use("query_orders", {"kind": kind, "sku": sku, "limit": limit})

    def query_ledger(self) -> str:
        """Cash, credit line, revenue and costs by category, since reset and in the last hour. Costs no time."""
        return self._use("query_ledger", {})

    def query_carriers(self) -> str:
        """Each carrier's list terms, presence and on-time rate observed over the last 24 hours. Costs no time."""
        return self._use("query_carriers", {})


_TOOL_NAMES = (
    "reorder",
    "choose_carrier",
    "expedite",
    "repair_dock",
    "wait",
    "query_inventory",
    "query_orders",
    "query_ledger",
    "query_carriers",
)


def _stem(path: str) -> str:
    base = os.path.basename(path)
    for ext in (".jsonl", ".csv", ".parquet"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return os.path.splitext(base)[0]


def _rollout_path(trace: str, n: int) -> str:
    """The trace of rollout ``n``: ``{n}`` in the path becomes ``n``; a path without it
    gets ``-r{n}`` before its extension, so rollouts never overwrite each other."""
    if "{n}" in trace:
        return trace.replace("{n}", str(n))
    stem = _stem(trace)
    return os.path.join(os.path.dirname(trace), f"{stem}-r{n}{os.path.basename(trace)[len(stem):]}")


def _layout_docs(world: str) -> dict:
    """Each tool's docstring for ``world``'s layout, from its MCP schema."""
    docs = {}
    for tool in tools(world, "mcp"):
        props = tool["inputSchema"].get("properties", {})
        lines = [tool["description"].strip()]
        if props:
            lines += ["", "Args:"]
            for arg, schema in props.items():
                desc = (schema.get("description") or arg).strip().rstrip(".")
                choices = schema.get("enum")
                choices = [c for c in choices if c is not None] if choices else None
                if choices:
                    desc += f" (choices: {json.dumps(choices)})"
                lines.append(f"    {arg}: {desc}")
        docs[tool["name"]] = "\n".join(lines) + "\n"
    return docs


def tool_env(
    world: Union[str, os.PathLike] = DEFAULT_WORLD,
    seed: Optional[int] = None,
    hours: int = DEFAULT_HOURS,
    snapshot: Any = None,
    obs_format: str = "text",
    max_calls_per_hour: int = DEFAULT_MAX_CALLS_PER_HOUR,
    **make_options: Any,
) -> type:
    """A ``ToolEnv`` subclass for ``world`` (an enterprise world file: a path, a shipped
    name or a registered id), to pass as ``environment_factory``: each rollout runs
    ``hours`` hours from ``seed`` (or from ``snapshot``, a ``perennial.Snapshot``), showing
    the hour as ``obs_format`` ``"text"`` or ``"json"``. ``make_options`` are
    ``perennial.make``'s (``trace``, ``run_id``, ``record_transitions``, ``notify``,
    ``trace_format``, ...); a ``trace`` path may hold ``{n}``, the rollout's number in this
    process, and without it each rollout's trace gets ``-r{n}`` before its extension.
    The tools' docstrings list this world's own indices and quantities.

    Raises ``ValueError`` for bad options and a world that is not the enterprise world.
    """
    path = resolve(world)
    if isinstance(hours, bool) or not isinstance(hours, int) or hours < 1:
        raise ValueError(f"hours={hours!r}: a rollout lasts a whole number of hours, at least 1")
    if obs_format not in _OBS_FORMATS:
        raise ValueError(f"obs_format={obs_format!r}; use \"text\" or \"json\"")
    if isinstance(max_calls_per_hour, bool) or not isinstance(max_calls_per_hour, int) or max_calls_per_hour < 1:
        raise ValueError(f"max_calls_per_hour={max_calls_per_hour!r}: use a whole number, at least 1")
    if snapshot is not None and not isinstance(snapshot, (_core.Snapshot, str)):
        raise ValueError(f"snapshot={type(snapshot).__name__}: pass a perennial.Snapshot or its to_json() text")
    for key in ("seed", "snapshot", "fork_index", "render_mode", "reveal_regime"):
        if key in make_options:
            raise ValueError(f"{key}= is not an option here" + (": pass it to tool_env directly" if key in ("seed", "snapshot") else ""))
    docs = _layout_docs(path)
    namespace: dict = {
        "world": path,
        "seed": seed,
        "hours": hours,
        "snapshot": snapshot,
        "obs_format": obs_format,
        "max_calls_per_hour": max_calls_per_hour,
        "make_options": dict(make_options),
        "__module__": __name__,
    }
    for name in _TOOL_NAMES:
        namespace[name] = _documented(getattr(ToolEnv, name), docs.get(name))
    return type("PerennialToolEnv", (ToolEnv,), namespace)


def _documented(fn: Any, doc: Optional[str]) -> Any:
    """``fn`` with another docstring (the same signature and annotations)."""

    def tool(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    tool.__name__ = fn.__name__
    tool.__qualname__ = f"PerennialToolEnv.{fn.__name__}"
    tool.__doc__ = doc or fn.__doc__
    tool.__annotations__ = dict(fn.__annotations__)
    tool.__signature__ = inspect.signature(fn)
    return tool


# ---------------------------------------------------------------------------------------
# rLLM's environment shape.


class RllmEnv:
    """The enterprise world in rLLM's ``BaseEnv`` shape, without importing rLLM:
    ``reset() -> (observation, info)``, ``step(tool_calls) -> (observation, reward, done,
    info)``, ``close()``, ``from_dict(info)`` and ``is_multithread_safe()``.

    ``step`` takes the model's tool calls as OpenAI's ``tool_calls`` list
    (``{"id", "function": {"name", "arguments"}}``), a single such dict, or ``{"name",
    "arguments"}`` dicts; they are answered in order. The observation is a dict
    ``{"tool_outputs": {call id: reply JSON text}, "observation": rendering}``; the reward
    is the hours' profit; ``done`` is true once ``hours`` hours passed.
    """

    def __init__(
        self,
        world: Union[str, os.PathLike] = DEFAULT_WORLD,
        seed: Optional[int] = None,
        hours: int = DEFAULT_HOURS,
        obs_format: str = "text",
        **make_options: Any,
    ) -> None:
        self._factory = tool_env(world, seed=seed, hours=hours, obs_format=obs_format, **make_options)
        self._tools = self._factory()
        self._env: Optional[PerennialEnv] = None
        self.info = dict(world=os.fspath(world), seed=seed, hours=hours, obs_format=obs_format, **make_options)

    def reset(self) -> tuple:
        prompt = self._tools.reset()
        self._env = self._tools._env
        return {"observation": prompt}, {"hours": self._tools.hours, "tools": tools(self._tools.world)}

    def step(self, action: Any) -> tuple:
        if self._env is None:
            raise ValueError("step() before reset(): reset() starts the rollout")
        calls = action if isinstance(action, list) else [action]
        before = self._tools.reward
        outputs = {}
        for i, tool_call in enumerate(calls):
            call_id, name, arguments = _unpack(tool_call, i)
            if self._tools.done and not str(name).startswith("query_"):
                reply = {"status": 409, "success": False, "data": None, "error": "the rollout's hours are spent"}
            else:
                reply = call(self._env, name, arguments)
                self._tools.reward += _hour_reward(reply) or 0.0
                if self._tools._left() <= 0:
                    self._tools.done = True
            outputs[call_id] = json.dumps(reply)
        obs = {"tool_outputs": outputs, "observation": self._tools._observation()}
        if self._tools.done:
            self._tools._close()
        return obs, self._tools.reward - before, self._tools.done, {"counts": counts(self._env)}

    def close(self) -> None:
        self._tools._close()

    @staticmethod
    def from_dict(info: dict) -> "RllmEnv":
        return RllmEnv(**info)

    @staticmethod
    def is_multithread_safe() -> bool:
        # Each RllmEnv owns its world and trace; instances share nothing.
        return True


def _unpack(tool_call: Any, i: int) -> tuple:
    """(id, name, arguments) of one tool call in any of the accepted shapes."""
    if not isinstance(tool_call, dict):
        return f"call_{i}", "", tool_call
    function = tool_call.get("function")
    if isinstance(function, dict):
        return str(tool_call.get("id", f"call_{i}")), function.get("name"), function.get("arguments")
    return str(tool_call.get("id", f"call_{i}")), tool_call.get("name"), tool_call.get("arguments")


# ---------------------------------------------------------------------------------------
# Transcripts.


class Transcript:
    """Writes ``<run-id>.transcript.jsonl``: one JSON line per model call, in the format
    docs/llm-agents.md ("Transcripts") defines, flushed line by line so a killed run keeps
    every call but the one in flight. ``perennial episodes TRACE --transcripts FILE``
    turns it into rLLM Steps with their messages.

    ``Transcript.beside(trace, run_id)`` puts it in the trace's folder.
    """

    def __init__(self, path: Union[str, os.PathLike], run_id: str) -> None:
        self.path = os.fspath(path)
        self.run_id = run_id
        self.calls = 0
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8")

    @classmethod
    def beside(cls, trace: Union[str, os.PathLike], run_id: str) -> "Transcript":
        return cls(os.path.join(os.path.dirname(os.fspath(trace)), f"{run_id}.transcript.jsonl"), run_id)

    def record(
        self,
        *,
        step: int,
        hours: int,
        messages: list,
        content: Optional[str],
        tool_calls: list,
        replies: list,
        model: str = "",
        reasoning: Optional[str] = None,
        finish_reason: Optional[str] = None,
        usage: Optional[dict] = None,
    ) -> None:
        """Appends one model call: made at trace step ``step``, letting ``hours`` hours
        pass; ``messages`` new since the previous call; the assistant's ``content``,
        ``reasoning`` and ``tool_calls``; one reply envelope per tool call."""
        line = {
            "run_id": self.run_id,
            "call": self.calls,
            "step": int(step),
            "hours": int(hours),
            "model": model,
            "messages": messages,
            "content": content,
            "reasoning": reasoning,
            "tool_calls": tool_calls,
            "replies": replies,
            "finish_reason": finish_reason,
            "usage": usage,
        }
        self._file.write(json.dumps(line, allow_nan=False) + "\n")
        self._file.flush()
        self.calls += 1

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> "Transcript":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
