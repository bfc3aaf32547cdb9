"""Triton's autotuner over a candidate list, in full and pruned to kernelcast's top-k (issue 16), on a GPU host.

Each method runs in its own process with its own empty ``TRITON_CACHE_DIR``, as a user's first run would: the
autotune wall time of a shape is its first call (compiles of configs not yet compiled, Triton's benchmarking, and
for the pruned method kernelcast's ``perf_model`` over every candidate). After tuning, the chosen config's kernel
is timed with ``triton.testing.do_bench_cudagraph`` (replayed from a CUDA graph: device time, where plain
``do_bench`` times the ~30 µs host launch of the autotuner's wrapper on small shapes; L2 stays warm). Fresh bf16
shapes (seed 2401, no sweep uses it); the candidates are the config-search sweep's configs (``gemm_triton_tune``)
with split-K dropped, so the full method's pick is an exhaustive search over them.

    python benchmarks/bench_autotune.py --shapes 12 --top-k 5 [--json-out benchmarks/results/bench_autotune.json]

Prints a table (per shape and totals) and writes JSON: wall time per method, the chosen config's time, and the
pruned pick's time over the full autotune's (regret against the full search) and wall-time ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
META = {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K", "group_m": "GROUP_M"}


def candidates() -> list[dict]:
    """The exhaustive config-search sweep's configs with split-K dropped (one kernel launch per config)."""
    from kernelcast.collect.sweeps import expand

    seen, out = set(), []
    for d in expand("gemm_triton_tune", "H200", seed=16):
        cfg = {**dict(d.config), "split_k": 1}
        key = json.dumps(cfg, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(cfg)
    return out


def shapes(count: int, seed: int = 2401) -> list[tuple[int, int, int]]:
    """Log-uniform (m, n, k) in [64, 16384], n and k multiples of 16, at most 3e10 m·n·k (the tune sweep's box)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        m, n, k = (int(np.exp(rng.uniform(np.log(64), np.log(16384)))) for _ in range(3))
        n, k = max(16, n // 16 * 16), max(16, k // 16 * 16)
        if m * n * k <= 3e10:
            out.append((m, n, k))
    return out


def _worker(method: str, top_k: int, shape_list: list, configs: list[dict]) -> list[dict]:
    """One method's pass over the shapes in this process (Triton's caches empty at the start)."""
    import torch
    import triton

    from kernelcast import triton_perf_model
    from kernelcast.collect.kernels.triton_gemm import kc_gemm_kernel

    tconfigs = [
        triton.Config({v: c[k] for k, v in META.items()}, num_warps=c["num_warps"], num_stages=c["num_stages"])
        for c in configs
    ]
    prune = None
    if method == "kernelcast":
        names = {**META, "num_warps": "num_warps", "num_stages": "num_stages"}
        model = triton_perf_model("gemm", "H200", fixed={"layout": "nt"}, config_args=names)
        prune = {"perf_model": model, "top_k": top_k}
    tuned = triton.autotune(configs=tconfigs, key=["M", "N", "K"], prune_configs_by=prune)(kc_gemm_kernel)
    out = []
    for m, n, k in shape_list:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()  # nt: B^T stored row-major
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

        def grid(meta, m=m, n=n):
            return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]), 1, 1)

        def call(a=a, b=b, c=c, m=m, n=n, k=k):
            # split_blocks * BLOCK_K >= K for every BLOCK_K >= 16: one split covers the whole K
            tuned[grid](a, b, c, m, n, k, triton.cdiv(k, 16), 0, k, 1, 0, b.stride(0), b.stride(1), 0, 0, n, 1)

        torch.cuda.synchronize()
        start = time.perf_counter()
        call()
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
        best = tuned.best_config
        ms = triton.testing.do_bench_cudagraph(call, rep=100)  # device time: small kernels are launch-bound
        ref = a.float() @ b.float()
        rel_err = float((c.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6))
        out.append(
            {
                "m": m,
                "n": n,
                "k": k,
                "method": method,
                "wall_s": round(wall, 3),
                "best_us": round(ms * 1e3, 3),
                "config": {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages},
                "benchmarked": len(tuned.configs) if prune is None else top_k,
                "max_rel_err": round(rel_err, 5),
            }
        )
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return out


def run_method(method: str, top_k: int, shape_list: list, configs: list[dict]) -> list[dict]:
    """``_worker`` in a fresh process with an empty Triton cache; its rows."""
    with tempfile.TemporaryDirectory() as cache, tempfile.NamedTemporaryFile("r", suffix=".json") as res:
        env = {**os.environ, "TRITON_CACHE_DIR": cache}
        args = json.dumps({"method": method, "top_k": top_k, "shapes": shape_list, "configs": configs})
        subprocess.run([sys.executable, __file__, "--worker", args, "--worker-out", res.name], env=env, check=True)
        return json.load(open(res.name))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", type=int, default=12)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--json-out", type=Path, default=RESULTS / "bench_autotune.json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        w = json.loads(args.worker)
        rows = _worker(w["method"], w["top_k"], [tuple(s) for s in w["shapes"]], w["configs"])
        Path(args.worker_out).write_text(json.dumps(rows))
        return 0
    configs, shape_list = candidates(), shapes(args.shapes)
    full = run_method("full", args.top_k, shape_list, configs)
    pruned = run_method("kernelcast", args.top_k, shape_list, configs)
    per_shape = []
    print(f"{'m':>6}{'n':>7}{'k':>7}{'full s':>9}{'top-k s':>9}{'full µs':>10}{'top-k µs':>10}{'regret':>8}")
    for f, p in zip(full, pruned):
        regret = p["best_us"] / f["best_us"]
        per_shape.append({"m": f["m"], "n": f["n"], "k": f["k"], "full": f, "kernelcast": p, "regret": regret})
        print(
            f"{f['m']:>6}{f['n']:>7}{f['k']:>7}{f['wall_s']:>9.2f}{p['wall_s']:>9.2f}"
            f"{f['best_us']:>10.1f}{p['best_us']:>10.1f}{regret:>8.3f}"
        )
    regrets = np.array([r["regret"] for r in per_shape])
    totals = {
        "candidates": len(configs),
        "top_k": args.top_k,
        "shapes": len(per_shape),
        "full_wall_s": round(sum(r["wall_s"] for r in full), 2),
        "kernelcast_wall_s": round(sum(r["wall_s"] for r in pruned), 2),
        "mean_regret_vs_full": round(float(regrets.mean()), 4),
        "worst_regret_vs_full": round(float(regrets.max()), 4),
        "within_5pct_of_full": round(float((regrets <= 1.05).mean()), 3),
    }
    totals["wall_ratio"] = round(totals["kernelcast_wall_s"] / totals["full_wall_s"], 4)
    print(json.dumps(totals, indent=1))
    import torch
    import triton

    record = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "totals": totals,
        "shapes": per_shape,
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
