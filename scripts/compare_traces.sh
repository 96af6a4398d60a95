#!/usr/bin/env bash
# Byte-compares the traces and events tables of every shipped single-agent world file
# between two perennial binaries: every format, with and without --record-transitions.
#
#   scripts/compare_traces.sh OLD_BIN NEW_BIN [STEPS]
#
# JSON Lines and CSV files are compared byte for byte. Parquet files embed the time they
# were written, so two runs of one binary differ in bytes: their rows and schema are
# compared instead, with pyarrow ($PYTHON, default python3). Exits 1 if any run differs.
set -euo pipefail
old=${1:?usage: compare_traces.sh OLD_BIN NEW_BIN [STEPS]}
new=${2:?usage: compare_traces.sh OLD_BIN NEW_BIN [STEPS]}
steps=${3:-20000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for world in worlds/*.toml; do
  # A roles world is not a single-agent world: the old binary does not know it.
  grep -q '^\[roles\]' "$world" && continue
  name=$(basename "$world" .toml)
  for format in jsonl csv parquet; do
    for record in "" "--record-transitions"; do
      for side in old new; do
        bin=$old; [ "$side" = new ] && bin=$new
        dir="$work/$side/$name-$format${record:+-rt}"
        mkdir -p "$dir"
        extra=""; [ "$format" = parquet ] && extra="--part-seconds 100000"  # parts cut by time differ run to run
        "$bin" run "$world" --steps "$steps" --format "$format" $record $extra \
          --trace "$dir/trace.$format" >/dev/null 2>"$dir.err" || { echo "FAIL $side $world $format $record"; cat "$dir.err"; exit 1; }
        rm -f "$dir"/*manifest*
      done
      a="$work/old/$name-$format${record:+-rt}"; b="$work/new/$name-$format${record:+-rt}"
      if [ "$format" = parquet ]; then
        if "${PYTHON:-python3}" - "$a" "$b" <<'PY'
import sys, pathlib, pyarrow.parquet as pq
a, b = map(pathlib.Path, sys.argv[1:3])
names = sorted(p.name for p in a.iterdir())
assert names == sorted(p.name for p in b.iterdir()), "different files"
for n in names:
    ta, tb = pq.read_table(a / n), pq.read_table(b / n)
    assert ta.schema.remove_metadata() == tb.schema.remove_metadata(), n
    assert ta.equals(tb), n
PY
        then echo "same   $world $format ${record:-(no transitions)} (rows and schema)"
        else echo "DIFFER $world $format ${record:-(no transitions)}"; status=1; fi
      elif diff -r -q "$a" "$b" >/dev/null; then
        echo "same   $world $format ${record:-(no transitions)} ($(ls "$a" | wc -l) files)"
      else
        echo "DIFFER $world $format ${record:-(no transitions)}"; diff -r -q "$a" "$b" || true; status=1
      fi
    done
  done
done
exit $status
