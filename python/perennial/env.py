"""`PerennialEnv`: a perennial world as a `gymnasium.Env`."""

from __future__ import annotations

import json
import os
from typing import Any, Optional, SupportsFloat

import gymnasium as gym
import numpy as np

from . import _core
from ._options import RunOptions
from ._spaces import to_space
from ._worlds import resolve


SEED_LIMIT = 2**64
"""Run seeds are unsigned 64-bit integers: 0 to ``SEED_LIMIT - 1``."""


def check_seed(seed: Any, what: str = "a run seed", room: int = 1) -> int:
    """``seed`` as an int, or a ``ValueError`` saying what a seed must be. ``room`` seeds from
    ``seed`` on must fit (a vector env of n copies uses ``seed`` to ``seed + n - 1``)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed={seed!r}: {what} is an integer from 0 to 2**64 - {room}")
    if not 0 <= int(seed) <= SEED_LIMIT - room:
        raise ValueError(f"seed={seed!r}: {what} is an integer from 0 to 2**64 - {room}")
    return int(seed)


def default_seed(world_file: str) -> int:
    """The run seed `perennial run` uses for a world file: its ``[harness]`` seed, else 0."""
    harness = json.loads(_core.check_world(world_file))["harness"]
    return int(harness["seed"] or 0)


class RunState:
    """What every env driven by a perennial run (``self._run``, a ``_core.Run``) tells the
    experimenter: the notify level and the regime in force. ``RunControls`` and the
    PettingZoo env build on it."""

    _run: Any

    @property
    def notify(self) -> str:
        """The run's notify level: ``"none"``, ``"flag"``, ``"delta"`` or ``"label"``."""
        return self._run.notify

    @property
    def regime(self) -> str:
        """The regime label in force: for the experimenter, never shown to the agents."""
        return self._run.regime


class RunControls(RunState):
    """What an env driven by a perennial run offers beside Gymnasium's API: the notify
    level, the regime in force, manual shifts, snapshots. ``PerennialEnv`` and
    ``perennial.wrap``'s ``WrappedEnv`` share it."""

    _notify: bool

    @property
    def regime_origin(self) -> str:
        """How the regime in force came about: initial, scheduled, stochastic or manual."""
        return self._run.regime_origin

    def shift(self, label: str) -> None:
        """Under a ``manual`` plan, makes ``label`` the regime from the next step on.

        Raises ``ValueError`` for an unknown label or a plan that is not manual.
        """
        self._run.shift(label)

    def snapshot(self) -> "_core.Snapshot":
        """The run as it stands, but its trace, as a picklable ``perennial.Snapshot``: the
        world and its random streams, the regime scheduler mid-plan, the notify level, the
        step, episode and episode-step counters and the observation the agent acts on next
        (``snapshot.observation``). Raises ``ValueError`` before the first ``reset()`` and
        for a world that cannot be saved."""
        return _core.snapshot(self._run)

    def restore(self, snapshot: "_core.Snapshot") -> Any:
        """Puts the env in the state ``snapshot`` saved and returns the observation to act
        on next: the same actions from here give the same observations and rewards as in the
        saved run. Do not ``reset()`` first (that starts the next episode).

        Raises ``ValueError`` for a traced env (its trace would no longer be one run: start
        a new env with ``perennial.make(world, snapshot=snapshot, trace=...)``), a snapshot
        of another world file, or one that was edited."""
        if not isinstance(snapshot, _core.Snapshot):
            raise ValueError(f"restore({type(snapshot).__name__}): pass a perennial.Snapshot")
        _core.restore(self._run, snapshot)
        self._notify = self._run.notify != "none"
        return self._restored_observation(snapshot)

    def _restored_observation(self, snapshot: "_core.Snapshot") -> Any:
        return snapshot.observation



