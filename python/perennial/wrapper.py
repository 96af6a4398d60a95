"""Any Gymnasium env as a perennial world: ``perennial.wrap``.

``wrap(env, regimes=..., schedule=...)`` hands ``env`` to perennial's run core: the
scheduler sets the attributes the regimes name on ``env.unwrapped`` mid-episode (the
episode goes on), and every step can land in a trace that ``perennial eval`` scores, with
the events table, notify levels and run manifest of any perennial run. The result is a
``gymnasium.Wrapper``, so ``wrapped.unwrapped`` is your env and Gymnasium's checker accepts
it.

A regime's conditions name attributes of ``env.unwrapped`` holding numbers (``gravity``,
``force_mag``), or the parameters its ``parameters()`` method declares; see
``perennial._adapter`` for the rules. The same world as a file::

    [world]
    kind = "python"
    entry_point = "CartPole-v1"        # or "package.module:Class"

    [[regimes]]
    label = "earth"
    conditions = { gravity = 9.8 }
    ...

runs with ``perennial.make(path)`` or ``python -m perennial run path``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Mapping, Optional, Sequence, SupportsFloat, Union

import gymnasium as gym
import numpy as np

from . import _core
from ._adapter import WorldAdapter
from ._options import RunOptions
from .env import RunControls

__all__ = ["WrappedEnv", "world_text", "wrap"]

Regimes = Union[Mapping[str, Mapping[str, float]], Sequence[Mapping[str, Any]]]


def _toml_value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"{where} is {v}; use a finite number")
        return repr(v)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, Mapping):
        items = ", ".join(
            f"{_key(k, where)} = {_toml_value(v, f'{where}.{k}')}" for k, v in value.items()
        )
        return "{ " + items + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    raise ValueError(f"{where} is a {type(value).__name__}; use numbers, strings and lists")


def _key(key: Any, where: str) -> str:
    if not isinstance(key, str) or not key:
        raise ValueError(f"{where}: key {key!r} is not a non-empty string")
    if all(c.isalnum() or c in "-_" for c in key):
        return key
    return _toml_value(key, where)


def world_text(
    regimes: Optional[Regimes] = None,
    schedule: Optional[Mapping[str, Any]] = None,
    notify: Optional[str] = None,
    description: str = "",
) -> str:
    """The world file ``wrap`` composes (``kind = "python"``) for these regimes and this
    schedule: ``regimes`` maps each label to its conditions (or is a list of
    ``{"label": ..., "conditions": {...}}``), ``schedule`` is the ``[schedule]`` table
    (``{"plan": "cycle", "labels": [...], "every": 1000}``)."""
    lines = ["[world]", 'kind = "python"']
    if description:
        lines.append(f"description = {_toml_value(description, 'description')}")
    if regimes is not None:
        if isinstance(regimes, Mapping):
            entries = [{"label": k, "conditions": v} for k, v in regimes.items()]
        else:
            entries = list(regimes)
        for i, r in enumerate(entries):
            if not isinstance(r, Mapping) or "label" not in r:
                raise ValueError(
                    f"regimes[{i}] is {r!r}; give a dict from label to conditions, or a "
                    "list of {'label': ..., 'conditions': {...}}"
                )
            lines += ["", "[[regimes]]", f"label = {_toml_value(r['label'], f'regimes[{i}].label')}"]
            conditions = r.get("conditions", {})
            if not isinstance(conditions, Mapping):
                raise ValueError(f"regimes[{i}].conditions is {conditions!r}; give a dict")
            lines.append(f"conditions = {_toml_value(dict(conditions), 'regimes.' + str(r['label']))}")
    if schedule is not None:
        if not isinstance(schedule, Mapping):
            raise ValueError(f"schedule is {schedule!r}; give the [schedule] table as a dict")
        lines += ["", "[schedule]"]
        for k, v in schedule.items():
            lines.append(f"{_key(k, 'schedule')} = {_toml_value(v, f'schedule.{k}')}")
    if notify is not None:
        lines += ["", "[notify]", f"level = {_toml_value(notify, 'notify')}"]
    return "\n".join(lines) + "\n"


def wrap(
    env: gym.Env,
    regimes: Optional[Regimes] = None,
    schedule: Optional[Mapping[str, Any]] = None,
    notify: Optional[str] = None,
    description: str = "",
    **run_options: Any,
) -> "WrappedEnv":
    """Makes ``env`` (a ``gymnasium.Env`` with a Discrete action space and a Box or
    Discrete observation space) a perennial world under ``regimes`` and ``schedule``.

    ``notify`` is the composed world file's ``[notify] level``. ``run_options`` are those
    of ``perennial.make`` (``seed`` 0 by default: episode ``e`` is reset with a seed derived
    from it, as in ``perennial run``; ``trace``, ``run_id``, ``algorithm_id``,
    ``record_transitions``, ``trace_format``, ``reveal_regime``, ``part_seconds``).
    Raises ``WorldFileError`` when a regime names an attribute the env lacks (or gives it a
    value it cannot take), ``ValueError`` for an env perennial cannot run, ``TypeError``
    for an unknown option.
    """
    from .env import check_seed

    run = RunOptions.of("wrap", run_options)
    text = world_text(regimes, schedule, notify, description)
    run = dataclasses.replace(run, seed=check_seed(0 if run.seed is None else run.seed))
    return WrappedEnv(env, text, run)


class WrappedEnv(RunControls, gym.Wrapper):
    """A Gymnasium env run by perennial's run core (made by :func:`wrap`).

    Observations and rewards are the env's own; ``info`` carries ``notify`` (at a notify
    level other than ``none``) and ``regime`` (with ``reveal_regime``) as for
    ``perennial.make``. ``regime``, ``shift``, ``snapshot``, ``restore`` and ``close`` work
    as on ``PerennialEnv`` (a restore makes the saved env the wrapped one).
    """

    def __init__(self, env: gym.Env, text: str, run: Optional[RunOptions] = None) -> None:
        super().__init__(env)
        run = RunOptions(seed=0) if run is None else run
        self._adapter = WorldAdapter(env)
        self._start = int(getattr(env.action_space, "start", 0))
        self._run = run.start(text, 0 if run.seed is None else run.seed, adapter=self._adapter)
        self._reveal = run.reveal_regime
        self._notify = self._run.notify != "none"
        #: The composed world file's text.
        self.world_text = text

    @property
    def spec(self) -> None:
        """None: a wrapped env is not recreated from a Gymnasium spec (its regimes and
        trace are perennial's), so it carries none."""
        return None

    def counters(self) -> tuple[int, int, int]:
        """(steps in the run, episode index, step within the episode)."""
        return self._run.counters()

    def _restored_observation(self, snapshot: "_core.Snapshot") -> Any:
        # The adapter loaded the saved env: it is the env this wrapper wraps from now on.
        self.env = self._adapter.env
        return self._adapter.last_obs

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[Any, dict[str, Any]]:
        from .env import check_seed

        if seed is not None:
            seed = check_seed(seed, "a seed")
        self._run.reset(seed)
        info: dict[str, Any] = {"regime": self._run.regime} if self._reveal else {}
        return self._adapter.last_obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        index = action - self._start if self._start else action
        _obs, reward, terminated, truncated, _components, _payout = self._run.step(index)
        info: dict[str, Any] = {}
        if self._reveal:
            info["regime"] = self._run.regime
        if self._notify:
            notification = self._run.notification()
            if notification is not None:
                info["notify"] = notification
        return self._adapter.last_obs, reward, terminated, truncated, info

    def close(self) -> None:
        """Ends the trace and its manifest, then closes the env."""
        run = getattr(self, "_run", None)
        if run is not None:
            run.close()
        super().close()
