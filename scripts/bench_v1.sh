#!/usr/bin/env bash
# Runs the perennial-bench v1 table (docs/bench-v1.md): every shipped agent that applies to
# a suite's world, on every suite of bench/v1/, then the report.
#
#   scripts/bench_v1.sh                        # 10 seeds × 200,000 steps, into runs/bench-v1/
#   SEEDS=3 scripts/bench_v1.sh                # the first 3 seeds only (a smoke table)
#   SEEDS=2 STEPS=5000 scripts/bench_v1.sh     # a quick smoke of the whole script
#   AGENTS="ppo ppo-ewc" scripts/bench_v1.sh   # only these agents, into the same folder
#   OUT=DIR JOBS=N PERENNIAL=path/to/perennial scripts/bench_v1.sh
#
# Rerunning resumes: runs already done in OUT are kept, so the table can be computed in
# parts (AGENTS=... per part, same OUT) and reported whole by the last part. Each agent's
# wall time is printed when it finishes and appended to OUT/wall-times.tsv (agent, suites,
# seconds, seeds, steps); the end prints this invocation's total and the sum over the
# folder's parts (the latest time of each agent and suite group).
set -euo pipefail
cd "$(dirname "$0")/.."

PERENNIAL=${PERENNIAL:-target/release/perennial}
OUT=${OUT:-runs/bench-v1}
JOBS=${JOBS:-$(nproc)}
SMOKE=()
if [ -n "${SEEDS:-}" ]; then SMOKE+=(--seeds "$SEEDS"); fi
if [ -n "${STEPS:-}" ]; then SMOKE+=(--steps "$STEPS"); fi

# The learning agents, on every suite: add a new learner to this line.
LEARNERS="ppo ppo-replay ppo-ewc ppo-context ppo-plastic"
# The PPO families on the enterprise suites with the cover actions (docs/agents.md), as
# NAME:KEY=VALUE,KEY=VALUE: each becomes `--agent NAME --agent-opt KEY=VALUE ...`.
COVER="ppo:actions=cover,gamma=0.999,lambda=0.99"
for family in ppo-replay ppo-ewc ppo-context ppo-plastic; do
  COVER="$COVER $family:actions=cover,ppo.gamma=0.999,ppo.lambda=0.99"
done
ENTERPRISE_SUITES="warehouse warehouse-async logistics logistics-async"
ENTERPRISE_AGENTS="random base-stock adaptive-base-stock oracle $LEARNERS $COVER"
CARTPOLE_AGENTS="random balance $LEARNERS"

# AGENTS selects among the agents above; an unknown name is an error before anything runs.
if [ -n "${AGENTS:-}" ]; then
  for agent in $AGENTS; do
    case " $ENTERPRISE_AGENTS $CARTPOLE_AGENTS " in
      *" $agent "*) ;;
      *) echo "AGENTS: unknown agent \`$agent\`; the table's agents are: $ENTERPRISE_AGENTS balance" >&2; exit 2 ;;
    esac
  done
  keep() { for a in $1; do case " $AGENTS " in *" $a "*) printf '%s ' "$a" ;; esac; done; }
  ENTERPRISE_AGENTS=$(keep "$ENTERPRISE_AGENTS")
  CARTPOLE_AGENTS=$(keep "$CARTPOLE_AGENTS")
fi

[ -x "$PERENNIAL" ] || cargo build --release
mkdir -p "$OUT"
TIMES="$OUT/wall-times.tsv"
[ -f "$TIMES" ] || printf 'agent\tsuites\tseconds\tseeds\tsteps\n' > "$TIMES"

# Runs one agent (NAME or NAME:KEY=VALUE,...) on a group of suites and records its wall time.
run_agent() {
  local agent=$1 group=$2 suites=$3 began took opts=()
  if [[ $agent == *:* ]]; then
    local kv
    IFS=, read -ra kv <<< "${agent#*:}"
    for o in "${kv[@]}"; do opts+=(--agent-opt "$o"); done
  fi
  local log
  log=$(mktemp)
  began=$(date +%s)
  # shellcheck disable=SC2086
  "$PERENNIAL" bench run $suites --agent "${agent%%:*}" "${opts[@]}" --jobs "$JOBS" --out "$OUT" "${SMOKE[@]}" 2>&1 | tee "$log"
  took=$(( $(date +%s) - began ))
  # A part whose runs were all done already ran nothing: its time would replace the real one.
  if awk '/^sweep .*: [0-9]+ runs, [0-9]+ already done/ { if ($(NF-4) != $(NF-2)) ran = 1 } END { exit !ran }' "$log"; then
    printf '%s\t%s\t%s\t%s\t%s\n' "$agent" "$group" "$took" "${SEEDS:-all}" "${STEPS:-full}" >> "$TIMES"
  fi
  rm -f "$log"
  echo "agent $agent on $group: wall $took s"
}

start=$(date +%s)
for agent in $ENTERPRISE_AGENTS; do
  run_agent "$agent" enterprise "$ENTERPRISE_SUITES"
done
for agent in $CARTPOLE_AGENTS; do
  run_agent "$agent" cartpole cartpole-drift
done
"$PERENNIAL" bench report "$OUT" --out "$OUT/report"
echo "wall $(( $(date +%s) - start )) s this invocation  ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
# The latest line of each (agent, suites) pair: a part rerun replaces its earlier time.
awk -F'\t' -v file="$TIMES" 'NR > 1 { t[$1 "\t" $2] = $3 }
  END { for (k in t) { s += t[k]; n++ }; printf "wall %d s summed over the parts in %s (%d agent and suite groups)\n", s, file, n }' "$TIMES"
