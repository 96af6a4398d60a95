"""The options of one run, declared once.

``PerennialEnv``, ``parallel_env`` and ``wrap`` take these keywords and start their run
through :meth:`RunOptions.start`; they are the Python side of the Rust ``RunRequest``
(the flags of ``perennial run`` of the same names).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Optional, Union

from . import _core


@dataclass(frozen=True)
class RunOptions:
    """How one run is identified, recorded and told of shifts.

    seed: the run seed (None: the world file's ``[harness]`` seed, else 0).
    trace: write the trace to this path (None: no trace).
    run_id: the trace's run id (None: one made from the task, agent and seed).
    algorithm_id: the trace's ``algorithm_id`` column ("python").
    record_transitions: also write the ``obs`` and ``action`` columns (False).
    trace_format: ``"jsonl"``, ``"csv"`` or ``"parquet"`` (None: from the path's ending).
    reveal_regime: put the regime label in ``info["regime"]`` (False; for the
        experimenter, never for the agent).
    notify: ``"none"``, ``"flag"``, ``"delta"`` or ``"label"`` (None: the world file's
        ``[notify] level``, else ``"none"``).
    part_seconds: Parquet traces only: cut a part file once this many seconds have passed
        since the last (None: 1).
    """

    seed: Optional[int] = None
    trace: Optional[Union[str, os.PathLike]] = None
    run_id: Optional[str] = None
    algorithm_id: str = "python"
    record_transitions: bool = False
    trace_format: Optional[str] = None
    reveal_regime: bool = False
    notify: Optional[str] = None
    part_seconds: Optional[float] = None

    @classmethod
    def of(cls, caller: str, given: dict[str, Any]) -> "RunOptions":
        """The options in ``given``; a key that is not one is a ``TypeError`` naming it and
        ``caller``, with the keys there are."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise TypeError(
                f"{caller}() got an unexpected keyword argument {unknown[0]!r}; "
                f"its run options are: {', '.join(names)}"
            )
        return cls(**given)

    def start(self, world: str, seed: int, traced: bool = True, adapter: Any = None) -> Any:
        """A ``_core.Run`` of ``world`` (a path or a world file's text) with these options;
        ``traced=False`` leaves out the trace and the transitions (a run restored into
        from a snapshot opens its trace afterwards)."""
        extra = {} if adapter is None else {"adapter": adapter}
        return _core.Run(
            world,
            int(seed),
            self.run_id if traced else None,
            self.algorithm_id,
            None if self.trace is None or not traced else os.fspath(self.trace),
            self.trace_format if traced else None,
            self.record_transitions if traced else False,
            self.notify,
            None if self.part_seconds is None or not traced else float(self.part_seconds),
            **extra,
        )

    def untraced(self) -> dict[str, Any]:
        """These options but the trace, as keywords: what a pickled copy is rebuilt with (a
        trace file belongs to one env, and a copy writing to it would destroy it)."""
        kept = dataclasses.asdict(self)
        del kept["trace"]
        return kept
