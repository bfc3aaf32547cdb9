"""Batched triangular solves (``torch.linalg.solve_triangular``, left side): X = A⁻¹B for ``batch`` lower or upper
triangular A[n,n] and B[n,nrhs] — cuBLAS's batched trsm (``batch_trsm_left_kernel``), what the torch reference path
of the gated delta rule (Qwen3.5's and Qwen3-Next's linear attention, without flash-linear-attention) launches twice
per prefill layer on its 64×64 chunk matrices.

The kernel is latency-bound, not bandwidth- or FLOP-bound: a CTA walks one system's forward substitution, each step a
multiply-add that waits on the one before (n(n−1)/2 of them down a column, the right-hand sides side by side), and the
systems go over the SMs in waves of one per SM. On the H200 the 40 prefill kernels measured inside the hybrid layer
sets sit on waves × ~26 µs (25-28 µs per wave from 96 to 6,144 systems of n = 64, nrhs = 128; over ten times their
memory floor). That constant (``benchmarks/eval_hybrid_kernels.py`` fits it on the first two layer sets, checks it on
the other two) is the analytical answer, for the solve kernel alone. The learned model (nineteenth session) is trained
on standalone rows, whose label is the op as torch runs it: a column-major copy of B, two index kernels and the solve
(inside a layer the same four run): 1.1% median on its independent test set against the constant's 15.8%.
"""

from __future__ import annotations

import numpy as np

from kernelcast.features.common import (
    KERNEL_FLOOR_CYCLES,
    lookup,
    own_bound_latency,
    peak_per_row,
    roofline_floors,
    tile_waves,
)
from kernelcast.features.fields import IntField
from kernelcast.features.ops import OpSpec, register

#: SM clock cycles per dependent multiply-add of the forward substitution (one system per SM, a thread per right-hand
#: side), fitted on the hybrid layer sets' first two passes (``python benchmarks/eval_hybrid_kernels.py --fit``: 24
#: kernels; the 16 of the other two sets are 2.6% median off with it)
STEP_CYCLES = 25.0
#: right-hand sides one CTA solves side by side (the measured kernels' 128 ran as one system per SM)
RHS_PER_CTA = 128


def trsm_flops(cols) -> np.ndarray:
    """n² multiply-adds' worth per right-hand side: n(n−1)/2 multiply-adds (2 FLOPs) plus n divisions."""
    n, nrhs, batch = (np.asarray(cols[c], dtype=np.float64) for c in ("n", "nrhs", "batch"))
    return n * n * nrhs * batch


def trsm_features(cols, gpu) -> dict[str, np.ndarray]:
    n, nrhs, batch = (np.asarray(cols[c], dtype=np.float64) for c in ("n", "nrhs", "batch"))
    elem = lookup(cols["dtype"], "bytes")
    flops = trsm_flops(cols)
    nbytes = batch * (n * (n + 1) / 2 + 2 * n * nrhs) * elem  # A's triangle and B read, X written
    units = batch * np.ceil(nrhs / RHS_PER_CTA)  # CTAs: one per system and block of right-hand sides
    waves, wave_eff = tile_waves(units, gpu["sm_count"])
    steps = n * (n - 1) / 2  # dependent multiply-adds down one column
    return {
        **roofline_floors(flops, nbytes, peak_per_row(gpu, cols["dtype"]), gpu),
        "log_n": np.log2(n),
        "log_nrhs": np.log2(nrhs),
        "log_batch": np.log2(batch),
        "waves": waves,
        "wave_efficiency": wave_eff,
        "solve_us": waves * steps * STEP_CYCLES / gpu["boost_clock_hz"] * 1e6,
    }


def trsm_latency(cols, f) -> tuple[np.ndarray, np.ndarray]:
    """Waves of the substitution's dependent steps (``latency``), or the memory floor where slower."""
    return own_bound_latency(f, f["solve_us"], "latency")


SPEC = register(
    OpSpec(
        name="trsm",
        doc="batched triangular solve (torch.linalg.solve_triangular, left): X = A⁻¹B for `batch` triangular "
        "A[n,n] and B[n,nrhs] (cuBLAS batched trsm)",
        fields={
            "n": IntField(1, 4096),
            "nrhs": IntField(1, 1 << 24),
            "batch": IntField(1, 1 << 31, default=1),
        },
        dtypes=("fp32",),
        backends=("cublas",),
        features=trsm_features,
        flops=trsm_flops,
        analytical=trsm_latency,
        analytical_assumptions=(
            f"latency-bound forward substitution: one system per SM per wave, n(n−1)/2 dependent multiply-adds at "
            f"{STEP_CYCLES:g} cycles each, {RHS_PER_CTA} right-hand sides side by side (fitted on 24 measured H200 "
            f"kernels of n=64, nrhs=128; other sizes extrapolate); {KERNEL_FLOOR_CYCLES:g} cycles per kernel floor"
        ),
        example={"n": 64, "nrhs": 128, "batch": 1536, "dtype": "fp32", "backend": "cublas"},
        range_columns=("n", "nrhs", "batch"),
    )
)
TrsmDesc = SPEC.desc_type
