#!/usr/bin/env bash
# Runs one CartPole-v1 workload (random actions, reset on episode end, one core) in Gymnasium,
# EnvPool and perennial, and prints env-steps/s with the ratios. Run it from the repo root:
#
#   bash benches/peers/compare.sh            # 1,000,000 env-steps per workload
#   STEPS=200000 ROUNDS=1 REPEATS=3 bash benches/peers/compare.sh
#
# Perennial's and the peers' runs alternate for ROUNDS rounds (default 3), each workload
# timed REPEATS times per round (default 3); the table gives each workload's median time
# over all its runs, so a burst of load on a shared machine hits both sides alike.
# It makes a Python venv in target/peers-venv (override with VENV=...), installs gymnasium,
# numpy and envpool from PyPI (if envpool cannot be installed it says so and runs the rest),
# builds examples/peer_workload.rs in release, and pins every workload to CPU 0 when taskset
# exists. The raw lines go to target/peers-results.txt.
set -euo pipefail

STEPS=${STEPS:-1000000}
ROUNDS=${ROUNDS:-3}
REPEATS=${REPEATS:-3}
VENV=${VENV:-target/peers-venv}
PYTHON=${PYTHON:-python3}
RESULTS=target/peers-results.txt

if [[ ! -f Cargo.toml || ! -f benches/peers/peers.py ]]; then
    echo "compare.sh: run me from the perennial repo root (bash benches/peers/compare.sh)" >&2
    exit 2
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "== making the venv $VENV with $PYTHON"
    "$PYTHON" -m venv "$VENV"
fi
echo "== pip install gymnasium numpy envpool"
"$VENV/bin/pip" install --quiet --disable-pip-version-check gymnasium numpy
if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check envpool; then
    echo "== envpool could not be installed for this Python/platform; its rows are skipped"
fi

echo "== cargo build --release --example peer_workload"
cargo build --quiet --release --example peer_workload

PIN=()
if command -v taskset > /dev/null; then
    PIN=(taskset -c 0)
else
    echo "== taskset not found: workloads are not pinned to one core"
fi

# One core for every library: no OpenMP or BLAS thread pools.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

mkdir -p target
: > "$RESULTS"
for round in $(seq "$ROUNDS"); do
    echo "== round $round of $ROUNDS: perennial"
    "${PIN[@]}" target/release/examples/peer_workload "$STEPS" "$REPEATS" | tee -a "$RESULTS"
    echo "== round $round of $ROUNDS: gymnasium and envpool"
    # OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, when set on a machine, can slow numpy down:
    # unset for this command only.
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "${PIN[@]}" \
        "$VENV/bin/python" benches/peers/peers.py run --steps "$STEPS" --repeats "$REPEATS" \
        | tee -a "$RESULTS"
done

echo
"$VENV/bin/python" benches/peers/peers.py table "$RESULTS"
echo
echo "versions: gymnasium $("$VENV/bin/python" -c 'import gymnasium; print(gymnasium.__version__)'), \
envpool $("$VENV/bin/python" -c 'import envpool; print(envpool.__version__)' 2> /dev/null || echo unavailable), \
numpy $("$VENV/bin/python" -c 'import numpy; print(numpy.__version__)'), $(rustc --version)"
