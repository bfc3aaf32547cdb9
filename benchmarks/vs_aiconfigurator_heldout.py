"""Beside aiconfigurator-core on its own GPUs, shapes left out of both: its engine interpolating a GEMM table the
held-out shapes were removed from, against kernelcast's shipped model, which never saw those shapes on any GPU.

The held-out shapes are kernelcast's frozen split (``training.splits.frozen_test``: 20% of shapes by hash, the
same shapes on every GPU), which the shipped GEMM model was trained without (its refit adds our own rows of held-out
shapes, never a shape an outside table holds: ``training.run.refit_rows``). For each GPU whose TensorRT-LLM GEMM
table aiconfigurator-core ships, the script copies that table (the engine's latest version for the GPU) into a
temporary systems folder without the held-out shapes' rows (bf16 and fp8; every kernel source), loads it with the
shared layer off (no sibling version may fill the holes back), and asks the engine for each held-out shape
(``GEMM(name, 1, n, k, mode)._engine_query(db, x=m)``): it answers from the remaining table points. kernelcast
answers the same rows with ``predict_many`` (backend ``trtllm``, the table's rows as imported by
``kernelcast import aiconfigurator``). Both are scored against the table's own measurement of the shape (CUDA-graph
timed, L2 warm: its label, not ours); ``full table`` is the engine with the shape still in its table (how closely it
returns its own rows).

Usage: python benchmarks/vs_aiconfigurator_heldout.py [--per-gpu 400] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/vs_aiconfigurator_heldout.json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kernelcast import predict_many
from kernelcast.features.desc import op_fields
from kernelcast.training import data
from kernelcast.training.evaluate import metrics
from kernelcast.training.splits import frozen_test

#: our dtype -> (the table's gemm_dtype, aiconfigurator's GEMMQuantMode name)
DTYPES = {"bf16": ("bfloat16", "bfloat16"), "fp8_e4m3": ("fp8", "fp8")}


def _systems_root() -> Path:
    import aiconfigurator_core

    return Path(aiconfigurator_core.__file__).parent / "systems"


def _table(gpu: str) -> tuple[str, Path] | None:
    """(version, gemm_perf.parquet) the engine loads for ``gpu``'s TensorRT-LLM GEMMs, or None."""
    from aiconfigurator_core.sdk import perf_database

    version = perf_database.get_latest_database_version(gpu, "trtllm")
    path = _systems_root() / "data" / gpu / "gemm" / "trtllm" / str(version) / "gemm_perf.parquet"
    return (version, path) if version and path.exists() else None


def _database(gpu: str, version: str, table: pd.DataFrame, folder: Path):
    """aiconfigurator's database for ``gpu`` holding ``table`` as its only GEMM data (shared layer off)."""
    from aiconfigurator_core.sdk import perf_database

    shutil.copy(_systems_root() / f"{gpu}.yaml", folder / f"{gpu}.yaml")
    out = folder / "data" / gpu / "gemm" / "trtllm" / version
    out.mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), out / "gemm_perf.parquet")
    return perf_database.get_database(
        gpu, "trtllm", version, systems_paths=[str(folder)], shared_layer=False, allow_missing_data=True
    )


def _ask(db, mode, m: int, n: int, k: int) -> float:
    """The engine's estimate in µs; NaN where it has no table data near the shape (it refuses)."""
    from aiconfigurator_core.sdk.errors import PerfDataNotAvailableError
    from aiconfigurator_core.sdk.operations import gemm

    try:
        return float(gemm.GEMM("gemm", 1, n, k, mode)._engine_query(db, x=m)) * 1e3
    except PerfDataNotAvailableError:
        return float("nan")


