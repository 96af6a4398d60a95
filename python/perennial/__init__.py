"""perennial: reinforcement-learning worlds that may never end, as Gymnasium environments.

``import perennial`` registers the shipped worlds with Gymnasium:

- ``perennial/CartPole-v1``: Gymnasium's CartPole-v1, bit for bit;
- ``perennial/CartPoleDrift-v0``: CartPole whose physics shift mid-episode;
- ``perennial/Warehouse-v0``: the enterprise world's inbound warehouse task;
- ``perennial/Logistics-v0``: the enterprise world's outbound logistics task;
- ``perennial/Enterprise-v0``: the enterprise world run by two roles, ``warehouse`` and
  ``logistics``, with one joint action (``perennial.parallel_env`` gives it to PettingZoo
  as one agent per role).

The worlds run in Rust, regimes shift without telling the agent, and every step can land
in a trace that ``perennial.evaluate`` (or ``perennial eval``) scores::

    import gymnasium as gym
    import perennial

    env = perennial.make("perennial/Warehouse-v0", seed=0, trace="runs/warehouse.jsonl")
    obs, info = env.reset()
    for _ in range(1_000):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, info = env.reset()
    env.close()
    report = perennial.evaluate(["runs/warehouse.jsonl"])
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from typing import Any, Optional, Sequence

import gymnasium as gym

from . import _core
from ._core import Snapshot, WorldFileError, __version__
from ._options import RunOptions
from ._worlds import SHIPPED_IDS, resolve, shipped_worlds
from .env import PerennialEnv
from .sweep import SweepError, sweep
from .vector import PerennialVectorEnv
from .wrapper import WrappedEnv, world_text, wrap
from . import bench, llm

__all__ = [
    "__version__",
    "ContractError",
    "PerennialEnv",
    "PerennialVectorEnv",
    "RunOptions",
    "Snapshot",
    "SweepError",
    "WorldFileError",
    "WrappedEnv",
    "agents",
    "check_env",
    "evaluate",
    "export_episodes",
    "fork",
    "load_events",
    "make",
    "make_vec",
    "parallel_env",
    "shipped_worlds",
    "sweep",
    "world_file",
    "world_text",
    "wrap",
]


def world_file(world: str | os.PathLike) -> str:
    """What a world resolves to: ``shipped:<name>`` for a registered id or shipped file
    name, else the path itself."""
    return resolve(world)


def agents(world: str | os.PathLike) -> list[str]:
    """The agent names ``perennial run --agent`` and sweep files accept for a world (a
    path, a shipped name or a registered id): the generic agents (``random``,
    ``actor-critic`` and the PPO families) first, then the world kind's own (``balance`` on
    CartPole; ``base-stock``, ``adaptive-base-stock`` and ``oracle`` on the enterprise
    world). The README's agents table says what each does."""
    return list(_core.agents(resolve(world)))


def make(world: str | os.PathLike, **options: Any) -> PerennialEnv:
    """Builds a world file (a path, a shipped name or a registered id) as a ``gymnasium.Env``.

    ``options`` are ``PerennialEnv``'s: ``seed``, ``trace``, ``run_id``, ``algorithm_id``
    (default ``"python"``), ``record_transitions``, ``trace_format``, ``reveal_regime``,
    ``notify`` (``"none"``, ``"flag"``, ``"delta"`` or ``"label"``; see ``PerennialEnv``).
    ``make(w, seed=S)`` followed by ``reset()`` gives episode 0 the world seed that
    ``perennial run w --seed S`` gives it.

    For a registered id the env carries its ``gymnasium`` spec (``env.spec.id``, the options
    in ``env.spec.kwargs``), as ``gym.make(id).unwrapped`` does; an env made from a path
    has none, as a Gymnasium env built directly has none.

    Raises ``perennial.WorldFileError`` (with ``file``, ``line`` and ``field``) for a world
    file that cannot be used, ``ValueError`` for bad options.
    """
    env = PerennialEnv(world, **options)
    key = world if isinstance(world, str) else None
    if key in SHIPPED_IDS and key in gym.registry:
        registered = gym.registry[key]
        env.spec = dataclasses.replace(registered, kwargs={**registered.kwargs, **options})
    return env