class PerennialEnv(RunControls, gym.Env):
    """A perennial world file run as a Gymnasium environment.

    The world runs in Rust exactly as under ``perennial run``; this class only moves numpy
    arrays and dicts across. The rules are the Rust ``Env`` contract's:

    - ``reset()`` **destroys** the world and builds a new one; it is never a rewind. Without
      a seed it builds the run's next episode: the first ``reset()`` of an env made with
      ``seed=S`` gives episode 0 the world seed ``perennial run --seed S`` gives it, and
      each later ``reset()`` the next episode's, as the harness does under ``auto_reset``.
      ``reset(seed=k)`` starts the run afresh with run seed ``k``.
    - **Only the environment ends an episode**, with ``terminated`` (a terminal state) or
      ``truncated`` (a cutoff the world imposes, e.g. CartPole's 500 steps; both may be
      true). Stepping after the end without a reset raises ``ValueError``.
    - **Regimes shift inside the env without telling the agent**: the world file's schedule
      runs on the run's step axis across episodes, and ``info`` never holds the regime
      (unless ``reveal_regime=True``). The experimenter reads ``env.unwrapped.regime`` and,
      under a ``manual`` plan, calls ``env.unwrapped.shift(label)``.
    - **Unless the run's notify level says otherwise** (``notify=``, default the world
      file's ``[notify] level``, else ``"none"``). At ``"flag"``, ``"delta"`` or ``"label"``
      the ``info`` of the first step taken under a new regime holds ``info["notify"] =
      {"level", "step", "label", "delta"}``: ``step`` is that step's index in the run,
      ``label`` the new label (level ``"label"``, else None), ``delta`` a dict ``{name:
      {"from": x, "to": y}}`` of the parameters the shift changed (level ``"delta"``, else
      None). No other step's ``info`` has the key, and the initial regime is not notified.
      The scheduler decides a shift when the step is taken, so the agent reads it with the
      observation that step returns, one step after a Rust ``Agent::notify`` would (that is
      called before the agent acts on the shift's step). The observation is the same at
      every level, and the trace records the level in its ``notify`` column.
    - Observations are ``float32`` numpy arrays. ``info["components"]`` holds the reward
      breakdown where the world has a reward specification, and ``info["payout"]`` the
      episode-end terms on an episode's last step.
    - An action outside the action space raises ``ValueError`` and changes nothing.

    With ``trace="runs/x.jsonl"`` (or ``.csv``, or ``.parquet`` for a directory of Parquet
    part files) every step becomes one row of the trace ``perennial run`` writes, with the
    same columns and bytes, and the run's events (regime shifts, injected failures,
    episode ends) go to ``<stem>.events.<format>`` beside it (read it with
    ``perennial.load_events``); ``close()`` flushes both, and so does garbage collection of
    the env. A run manifest, ``<stem>.manifest.json`` beside the trace (and in every
    Parquet part's metadata), records the world file's path, hash and text, the seed, these
    options and the start and end times; ``close()`` records the steps taken. Score the
    trace with ``perennial.evaluate`` or ``perennial eval``.

    Args:
        world: a world file path, a shipped file name, or a registered id.
        seed: the run seed (default: the world file's ``[harness]`` seed, else 0).
        trace: the trace file, or None for no trace.
        run_id: the trace's run id (default ``{task}-{algorithm_id}-seed{seed}``).
        algorithm_id: the trace's algorithm id.
        record_transitions: also write the ``obs`` and ``action`` columns.
        trace_format: ``"jsonl"``, ``"csv"`` or ``"parquet"`` (default: from the trace's
            extension).
        reveal_regime: put ``regime`` in ``info`` (for experimenters, never for agents).
        notify: what the agent is told at a shift: ``"none"``, ``"flag"``, ``"delta"`` or
            ``"label"`` (default: the world file's ``[notify] level``).
        render_mode: perennial worlds do not render; only None is accepted.
        part_seconds: Parquet traces only: a flush cuts a part file once this many seconds
            passed since the last (default 1; 0 cuts one at every flush, every 256 steps,
            so a killed process keeps what a JSON Lines trace keeps, at the cost of many
            small files).
        snapshot: start from this ``perennial.Snapshot`` (of the same world file) instead
            of a new run: the env is in the saved state, so step it on without ``reset()``
            from ``snapshot.observation``; its trace starts at the saved step. ``seed``
            defaults to the snapshot's (it seeds only later episodes), ``run_id`` to
            ``{saved run id}-s{step}``.
        fork_index: with ``snapshot`` and ``trace``: this env is rollout ``fork_index`` of
            a fork (``perennial.fork`` sets it); its events table records a ``fork`` event
            at the saved step, so ``perennial.export_episodes`` groups the rollouts of one
            fork as one GRPO group.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        world: str | os.PathLike,
        seed: Optional[int] = None,
        trace: Optional[str | os.PathLike] = None,
        run_id: Optional[str] = None,
        algorithm_id: str = "python",
        record_transitions: bool = False,
        trace_format: Optional[str] = None,
        reveal_regime: bool = False,
        render_mode: Optional[str] = None,
        notify: Optional[str] = None,
        part_seconds: Optional[float] = None,
        snapshot: Optional[_core.Snapshot] = None,
        fork_index: Optional[int] = None,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r}: perennial worlds do not render; use None")
        path = resolve(world)
        if snapshot is not None and not isinstance(snapshot, _core.Snapshot):
            raise ValueError(
                f"snapshot={type(snapshot).__name__}: pass a perennial.Snapshot "
                "(from env.unwrapped.snapshot())"
            )
        if seed is None:
            seed = default_seed(path) if snapshot is None else snapshot.seed
        seed = check_seed(seed)
        self._world = path
        run = RunOptions(
            seed=int(seed),
            trace=trace,
            run_id=run_id,
            algorithm_id=algorithm_id,
            record_transitions=record_transitions,
            trace_format=trace_format,
            reveal_regime=reveal_regime,
            notify=notify,
            part_seconds=part_seconds,
        )
        self._options = dict(run.untraced(), snapshot=snapshot, fork_index=fork_index)
        if snapshot is None:
            self._run = run.start(path, int(seed))
        else:
            # A fresh untraced run, put in the saved state, then traced from the saved step.
            self._run = run.start(path, int(seed), traced=False)
            if run_id is None:
                run_id = f"{snapshot.run_id}-s{snapshot.step}"
            _core.restore(self._run, snapshot, int(seed), run_id, notify)
            if trace is not None:
                _core.open_trace(
                    self._run,
                    os.fspath(trace),
                    trace_format,
                    record_transitions,
                    None if part_seconds is None else float(part_seconds),
                    None if fork_index is None else (snapshot.run_id, int(fork_index)),
                )
        spec = self._run.spec()
        self.observation_space = to_space(spec["observation_space"])
        self.action_space = to_space(spec["action_space"])
        self.reward_components = tuple(spec["components"])
        self.persistent = bool(spec["persistent"])
        self.task = spec["id"]
        self.render_mode = None
        self._reveal = reveal_regime
        self._notify = self._run.notify != "none"

    @property
    def world_file(self) -> str:
        """The world file this env was built from."""
        return self._world

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            seed = check_seed(seed, "a seed")
        super().reset(seed=seed)
        obs = self._run.reset(seed)
        return obs, self._info_after_reset()

    def _info_after_reset(self) -> dict[str, Any]:
        return {"regime": self._run.regime} if self._reveal else {}

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, components, payout = self._run.step(action)
        notification = self._run.notification() if self._notify else None
        if components is None and not self._reveal and notification is None:
            return obs, reward, terminated, truncated, {}
        info: dict[str, Any] = {}
        if components is not None:
            info["components"] = components
            if payout:
                info["payout"] = payout
        if self._reveal:
            info["regime"] = self._run.regime
        if notification is not None:
            info["notify"] = notification
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        """Flushes and closes the trace and ends its manifest. A traced env takes no more
        steps afterwards (``step`` and ``reset`` raise ``ValueError``: the steps would not be
        recorded); an env without a trace goes on as before."""
        run = getattr(self, "_run", None)
        if run is not None:
            run.close()
        super().close()

    def __reduce__(self):
        # A copy is a fresh env rebuilt from the world file and options. It writes no trace:
        # a trace file belongs to one env, and a copy writing to it would destroy it.
        return (_rebuild, (self._world, self._options))


def _rebuild(world: str, options: dict[str, Any]) -> PerennialEnv:
    return PerennialEnv(world, **options)
