#!/usr/bin/env bash
# The coordination table of BENCHMARKS.md: mean team reward per hour (the hour's profit)
# over 50,000 hours, seeds 1-3, of the enterprise world's roles with one role's agent made
# random, beside the single-agent base-stock and the oracle on the same layout, regimes
# and schedule (worlds/warehouse.toml).
#
#   scripts/roles_coordination.sh [BIN] [STEPS]
set -euo pipefail
bin=${1:-target/release/perennial}
steps=${2:-50000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mean() { python3 -c "import json,sys; r=[json.loads(l)['reward'] for l in open(sys.argv[1])]; print(sum(r)/len(r))" "$1"; }
row() {
  local label=$1; shift
  local means=()
  for seed in 1 2 3; do
    "$bin" run "$@" --steps "$steps" --seed "$seed" --trace "$work/t.jsonl" >/dev/null 2>&1
    means+=("$(mean "$work/t.jsonl")")
    rm -f "$work"/t*
  done
  python3 -c "import sys,statistics as s; v=[float(x) for x in sys.argv[2:]]; print(f'| {sys.argv[1]} | ' + ' | '.join(f'{x:.2f}' for x in v) + f' | {s.mean(v):.2f} |')" "$label" "${means[@]}"
}
echo "| agents | seed 1 | seed 2 | seed 3 | mean |"
echo "|---|---|---|---|---|"
row "warehouse base-stock + logistics base-stock" worlds/enterprise.toml --agent warehouse=base-stock,logistics=base-stock
row "warehouse base-stock + logistics random" worlds/enterprise.toml --agent warehouse=base-stock,logistics=random
row "warehouse random + logistics base-stock" worlds/enterprise.toml --agent warehouse=random,logistics=base-stock
row "single-agent base-stock (carrier 2)" worlds/warehouse.toml --agent base-stock --agent-opt carrier=2
row "single-agent oracle" worlds/warehouse.toml --agent oracle
