#!/usr/bin/env bash
# Runs the whole perennial-bench v1 table (docs/bench-v1.md): every shipped agent that
# applies to a suite's world, on every suite of bench/v1/, then the report.
#
#   scripts/bench_v1.sh                  # 10 seeds × 200,000 steps, into runs/bench-v1/
#   SEEDS=3 scripts/bench_v1.sh          # the first 3 seeds only (a smoke table)
#   OUT=DIR JOBS=N PERENNIAL=path/to/perennial scripts/bench_v1.sh
#
# Rerunning resumes: runs already done in OUT are kept. The wall time is printed last.
set -euo pipefail
cd "$(dirname "$0")/.."

PERENNIAL=${PERENNIAL:-target/release/perennial}
OUT=${OUT:-runs/bench-v1}
JOBS=${JOBS:-$(nproc)}
SMOKE=()
if [ -n "${SEEDS:-}" ]; then SMOKE=(--seeds "$SEEDS"); fi

# The learning agents, on every suite: add a new learner to this line.
LEARNERS="ppo ppo-replay ppo-ewc ppo-context ppo-plastic"
ENTERPRISE_SUITES="warehouse warehouse-async logistics logistics-async"
ENTERPRISE_AGENTS="random base-stock adaptive-base-stock oracle $LEARNERS"
CARTPOLE_AGENTS="random balance $LEARNERS"

[ -x "$PERENNIAL" ] || cargo build --release
start=$(date +%s)
for agent in $ENTERPRISE_AGENTS; do
  # shellcheck disable=SC2086
  "$PERENNIAL" bench run $ENTERPRISE_SUITES --agent "$agent" --jobs "$JOBS" --out "$OUT" "${SMOKE[@]}"
done
for agent in $CARTPOLE_AGENTS; do
  "$PERENNIAL" bench run cartpole-drift --agent "$agent" --jobs "$JOBS" --out "$OUT" "${SMOKE[@]}"
done
"$PERENNIAL" bench report "$OUT" --out "$OUT/report"
echo "wall $(( $(date +%s) - start )) s  ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
