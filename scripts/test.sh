#!/usr/bin/env bash
# The project's one test command: the Rust tests, then the Python package's tests.
#
# On a fresh machine it needs a Rust toolchain and Python 3.9+ with venv. It
#   1. runs `cargo test --release` (which also builds target/release/perennial, the CLI the
#      Python tests call);
#   2. creates the virtualenv .venv/ (or reuses it), installs python/tests/requirements.txt
#      and the package itself with `pip install ./python`; CARGO_TARGET_DIR points at the
#      repository's target/, so the wheel build reuses the dependencies step 1 compiled;
#   3. runs pytest on python/tests/ and fails when it collects no test, then
#      python/tests/test_serve.py again in a virtualenv with openenv 0.10's clients
#      (target/openenv-venv: openenv needs mcp < 2);
#   4. checks the README's and docs/'s links and runs their commands with small step
#      budgets (scripts/check_docs.py, about 20 s).
# Set PERENNIAL_VENV to use another virtualenv and PYTHON to choose the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The Rust tests write their files under one temp folder of this run, removed at the end.
rust_tmp=$(mktemp -d "${TMPDIR:-/tmp}/perennial-tests.XXXXXX")
trap 'rm -rf "$rust_tmp"' EXIT
TMPDIR=$rust_tmp cargo test --release
# Every test removes what it writes (tests/common's TempPath and Scratch), so a passing run
# leaves that folder empty.
left=$(find "$rust_tmp" -mindepth 1 -maxdepth 1 | head -n 20)
if [ -n "$left" ]; then
    echo "error: the Rust tests passed but left these in their temp folder; give each a TempPath or Scratch:" >&2
    echo "$left" >&2
    exit 1
fi

python=${PYTHON:-python3}
venv=${PERENNIAL_VENV:-$root/.venv}
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install --quiet -r python/tests/requirements.txt
CARGO_TARGET_DIR="$root/target" "${pip[@]}" install --quiet --no-deps --force-reinstall ./python

# Tools whose dependencies clash with the test requirements get a virtualenv of their own,
# made the same way: l2metrics 3.1 needs numpy<2, pandas<2.3 and pyarrow<18.
l2venv=${L2METRICS_VENV:-$root/target/l2metrics-venv}
if [ ! -x "$l2venv/bin/python" ]; then
    "$python" -m venv "$l2venv"
fi
"$l2venv/bin/python" -m pip --disable-pip-version-check install --quiet -r python/tests/requirements-l2metrics.txt
export L2METRICS_VENV=$l2venv

# openenv 0.10's clients need mcp < 2: test_serve.py runs once more in their own virtualenv.
oevenv=${OPENENV_VENV:-$root/target/openenv-venv}
if [ ! -x "$oevenv/bin/python" ]; then
    "$python" -m venv "$oevenv"
fi
"$oevenv/bin/python" -m pip --disable-pip-version-check install --quiet -r python/tests/requirements-openenv.txt

export PERENNIAL_BIN=${PERENNIAL_BIN:-$root/target/release/perennial}
status=0
"$venv/bin/python" -m pytest python/tests -q -p no:cacheprovider || status=$?
if [ "$status" -eq 5 ]; then
    echo "error: pytest collected no test in python/tests" >&2
fi
oe_status=0
"$oevenv/bin/python" -m pytest python/tests/test_serve.py -q -p no:cacheprovider || oe_status=$?
if [ "$status" -eq 0 ]; then
    status=$oe_status
fi

docs_status=0
"$venv/bin/python" scripts/check_docs.py --bin "$PERENNIAL_BIN" || docs_status=$?
if [ "$status" -eq 0 ]; then
    status=$docs_status
fi
exit "$status"
