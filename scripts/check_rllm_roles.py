#!/usr/bin/env python3
"""Checks that rLLM's own loader reads an episodes file of a roles run.

Usage: RLLM_SRC=/path/to/rllm-checkout scripts/check_rllm_roles.py EPISODES.jsonl

Every line must load with rLLM's ``Episode.from_dict`` into two trajectories, and
grouping the trajectories by ``"{task_id}:{trajectory.name}"`` (rLLM's GRPO groups) must
give one group per role. Prints the groups and their sizes; exits non-zero on a failure.
"""

import collections
import importlib
import json
import os
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = os.environ.get("RLLM_SRC")
    if src and src not in sys.path:
        sys.path.insert(0, src)
    Episode = importlib.import_module("rllm.types").Episode
    groups = collections.Counter()
    roles = set()
    with open(sys.argv[1], encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            episode = Episode.from_dict(json.loads(line))
            names = [t.name for t in episode.trajectories]
            assert len(names) == 2, f"line {number}: trajectories {names}"
            roles.update(names)
            for t in episode.trajectories:
                assert t.steps, f"line {number}: trajectory {t.name} has no step"
                groups[f"{episode.task_id}:{t.name}"] += 1
    tasks = {key.rsplit(":", 1)[0] for key in groups}
    assert len(groups) == len(roles) * len(tasks), f"groups {dict(groups)} for roles {roles}"
    for key, n in sorted(groups.items()):
        print(f"{key}: {n} trajectories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
