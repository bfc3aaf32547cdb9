"""Speed of ``graphs/inductor.py`` on this CPU-only machine (target: a 1-layer compiled forward ≤2 s warm, codegen
included): the time to get Inductor's output code for an H200 for a pointwise chain, an RMSNorm, and one
Llama-3.1-8B decoder layer (prefill 1×128; decode 8×1 after 1024 cached tokens). Cold is the first run (the first
case's includes importing torch, triton and Inductor); warm is the median of ``--repeats`` runs after it. Prints a
table, writes benchmarks/results/bench_inductor_cpu.json.

    python benchmarks/bench_inductor_cpu.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "bench_inductor_cpu.json"
GPU = "H200"


def _time(fn, repeats: int) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    codes = fn()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    return cold, statistics.median(warm), sum(code.count("@triton.jit") for code in codes)


def _pointwise():
    import torch

    from kernelcast.graphs.inductor import inductor_code

    x = torch.empty(4096, 512, dtype=torch.bfloat16, device="meta")
    return inductor_code(lambda x: torch.relu(x * 2 + 1).sigmoid(), (x,), gpu=GPU)


def _rmsnorm():
    import torch

    from kernelcast.graphs.inductor import inductor_code

    def rmsnorm(x, w):
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6) * w).to(torch.bfloat16)

    x, w = torch.empty(4096, 4096, dtype=torch.bfloat16, device="meta"), torch.empty(4096, device="meta")
    return inductor_code(rmsnorm, (x, w), gpu=GPU)


def _layer(phase: str, batch: int, seq: int, context: int):
    def run():
        from kernelcast.features import layers
        from kernelcast.graphs.inductor import inductor_code

        call = layers.layer_call(layers.build_model(layers.load_config("llama3_8b")), phase, batch, seq, context)
        return inductor_code(call.fn, call.args, call.kwargs, gpu=GPU)

    return run


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    cases = [
        ("pointwise chain, 4 ops on [4096, 512] bf16", _pointwise, None),
        ("RMSNorm [4096, 4096] bf16", _rmsnorm, None),
        ("Llama-3.1-8B layer, prefill 1x128", _layer("prefill", 1, 128, 0), 2.0),
        ("Llama-3.1-8B layer, decode 8 x ctx 1024", _layer("decode", 8, 1, 1024), 2.0),
    ]
    rows = []
    for name, fn, target in cases:
        cold, warm, kernels = _time(fn, args.repeats)
        met = None if target is None else warm <= target
        rows.append({"case": name, "cold_s": cold, "warm_s": warm, "triton_kernels": kernels, "target_s": target})
        rows[-1]["met"] = met
    print(f"{'case (' + GPU + ')':<44}{'cold s':>8}{'warm s':>8}{'kernels':>9}{'target':>8}")
    for r in rows:
        target = "" if r["target_s"] is None else f"{r['target_s']:.1f}"
        flag = "  MISSED" if r["met"] is False else ""
        print(f"{r['case']:<44}{r['cold_s']:>8.2f}{r['warm_s']:>8.2f}{r['triton_kernels']:>9}{target:>8}{flag}")
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps({"gpu": GPU, "repeats": args.repeats, "rows": rows}, indent=1))
    tmp.replace(OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
