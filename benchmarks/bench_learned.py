"""Learned-model speed: warm one-row latency (features + model, and predict_latency), batch throughput
(median of three calls on the same batch).

Rows are real in-distribution descriptions (the aiconfigurator import), so dispatch takes the learned path.
Usage: python benchmarks/bench_learned.py [--rows 200000] [--calls 2000] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/bench_learned.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast import predict_latency, predict_many
from kernelcast.collect.importers.aiconfigurator import ensure_cache
from kernelcast.features.desc import op_fields
from kernelcast.features.vector import feature_columns
from kernelcast.predictors.learned import load_model
from kernelcast.training.data import load_rows


def covered_rows(op: str, model, n: int, seed: int = 0) -> pd.DataFrame:
    ensure_cache([op])
    rows = load_rows(op, sources=("aiconfigurator",))
    rows = rows[[c for c in op_fields(op) if c in rows and rows[c].notna().any()]]  # all-null config: absent
    rows = rows[model.covers(op, rows)]
    return rows.sample(n, replace=len(rows) < n, random_state=seed).reset_index(drop=True)


def _timed(fn, items) -> np.ndarray:
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t0)
    return np.asarray(out) * 1e6


def _median_s(fn, runs: int = 3):
    """(median wall time of ``runs`` calls, the last call's result): steady state (a first call also pays
    page faults and thread start-up)."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), result


def bench_op(op: str, rows: int, calls: int) -> dict | None:
    model = load_model(op)
    if model is None:
        return None
    frame = covered_rows(op, model, max(rows, calls))
    arrays = {c: frame[c].to_numpy() for c in frame}
    singles = [{c: a[i : i + 1] for c, a in arrays.items()} for i in range(calls)]
    descs = frame.head(calls).to_dict("records")
    serve = lambda cols: model.predict({**cols, **feature_columns(cols, op)})  # noqa: E731 — the dict path
    for i in range(50):  # warm caches
        serve(singles[i])
        predict_latency(descs[i])
    model_us = _timed(serve, singles)
    api_us = _timed(predict_latency, descs)
    assert predict_latency(descs[0]).model == model.name, "benchmark rows must take the learned path"
    batch = frame.head(rows)
    columns = {c: batch[c].to_numpy() for c in batch}
    learned_s, (p50, _, _) = _median_s(lambda: serve(columns))
    many_s, out = _median_s(lambda: predict_many(batch))
    return {
        "op": op,
        "model": model.name,
        "calls": calls,
        "rows": len(batch),
        "model_one_row_p50_us": float(np.median(model_us)),
        "model_one_row_p90_us": float(np.percentile(model_us, 90)),
        "predict_latency_p50_us": float(np.median(api_us)),
        "predict_latency_p90_us": float(np.percentile(api_us, 90)),
        "model_rows_per_s": len(batch) / learned_s,
        "predict_many_rows_per_s": len(batch) / many_s,
        "learned_share": float((out["model"] == model.name).mean()),
        "finite": bool(np.isfinite(p50).all()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json-out", default=str(Path(__file__).with_name("results") / "bench_learned.json"))
    args = parser.parse_args()
    results = [r for op in ("gemm", "attention", "moe", "collective") if (r := bench_op(op, args.rows, args.calls))]
    cols = [
        "op",
        "model_one_row_p50_us",
        "predict_latency_p50_us",
        "model_rows_per_s",
        "predict_many_rows_per_s",
        "learned_share",
    ]
    print("  ".join(f"{c:>24}" for c in cols))
    for r in results:
        print("  ".join(f"{r[c]:>24,.1f}" if isinstance(r[c], float) else f"{r[c]:>24}" for c in cols))
    meta = {"cpus": os.cpu_count(), "python": platform.python_version(), "machine": platform.machine()}
    Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json_out).write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
