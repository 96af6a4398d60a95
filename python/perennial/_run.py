"""``python -m perennial run WORLD --agent module:Class``: a Python agent in any world.

A Python agent is a class named ``module:Class`` (imported as ``import module``, with the
working directory on the path). It is built as ``Class(action_space, observation_space,
**options)`` (the options from ``--agent-opt KEY=VALUE``, the value read as TOML) and
offers:

- ``act(obs) -> action``: the action for a float32 observation (an integer of the
  Discrete action space);
- ``update(window)`` (optional): called every ``--window-steps`` steps and once at the
  end with a dict of numpy arrays ``obs``, ``actions``, ``rewards``, ``terminated``,
  ``truncated`` and ``next_obs``, one entry per step of the window;
- ``notify(notification)`` (optional): at a notify level other than ``none``, the dict
  ``{"level", "step", "label", "delta"}`` of a shift, after the step taken under the new
  regime and before the next ``act`` (one step after a Rust agent's ``notify``, as for the
  Python env's ``info["notify"]``);
- ``algorithm_id`` (optional attribute): the trace's algorithm id (default: the class
  name).

The world runs in perennial's run core (the one the Python env drives), so the trace, the
events table and the run manifest are those of any perennial run. Bad input (a module that
does not import, a class without ``act``, an action outside the space, an agent that
raises) is an error naming the agent and the step, exit code 2; the rows written before it
stay in the trace and the manifest records the failure.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from . import _core
from ._options import RunOptions
from ._spaces import to_space
from ._worlds import resolve

#: Exit codes of ``perennial run``: bad input, and a run that failed.
BAD_INPUT = 2
RUN_FAILED = 1

#: The world ``perennial run`` uses when none is given.
DEFAULT_WORLD = "worlds/warehouse.toml"

#: Flags of ``perennial run`` that a Python agent's run cannot honour, and why.
NOT_FOR_PYTHON_AGENTS = {
    "checkpoint_every": ("--checkpoint-every", "a Python agent's state is not checkpointed"),
    "checkpoint": ("--checkpoint", "a Python agent's state is not checkpointed"),
    "resume": ("--resume", "a Python agent's run has no checkpoint to continue from"),
    "allow_world_change": ("--allow-world-change", "a Python agent's run cannot be resumed"),
}


class BadInput(Exception):
    """Input the run cannot go on with: exit code 2."""


class RunFailed(Exception):
    """The world or the trace failed: exit code 1."""


def is_python_agent(name: Optional[str]) -> bool:
    """Whether an ``--agent`` value names a Python class (``module:Class``)."""
    return name is not None and ":" in name


def wants_python_agent(argv: list[str]) -> bool:
    """Whether ``perennial run`` arguments name a Python agent, by ``--agent`` or by the
    world file's ``[harness] agent``."""
    if not argv or argv[0] != "run" or any(a in ("-h", "--help") for a in argv):
        return False
    try:
        args, _ = _parser().parse_known_args(argv[1:])
    except SystemExit:
        return False
    if args.agent is not None:
        return is_python_agent(args.agent)
    if args.resume is not None:
        return False
    try:
        harness = json.loads(_core.check_world(resolve(args.world_file or DEFAULT_WORLD)))["harness"]
    except Exception:
        return False  # the command line reports the world file's error
    return is_python_agent(harness.get("agent"))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m perennial run",
        description="Run a Python agent (--agent module:Class) in a world and write its trace.",
    )
    p.add_argument("world_file", nargs="?")
    p.add_argument("--agent")
    p.add_argument("--agent-opt", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--steps", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--window-steps", type=int)
    p.add_argument("--auto-reset", nargs="?", const="true", choices=["true", "false"])
    p.add_argument("--trace")
    p.add_argument("--format", choices=["jsonl", "csv", "parquet"], default="jsonl")
    p.add_argument("--run-id")
    p.add_argument("--record-transitions", action="store_true")
    p.add_argument("--part-seconds", type=float)
    p.add_argument("--no-trace", action="store_true")
    p.add_argument("--notify", choices=["none", "flag", "delta", "label"])
    p.add_argument("--checkpoint-every", type=int)
    p.add_argument("--checkpoint")
    p.add_argument("--resume")
    p.add_argument("--allow-world-change", action="store_true")
    return p


def main(argv: list[str]) -> int:
    """Runs ``perennial run`` arguments (``argv[0] == "run"``) with a Python agent; returns
    the exit code."""
    try:
        return _run(_parser().parse_args(argv[1:]))
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return BAD_INPUT
    except RunFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return RUN_FAILED


def _option(opt: str) -> tuple[list[str], Any]:
    key, sep, raw = opt.partition("=")
    path = key.strip().split(".")
    if not sep or any(not part for part in path):
        raise BadInput(f"--agent-opt `{opt}`: expected KEY=VALUE (KEY may be dotted)")
    try:
        import tomllib

        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except Exception:
        value = raw.strip()
    return path, value


