"""`PerennialVectorEnv`: N copies of a perennial world as a `gymnasium.vector.VectorEnv`."""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import _core
from ._worlds import resolve
from .env import check_seed

_MODES = {
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
    "disabled": AutoresetMode.DISABLED,
}


class PerennialVectorEnv(VectorEnv):
    """N copies of a world file, stepped in Rust in one call per batch.

    CartPole worlds without regime shifts run on the structure-of-arrays ``CartPoleVec``;
    every other world on ``VecEnv``, each copy with its own regime scheduler. Observations,
    rewards and flags come back as numpy arrays filled in Rust.

    ``reset(seed=s)`` starts copy ``i`` as the run a single ``PerennialEnv`` reset with seed
    ``s + i`` would be, as Gymnasium seeds its vector envs; ``reset()`` without a seed moves
    every copy to its next episode. The autoreset modes are Gymnasium's, and the env matches
    ``SyncVectorEnv`` over N single envs array for array:

    - ``"next_step"`` (default): the step after a copy ends resets it, ignoring its action,
      with reward 0 and both flags false;
    - ``"same_step"``: the ending step resets the copy at once; ``info["final_obs"]`` and
      ``info["final_info"]`` (with the masks ``_final_obs`` / ``_final_info``) hold what it
      ended with;
    - ``"disabled"``: the caller resets ended copies with
      ``reset(options={"reset_mask": mask})``; stepping an ended copy raises ``ValueError``.

    ``info`` carries no reward components: building one dict per copy per step would cost
    more than the step itself. Use the single env, or a trace, for components.
    """

    def __init__(
        self,
        world: str | os.PathLike,
        num_envs: int,
        autoreset_mode: str | AutoresetMode = "next_step",
        **kwargs: Any,
    ) -> None:
        from .env import PerennialEnv

        if kwargs.get("render_mode") is not None:
            raise ValueError("perennial worlds do not render; use render_mode=None")
        if isinstance(autoreset_mode, AutoresetMode):
            mode = next(name for name, m in _MODES.items() if m == autoreset_mode)
        else:
            mode = autoreset_mode
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs={num_envs!r}: num_envs is a whole number, at least 1")
        if num_envs > _core.MAX_VECTOR_COPIES:
            raise ValueError(
                f"num_envs={num_envs}: a vector holds at most {_core.MAX_VECTOR_COPIES} copies; "
                "split the batch over several vectors"
            )
        path = resolve(world)
        self._vec = _core.Vector(path, int(num_envs), mode)
        single = PerennialEnv(path, seed=0)
        self.num_envs = int(num_envs)
        self.single_observation_space = single.observation_space
        self.single_action_space = single.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        single.close()
        self.metadata = {"autoreset_mode": _MODES.get(mode), "render_modes": []}
        self.render_mode = None
        self._mode = _MODES[mode]
        self._world = path

    @property
    def world_file(self) -> str:
        """The world file the copies were built from."""
        return self._world

    def regime(self, i: int) -> str:
        """Copy ``i``'s regime label: for the experimenter, never shown to the agent."""
        return self._vec.regime(i)

    def reset(
        self,
        *,
        seed: Optional[int | Sequence[Optional[int]]] = None,
        options: Optional[dict[str, Any]] = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        mask = None if options is None else options.get("reset_mask")
        if mask is not None:
            if self._mode != AutoresetMode.DISABLED:
                raise ValueError('reset_mask is for autoreset_mode="disabled"')
            mask = np.asarray(mask, dtype=np.bool_)
            if seed is not None:
                raise ValueError("reset with a reset_mask takes no seed: the copies go on to their next episodes")
            return self._vec.reset_copies(mask), {}
        if seed is not None and not isinstance(seed, (int, np.integer)):
            seeds = list(seed)
            if len(seeds) != self.num_envs or any(s != seeds[0] + i for i, s in enumerate(seeds)):
                raise ValueError("seed lists must be [s, s + 1, ..., s + num_envs - 1]; pass the integer s")
            seed = seeds[0]
        if seed is not None:
            seed = check_seed(seed, "a seed", room=self.num_envs)
            super().reset(seed=seed)
        return self._vec.reset(seed), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, terminated, truncated, final_obs = self._vec.step(self._actions(actions))
        infos: dict[str, Any] = {}
        if final_obs is not None:
            for i in np.flatnonzero(terminated | truncated):
                infos = self._add_info(infos, {"final_obs": final_obs[i], "final_info": {}}, int(i))
        return obs, rewards, terminated, truncated, infos

    def _actions(self, actions: Any) -> np.ndarray:
        # As the single env: integers only (a float is refused, not rounded), one per copy.
        a = np.asarray(actions)
        if a.ndim != 1:
            raise ValueError(
                f"actions of shape {a.shape}: give one integer action per copy, "
                f"a 1-D array of {self.num_envs}; no copy was stepped"
            )
        if a.dtype.kind not in "iu" and a.size:
            raise ValueError(
                f"copy 0: invalid action {a[0].item()!r}: a discrete action is an integer "
                f"(the actions are {a.dtype}); no copy was stepped"
            )
        return a.astype(np.int64, copy=False)

    def __reduce__(self):
        return (PerennialVectorEnv, (self._world, self.num_envs, self._mode))
