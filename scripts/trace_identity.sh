#!/usr/bin/env bash
# Compares the traces and events tables two perennial binaries write for every shipped world
# file: 20,000 steps with auto-reset, JSON Lines / CSV / Parquet, each notify level, with
# and without --record-transitions. JSON Lines and CSV must be byte
# identical. The run manifests, and the Parquet parts that embed them, hold start and end
# times that differ from run to run, and the version of the binary that wrote them, so they
# are compared byte for byte with those two timestamps and the version blanked (everything
# else, data pages and footer included, must match).
#
# Usage: scripts/trace_identity.sh BASE_BIN NEW_BIN [STEPS]
#   env: AGENT (the agent of every run; default each world file's own), e.g. AGENT=random
#   to compare the worlds when an agent's defaults changed between the binaries.
# Exits non-zero when any output differs, naming every differing file and counting them per
# world file.
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
                        --notify "$notify" --run-id "$id" --trace "cur/$id.$format" \
                        ${AGENT:+--agent "$AGENT"} >/dev/null)
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
version = re.compile(rb'("perennial_version\\?"\s*:\s*\\?")([0-9]+\.[0-9]+\.[0-9]+)')
files = sorted(p.relative_to(base) for p in base.rglob("*") if p.is_file())
others = sorted(p.relative_to(new) for p in new.rglob("*") if p.is_file())
if files != others:
    sys.exit(f"the two sides wrote different files: {sorted(set(files) ^ set(others))[:5]}")
differ = []
for rel in files:
    a, b = (base / rel).read_bytes(), (new / rel).read_bytes()
    if rel.suffix == ".parquet" or rel.name.endswith(".manifest.json"):
        a, b = (stamp.sub(rb"\1" + b"X" * 20, x) for x in (a, b))
        a, b = (version.sub(lambda m: m[1] + b"X" * len(m[2]), x) for x in (a, b))
    if a != b:
        differ.append(rel)
if differ:
    for rel in differ:
        print(f"differs: {rel}")
    worlds = {}
    for rel in differ:
        world = re.sub(r"-(none|flag|delta|label)(-transitions)?$", "", rel.parts[0].split(".")[0])
        worlds[world] = worlds.get(world, 0) + 1
    sys.exit(f"{len(differ)} of {len(files)} files differ: " + ", ".join(f"{w} {n}" for w, n in sorted(worlds.items())))
stamped = sum(1 for f in files if f.suffix == ".parquet" or f.name.endswith(".manifest.json"))
print(f"{len(files)} files identical ({len(files) - stamped} byte for byte, {stamped} Parquet parts and manifests but for the start and end times and the version)")
PY
