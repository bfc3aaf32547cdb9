"""Config search speed: warm ``rank_configs`` over 1,000 given candidates (validated, one batched prediction) and
over each op's default space, learned (H200) and analytical (a GPU no model covers).

Usage: python benchmarks/bench_rank.py [--calls 20] [--json-out PATH]
Prints a table (median and p90 ms per call); writes JSON (default benchmarks/results/bench_rank.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from kernelcast import rank_configs
from kernelcast.collect.dataset import atomic_path
from kernelcast.predictors.configs import space

DESCS = {
    "gemm": {"op": "gemm", "dtype": "bf16", "backend": "triton", "m": 3000, "n": 4096, "k": 5000},
    "attention": {
        "op": "attention",
        "dtype": "bf16",
        "backend": "triton",
        "batch": 4,
        "heads_q": 32,
        "heads_kv": 8,
        "seq_q": 2048,
        "seq_kv": 2048,
        "head_dim": 128,
        "causal": True,
    },
    "moe": {"op": "moe", "dtype": "bf16", "backend": "triton", "tokens": 512, "hidden": 4096, "ffn": 1408}
    | {"experts": 64, "top_k": 6},
}
#: given candidates per call in the "1,000 candidates" rows (every 12th config of the GEMM space)
CANDIDATES = 1000


def timed(call, calls: int) -> dict:
    call()  # warm: model load, caches
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        frame = call()
        times.append((time.perf_counter() - t) * 1e3)
    return {
        "median_ms": float(np.median(times)),
        "p90_ms": float(np.percentile(times, 90)),
        "candidates": frame.attrs["candidates"],
        "fit": frame.attrs["fit"],
        "model": frame.attrs["model"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--json-out", type=Path, default=Path(__file__).parent / "results" / "bench_rank.json")
    args = ap.parse_args()
    given = [json.loads(c) for c in space("gemm")[:: len(space("gemm")) // CANDIDATES]][:CANDIDATES]
    rows = []
    for gpu in ("H200", "A100"):
        gemm = {**DESCS["gemm"], "gpu": gpu}
        given_row = timed(lambda g=gemm: rank_configs(g, given), args.calls)
        rows.append({"case": "gemm, 1,000 given", "gpu": gpu, **given_row})
        for op, desc in DESCS.items():
            d = {**desc, "gpu": gpu}
            rows.append({"case": f"{op}, default space", "gpu": gpu, **timed(lambda d=d: rank_configs(d), args.calls)})
    print(f"{'case':<26}{'gpu':<6}{'candidates':>11}{'fit':>7}{'median ms':>11}{'p90 ms':>9}  model")
    for r in rows:
        print(
            f"{r['case']:<26}{r['gpu']:<6}{r['candidates']:>11,}{r['fit']:>7,}{r['median_ms']:>11.1f}"
            f"{r['p90_ms']:>9.1f}  {r['model']}"
        )
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "calls": args.calls,
        "rows": rows,
    }
    with atomic_path(args.json_out) as tmp:
        tmp.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