def agent_options(opts: list[str]) -> dict:
    """``--agent-opt KEY=VALUE`` flags as nested keyword arguments: VALUE is TOML, else a
    string; a dotted KEY names nested dicts (as for the Rust agents)."""
    table: dict = {}
    for opt in opts:
        path, value = _option(opt)
        at = table
        for part in path[:-1]:
            at = at.setdefault(part, {})
            if not isinstance(at, dict):
                raise BadInput(f"--agent-opt `{opt}`: `{part}` is not a table")
        at[path[-1]] = value
    return table


def load_agent(name: str, action_space, observation_space, options: dict):
    """Imports ``module:Class``, builds it and checks it has ``act``."""
    module_name, _, class_name = name.partition(":")
    if not module_name or not class_name:
        raise BadInput(f"--agent {name}: name a Python agent as module:Class")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise BadInput(
            f"--agent {name}: module `{module_name}` cannot be imported: {type(e).__name__}: {e}"
        ) from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise BadInput(f"--agent {name}: module `{module_name}` has no `{class_name}`")
    if not callable(getattr(cls, "act", None)):
        raise BadInput(
            f"--agent {name}: `{class_name}` has no method `act(obs) -> action`; "
            "a Python agent needs one (and may have update(window) and notify(notification))"
        )
    try:
        agent = cls(action_space, observation_space, **options)
    except Exception as e:
        raise BadInput(
            f"--agent {name}: {class_name}(action_space, observation_space, **options) "
            f"raised {type(e).__name__}: {e}"
        ) from None
    return agent


def _default_run_id(task: str, world: str, agent: str, seed: int, notify: str) -> str:
    # As `perennial run`: the world file's stem after the task when it differs.
    stem = Path(world.removeprefix("shipped:")).stem
    if notify != "none":
        agent = f"{agent}-notify-{notify}"
    if not stem or stem == task:
        return f"{task}-{agent}-seed{seed}"
    return f"{task}-{stem}-{agent}-seed{seed}"


