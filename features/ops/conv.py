"""Depthwise 1-D convolutions (``F.conv1d`` with ``groups = channels``): each of ``channels`` rows of a (batch,
channels, length) input convolved with its own ``kernel`` taps, ``padding`` zeros at both ends — the short causal
convolution of linear-attention and Mamba layers (Qwen3.5, Qwen3-Next, Nemotron-H) on torch's reference path, which
PyTorch runs as its generic depthwise kernel (``conv_depthwise2d_forward_kernel_generic``), one output per thread.

That kernel is bound by its per-output work (index arithmetic and a loop over the taps), not by HBM: the 72 kernels
measured inside the hybrid layer sets on the H200 (prefill over a strided, channels-last view and decode over the
contiguous cache window alike) run at ~10.6 ps per output with 4 taps, several times their memory floor. The
analytical answer is that rate, in SM cycles per tap, plus one kernel's fixed time
(``benchmarks/eval_hybrid_kernels.py`` fits and checks it). Standalone rows (nineteenth session) show its limits: other
tap counts do not scale with the taps (2 taps -45%, 7 taps +50%), and fp16 runs cuDNN's ``conv1D_NCHW_general``; the
learned model trained on them answers where it covers (benchmarks/RESULTS.md §35).
"""

from __future__ import annotations

import numpy as np

from kernelcast.features.common import (
    KERNEL_FLOOR_CYCLES,
    MEMORY_EFFICIENCY,
    lookup,
    own_bound_latency,
    peak_per_row,
    roofline_floors,
)
from kernelcast.features.fields import MAX_ELEMENTS, IntField, Rule
from kernelcast.features.ops import OpSpec, register

#: SM clock cycles one SM spends per output per tap, fitted on the hybrid layer sets' first two passes
#: (``python benchmarks/eval_hybrid_kernels.py --fit``: 42 kernels; the 30 of the other two sets are 2.5% median off)
TAP_CYCLES = 0.70


def _out_length(cols) -> np.ndarray:
    length, kernel, padding = (np.asarray(cols[c], dtype=np.float64) for c in ("length", "kernel", "padding"))
    return length + 2 * padding - kernel + 1


def conv_flops(cols) -> np.ndarray:
    """A multiply-add per tap of every output."""
    batch, channels, kernel = (np.asarray(cols[c], dtype=np.float64) for c in ("batch", "channels", "kernel"))
    return 2 * batch * channels * _out_length(cols) * kernel


def conv_features(cols, gpu) -> dict[str, np.ndarray]:
    batch, channels, length, kernel = (
        np.asarray(cols[c], dtype=np.float64) for c in ("batch", "channels", "length", "kernel")
    )
    elem = lookup(cols["dtype"], "bytes")
    outputs = batch * channels * _out_length(cols)
    nbytes = (batch * channels * length + outputs + channels * kernel) * elem  # input, output, weights
    return {
        **roofline_floors(conv_flops(cols), nbytes, peak_per_row(gpu, cols["dtype"]), gpu),
        "log_outputs": np.log2(outputs),
        "log_kernel": np.log2(kernel),
        "elem_bytes": elem,
        "taps_us": outputs * kernel * TAP_CYCLES / (gpu["sm_count"] * gpu["boost_clock_hz"]) * 1e6,
    }


def conv_latency(cols, f) -> tuple[np.ndarray, np.ndarray]:
    """The taps at ``TAP_CYCLES`` each over every SM (``compute``), or the memory floor where slower."""
    return own_bound_latency(f, f["taps_us"], "compute")


SPEC = register(
    OpSpec(
        name="conv",
        doc="depthwise 1-D convolution (conv1d, groups = channels): (batch, channels, length) input, `kernel` taps "
        "per channel, `padding` zeros at both ends",
        fields={
            "batch": IntField(1, 1 << 20, default=1),
            "channels": IntField(1, 1 << 20),
            "length": IntField(1, 1 << 24),
            "kernel": IntField(1, 64),
            "padding": IntField(0, 64, default=0),
        },
        dtypes=("bf16", "fp16", "fp32"),
        backends=("torch",),
        rules=(
            Rule(
                "kernel",
                lambda c: c["kernel"] <= c["length"] + 2 * c["padding"],
                lambda c: f"at most length + 2·padding = {c['length'] + 2 * c['padding']} (one output at least)",
            ),
            Rule(
                "length",
                lambda c: np.asarray(c["batch"], dtype=np.float64) * c["channels"] * c["length"] <= MAX_ELEMENTS,
                lambda c: f"such that batch·channels·length = {c['batch'] * c['channels'] * c['length']} ≤ 2**38",
            ),
        ),
        checks_dtype_on_gpu=False,
        features=conv_features,
        flops=conv_flops,
        analytical=conv_latency,
        analytical_assumptions=(
            f"per-output bound (torch's generic depthwise kernel): {TAP_CYCLES:g} SM cycles per tap of every output "
            f"over all SMs (fitted on 42 measured H200 kernels of 4 taps), or the bytes at {MEMORY_EFFICIENCY:.0%} of "
            f"HBM bandwidth where slower; {KERNEL_FLOOR_CYCLES:g} cycles per kernel floor"
        ),
        example={
            "batch": 1,
            "channels": 8192,
            "length": 2048,
            "kernel": 4,
            "padding": 3,
            "dtype": "bf16",
            "backend": "torch",
        },
        range_columns=("batch", "channels", "length"),
        size_feature="flops",
    )
)
ConvDesc = SPEC.desc_type
