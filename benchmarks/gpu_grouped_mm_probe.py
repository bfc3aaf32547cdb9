"""Why did GPT-OSS 20B's compiled prefill run its expert GEMMs slower than its eager one? In the measured compiled
layer (`datasets/compiled/…_archlayers5_tasks.parquet`, prefill 1 × 1,500) the two `_grouped_mm` kernels took 2,739.5
and 397.8 µs, where the eager layer's took 394.6 and 203.4 µs (`datasets/layers/…_arch5_layers.jsonl`), and Inductor's
output code hands them the same shapes and strides (benchmarks/RESULTS.md §42). This probe builds that layer on the
GPU, runs it eager and compiled (as `collect/fused_job.py` compiles a layer), keeps the arguments each `_grouped_mm`
call got, and times `torch._grouped_mm` alone on each set (cold L2, CUDA events), on contiguous copies of them, and on
the other mode's group offsets — so the time follows either the operands' layout or the routing's group sizes. GPU
only; prints a table and writes JSON.

    python benchmarks/gpu_grouped_mm_probe.py [--out DIR] [--repeats 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

MODEL, PHASE, BATCH, SEQ = "gpt_oss_20b", "prefill", 1, 1500


def describe(a, b, offs) -> dict:
    """What a `_grouped_mm` call was given: shapes, strides, 256-byte alignment of the data, and the group sizes."""
    import torch

    sizes = torch.diff(offs.long(), prepend=offs.new_zeros(1).long()).tolist()
    return {
        "a": [list(a.shape), list(a.stride()), a.data_ptr() % 256],
        "b": [list(b.shape), list(b.stride()), b.data_ptr() % 256],
        "offs_dtype": str(offs.dtype).removeprefix("torch."),
        "group_sizes": {"min": min(sizes), "median": statistics.median(sizes), "max": max(sizes), "sum": sum(sizes)},
    }


def time_us(a, b, offs, repeats: int) -> float:
    """Median µs of ``torch._grouped_mm(a, b, offs=offs)`` over ``repeats`` calls, each after a 256 MB write that
    evicts L2."""
    import torch

    flush = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    times = []
    for _ in range(repeats):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch._grouped_mm(a, b, offs=offs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def recorded_calls(run) -> list[tuple]:
    """(a, b, offs) clones of every `_grouped_mm` the eager call ``run()`` dispatches."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    calls = []

    class Keep(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is torch.ops.aten._grouped_mm.default:
                offs = kwargs.get("offs", args[2] if len(args) > 2 else None)
                calls.append((args[0].clone(), args[1], offs.clone()))
            return func(*args, **kwargs)

    with torch.no_grad(), Keep():
        run()
    return calls


def compiled_calls(compiled, tensors) -> list[tuple]:
    """(a, b, offs) clones of every `_grouped_mm` the compiled call makes (Inductor calls it as an extern kernel)."""
    import torch
    from torch._inductor.select_algorithm import extern_kernels

    calls, original = [], extern_kernels._grouped_mm

    def keep(a, b, offs=None, *rest, **kw):
        calls.append((a.clone(), b, offs.clone()))
        return original(a, b, offs, *rest, **kw)

    extern_kernels._grouped_mm = keep
    try:
        with torch.no_grad():
            compiled(*tensors)
        torch.cuda.synchronize()
    finally:
        extern_kernels._grouped_mm = original
    return calls


def main() -> int:
    import torch

    from kernelcast.features import layers
    from kernelcast.features.inductor import compile_code

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    model = layers.build_model(layers.shard(layers.load_config(MODEL), 1), device="cuda")
    with torch.no_grad():
        call = layers.layer_call(model, PHASE, BATCH, SEQ, 0)
    fn, tensors = layers.functional_layer(call)

    def eager():
        call.fn(*call.args, **call.kwargs)
        call.after()

    eager_calls = recorded_calls(eager)
    compiled, _ = compile_code(fn, tuple(tensors))
    comp_calls = compiled_calls(compiled, tensors)
    rows = []
    for mode, calls, other in (("eager", eager_calls, comp_calls), ("compiled", comp_calls, eager_calls)):
        for i, (a, b, offs) in enumerate(calls):
            row = {"mode": mode, "call": i, **describe(a, b, offs)}
            row["us"] = time_us(a, b, offs, args.repeats)
            row["us_contiguous_copies"] = time_us(a.contiguous().clone(), b.contiguous().clone(), offs, args.repeats)
            if i < len(other):
                row["us_other_offsets"] = time_us(a, b, other[i][2], args.repeats)
            rows.append(row)
            other_us = row.get("us_other_offsets", float("nan"))
            print(
                f"{mode:9s} {i}  a {row['a']}  b {row['b']}  groups {row['group_sizes']}  {row['us']:9.1f} µs  "
                f"contiguous {row['us_contiguous_copies']:9.1f}  other offsets {other_us:9.1f}"
            )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "gpu_grouped_mm_probe.json"
    path.write_text(json.dumps({"model": MODEL, "phase": PHASE, "batch": BATCH, "seq": SEQ, "rows": rows}, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
