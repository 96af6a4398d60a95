"""How registered ids, shipped names and paths resolve to world files.

The shipped world files are compiled into the extension, so an installed package finds
them without the repository. The Rust side knows a shipped file as ``shipped:<name>`` and
reports it as ``worlds/<name>``, where the repository keeps it.
"""

from __future__ import annotations

import os

from . import _core

#: Registered Gymnasium ids and the shipped world file each is built from.
SHIPPED_IDS = {
    "perennial/CartPole-v1": "cartpole.toml",
    "perennial/CartPoleDrift-v0": "cartpole-drift.toml",
    "perennial/Warehouse-v0": "warehouse.toml",
    "perennial/Logistics-v0": "logistics.toml",
    "perennial/Enterprise-v0": "enterprise.toml",
}

_PREFIX = "shipped:"


def shipped_worlds() -> dict[str, str]:
    """The shipped world files: file name to TOML text (copy one to make your own world)."""
    return dict(_core.shipped_worlds())


def resolve(world: str | os.PathLike) -> str:
    """What the extension loads for a world given as a registered id, a shipped file name
    (``"warehouse.toml"``, when no such file is in the working directory) or a path."""
    text = os.fspath(world)
    if text in SHIPPED_IDS:
        return _PREFIX + SHIPPED_IDS[text]
    if text.startswith(_PREFIX) or os.path.exists(text):
        return text
    if text in dict(_core.shipped_worlds()):
        return _PREFIX + text
    return text
