"""The bridge between a Gymnasium env written in Python and perennial's run core.

The Rust side (``python/src/pyworld.rs``) drives a world written in Python through one
:class:`WorldAdapter`: it asks for the spec and the shiftable parameters once, then calls
``reset``, ``step``, ``get``, ``set``, ``save`` and ``load``. Everything Gymnasium-specific
(importing the entry point, flattening observations, finding the attributes regimes may
change, checking their types) happens here, in Python, where its errors read naturally.

A parameter is either

- declared: the env (``env.unwrapped``) defines ``parameters()``, returning a dict from
  name to ``(low, high)`` (or ``{"low": ..., "high": ..., "integer": ..., "doc": ...}``),
  read with ``getattr`` (or ``get_parameter(name)``) and written with
  ``set_parameter(name, value)`` when the env defines it, else ``setattr``; or
- discovered: any public attribute of ``env.unwrapped`` holding an ``int`` or a ``float``
  (not a ``bool``), unbounded; an ``int`` attribute takes only whole numbers and stays an
  ``int``.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import os
import pickle
import re
from pathlib import Path
from typing import Any, Optional

import numpy as np

import gymnasium as gym
from gymnasium import spaces

#: The largest finite bound: what an unbounded discovered parameter allows.
_BIG = float(np.finfo(np.float64).max)


class PythonWorldError(ValueError):
    """A Python world that cannot be used: the message says which part and what to do."""


def load(entry_point: str, params_json: str) -> "WorldAdapter":
    """Builds the env a world file names: ``package.module:Class`` (or a callable
    returning an env) called with ``[world.params]`` as keyword arguments, or a registered
    Gymnasium id (``CartPole-v1``) passed to ``gymnasium.make`` with them."""
    params = json.loads(params_json)
    if ":" in entry_point:
        module_name, _, attr = entry_point.partition(":")
        if not module_name or not attr:
            raise PythonWorldError(
                f"entry_point {entry_point!r} is not `package.module:Class`; name the module "
                "and the class (or a Gymnasium id such as \"CartPole-v1\")"
            )
        try:
            module = importlib.import_module(module_name)
        except Exception as e:  # an import can raise anything
            raise PythonWorldError(
                f"entry_point {entry_point!r}: module `{module_name}` does not import "
                f"({type(e).__name__}: {e}); check the name and that it is installed in "
                "this Python"
            ) from None
        target: Any = module
        for part in attr.split("."):
            if not hasattr(target, part):
                raise PythonWorldError(
                    f"entry_point {entry_point!r}: module `{module_name}` has no `{attr}`"
                )
            target = getattr(target, part)
        if not callable(target):
            raise PythonWorldError(
                f"entry_point {entry_point!r}: `{attr}` is not a class or a function"
            )
        try:
            env = target(**params)
        except TypeError as e:
            raise PythonWorldError(
                f"entry_point {entry_point!r} refused [world.params] {sorted(params)}: {e}"
            ) from None
    else:
        try:
            env = gym.make(entry_point, **params)
        except gym.error.Error as e:
            raise PythonWorldError(
                f"entry_point {entry_point!r} is neither `package.module:Class` nor a "
                f"Gymnasium id that makes an env ({type(e).__name__}: {e})"
            ) from None
    return WorldAdapter(env, entry_point)


def _task_id(env: gym.Env, entry: str) -> str:
    spec = getattr(env, "spec", None)
    name = spec.id if spec is not None and getattr(spec, "id", None) else type(env.unwrapped).__name__
    name = re.sub(r"[^A-Za-z0-9_.+-]", "-", name).lstrip(".") or "python-world"
    return name[:128]


def _bound(v: float) -> Any:
    """A bound as JSON holds it: infinities as the strings "inf" and "-inf"."""
    v = float(v)
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _space(space: spaces.Space, what: str) -> dict[str, Any]:
    if isinstance(space, spaces.Discrete):
        return {"kind": "discrete", "n": int(space.n)}
    if isinstance(space, spaces.Box):
        return {
            "kind": "box",
            "low": [_bound(v) for v in np.asarray(space.low, dtype=np.float64).ravel()],
            "high": [_bound(v) for v in np.asarray(space.high, dtype=np.float64).ravel()],
        }
    raise PythonWorldError(
        f"the env's {what} is {space}; perennial runs Python worlds with a Box or Discrete "
        f"observation space and a Discrete action space"
    )


class WorldAdapter:
    """One Gymnasium env as perennial's run core sees it (see the module docs)."""

    def __init__(self, env: Any, entry: str = "") -> None:
        if not isinstance(env, gym.Env):
            raise PythonWorldError(
                f"{entry or type(env).__name__} made a {type(env).__module__}."
                f"{type(env).__qualname__}, not a gymnasium.Env; a Python world must be a "
                "gymnasium.Env subclass (or a Gymnasium id)"
            )
        self.env = env
        self.entry = entry or f"{type(env.unwrapped).__module__}:{type(env.unwrapped).__qualname__}"
        if not isinstance(env.action_space, spaces.Discrete):
            raise PythonWorldError(
                f"{self.entry}: the action space is {env.action_space}; perennial runs "
                "Python worlds with a Discrete action space"
            )
        self._n = int(env.action_space.n)
        self._start = int(getattr(env.action_space, "start", 0))
        obs = _space(env.observation_space, "observation space")
        self._discrete_obs = obs["kind"] == "discrete"
        self._spec = {
            "id": _task_id(env, self.entry),
            "observation_space": obs,
            "action_space": {"kind": "discrete", "n": self._n},
        }
        self._params = self._find_parameters()
        #: The observation the env returned last, as it returned it.
        self.last_obs: Any = None

    # The shiftable parameters.

    def _find_parameters(self) -> dict[str, dict[str, Any]]:
        base = self.env.unwrapped
        declared = getattr(base, "parameters", None)
        #: Whether the env declares its parameters (else they are discovered).
        self.declared = callable(declared)
        if callable(declared):
            table = declared()
            if not isinstance(table, dict):
                raise PythonWorldError(
                    f"{self.entry}: parameters() returned {type(table).__name__}; return a "
                    "dict from name to (low, high)"
                )
            out = {}
            for name, rng in table.items():
                if isinstance(rng, dict):
                    low, high = rng.get("low", -_BIG), rng.get("high", _BIG)
                    integer, doc = bool(rng.get("integer", False)), str(rng.get("doc", ""))
                else:
                    try:
                        low, high = rng
                    except (TypeError, ValueError):
                        raise PythonWorldError(
                            f"{self.entry}: parameters()[{name!r}] is {rng!r}; give (low, high)"
                        ) from None
                    integer, doc = False, ""
                out[str(name)] = {
                    "low": float(low),
                    "high": float(high),
                    "integer": integer,
                    "doc": doc or f"declared by {type(base).__name__}.parameters()",
                }
            return out
        out = {}
        for name in sorted(set(dir(base))):
            if name.startswith("_") or isinstance(
                getattr(type(base), name, None), (property, classmethod, staticmethod)
            ):
                continue
            try:
                value = getattr(base, name)
            except Exception:  # a property that needs state the env lacks yet
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                continue
            if not np.isfinite(float(value)):
                continue
            integer = isinstance(value, (int, np.integer))
            out[name] = {
                "low": -_BIG,
                "high": _BIG,
                "integer": integer,
                "doc": f"attribute `{name}` of {type(base).__name__} ({'int' if integer else 'float'})",
            }
        return out

    def spec(self) -> str:
        """The spec, as JSON."""
        return json.dumps(self._spec)

    def parameters(self) -> list[tuple[str, float, float, bool, str]]:
        """(name, low, high, integer, doc) of every parameter a regime may set."""
        return [(n, p["low"], p["high"], p["integer"], p["doc"]) for n, p in self._params.items()]

    def get(self, name: str) -> Optional[float]:
        """A parameter's current value (None when it is not a number now)."""
        base = self.env.unwrapped
        getter = getattr(base, "get_parameter", None)
        value = getter(name) if callable(getter) else getattr(base, name, None)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            return None
        return float(value)

    def set(self, name: str, value: float) -> None:
        """Sets a parameter in place, mid-episode; raises ValueError when the env refuses."""
        base = self.env.unwrapped
        info = self._params.get(name)
        setter = getattr(base, "set_parameter", None)
        if callable(setter):
            setter(name, value)
            return
        current = getattr(base, name, None)
        if isinstance(current, bool) or not isinstance(
            current, (int, float, np.integer, np.floating)
        ):
            raise ValueError(
                f"attribute `{name}` of {type(base).__name__} holds a "
                f"{type(current).__name__} now, not a number; a regime can only set numbers"
            )
        if info is not None and info["integer"]:
            if float(value) != int(value):
                raise ValueError(f"attribute `{name}` is an int; {value} is not a whole number")
            setattr(base, name, type(current)(int(value)))
        else:
            setattr(base, name, type(current)(value) if isinstance(current, np.floating) else float(value))

    # The episode.

    def _flat(self, obs: Any) -> np.ndarray:
        self.last_obs = obs
        if self._discrete_obs:
            return np.asarray([obs], dtype=np.float32)
        return np.ascontiguousarray(np.asarray(obs, dtype=np.float32).ravel())

    def reset(self, seed: int) -> np.ndarray:
        """Destroys the episode and starts one seeded with ``seed``."""
        out = self.env.reset(seed=int(seed))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise PythonWorldError(
                f"{self.entry}: reset returned {type(out).__name__}; Gymnasium's reset "
                "returns (observation, info)"
            )
        return self._flat(out[0])

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool]:
        """One step: (flat observation, reward, terminated, truncated)."""
        out = self.env.step(int(action) + self._start)
        if not (isinstance(out, tuple) and len(out) == 5):
            raise PythonWorldError(
                f"{self.entry}: step returned {type(out).__name__} of "
                f"{len(out) if isinstance(out, tuple) else 1}; Gymnasium's step returns "
                "(observation, reward, terminated, truncated, info)"
            )
        obs, reward, terminated, truncated, _info = out
        return self._flat(obs), float(reward), bool(terminated), bool(truncated)

    # Checkpoints and snapshots.

    def save(self) -> bytes:
        """The whole env, pickled (its random generator included), behind a tag made with
        this user's key (see :func:`_sign`)."""
        try:
            body = pickle.dumps((self.env, self.last_obs))
        except Exception as e:
            raise PythonWorldError(
                f"{self.entry} cannot be saved: pickling it raised {type(e).__name__}: {e}; "
                "checkpoints and snapshots of a Python world need an env that pickles"
            ) from None
        return _sign(body) + body

    def load(self, state: bytes) -> None:
        """Puts the env saved by :meth:`save` in place of this one. A pickle can run any
        code, so only one tagged with this user's key is loaded (or any, with
        ``PERENNIAL_TRUST_PICKLES=1``)."""
        tag, body = bytes(state[:_TAG]), bytes(state[_TAG:])
        if os.environ.get("PERENNIAL_TRUST_PICKLES") != "1" and not hmac.compare_digest(
            tag, _sign(body)
        ):
            raise PythonWorldError(
                f"{self.entry}: the saved state was not written by this user on this machine "
                "(its tag does not match the key in "
                f"{_key_path()}); it holds a pickle, which can run any code, so it is not "
                "loaded. If you trust the file, set PERENNIAL_TRUST_PICKLES=1"
            )
        try:
            env, last = pickle.loads(body)
        except Exception as e:
            raise PythonWorldError(
                f"{self.entry}: the saved state does not unpickle ({type(e).__name__}: {e})"
            ) from None
        if not isinstance(env, gym.Env):
            raise PythonWorldError(f"{self.entry}: the saved state does not hold a gymnasium.Env")
        self.env, self.last_obs = env, last


#: Bytes of the tag before a saved state's pickle.
_TAG = 32


def _key_path() -> Path:
    base = os.environ.get("PERENNIAL_KEY_DIR") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config"), "perennial"
    )
    return Path(base) / "pickle.key"


def _key() -> bytes:
    """This user's key for tagging saved Python worlds, made on first use (mode 0600)."""
    path = _key_path()
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = os.urandom(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def _sign(body: bytes) -> bytes:
    return hmac.new(_key(), body, hashlib.sha256).digest()
