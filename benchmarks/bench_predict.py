"""Analytical prediction speed: warm predict_latency latency per op, and predict_many throughput.

Usage: python benchmarks/bench_predict.py [--rows 200000] [--calls 3000] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/bench_predict.json).
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
from kernelcast.features.gpu import list_gpus


def random_rows(op: str, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Random valid descriptions of one op over every GPU in the database."""
    gpus = rng.choice([g.name for g in list_gpus()], n)
    log_int = lambda lo, hi: np.exp2(rng.uniform(np.log2(lo), np.log2(hi), n)).astype(np.int64)  # noqa: E731
    if op == "gemm":
        return pd.DataFrame(
            {
                "op": "gemm",
                "gpu": gpus,
                "dtype": rng.choice(["bf16", "fp16"], n),
                "backend": "cublas",
                "m": log_int(1, 32768),
                "n": log_int(64, 65536),
                "k": log_int(64, 16384),
            }
        )
    if op == "attention":
        hkv = rng.choice([1, 8, 16], n)
        seq_kv = log_int(128, 65536)
        return pd.DataFrame(
            {
                "op": "attention",
                "gpu": gpus,
                "dtype": "bf16",
                "backend": "flash",
                "batch": log_int(1, 64),
                "heads_q": hkv * rng.choice([1, 4, 8], n),
                "heads_kv": hkv,
                "seq_q": np.minimum(log_int(1, 16384), seq_kv),
                "seq_kv": seq_kv,
                "head_dim": rng.choice([64, 128, 256], n),
                "causal": rng.random(n) < 0.5,
            }
        )
    return pd.DataFrame(
        {
            "op": "moe",
            "gpu": gpus,
            "dtype": "bf16",
            "backend": "torch",
            "tokens": log_int(1, 16384),
            "hidden": rng.choice([2048, 4096, 7168], n),
            "ffn": rng.choice([768, 1536, 2048, 14336], n),
            "experts": rng.choice([8, 64, 128, 256], n),
            "top_k": rng.choice([1, 2, 8], n),
            "distribution": rng.choice(["balanced", "power_law_1.01", "power_law_1.2"], n),
        }
    )


def bench_single(op: str, calls: int, rng) -> dict:
    rows = random_rows(op, calls, rng).to_dict("records")
    for row in rows[:50]:
        predict_latency(row, predictor="analytical")  # warm: imports and spec caches
    times = []
    for row in rows:
        t0 = time.perf_counter()
        predict_latency(row, predictor="analytical")
        times.append(time.perf_counter() - t0)
    t = np.asarray(times) * 1e6
    return {"op": op, "calls": calls, "p50_us": float(np.median(t)), "p90_us": float(np.percentile(t, 90))}


def bench_many(op: str, n: int, rng) -> dict:
    frame = random_rows(op, n, rng)
    predict_many(frame.head(100), predictor="analytical")
    t0 = time.perf_counter()
    out = predict_many(frame, predictor="analytical")
    seconds = time.perf_counter() - t0
    models = sorted(set(out["model"]))
    return {"op": op, "rows": n, "seconds": seconds, "rows_per_s": n / seconds, "models": models}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--json-out", default=str(Path(__file__).parent / "results" / "bench_predict.json"))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    single = [bench_single(op, args.calls, rng) for op in ("gemm", "attention", "moe")]
    many = [bench_many(op, args.rows, rng) for op in ("gemm", "attention", "moe")]
    print(f"{'op':10s} {'predict_latency p50 (us)':>25s} {'p90 (us)':>10s} {'predict_many rows/s':>20s}  model")
    for s, m in zip(single, many):
        print(
            f"{s['op']:10s} {s['p50_us']:25.1f} {s['p90_us']:10.1f} {m['rows_per_s']:20,.0f}  {','.join(m['models'])}"
        )
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "processor": platform.processor()},
        "single": single,
        "many": many,
    }
    Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
    tmp = args.json_out + ".tmp"
    Path(tmp).write_text(json.dumps(result, indent=2))
    os.replace(tmp, args.json_out)
    print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
