"""The cpu timer: wall-clock time of real torch CPU GEMM calls, the collector's CPU seam (tests, CI nights).

Rows say ``timer="cpu"`` and ``source="kernelcast-cpu"``: they time the host CPU, not the GPU the
description names, and ``collect merge`` refuses them for a datasets folder (they are never
training data). ``cache="cold"`` writes a buffer larger than a CPU's last-level cache before
each call; one torch thread per process, so workers side by side do not share cores.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from kernelcast.collect.api import LABEL_COLUMNS, Measurement
from kernelcast.collect.timers import check_timing_args
from kernelcast.features.desc import Desc, parse_desc

TIMER = "cpu"
DEFAULT_REPEATS = 3  # timed calls per config
DEFAULT_WARMUP = 1  # untimed calls per config before the timed ones
FLUSH_BYTES = 64 << 20  # written before each cold call: > a server CPU's last-level cache
MAX_FLOPS = 2e9  # larger GEMMs are refused: seconds per call on a small CPU
DTYPES = ("fp32", "tf32", "bf16", "fp16")


def _failure(status: str, message: str, cache: str) -> dict[str, Any]:
    return {**dict.fromkeys(LABEL_COLUMNS), "timer": TIMER, "cache": cache, "status": status, "error": message}


def skip_reason(desc: Desc) -> str | None:
    """None when the cpu timer can run ``desc``, else why not."""
    if desc.op != "gemm":
        return f"the cpu timer measures op 'gemm' only; got {desc.op!r}"
    if desc.dtype not in DTYPES:
        return f"the cpu timer measures dtypes {', '.join(DTYPES)}; got {desc.dtype!r}"
    flops = 2.0 * desc.m * desc.n * desc.k * desc.batch
    if flops > MAX_FLOPS:
        return f"the cpu timer measures GEMMs up to {MAX_FLOPS:.0e} FLOPs; this one has {flops:.3g}"
    return None


def _call(desc: Desc):
    import torch

    dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[desc.dtype]
    gen = torch.Generator().manual_seed(desc.m * 31 + desc.n * 7 + desc.k)
    lead = (desc.batch,) if desc.batch > 1 else ()
    a = torch.randn(lead + (desc.m, desc.k), generator=gen).to(dtype)
    b = torch.randn(lead + ((desc.k, desc.n) if desc.layout == "nn" else (desc.n, desc.k)), generator=gen).to(dtype)
    bt = b if desc.layout == "nn" else b.transpose(-1, -2)
    return lambda: torch.matmul(a, bt)


def warm_up(seconds: float = 0.0) -> dict[str, float]:
    """Import torch and run CPU matmuls for ``seconds`` (at least one), so the first chunk times GEMMs, not imports."""
    import torch

    torch.set_num_threads(1)
    a = torch.randn(256, 256)
    start, calls = time.perf_counter(), 0
    while calls == 0 or time.perf_counter() - start < seconds:
        a @ a
        calls += 1
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "gflops": calls * 2 * 256**3 / elapsed / 1e9}


def measure_many(
    descs: Iterable[Desc | Mapping[str, Any]],
    cache: str = "cold",
    repeats: int = DEFAULT_REPEATS,
    warmup: int = DEFAULT_WARMUP,
) -> list[dict[str, Any]]:
    """Label rows for each description, in order: median wall time of ``repeats`` CPU calls."""
    import torch

    check_timing_args(cache, repeats, warmup)
    torch.set_num_threads(1)
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32) if cache == "cold" else None
    rows = []
    for desc in (parse_desc(d) for d in descs):
        reason = skip_reason(desc)
        if reason:
            rows.append(_failure("unsupported", reason, cache))
            continue
        call, samples = _call(desc), []
        for i in range(warmup + repeats):
            if flush is not None:
                flush.fill_(i)
            start = time.perf_counter_ns()
            call()
            if i >= warmup:
                samples.append((time.perf_counter_ns() - start) / 1e3)
        rows.append(Measurement(tuple(samples), ("cpu:torch.matmul",), TIMER, cache).to_row())
    return rows
