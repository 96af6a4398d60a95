"""Gymnasium spaces from a perennial spec."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces


def to_space(spec: dict[str, Any]) -> spaces.Space:
    """The Gymnasium space for one space of a perennial spec (`Discrete`, `MultiDiscrete`, `Box`)."""
    kind = spec["kind"]
    if kind == "discrete":
        return spaces.Discrete(int(spec["n"]))
    if kind == "multi_discrete":
        return spaces.MultiDiscrete(np.asarray(spec["nvec"], dtype=np.int64))
    if kind == "box":
        # Observations cross the boundary as float32. An unbounded element gets the largest
        # float32, as Gymnasium's own CartPole does, rather than an infinite bound.
        big = np.finfo(np.float32).max
        low = np.clip(np.asarray(spec["low"], dtype=np.float64), -big, big).astype(np.float32)
        high = np.clip(np.asarray(spec["high"], dtype=np.float64), -big, big).astype(np.float32)
        return spaces.Box(low=low, high=high, dtype=np.float32)
    raise ValueError(f"unknown space kind {kind!r} in the world's spec")

