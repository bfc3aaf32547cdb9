"""Do a GEMM's operand values change its time? The same bf16 shapes timed with the collector's CUPTI timer (cold L2)
on operands drawn as the sweeps draw them (standard normal), as a model's weights are (normal, std 0.02), and as
Llama 4's eager experts see theirs (a token's hidden state in one expert's batch, zeros in the other 127: the router's
scores multiply ``hidden.repeat(experts, 1)``), each case twice in alternating order, with the SM clock NVML reads after
it. Why: Llama 4's expert-stack bmm ran at ~890 TFLOP/s inside the measured layers (H200 and H100) where the bmm
sweep's rows of the same size ran at 600-710 TFLOP/s (`datasets/gemm/…_bmmx.parquet`), and the learned model, trained
on those rows, over-predicts those layers by 15-20%. GPU only; prints a table and writes JSON.

    python benchmarks/gpu_operand_values.py [--out DIR] [--shares]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

#: (name, batch, m, k, n): Llama 4 Maverick's expert gate_up and down at 1,500 tokens, and one square matmul
SHAPES = (
    ("maverick_gate_up", 128, 1500, 5120, 16384),
    ("maverick_down", 128, 1500, 8192, 5120),
    ("square_8192", 1, 8192, 8192, 8192),
)
#: how A (activations) and B (weights) are drawn; ``zero_rows_<z>``: weights as a model's, the first share z of A's
#: rows zeros (whole expert batches where there are several: how the time goes with the share)
CASES = ("randn", "weights_0.02", "routed_top1", "zeros_a")
SHARES = ("zero_rows_0.5", "zero_rows_0.75", "zero_rows_0.9375")


def operands(case: str, batch: int, m: int, k: int, n: int, seed: int = 0):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(batch, m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(batch, k, n, device="cuda", dtype=torch.bfloat16, generator=g)
    if case == "weights_0.02":
        b *= 0.02
    elif case == "routed_top1":  # one expert's batch holds the tokens, the others zeros (top-1 of `batch` experts)
        b *= 0.02
        a[1:] = 0
    elif case == "zeros_a":
        b *= 0.02
        a.zero_()
    elif case.startswith("zero_rows_"):
        b *= 0.02
        rows = a.view(-1, k)
        rows[: int(rows.shape[0] * float(case.removeprefix("zero_rows_")))] = 0
    elif case != "randn":
        raise ValueError(f"case must be one of {', '.join(CASES + SHARES)}; got {case!r}")
    return a, b


def main() -> int:
    import torch

    from kernelcast.collect.timers import time_batch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--shares", action="store_true", help="the zero-row shares instead of the four operand cases")
    args = p.parse_args()
    cases = SHARES + ("weights_0.02",) if args.shares else CASES
    rows = []
    for name, batch, m, k, n in SHAPES:
        order = list(cases) + list(reversed(cases))  # each case twice, in alternating order (drift shows)
        for rep, case in enumerate(order):
            a, b = operands(case, batch, m, k, n)

            def prepare(a=a, b=b):
                return lambda: torch.bmm(a, b)

            (t,) = time_batch([prepare], cache="cold", repeats=8, warmup=2)
            us = statistics.median(t.samples_us)
            rows.append(
                dict(
                    shape=name,
                    batch=batch,
                    m=m,
                    k=k,
                    n=n,
                    case=case,
                    **{"pass": rep // len(cases)},
                    us=round(us, 2),
                    tflops=round(2 * batch * m * k * n / us / 1e6, 1),
                    sm_clock_mhz=(t.sm_clock_hz or 0) / 1e6,
                    kernels=list(dict.fromkeys(t.kernels)),
                )  # fmt: skip
            )
            del a, b
            torch.cuda.empty_cache()
    gpu = torch.cuda.get_device_name(0)
    print(f"{gpu}\n{'shape':18s} {'case':14s} {'pass':>4s} {'us':>10s} {'TFLOP/s':>8s} {'clock MHz':>9s}")
    for r in rows:
        clock = r["sm_clock_mhz"]
        print(f"{r['shape']:18s} {r['case']:14s} {r['pass']:4d} {r['us']:10.1f} {r['tflops']:8.1f} {clock:9.0f}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / ("gpu_operand_shares.json" if args.shares else "gpu_operand_values.json")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"gpu": gpu, "rows": rows}, indent=1))
    tmp.replace(path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