def compare_gpu(gpu: str, rows: pd.DataFrame, per_gpu: int, seed: int) -> pd.DataFrame | None:
    """The held-out rows of one GPU (a sample of ``per_gpu`` per dtype) with both estimates and the label."""
    from aiconfigurator_core.sdk import common

    found = _table(gpu)
    if found is None:
        return None
    version, path = found
    table = pq.read_table(path).to_pandas()
    mine = rows[(rows["gpu"] == gpu) & rows["dtype"].isin(list(DTYPES))]
    held = mine[frozen_test(data.shape_hash(mine, "gemm"))]
    # the label: the table's fastest row of a shape (what the importer keeps)
    held = held.sort_values("latency_us").drop_duplicates(["dtype", "m", "n", "k"]).reset_index(drop=True)
    out_rows = table["gemm_dtype"].map({v[0]: k for k, v in DTYPES.items()})
    drop = pd.MultiIndex.from_frame(table.assign(dtype=out_rows)[["dtype", "m", "n", "k"]]).isin(
        pd.MultiIndex.from_frame(held[["dtype", "m", "n", "k"]])
    )
    sample = pd.concat(
        [g.sample(min(per_gpu, len(g)), random_state=seed) for _, g in held.groupby("dtype")], ignore_index=True
    )
    with tempfile.TemporaryDirectory() as full_dir, tempfile.TemporaryDirectory() as cut_dir:
        full = _database(gpu, version, table, Path(full_dir))
        cut = _database(gpu, version, table[~drop], Path(cut_dir))
        modes = {d: getattr(common.GEMMQuantMode, v[1]) for d, v in DTYPES.items()}
        shapes = list(zip(sample["dtype"], sample["m"], sample["n"], sample["k"]))
        sample["aic_full_us"] = [_ask(full, modes[d], int(m), int(n), int(k)) for d, m, n, k in shapes]
        sample["aic_us"] = [_ask(cut, modes[d], int(m), int(n), int(k)) for d, m, n, k in shapes]
    got = predict_many(sample[[c for c in op_fields("gemm") if c in sample and sample[c].notna().any()]])
    sample["kernelcast_us"] = got["latency_us"].to_numpy()
    sample["kernelcast_model"] = got["model"].to_numpy()
    sample["version"] = version
    sample["rows_removed"] = int(drop.sum())
    return sample


def summarize(part: pd.DataFrame) -> dict:
    ok = part["aic_us"].notna()
    y = part["latency_us"][ok]
    return {
        "rows": int(len(part)),
        "aic_refused": int((~ok).sum()),
        "aic_full_table": metrics(y, part["aic_full_us"][ok]),
        "aic_heldout": metrics(y, part["aic_us"][ok]),
        "kernelcast": metrics(y, part["kernelcast_us"][ok]),
        "kernelcast_all_rows": metrics(part["latency_us"], part["kernelcast_us"]),
        "kernelcast_learned_share": float(part["kernelcast_model"].str.startswith("learned").mean()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-gpu", type=int, default=400, help="held-out rows per GPU and dtype (a seeded sample)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--json-out", type=Path, default=Path(__file__).parent / "results" / "vs_aiconfigurator_heldout.json"
    )
    args = ap.parse_args()
    rows = data.load_rows("gemm", sources=("aiconfigurator",))
    rows = rows[rows["backend"] == "trtllm"]
    parts = {}
    for gpu in sorted(rows["gpu"].unique()):
        part = compare_gpu(gpu, rows, args.per_gpu, args.seed)
        if part is not None:
            parts[gpu] = part
    pct = lambda m: f"{m['median_ape'] * 100:5.1f} /{m['p90_ape'] * 100:6.1f}%"  # noqa: E731
    print(
        f"{'gpu':<22}{'dtype':<10}{'rows':>5}{'refused':>8}  {'aic full table':>15}  {'aic held out':>15}  "
        f"{'kernelcast':>15}"
    )
    table = []
    for gpu, part in parts.items():
        for dtype, sub in [*part.groupby("dtype"), ("all", part)]:
            s = {"gpu": gpu, "dtype": dtype, "version": part["version"].iloc[0], **summarize(sub)}
            table.append(s)
            print(
                f"{gpu:<22}{dtype:<10}{s['rows']:>5}{s['aic_refused']:>8}  {pct(s['aic_full_table']):>15}  "
                f"{pct(s['aic_heldout']):>15}  {pct(s['kernelcast']):>15}"
            )
    if parts:
        s = {"gpu": "all", "dtype": "all", **summarize(pd.concat(parts.values(), ignore_index=True))}
        table.append(s)
        print(
            f"{'all':<22}{'all':<10}{s['rows']:>5}{s['aic_refused']:>8}  {pct(s['aic_full_table']):>15}  "
            f"{pct(s['aic_heldout']):>15}  {pct(s['kernelcast']):>15}"
        )
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
