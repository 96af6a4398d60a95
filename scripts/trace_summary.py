#!/usr/bin/env python3
"""Summaries of one trace that BENCHMARKS.md's learning tables are read from.

    python3 scripts/trace_summary.py tenths TRACE [--column c.revenue ...]
        mean per step of `reward` (and of each --column) over each tenth of the run,
        then over the whole run
    python3 scripts/trace_summary.py solved TRACE [--threshold 475] [--last 20]
        the first step at which the mean return of the last 20 finished episodes
        reaches the threshold, and that mean at the end of the run

TRACE is a JSON Lines or CSV trace written by `perennial run` (one run). Only the
standard library is used. A CSV trace's component columns are `c.<name>`; in a JSON
Lines trace `c.<name>` reads the `components` map.
"""

import argparse
import csv
import json
import sys


def rows(path):
    """Yields (step, reward, ended, row) for every row of the trace, in file order."""
    with open(path, newline="") as f:
        if path.endswith(".csv"):
            for row in csv.DictReader(f):
                ended = row["terminated"] == "true" or row["truncated"] == "true"
                yield int(row["step"]), float(row["reward"]), ended, row
        else:
            for number, line in enumerate(f, start=1):
                if not line.endswith("\n"):
                    print(f"{path}:{number}: torn last line skipped", file=sys.stderr)
                    return
                row = json.loads(line)
                yield row["step"], row["reward"], row["terminated"] or row["truncated"], row


def value(row, column):
    """The value of `column` in a row, 0 where a CSV cell is empty or a component absent."""
    if column in row:
        cell = row[column]
        return float(cell) if cell not in ("", None) else 0.0
    if column.startswith("c."):
        return float(row.get("components", {}).get(column[2:], 0.0))
    raise SystemExit(f"error: the trace has no column {column!r}")


def tenths(path, columns):
    """Prints the mean per step of reward and each column by tenth of the run."""
    data = [(reward, [value(row, c) for c in columns]) for _, reward, _, row in rows(path)]
    if not data:
        raise SystemExit(f"error: {path} holds no row")
    names = ["reward", *columns]
    print("tenth\t" + "\t".join(names))
    n = len(data)
    bounds = [(k * n // 10, (k + 1) * n // 10) for k in range(10)] + [(0, n)]
    for k, (lo, hi) in enumerate(bounds):
        part = data[lo:hi]
        if not part:
            continue
        means = [sum(r for r, _ in part) / len(part)]
        means += [sum(vs[i] for _, vs in part) / len(part) for i in range(len(columns))]
        label = "whole" if k == 10 else str(k + 1)
        print(label + "\t" + "\t".join(f"{m:.2f}" for m in means))


def solved(path, threshold, last):
    """Prints the first step at which the mean of the last episode returns reaches threshold."""
    returns, current, reached = [], 0.0, None
    for step, reward, ended, _ in rows(path):
        current += reward
        if ended:
            returns.append(current)
            current = 0.0
            window = returns[-last:]
            if reached is None and len(window) == last and sum(window) / last >= threshold:
                reached = step
    if len(returns) < last:
        raise SystemExit(f"error: {path} has {len(returns)} finished episodes, fewer than {last}")
    print(f"episodes\t{len(returns)}")
    print(f"reached {threshold:g} at step\t{reached if reached is not None else 'never'}")
    print(f"mean of the last {last} episodes\t{sum(returns[-last:]) / last:.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("tenths", help="mean reward per step by tenth of the run")
    t.add_argument("trace")
    t.add_argument("--column", action="append", default=[], help="also average this column")
    s = commands.add_parser("solved", help="first step the last episodes' mean return reaches a threshold")
    s.add_argument("trace")
    s.add_argument("--threshold", type=float, default=475.0)
    s.add_argument("--last", type=int, default=20)
    args = parser.parse_args()
    try:
        if args.command == "tenths":
            tenths(args.trace, args.column)
        else:
            solved(args.trace, args.threshold, args.last)
    except (OSError, ValueError, KeyError) as error:
        raise SystemExit(f"error: {args.trace}: {error}")


if __name__ == "__main__":
    main()
