"""Dataset files: schema, atomic append, schema-mismatch refusal, merge dedup and the noise floor."""

from __future__ import annotations

import os

import pandas as pd
import pyarrow.parquet as pq
import pytest

from kernelcast.collect import dataset
from kernelcast.collect.api import LABEL_COLUMNS, PROVENANCE_COLUMNS, Measurement
from kernelcast.collect.dataset import append_rows, read_dataset, row_schema
from kernelcast.collect.merge import merge, noise_floor
from kernelcast.features.desc import parse_desc

GEMM = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "m": 128, "n": 256, "k": 512}


def synthetic_row(
    m=128,
    latency=10.0,
    status="ok",
    repeat_of=None,
    index=0,
    time="2026-11-29T10:00:00+00:00",
    source="kernelcast",
    **extra,
):
    """A SYNTHETIC dataset row (made-up latency), shaped like the shard runner's rows."""
    desc = parse_desc({**GEMM, "m": m})
    labels = Measurement((latency,), ("synthetic_kernel",), "synthetic", "cold").to_row()
    if status != "ok":
        labels = {**dict.fromkeys(LABEL_COLUMNS), "status": status, "error": "synthetic failure", "cache": "cold"}
    prov = {**dict.fromkeys(PROVENANCE_COLUMNS), "source": source, "time": time, "method": "synthetic"}
    return {
        **desc.to_row(),
        **labels,
        **prov,
        "desc_key": desc.key(),
        "plan_index": index,
        "repeat_of": repeat_of,
        **extra,
    }


def test_schema_columns_and_metadata(tmp_path):
    path = tmp_path / "gemm" / "kernelcast_h200_sxm_20261129_s000of001.parquet"
    append_rows(path, "gemm", [synthetic_row(**{"ncu__dram__bytes_read.sum": 5.0})], {"kernelcast.plan_id": "abc"})
    schema = pq.read_schema(path)
    assert schema.names[:4] == ["op", "gpu", "dtype", "backend"]
    assert schema.names[-4:] == ["desc_key", "plan_index", "repeat_of", "model"]
    assert "ncu__dram__bytes_read.sum" in schema.names
    assert dataset.file_metadata(path) == {"kernelcast.plan_id": "abc", "kernelcast.schema_version": "1"}
    assert str(schema.field("m").type) == "int64" and str(schema.field("latency_us").type) == "double"


def test_append_keeps_old_rows_and_unions_ncu_columns(tmp_path):
    path = tmp_path / "gemm" / "f.parquet"
    append_rows(path, "gemm", [synthetic_row(m=1, index=0)])
    append_rows(path, "gemm", [synthetic_row(m=2, index=1, **{"ncu__x.sum": 3.0})])
    frame = read_dataset(tmp_path, "gemm")
    assert list(frame["m"]) == [1, 2]
    assert frame["ncu__x.sum"].isna().tolist() == [True, False]