class _Window:
    """The steps since the agent's last ``update``."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.obs: list = []
        self.actions: list = []
        self.rewards: list = []
        self.terminated: list = []
        self.truncated: list = []
        self.next_obs: list = []

    def __len__(self) -> int:
        return len(self.rewards)

    def as_dict(self) -> dict:
        return {
            "obs": np.asarray(self.obs),
            "actions": np.asarray(self.actions),
            "rewards": np.asarray(self.rewards, dtype=np.float64),
            "terminated": np.asarray(self.terminated, dtype=bool),
            "truncated": np.asarray(self.truncated, dtype=bool),
            "next_obs": np.asarray(self.next_obs),
        }


def _refuse_flags(args: argparse.Namespace) -> None:
    for attr, (flag, why) in NOT_FOR_PYTHON_AGENTS.items():
        if getattr(args, attr) not in (None, False):
            raise BadInput(f"{flag} does not apply to a Python agent ({args.agent}): {why}; leave it out")
    if args.no_trace and args.trace is not None:
        raise BadInput("--no-trace and --trace exclude each other")
    if args.part_seconds is not None and args.format != "parquet":
        raise BadInput(
            "--part-seconds applies to Parquet traces only (--format parquet): JSON Lines "
            "and CSV hand every window's rows to the file at its flush"
        )
    for flag, value, low in (("--steps", args.steps, 0), ("--seed", args.seed, 0), ("--window-steps", args.window_steps, 1)):
        if value is not None and value < low:
            raise BadInput(f"{flag} is {value}; use a whole number from {low} up")


def _trace_path(args: argparse.Namespace, run_id: str) -> Optional[str]:
    if args.no_trace:
        return None
    if args.trace is None:
        return os.path.abspath(os.path.join("runs", f"{run_id}.{args.format}"))
    path = os.path.abspath(args.trace)
    ext = Path(path).suffix.lstrip(".").lower()
    if ext in ("jsonl", "csv", "parquet") and ext != args.format:
        raise BadInput(
            f"--trace {args.trace}: the extension says {ext} but the format is {args.format}; "
            f"pass --format {ext} or name the file .{args.format}"
        )
    return path


def _run(args: argparse.Namespace) -> int:
    world = resolve(args.world_file or DEFAULT_WORLD)
    if not world.startswith("shipped:"):
        world = os.path.abspath(world)  # the manifest records it, as `perennial run` does
    try:
        harness = json.loads(_core.check_world(world))["harness"]
    except ValueError as e:
        raise BadInput(str(e)) from None
    args.agent = args.agent or harness.get("agent")
    _refuse_flags(args)
    steps = args.steps if args.steps is not None else (harness["steps"] or 100_000)
    window_steps = args.window_steps or harness["window_steps"] or 256
    auto_reset = (args.auto_reset == "true") if args.auto_reset is not None else bool(harness["auto_reset"])
    seed = args.seed if args.seed is not None else (harness["seed"] or 0)
    options = agent_options(args.agent_opt)

    try:
        run = RunOptions(notify=args.notify).start(world, int(seed), traced=False)
    except ValueError as e:
        raise BadInput(str(e)) from None
    spec = run.spec()
    action_space = to_space(spec["action_space"])
    observation_space = to_space(spec["observation_space"])
    agent = load_agent(args.agent, action_space, observation_space, options)
    algorithm_id = str(getattr(agent, "algorithm_id", type(agent).__name__))
    task = spec["id"]
    run_id = args.run_id or _default_run_id(task, world, algorithm_id, int(seed), run.notify)
    try:
        run.identify(run_id, algorithm_id)
    except ValueError as e:
        raise BadInput(f"--run-id: {e}" if args.run_id else f"{e}; pass --run-id") from None
    trace = _trace_path(args, run_id)
    if trace is not None:
        run.describe(
            args.agent,
            json.dumps(options),
            json.dumps(
                {
                    "interface": "python -m perennial run",
                    "agent": args.agent,
                    "steps": steps,
                    "window_steps": window_steps,
                    "auto_reset": auto_reset,
                }
            ),
        )
        try:
            _core.open_trace(run, trace, args.format, args.record_transitions, args.part_seconds, None)
        except ValueError as e:
            raise BadInput(str(e)) from None
    return _drive(run, agent, args.agent, steps, window_steps, auto_reset, trace, world)


def _drive(run, agent, name: str, steps: int, window_steps: int, auto_reset: bool, trace, world) -> int:
    update = getattr(agent, "update", None)
    notify = getattr(agent, "notify", None) if run.notify != "none" else None
    window = _Window()
    labels: dict[str, list] = {}
    total, ended, shifts, stop = 0.0, 0, 0, "step budget spent"
    regime = run.regime
    started = time.monotonic()
    done_steps = 0
    try:
        obs = run.reset()
        while done_steps < steps:
            step = done_steps
            try:
                action = agent.act(obs)
            except Exception as e:
                raise BadInput(f"step {step}: agent {name} raised {type(e).__name__} in act: {e}") from None
            try:
                next_obs, reward, terminated, truncated, _, _ = run.step(action)
            except ValueError as e:
                raise BadInput(f"agent {name}: {e}") from None
            except RuntimeError as e:
                raise RunFailed(str(e)) from None
            done_steps += 1
            total += reward
            if run.regime != regime:
                regime = run.regime
                shifts += 1
            label = labels.setdefault(regime, [0, 0.0])
            label[0] += 1
            label[1] += reward
            window.obs.append(obs)
            window.actions.append(int(action))
            window.rewards.append(reward)
            window.terminated.append(terminated)
            window.truncated.append(truncated)
            window.next_obs.append(next_obs)
            if len(window) >= window_steps:
                _update(update, window, name, step)
            notification = run.notification() if notify is not None else None
            if notification is not None:
                _call(notify, notification, name, step, "notify")
            obs = next_obs
            if terminated or truncated:
                ended += 1
                if not auto_reset:
                    stop = "the env ended the episode (auto_reset off)"
                    break
                obs = run.reset()
        if len(window):
            _update(update, window, name, done_steps - 1)
    except KeyboardInterrupt:
        run.interrupt()
        run.close()
        print("interrupted: every row so far is in the trace", file=sys.stderr)
        return 130
    except (BadInput, RunFailed) as e:
        run.fail(str(e))
        try:
            run.close()
        except Exception:
            pass
        raise
    try:
        run.close()
    except (ValueError, RuntimeError) as e:
        raise RunFailed(str(e)) from None
    _report(run, world, (done_steps, ended, shifts, stop), total, labels, started, trace)
    return 0


def _call(method, argument, name: str, step: int, what: str) -> None:
    try:
        method(argument)
    except Exception as e:
        raise BadInput(f"step {step}: agent {name} raised {type(e).__name__} in {what}: {e}") from None


def _update(update, window: _Window, name: str, step: int) -> None:
    if update is not None:
        _call(update, window.as_dict(), name, step, "update")
    window.clear()


def _report(run, world, counts, total, labels, started, trace) -> None:
    steps, ended, shifts, stop = counts
    run_id, seed, algorithm_id, task = run.identity()
    shown = world.removeprefix("shipped:")
    print(f"run        {run_id}")
    print(f"world      {shown} ({task})")
    print(f"agent      {algorithm_id}   seed {seed}")
    print(f"steps      {steps}   episodes ended {ended}   shifts {shifts}   stopped: {stop}")
    print(f"reward     total {total:.3f}   mean/step {total / max(steps, 1):.5f}")
    print(f"time       {time.monotonic() - started:.2f} s for this invocation")
    print()
    print(f"{'regime':<20} {'steps':>10} {'mean reward':>14}")
    for label, (n, reward) in sorted(labels.items()):
        print(f"{label:<20} {n:>10} {reward / n:>14.5f}")
    if trace is not None:
        print()
        print(f"trace      {trace}")
        if steps == 0:
            print("score it:  nothing to score, the run took no steps")
        else:
            print(f"score it:  perennial eval {trace}")
