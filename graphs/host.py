"""The host side of an eager step: what the CPU spends issuing each aten op, and how kernels queue behind it.

Measured on the H200 host (``datasets/layers/kernelcast_h200_sxm_20261201_launch.jsonl``: 100 back-to-back calls
of one small op, under the same CUPTI tracing as every label): a pointwise op issues one kernel every 10-16 µs, a
cuBLAS ``F.linear`` every 21 µs, SDPA (cuDNN) every 32 µs, while the kernels themselves take 1-7 µs — small eager
kernels are launch-bound. Inside a real layer each op also pays the model's Python (modules, hooks, views):
``OP_US`` is that cost per aten op that launches nothing, ``KERNEL_US`` per op that launches a kernel, fitted on
four of the eight measured models' eager layers and checked on the other four (``benchmarks/eval_layers.py``).
Under a CUDA graph the host is out of the loop: kernels follow each other with ``GRAPH_GAP_US`` between them.

The host's own speed moves: the H200 host ran at two speeds ~1.75x apart, even between repeats of one point. Every
measured layer repeat carries a host-speed probe (``collect/layer_job.py``'s ``host_probe``: µs to issue one small
eager op); the constants hold at ``REFERENCE_PROBE_US``, and a host whose probe reads ``p`` pays ``p /
REFERENCE_PROBE_US`` times every host cost (``host_speed``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: host µs per captured aten op that launches no kernel (views, allocations: Python and dispatcher only)
OP_US = 0.5
#: host µs per aten op that launches kernels, by the family of its first kernel: the probe's per-op costs (gemm 21,
#: attention 32, elementwise 12, reduction 14, copy 13, moe 25) times 2.25, the layer fit (Python modules, hooks;
#: refitted on the twenty-eighth session's kernel answers: 2.05 and OP_US 3.0 before)
KERNEL_US = {"gemm": 47.3, "attention": 72.0, "elementwise": 27.0, "reduction": 31.5, "copy": 29.3, "moe": 56.3}
#: the host-speed probe reading (µs per small eager op) at which OP_US and KERNEL_US hold: the median over the fit
#: models' measured layer points (datasets/layers/kernelcast_h200_sxm_20261203_layers.jsonl)
REFERENCE_PROBE_US = 11.88
#: device-side gap between consecutive kernels of a CUDA graph replay (graph span - device time) / kernels
GRAPH_GAP_US = 0.55


#: host µs per launch of Inductor's wrapper (a compiled call): the probe's per-call costs above, without the layer
#: fit's factor (the wrapper is straight-line Python: no modules, hooks or views between launches); a fused Triton
#: kernel as a pointwise op. Not fitted on compiled calls (none was measured for wall time).
COMPILED_KERNEL_US = {"gemm": 21.0, "attention": 32.0, "fused": 12.0, "elementwise": 12.0, "reduction": 14.0,
                      "copy": 13.0, "moe": 25.0}  # fmt: skip


#: the 80% band of log(measured span / predicted wall time) over the FIT models' measured eager layer points, each
#: model's points predicted with the host constants fitted on the other three (``benchmarks/eval_layers.py --fit``; the
#: kernels' and the host path's errors together): with each point's host probe given, at the reference speed (no
#: probe: the host's two speeds are in it), and under a CUDA graph
WALL_BAND = {"probe": (-0.228, 0.18), "nominal": (-0.335, 0.346), "cuda_graph": (-0.016, 0.063)}


def wall_band(host_probe_us: float | None, cuda_graph: bool) -> tuple[float, float]:
    """The ``WALL_BAND`` a wall-time prediction made this way gets."""
    return WALL_BAND["cuda_graph" if cuda_graph else "nominal" if host_probe_us is None else "probe"]


def host_speed(host_probe_us: float | None) -> float:
    """The factor on every host cost for a host whose probe reads ``host_probe_us`` (None: the reference host, 1)."""
    if host_probe_us is None:
        return 1.0
    if (
        isinstance(host_probe_us, bool)
        or not isinstance(host_probe_us, (int, float))
        or not (math.isfinite(host_probe_us) and host_probe_us > 0)
    ):
        raise ValueError(
            "host_probe_us must be a positive number of µs (kernelcast.collect.layer_job.host_probe on the GPU host; "
            f"None for the reference host, {REFERENCE_PROBE_US} µs); got {host_probe_us!r}"
        )
    return float(host_probe_us) / REFERENCE_PROBE_US


def compiled_host_us(family: str | None, speed: float = 1.0) -> float:
    """Host cost of one launch of a compiled call (an unmapped launch as a fused one), on a host ``speed`` times
    the reference's cost."""
    return speed * COMPILED_KERNEL_US.get(family or "fused", COMPILED_KERNEL_US["fused"])


def host_us(family: str | None, speed: float = 1.0) -> float:
    """Host cost of one captured op: ``OP_US`` when it launches nothing, else its family's issue cost; on a host
    ``speed`` times the reference's cost."""
    return speed * (OP_US if family is None else KERNEL_US.get(family, KERNEL_US["elementwise"]))


def timeline(ops: Sequence[tuple[float, Sequence[float]]], cuda_graph: bool = False) -> float:
    """Span (µs) from the first kernel's start to the last kernel's end of ``ops`` = (host µs, its kernels' µs).

    The CPU issues ops in order; a kernel starts when it has been issued and the GPU is free. Under a CUDA graph
    every kernel is issued at once and only ``GRAPH_GAP_US`` separates them."""
    cpu = 0.0
    gpu_free = 0.0
    first = None
    for host, kernels in ops:
        cpu += 0.0 if cuda_graph else host
        for dev in kernels:
            start = max(cpu, gpu_free) + (GRAPH_GAP_US if cuda_graph and first is not None else 0.0)
            first = start if first is None else first
            gpu_free = start + dev
    return 0.0 if first is None else gpu_free - first