def test_crash_before_replace_leaves_previous_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "gemm" / "f.parquet"
    append_rows(path, "gemm", [synthetic_row(m=1)])
    before = path.read_bytes()

    def crash(src, dst):
        raise OSError("simulated crash between temp write and rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        append_rows(path, "gemm", [synthetic_row(m=2)])
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert pq.read_table(path).column("m").to_pylist() == [1]
    assert [p.name for p in path.parent.iterdir()] == ["f.parquet"]  # temp file removed


def test_resumed_run_with_different_columns_fails(tmp_path):
    path = tmp_path / "gemm" / "f.parquet"
    table = dataset.table_from_rows([synthetic_row()], row_schema("gemm"))
    dataset.write_atomic(table.drop_columns(["host"]).replace_schema_metadata({"kernelcast.schema_version": "1"}), path)
    with pytest.raises(ValueError, match=r"missing in file: \['host'\].*refusing to append"):
        append_rows(path, "gemm", [synthetic_row()])


def test_unknown_column_and_bad_type_are_errors(tmp_path):
    with pytest.raises(ValueError, match="'bogus' that the schema lacks"):
        append_rows(tmp_path / "f.parquet", "gemm", [synthetic_row(bogus=1)])
    with pytest.raises(ValueError, match="does not fit the row schema"):
        append_rows(tmp_path / "f.parquet", "gemm", [{**synthetic_row(), "latency_us": "fast"}])
    assert not (tmp_path / "f.parquet").exists()


def _shard(tmp_path, name, rows):
    path = tmp_path / "out" / "gemm" / name
    append_rows(path, "gemm", rows)
    return path


def test_merge_dedups_keeps_first_and_repeats_and_reports_noise(tmp_path):
    t1, t2, t3 = "2026-11-29T10:00:00+00:00", "2026-11-29T11:00:00+00:00", "2026-11-29T12:00:00+00:00"
    _shard(
        tmp_path,
        "kernelcast_h200_sxm_20261129_s000of002.parquet",
        [
            synthetic_row(m=1, latency=10.0, index=0, time=t2),  # later duplicate: dropped
            synthetic_row(m=2, latency=20.0, index=2, time=t2),
            synthetic_row(m=1, latency=11.0, index=4, repeat_of=0, time=t3),  # +10 %
            synthetic_row(m=3, status="oom", index=6, time=t2),
        ],
    )
    _shard(
        tmp_path,
        "kernelcast_h200_sxm_20261129_s001of002.parquet",
        [
            synthetic_row(m=2, latency=99.0, index=1, time=t3),  # later duplicate: dropped
            synthetic_row(m=1, latency=9.0, index=0, time=t1),  # earlier: the kept original
            synthetic_row(m=2, latency=21.0, index=5, repeat_of=2, time=t3),
        ],
    )  # +5 %
    summary = merge([tmp_path / "out"], tmp_path / "datasets", allow_host_timers=True)
    assert summary["added"] == {"gemm": 5} and summary["duplicates_skipped"] == {"gemm": 2}
    frame = read_dataset(tmp_path / "datasets", "gemm")
    originals = frame[frame["repeat_of"].isna() & (frame["status"] == "ok")].set_index("m")["latency_us"]
    assert originals.to_dict() == {1: 9.0, 2: 20.0}
    assert sorted(os.listdir(tmp_path / "datasets" / "gemm")) == [
        "kernelcast_h200_sxm_20261129_s000of002.parquet",
        "kernelcast_h200_sxm_20261129_s001of002.parquet",
    ]
    noise = summary["noise"]["gemm"]  # pairs: 11 vs 9 (22.2 %), 21 vs 20 (5 %)
    assert noise["pairs"] == 2
    assert noise["median"] == pytest.approx((2 / 9 + 0.05) / 2)
    again = merge([tmp_path / "out"], tmp_path / "datasets", allow_host_timers=True)
    assert again["added"] == {} and again["duplicates_skipped"] == {"gemm": 7}


def test_merge_rejects_invalid_rows(tmp_path):
    _shard(tmp_path, "a_s000of001.parquet", [synthetic_row(desc_key="not the key")])
    with pytest.raises(ValueError, match=r"row 0: desc_key must be the description's key"):
        merge([tmp_path / "out"], tmp_path / "datasets", allow_host_timers=True)
    assert not (tmp_path / "datasets").exists()


def test_noise_floor_quantiles_per_op():
    rows = [synthetic_row(m=i + 1, latency=100.0, index=i) for i in range(10)]
    rows += [synthetic_row(m=i + 1, latency=100.0 + i, index=10 + i, repeat_of=i) for i in range(10)]
    out = noise_floor(pd.DataFrame(rows))
    assert out["gemm"]["pairs"] == 10
    assert out["gemm"]["median"] == pytest.approx(0.045)
    assert out["gemm"]["p90"] == pytest.approx(0.081)
    assert out["gemm"]["p99"] == pytest.approx(0.0891)


def test_provenance_fields():
    prov = dataset.provenance("kernelcast", "synthetic")
    assert set(prov) == set(PROVENANCE_COLUMNS)
    assert prov["collector_version"] and prov["host"] and prov["time"].endswith("+00:00")


def test_provenance_git_rev_from_env_where_no_git_travels(monkeypatch):
    monkeypatch.setenv("KERNELCAST_GIT_REV", "0123abc")
    assert dataset.provenance("kernelcast", "synthetic")["git_rev"] == "0123abc"


def test_merge_keeps_ncu_rows_beside_cupti_rows_and_fills_model_tags(tmp_path):
    shard = tmp_path / "shard" / "gemm" / "kernelcast_h200_sxm_20261129_s000of001.parquet"
    cupti = synthetic_row(m=64, latency=10.0)
    ncu = {**synthetic_row(m=64, latency=11.0), "timer": "ncu", "ncu__dram__bytes_read.sum": 5.0}
    append_rows(shard, "gemm", [cupti, ncu])
    result = merge(
        [tmp_path / "shard"],
        tmp_path / "datasets",
        allow_host_timers=True,
        tags={cupti["desc_key"]: {"model": "llama3_8b"}},
    )
    assert result["added"] == {"gemm": 2}  # same description, two timers: two rows
    frame = read_dataset(tmp_path / "datasets", "gemm")
    assert sorted(frame["timer"]) == ["ncu", "synthetic"] and set(frame["model"]) == {"llama3_8b"}


def _append_many(path: str, start: int, count: int, batch: int) -> None:
    """A writer process: ``count`` SYNTHETIC rows appended ``batch`` at a time."""
    for i in range(start, start + count, batch):
        append_rows(path, "gemm", [synthetic_row(m=m + 1, index=m) for m in range(i, i + batch)])


def _read_many(path: str, rounds: int, wait_s: float = 120.0) -> int:
    """A reader process: reads the file ``rounds`` times while it is rewritten (waiting for it to appear: on a loaded
    machine the writers' processes may start later than this one); returns the reads that worked."""
    import time

    seen, deadline = 0, time.monotonic() + wait_s
    while seen < rounds and time.monotonic() < deadline:
        if os.path.exists(path):
            dataset.read_parquet(path)
            seen += 1
        time.sleep(0.005)
    return seen


def test_two_writers_one_file_keep_every_row_and_readers_never_see_half_a_file(tmp_path):
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    path = str(tmp_path / "gemm" / "f.parquet")
    with ProcessPoolExecutor(3, mp_context=mp.get_context("spawn")) as pool:
        writers = [pool.submit(_append_many, path, 0, 400, 20), pool.submit(_append_many, path, 400, 400, 20)]
        reader = pool.submit(_read_many, path, 150)
        [w.result() for w in writers]
        assert reader.result() > 0
    indices = pq.read_table(path, columns=["plan_index"]).column(0).to_pylist()
    assert sorted(indices) == list(range(800))
    assert [p.name for p in (tmp_path / "gemm").iterdir() if p.suffix == ".tmp"] == []


def test_row_writer_files_are_its_own_and_roll_over(tmp_path):
    a = dataset.RowWriter(tmp_path, "s000of002", {"kernelcast.plan_id": "p"}, roll_rows=3)
    b = dataset.RowWriter(tmp_path, "s000of002", {"kernelcast.plan_id": "p"}, roll_rows=3)
    for i in range(4):
        a.write([{**synthetic_row(m=i + 1, index=i), "gpu": "h200_sxm"}])
        b.write([{**synthetic_row(m=i + 1, index=i), "gpu": "h200_sxm"}])
    assert len(a.paths) == len(b.paths) == 2 and not set(a.paths) & set(b.paths)
    assert [pq.read_table(p).num_rows for p in a.paths] == [3, 1]
    for p in a.paths:
        parts = dataset.parse_dataset_filename(p.name)
        assert parts["source"] == "kernelcast" and dataset.shard_of(parts["shard"]) == "s000of002"
        assert dataset.file_metadata(p)["kernelcast.plan_id"] == "p"


def test_merge_of_writer_files_lands_in_the_shard_file_deduplicated(tmp_path):
    for _ in range(2):  # two writers measured the same rows
        w = dataset.RowWriter(tmp_path / "out", "s001of002")
        w.write([synthetic_row(m=m, index=m) for m in (1, 2, 3)])
    result = merge([tmp_path / "out"], tmp_path / "datasets", allow_host_timers=True)
    assert result["added"] == {"gemm": 3} and result["duplicates_skipped"] == {"gemm": 3}
    assert [p.name for p in (tmp_path / "datasets" / "gemm").glob("*.parquet")] == [
        "kernelcast_h200_sxm_20261129_s001of002.parquet"
    ]


def test_committed_datasets_hold_no_host_timer_rows():
    from kernelcast.collect.merge import HOST_TIMERS

    root = os.path.join(os.path.dirname(__file__), "..", "datasets")
    files = dataset.parquet_files([root])
    timers = set(dataset.read_table(files, ["timer"]).column(0).to_pylist())
    assert timers and not timers & set(HOST_TIMERS)
