"""Parquet traces read by the Python data stack hold the JSON Lines trace's values, row for row."""

import json
import os
import subprocess
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is in python/tests/requirements.txt")
import pyarrow.parquet as pq  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def perennial_bin() -> str:
    return os.environ.get("PERENNIAL_BIN", str(ROOT / "target" / "release" / "perennial"))


def run(*args: str) -> None:
    subprocess.run([perennial_bin(), *args], cwd=ROOT, check=True, capture_output=True)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    out = tmp_path_factory.mktemp("traces")
    paths = {}
    for fmt in ("jsonl", "parquet"):
        path = out / f"warehouse.{fmt}"
        run("run", "worlds/warehouse.toml", "--agent", "base-stock", "--steps", "2500",
            "--seed", "4", "--format", fmt, "--trace", str(path), "--checkpoint-every", "1000",
            "--checkpoint", str(out / f"{fmt}.ckpt.json"))
        paths[fmt] = path
    return paths


def test_pyarrow_reads_the_directory_as_one_table_with_the_jsonl_values(traces):
    table = pq.read_table(traces["parquet"])
    rows = [json.loads(line) for line in traces["jsonl"].read_text().splitlines()]
    assert table.num_rows == len(rows) == 2500
    cols = table.to_pydict()
    for i, row in enumerate(rows):
        for name in ("run_id", "seed", "algorithm_id", "task", "step", "episode",
                     "episode_step", "reward", "regime", "regime_origin", "terminated",
                     "truncated", "ceiling"):
            assert cols[name][i] == row[name], (i, name)
        for name, value in row["components"].items():
            assert cols[f"c.{name}"][i] == value, (i, name)
        payout_cols = [c for c in cols if c.startswith("p.")]
        for col in payout_cols:
            expected = row["payout"].get(col[2:])
            assert cols[col][i] == expected, (i, col)


def test_strings_are_dictionary_encoded_and_pages_zstd(traces):
    part = sorted(traces["parquet"].glob("part-*.parquet"))[0]
    meta = pq.read_metadata(part)
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    regime = meta.row_group(0).column(names.index("regime"))
    assert regime.compression == "ZSTD"
    assert any("DICTIONARY" in e for e in regime.encodings)
    manifest = json.loads(meta.metadata[b"perennial.manifest"])
    assert manifest["seed"] == 4


def test_pandas_and_polars_read_the_directory(traces):
    pd = pytest.importorskip("pandas")
    df = pd.read_parquet(traces["parquet"])
    assert len(df) == 2500
    assert list(df["step"]) == list(range(2500))
    pl = pytest.importorskip("polars")
    lf = pl.read_parquet(str(traces["parquet"] / "*.parquet"))
    assert lf.height == 2500


def test_load_events_reads_every_format_with_the_same_rows(traces):
    import perennial

    rows = {}
    for fmt, trace in traces.items():
        table = trace.with_name(f"warehouse.events.{fmt}")
        rows[fmt] = perennial.load_events(table)
    assert rows["parquet"] == rows["jsonl"]
    kinds = {r["event"] for r in rows["jsonl"]}
    assert kinds == {"regime_shift", "failure"}
    shift = next(r for r in rows["jsonl"] if r["event"] == "regime_shift")
    assert shift["step"] == 2000 and shift["origin"] == "scheduled"
    trace = [json.loads(line) for line in traces["jsonl"].read_text().splitlines()]
    assert trace[1999]["regime"] == shift["from_regime"]
    assert trace[2000]["regime"] == shift["to_regime"]
    table = pq.read_table(traces["parquet"].with_name("warehouse.events.parquet"))
    assert table.num_rows == len(rows["jsonl"])


def test_load_events_warns_of_a_torn_line_and_keeps_the_rest(traces, tmp_path):
    import perennial

    text = traces["jsonl"].with_name("warehouse.events.jsonl").read_bytes()
    torn = tmp_path / "torn.events.jsonl"
    torn.write_bytes(text[:-15])
    with pytest.warns(RuntimeWarning, match="is torn"):
        rows = perennial.load_events(torn)
    assert len(rows) == text.count(b"\n") - 1


def test_a_python_env_writes_a_parquet_trace_and_the_events_of_perennial_run(traces, tmp_path):
    import perennial

    trace = tmp_path / "py.parquet"
    env = perennial.make(str(ROOT / "worlds" / "warehouse.toml"), seed=4, trace=trace)
    env.reset()
    for _ in range(50):
        env.step(0)
    env.close()
    assert pq.read_table(trace).num_rows == 50
    events = perennial.load_events(tmp_path / "py.events.parquet")
    cli = [e for e in perennial.load_events(traces["jsonl"].with_name("warehouse.events.jsonl"))
           if e["step"] < 50]
    # Failures are exogenous: the same seed meets the same ones whatever the actions.
    assert [(e["step"], e["kind"], e["target"]) for e in events] == [
        (e["step"], e["kind"], e["target"]) for e in cli
    ]
