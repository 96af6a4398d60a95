#!/usr/bin/env bash
# Compares the traces and events tables two perennial binaries write for every shipped world
# file: 20,000 steps with auto-reset, JSON Lines / CSV / Parquet, each notify level, with
# and without --record-transitions. JSON Lines and CSV must be byte
# identical. The run manifests, and the Parquet parts that embed them, hold start and end
# times that differ from run to run, so they are compared byte for byte with those two
# timestamps blanked (everything else, data pages and footer included, must match).
#
# Usage: scripts/trace_identity.sh BASE_BIN NEW_BIN [STEPS]
# Exits non-zero, naming the first differing file, when any output differs.
set -euo pipefail

base=${1:?usage: trace_identity.sh BASE_BIN NEW_BIN [STEPS]}
new=${2:?usage: trace_identity.sh BASE_BIN NEW_BIN [STEPS]}
steps=${3:-20000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"

# Both binaries run under one path, so the manifest's argv is the same.
run_side() {
    local bin=$1 out=$2
    cp "$bin" "$work/bin/perennial"
    for world in "$root"/worlds/*.toml; do
        # A roles world has no single-agent counterpart in an older binary.
        grep -q '^\[roles\]' "$world" && continue
        local name
        name=$(basename "$world" .toml)
        for format in jsonl csv parquet; do
            local parts=()
            [ "$format" = parquet ] && parts=(--part-seconds 0)
            for notify in none flag delta label; do
                for record in --record-transitions ""; do
                    local id="$name-$notify${record:+-transitions}"
                    (cd "$work" && "$work/bin/perennial" run "$world" --steps "$steps" \
                        --auto-reset --format "$format" "${parts[@]}" ${record:+"$record"} \
                        --notify "$notify" --run-id "$id" --trace "cur/$id.$format" >/dev/null)
                done
            done
        done
    done
    rm -f "$work"/cur/*.lock
    mv "$work/cur" "$out"
}

run_side "$base" "$work/base"
run_side "$new" "$work/new"

python3 - "$work/base" "$work/new" <<'PY'
import pathlib, re, sys
base, new = map(pathlib.Path, sys.argv[1:])
stamp = re.compile(rb'("(?:started_at|ended_at)\\?"\s*:\s*\\?")[0-9T:Z-]{20}')
files = sorted(p.relative_to(base) for p in base.rglob("*") if p.is_file())
others = sorted(p.relative_to(new) for p in new.rglob("*") if p.is_file())
if files != others:
    sys.exit(f"the two sides wrote different files: {sorted(set(files) ^ set(others))[:5]}")
for rel in files:
    a, b = (base / rel).read_bytes(), (new / rel).read_bytes()
    if rel.suffix == ".parquet" or rel.name.endswith(".manifest.json"):
        a, b = stamp.sub(rb"\1" + b"X" * 20, a), stamp.sub(rb"\1" + b"X" * 20, b)
    if a != b:
        sys.exit(f"differs: {rel}")
stamped = sum(1 for f in files if f.suffix == ".parquet" or f.name.endswith(".manifest.json"))
print(f"{len(files)} files identical ({len(files) - stamped} byte for byte, {stamped} Parquet parts and manifests but for the start and end times)")
PY