def parallel_env(world: str | os.PathLike = "perennial/Enterprise-v0", **options: Any) -> Any:
    """Builds a world file with a ``[roles]`` table (a path, a shipped name or a registered
    id) as a ``pettingzoo.ParallelEnv``, one agent per role; see
    ``perennial.parallel.PerennialParallelEnv``.

    ``options`` are ``make``'s (``seed``, ``trace``, ``run_id``, ``algorithm_id``,
    ``record_transitions``, ``trace_format``, ``reveal_regime``, ``notify``,
    ``part_seconds``) and ``observe`` (``"own"`` or ``"full"``: what every role observes;
    default: the world file's) and ``max_steps`` (truncate every role together after that
    many steps; default never). Needs PettingZoo (``pip install perennial[pettingzoo]``).
    Raises ``ValueError`` for a world without roles and for bad options.
    """
    try:
        from .parallel import parallel_env as build
    except ImportError as e:
        raise ImportError(
            f"perennial.parallel_env needs PettingZoo ({e}); install it with "
            "pip install 'perennial[pettingzoo]'"
        ) from e
    return build(world, **options)


#: The most rollouts ``fork`` makes at once, as ``perennial fork --rollouts``.
MAX_FORK_ROLLOUTS = 10_000


def fork(env: gym.Env, k: int, **options: Any) -> list[PerennialEnv]:
    """``k`` independent envs in the state ``env`` is in now, built from its snapshot.

    Each is ``make(world, snapshot=env.unwrapped.snapshot(), **options)``: it meets the
    same world from here on (demand, failures, regime shifts come from the saved streams),
    so only the actions taken in it differ. Step each on without ``reset()``, from the
    observation ``env`` acts on next (``envs[i].snapshot().observation``). Rollout ``i``'s
    run id is ``{run id}-s{step}-r{i}``, as ``perennial fork`` names them; a ``trace`` option must hold ``{k}``
    (``trace="runs/rollout-{k}.jsonl"``), which becomes the rollout's index. ``env``
    itself is not changed.

    Raises ``ValueError`` for ``k`` below 1 or above ``MAX_FORK_ROLLOUTS``, and as ``make``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_FORK_ROLLOUTS:
        raise ValueError(f"fork: k={k!r}; pass a whole number of rollouts from 1 to {MAX_FORK_ROLLOUTS}")
    base = env.unwrapped
    if not isinstance(base, PerennialEnv):
        raise ValueError(f"fork: {type(base).__name__} is not a perennial env")
    trace = options.pop("trace", None)
    if trace is not None and "{k}" not in os.fspath(trace):
        raise ValueError(
            f"fork: trace={os.fspath(trace)!r} would be shared by {k} envs; put {{k}} in it "
            "(trace=\"runs/rollout-{k}.jsonl\") so each rollout gets its own"
        )
    snapshot = base.snapshot()
    defaults = {
        "algorithm_id": base._options["algorithm_id"],
        "reveal_regime": base._options["reveal_regime"],
    }
    envs = []
    for i in range(k):
        opts = {**defaults, **options}
        opts.setdefault("run_id", f"{snapshot.run_id}-s{snapshot.step}-r{i}")
        if trace is not None:
            opts["trace"] = os.fspath(trace).replace("{k}", str(i))
            opts["fork_index"] = i
        envs.append(make(base.world_file, snapshot=snapshot, **opts))
    return envs


def make_vec(
    world: str | os.PathLike, num_envs: int, autoreset_mode: str = "next_step"
) -> PerennialVectorEnv:
    """``num_envs`` copies of a world file as a ``gymnasium.vector.VectorEnv``.

    ``autoreset_mode`` is ``"next_step"`` (Gymnasium's default), ``"same_step"`` or
    ``"disabled"``. ``reset(seed=s)`` seeds copy ``i`` as a single env reset with ``s + i``.
    """
    return PerennialVectorEnv(world, num_envs, autoreset_mode)


def evaluate(
    traces: str | os.PathLike | Sequence[str | os.PathLike],
    window: int = 100,
    include_payout: bool = False,
) -> dict[str, Any]:
    """Scores traces: the ``perennial eval --json`` document as Python objects.

    ``window`` is the smoothing window W; ``include_payout`` counts episode-end payouts in
    the shape metrics. Raises ``ValueError`` for an unreadable or malformed trace.
    """
    if window < 1:
        raise ValueError(f"window={window}: the smoothing window must be at least 1 step")
    return json.loads(_core.evaluate(_paths(traces), window, include_payout))


def export_episodes(
    traces: str | os.PathLike | Sequence[str | os.PathLike],
    out: str | os.PathLike,
    advantage: Optional[str] = "grpo",
    chunk_steps: Optional[int] = None,
) -> str:
    """Writes the traces' experience as rLLM episodes (JSON Lines) to ``out``.

    ``advantage`` is ``"grpo"``, ``"rloo"``, ``"reinforce"`` or None; ``chunk_steps`` cuts
    long episodes into chunks of that many steps. Returns the summary line
    ``perennial episodes`` prints.
    """
    return _core.export_episodes(_paths(traces), os.fspath(out), advantage, chunk_steps)


def load_events(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Reads a run's events table, ``<run-id>.events.<format>`` beside its trace (JSON
    Lines, CSV, or a Parquet directory), as a list of dicts, one per event in step order.
    ``path`` may also be the trace itself: the table beside it is read.

    Every dict has the table's columns: ``run_id``, ``step``, ``event``
    (``"regime_shift"``, ``"failure"`` or ``"episode_end"``), ``from_regime``,
    ``to_regime``, ``origin`` (shifts), ``kind``, ``target``, ``start``, ``duration``
    (failures), ``episode``, ``terminated``, ``truncated`` (episode ends); the ones that do
    not apply are None. ``pandas.DataFrame(load_events(p))`` makes a frame of it, and
    pyarrow, pandas or polars read a Parquet table directly.

    What cannot be read (a torn last line or a half-written part of a killed run, a line
    that is not an event, a missing file) is skipped with a ``RuntimeWarning`` naming it;
    every readable event is returned.
    """
    rows, problems = _core.load_events(os.fspath(path))
    for p in problems:
        warnings.warn(p, RuntimeWarning, stacklevel=2)
    return json.loads(rows)


class ContractError(ValueError):
    """A world that breaks perennial's ``Env`` contract: ``rule`` names the rule and
    ``step`` the step of the rule's trajectory at which it broke."""

    def __init__(self, rule: str, step: int, message: str) -> None:
        super().__init__(f"rule `{rule}` broken at step {step}: {message}")
        self.rule, self.step = rule, step


def check_env(world: Any, seed: int = 0, steps: int = 500) -> dict[str, Any]:
    """Runs perennial's ``Env`` contract on a world, as ``perennial check`` does: spaces
    and spec agree with what ``step`` returns, ``reset(seed)`` is deterministic and
    destroys the previous world, a step after an episode end is an error, an invalid
    action changes nothing, a parameter shift ends no episode, and a saved state restores
    to the same future.

    ``world`` is a ``gymnasium.Env`` written in Python (or a ``perennial.wrap`` of one), a
    callable returning a fresh one (each rule then runs on fresh worlds), or a world file
    (a path or a registered id; its worlds are built by perennial). Returns ``{"passed":
    [...], "skipped": [(rule, why), ...]}``; raises ``ContractError`` naming the broken rule
    and the step.
    """
    from ._adapter import WorldAdapter

    if isinstance(world, (str, os.PathLike)) or isinstance(world, PerennialEnv):
        path = world.world_file if isinstance(world, PerennialEnv) else resolve(world)
        text = _core.check_contract(path, seed, steps)
        report = json.loads(text)
    else:
        if isinstance(world, WrappedEnv):
            world = world.env
        if isinstance(world, gym.Env):
            env = world
            make = lambda: WorldAdapter(env)  # noqa: E731
        elif callable(world):
            factory = world
            make = lambda: WorldAdapter(factory())  # noqa: E731
        else:
            raise TypeError(
                f"check_env({world!r}): give a gymnasium.Env, a callable returning one, or "
                "a world file"
            )
        report = _core.check_env(make, seed, steps)
    failure = report.pop("failure", None)
    if failure is not None:
        raise ContractError(failure["rule"], failure["step"], failure["message"])
    report["skipped"] = [tuple(s) for s in report["skipped"]]
    return report


def _paths(traces: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    if isinstance(traces, (str, os.PathLike)):
        return [os.fspath(traces)]
    paths = [os.fspath(t) for t in traces]
    if not paths:
        raise ValueError("give at least one trace")
    return paths


def _register() -> None:
    for env_id in SHIPPED_IDS:
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="perennial.env:PerennialEnv",
            vector_entry_point="perennial.vector:PerennialVectorEnv",
            kwargs={"world": env_id},
            # The world imposes its own cutoffs (CartPole's 500 steps): no TimeLimit on top.
            max_episode_steps=None,
        )


_register()
