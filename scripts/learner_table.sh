#!/usr/bin/env bash
# The learners against base-stock on the warehouse world: every agent runs seeds 0..SEEDS-1
# for STEPS hours each; per run, the whole-run mean reward per hour and the mean over the
# last quarter of the run. The table gives, per agent, the IQM over seeds of each, and the
# whole-run IQM's ratio to base-stock's with a 95% bootstrap interval (seeds resampled with
# replacement, independently per agent, 2,000 resamples, generator seeded by the agent's
# entry), and the median wall time of one run.
#
# Usage: scripts/learner_table.sh [BIN]
#   env: SEEDS (10), STEPS (200000), JOBS (2), WORLD (worlds/warehouse.toml),
#        AGENTS (base-stock, random, adaptive-base-stock, the five PPO families, and the
#        five again with the cover actions and a longer horizon: ppo:actions=cover,
#        gamma=0.999,lambda=0.99, and for the others FAMILY:actions=cover,ppo.gamma=...);
#        an entry NAME:K=V,K=V passes each K=V to the agent as --agent-opt K=V
#        (e.g. `ppo:actions=cover`), and the table names the row by the whole entry.
# Needs python3 (standard library only). Traces go to a temporary directory, deleted at
# the end; only the table is printed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/target/release/perennial}
seeds=${SEEDS:-10}
steps=${STEPS:-200000}
jobs=${JOBS:-2}
world=${WORLD:-$root/worlds/warehouse.toml}
families="ppo-replay ppo-ewc ppo-context ppo-plastic"
cover="ppo:actions=cover,gamma=0.999,lambda=0.99 $(printf "%s:actions=cover,ppo.gamma=0.999,ppo.lambda=0.99 " $families)"
agents=${AGENTS:-base-stock random adaptive-base-stock ppo $families $cover}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run: its CSV trace is reduced to "agent seed whole last_quarter seconds" and deleted.
one_run() {
    local agent=$1 seed=$2 trace start end opts=()
    trace="$work/$(echo "$agent" | tr -c 'A-Za-z0-9_.\n-' _)-$seed"
    if [[ $agent == *:* ]]; then
        IFS=, read -ra kvs <<<"${agent#*:}"
        for kv in "${kvs[@]}"; do opts+=(--agent-opt "$kv"); done
    fi
    start=$(date +%s.%N)
    "$bin" run "$world" --agent "${agent%%:*}" "${opts[@]}" --seed "$seed" --steps "$steps" \
        --format csv --trace "$trace.csv" >/dev/null || { echo "failed: $agent seed $seed" >&2; return 1; }
    end=$(date +%s.%N)
    awk -F, -v agent="$agent" -v seed="$seed" -v steps="$steps" -v secs="$(echo "$end - $start" | bc)" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == "reward") col = i; next }
        { n++; total += $col; if ($5 >= steps * 3 / 4) { q++; last += $col } }
        END { printf "%s %s %.6f %.6f %.2f\n", agent, seed, total / n, last / q, secs }
    ' "$trace.csv"
    rm -f "$trace".*
}
export -f one_run
export bin world steps work

for agent in $agents; do
    for ((seed = 0; seed < seeds; seed++)); do
        echo "$agent $seed"
    done
done | xargs -P "$jobs" -n 2 bash -c 'one_run "$0" "$1"' >"$work/results"

echo "world $(basename "$world"), $seeds seeds, $steps hours each, load: $(uptime | sed 's/.*load average: //')"
python3 - "$work/results" "$agents" <<'EOF'
import random, statistics, sys

runs = {}
for line in open(sys.argv[1]):
    agent, seed, whole, last, secs = line.split()
    runs.setdefault(agent, []).append((int(seed), float(whole), float(last), float(secs)))

def iqm(xs):
    xs = sorted(xs)
    cut = len(xs) // 4
    mid = xs[cut:len(xs) - cut] or xs
    return sum(mid) / len(mid)

base = [w for _, w, _, _ in runs.get("base-stock", [])]
print(f"| agent | whole-run IQM | ratio to base-stock [95% CI] | last-quarter IQM | wall s/run |")
print("|---|---|---|---|---|")
for agent in sys.argv[2].split():
    rs = runs[agent]
    rng = random.Random(agent)
    whole = [w for _, w, _, _ in rs]
    last = [l for _, _, l, _ in rs]
    ratio, ci = "-", ""
    if base and iqm(base) != 0:
        ratio = f"{iqm(whole) / iqm(base):.3f}"
        boot = sorted(
            iqm(rng.choices(whole, k=len(whole))) / iqm(rng.choices(base, k=len(base)))
            for _ in range(2000)
        )
        ci = f" [{boot[49]:.3f}, {boot[1949]:.3f}]"
    secs = statistics.median(s for *_, s in rs)
    print(f"| {agent} | {iqm(whole):.2f} | {ratio}{ci} | {iqm(last):.2f} | {secs:.1f} |")
EOF
