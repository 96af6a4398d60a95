"""`PerennialParallelEnv`: a world run by several roles as a `pettingzoo.ParallelEnv`."""

from __future__ import annotations

import dataclasses
import operator
import os
from typing import Any, Optional

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from . import _core
from ._options import RunOptions
from ._spaces import to_space
from ._worlds import resolve
from .env import RunState, check_seed, default_seed


class PerennialParallelEnv(RunState, ParallelEnv):
    """A world file with a ``[roles]`` table (``perennial/Enterprise-v0``) as a PettingZoo
    ``ParallelEnv``: one agent per role, all acting every hour.

    The world runs in Rust exactly as under ``perennial run --agent
    warehouse=...,logistics=...``: the roles' actions become the world's joint action, and
    its regimes, notify level, seeds and trace are a ``PerennialEnv``'s. What differs:

    - ``possible_agents`` are the roles in the order their operations apply
      (``["warehouse", "logistics"]``). Each has its own ``Discrete`` action space (index
      0 its no-op) and ``Box`` observation space: its view of the world (``observe``
      ``"own"``, the world file's default) or all of it (``"full"``). The spaces are built
      once: ``observation_space(agent)`` returns the same object every call.
    - ``state()`` is the full observation and ``state_space`` its space, for centralized
      training.
    - ``actions`` gives one action per agent. A key that is not a live agent raises
      ``ValueError``, as does an action outside its agent's space (nothing changes); a
      missing agent takes its no-op and its ``infos`` say ``"missing_action": True``.
    - ``rewards[agent]`` is what the role's agent learns from: ``alpha × team + (1 −
      alpha) × own``, with the world file's ``alpha`` (1, the default: the team reward).
      ``infos[agent]`` holds ``"team_reward"`` (the world's reward, the trace's
      ``reward``) and ``"own_reward"`` (the team reward's terms the role owns; the roles'
      own rewards add up to the team reward). Infos carry no timings, so two runs with the
      same seed and actions give equal infos.
    - The persistent world never ends an episode, so ``agents`` is never emptied. With
      ``max_steps=N`` every role is truncated together at the N-th step after a
      ``reset()``, and ``agents`` becomes empty until the next ``reset()``; an episode the
      world ends ends for every role alike.
    - ``reset()`` without a seed starts the run's next episode; ``reset(seed=k)`` starts
      the run afresh with run seed ``k``, as ``PerennialEnv.reset``.
    - With ``notify`` above ``"none"``, the first step under a new regime puts the
      notification in every agent's ``infos`` (``"notify"``).

    Args:
        world: a world file path, a shipped file name, or a registered id
            (``"perennial/Enterprise-v0"``).
        seed: the run seed (default: the world file's ``[harness]`` seed, else 0).
        observe: ``"own"`` (each role its view), ``"full"`` (every role the whole state)
            or None (what each role's ``observe`` in the world file says).
        max_steps: truncate every role after this many steps from a ``reset()`` (None:
            never; the world is persistent).
        trace, run_id, algorithm_id, record_transitions, trace_format, reveal_regime,
        notify, part_seconds, render_mode: as ``PerennialEnv``'s. The trace has one row per
        hour with the team reward, as ``perennial run`` writes for a roles world.

    A pickled copy is a fresh env rebuilt from the world file and these options, without
    the trace.
    """

    metadata = {"render_modes": [], "name": "perennial_enterprise_v0", "is_parallelizable": True}

    def __init__(
        self,
        world: str | os.PathLike = "perennial/Enterprise-v0",
        *,
        observe: Optional[str] = None,
        max_steps: Optional[int] = None,
        render_mode: Optional[str] = None,
        **run_options: Any,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r}: perennial worlds do not render; use None")
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1
        ):
            raise ValueError(f"max_steps={max_steps!r}: give a whole number of steps, at least 1, or None")
        run = RunOptions.of("parallel_env", run_options)
        path = resolve(world)
        seed = check_seed(default_seed(path) if run.seed is None else run.seed)
        run = dataclasses.replace(run, seed=seed)
        self._world = path
        self._options = dict(run.untraced(), observe=observe, max_steps=max_steps)
        self._run = run.start(path, seed)
        roles, self.alpha = _core.roles(self._run, observe)
        spec = self._run.spec()
        self.state_space = to_space(spec["observation_space"])
        self.reward_components = tuple(spec["components"])
        self.task = spec["id"]
        self.render_mode = None
        self.max_steps = None if max_steps is None else int(max_steps)
        self.possible_agents = [name for name, _, _ in roles]
        self.agents: list[str] = []
        self._seen = {name: np.asarray(seen, dtype=np.intp) for name, _, seen in roles}
        low, high = self.state_space.low, self.state_space.high
        self.observation_spaces = {
            name: spaces.Box(low=low[idx], high=high[idx], dtype=np.float32) for name, idx in self._seen.items()
        }
        self.action_spaces = {name: spaces.Discrete(int(n)) for name, n, _ in roles}
        self._reveal = run.reveal_regime
        self._notify = self._run.notify != "none"
        self._state: Optional[np.ndarray] = None
        self._steps = 0

    def observation_space(self, agent: str) -> spaces.Box:
        """Role ``agent``'s observation space (the same object every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        """Role ``agent``'s action space (the same object every call); index 0 is its no-op."""
        return self.action_spaces[agent]

    @property
    def world_file(self) -> str:
        """The world file this env was built from."""
        return self._world

    def state(self) -> np.ndarray:
        """The full observation (float32), inside ``state_space``. Raises ``ValueError``
        before the first ``reset()``."""
        if self._state is None:
            raise ValueError("state() before reset(): reset the env first")
        return self._state.copy()

    def _observations(self) -> dict[str, np.ndarray]:
        return {agent: self._state[self._seen[agent]] for agent in self.agents}

    def reset(
        self, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        if seed is not None:
            seed = check_seed(seed, "a seed")
        self._state = self._run.reset(seed)
        self._steps = 0
        self.agents = list(self.possible_agents)
        info = {"regime": self._run.regime} if self._reveal else {}
        return self._observations(), {agent: dict(info) for agent in self.agents}

    def _joint(self, actions: dict[str, Any]) -> tuple[int, set[str]]:
        if not self.agents:
            raise ValueError("step() after every agent is done: reset the env first")
        unknown = [key for key in actions if key not in self.agents]
        if unknown:
            raise ValueError(
                f"actions for unknown agent {unknown[0]!r}; the live agents are {self.agents}"
            )
        per_role, missing = [], set()
        for agent in self.possible_agents:
            if agent not in actions:
                missing.add(agent)
                per_role.append(0)
                continue
            action = actions[agent]
            n = self.action_spaces[agent].n
            try:
                index = operator.index(action)
            except TypeError:
                raise ValueError(
                    f"action {action!r} of agent {agent!r}: a discrete action is an integer"
                ) from None
            if not 0 <= index < n:
                raise ValueError(f"action {index} of agent {agent!r} is outside its space Discrete({n})")
            per_role.append(index)
        return _core.joint_action(self._run, per_role), missing

    def step(self, actions: dict[str, Any]) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        joint, missing = self._joint(actions)
        obs, team, terminated, truncated, _, _ = self._run.step(joint)
        self._state = obs
        self._steps += 1
        own, learning = _core.role_rewards(self._run, team)
        notification = self._run.notification() if self._notify else None
        truncated = truncated or (self.max_steps is not None and self._steps >= self.max_steps)
        observations = self._observations()
        rewards, terminations, truncations, infos = {}, {}, {}, {}
        for r, agent in enumerate(self.possible_agents):
            rewards[agent] = float(learning[r])
            terminations[agent] = bool(terminated)
            truncations[agent] = bool(truncated)
            info: dict[str, Any] = {"team_reward": float(team), "own_reward": float(own[r])}
            if agent in missing:
                info["missing_action"] = True
            if self._reveal:
                info["regime"] = self._run.regime
            if notification is not None:
                info["notify"] = notification
            infos[agent] = info
        if terminated or truncated:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> None:
        """Perennial worlds do not render."""
        return None

    def close(self) -> None:
        """Flushes and closes the trace and ends its manifest, as ``PerennialEnv.close``."""
        run = getattr(self, "_run", None)
        if run is not None:
            run.close()

    def __reduce__(self):
        # A copy is a fresh env rebuilt from the world file and options. It writes no trace:
        # a trace file belongs to one env, and a copy writing to it would destroy it.
        return (_rebuild, (self._world, self._options))


def _rebuild(world: str, options: dict[str, Any]) -> PerennialParallelEnv:
    return PerennialParallelEnv(world, **options)


def parallel_env(world: str | os.PathLike = "perennial/Enterprise-v0", **options: Any) -> PerennialParallelEnv:
    """Builds a world file with roles as a PettingZoo ``ParallelEnv``; see
    ``PerennialParallelEnv`` for ``options``."""
    return PerennialParallelEnv(world, **options)
