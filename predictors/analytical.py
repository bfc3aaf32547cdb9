"""Analytical predictor: roofline with wave quantization per op, NCCL's cost model for collectives.

Works for every GPU in the spec database. Efficiency assumptions are named constants, reported
with every prediction; the learned models correct what these miss.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelcast.features.common import KERNEL_FLOOR_CYCLES, kernel_floor_us
from kernelcast.features.vector import feature_columns

#: fraction of dense peak a well-tuned kernel sustains in its main loop, per op and backend class.
#: GEMM: 785 of 989 TFLOP/s measured for a 4096³ bf16 torch.matmul on our H200 (measurement.md);
#: attention: FlashAttention-2-class forward kernels reach ~50% of Hopper's dense peak.
COMPUTE_EFFICIENCY = {
    "gemm": {"cublas": 0.80, "triton": 0.70, "trtllm": 0.80, "vllm": 0.80, "sglang": 0.80},
    "attention": {"flash": 0.50, "cudnn": 0.55, "triton": 0.40, "trtllm": 0.55, "vllm": 0.50, "sglang": 0.50},
    "moe": {"triton": 0.55, "torch": 0.45, "trtllm": 0.60, "vllm": 0.55, "sglang": 0.55},
}
#: plain fp32 GEMM runs on the SIMT units, closer to their peak than tensor-core loops are to theirs
FP32_SIMT_EFFICIENCY = 0.85
#: fraction of HBM bandwidth a streaming kernel sustains (device copy ~4.3 of 4.8 TB/s on H200;
#: weight-streaming GEMV-like kernels land lower)
MEMORY_EFFICIENCY = 0.75
#: kernels one call launches: GEMM 1 (+1 split-K reduction), attention 1; fused MoE 5 (align, up+gate,
#: activation, down, combine); the per-expert torch loop 4 per active expert (gather, up+gate,
#: activation, down) plus routing and combine
KERNELS_PER_CALL = {"gemm": 1.0, "attention": 1.0, "moe": 5.0}
TORCH_MOE_KERNELS_PER_EXPERT = 4.0
#: uncalibrated analytical interval: the answer divided / multiplied by this factor
INTERVAL_FACTOR = 2.0

def assumptions(op: str) -> str:
    if op == "collective":
        return "NCCL 2.30.7 cost model (ring/tree x LL/LL128/Simple, per-architecture constants); NVLS off"
    eff = ", ".join(f"{b} {e:.0%}" for b, e in COMPUTE_EFFICIENCY[op].items())
    return (f"compute efficiency {eff} of dense peak, wave-quantized; memory {MEMORY_EFFICIENCY:.0%} of HBM "
            f"bandwidth; {KERNEL_FLOOR_CYCLES:g} cycles (2.5 us at 1.98 GHz) per kernel floor; interval x/÷{INTERVAL_FACTOR:g} (uncalibrated)")


def _compute_efficiency(op: str, backend: np.ndarray, dtype: np.ndarray) -> np.ndarray:
    table = COMPUTE_EFFICIENCY[op]
    eff = np.asarray([table[b] for b in backend]) if len(backend) > 1 else np.asarray([table[backend[0]]])
    if op == "gemm":
        eff = np.where(np.asarray(dtype) == "fp32", FP32_SIMT_EFFICIENCY, eff)
    return eff


def predict_columns(cols, op: str, features: dict | None = None) -> dict[str, np.ndarray]:
    """latency_us, low_us, high_us, floor_us and bound for validated description columns of ``op``."""
    f = features if features is not None else feature_columns(cols, op)
    if op == "collective":
        latency = f["nccl_time_us"]
        bound = np.where(f["nccl_latency_term_us"] >= f["nccl_bandwidth_term_us"], "latency", "link").astype(object)
    else:
        backend = np.atleast_1d(np.asarray(cols["backend"], dtype=object))
        eff = _compute_efficiency(op, backend, np.atleast_1d(np.asarray(cols["dtype"], dtype=object)))
        t_compute = f["compute_floor_us"] / (eff * f["wave_efficiency"])
        t_memory = f["memory_floor_us"] / MEMORY_EFFICIENCY
        kernels = KERNELS_PER_CALL[op] + (f["split_k"] > 1 if op == "gemm" else 0)
        if op == "moe":
            kernels = np.where(backend == "torch", 2 + TORCH_MOE_KERNELS_PER_EXPERT * f["active_experts"], kernels)
        t_fixed = np.broadcast_to(kernel_floor_us(f["gpu_boost_clock_hz"]) * kernels, t_compute.shape)
        latency = np.maximum(t_compute, t_memory) + t_fixed
        bound = np.where(t_fixed > np.maximum(t_compute, t_memory), "latency",
                         np.where(t_memory > t_compute, "memory", "compute")).astype(object)
    return {"latency_us": latency, "low_us": np.maximum(f["floor_us"], latency / INTERVAL_FACTOR),
            "high_us": latency * INTERVAL_FACTOR, "floor_us": f["floor_us"], "bound": bound}


def predict_frame(frame: pd.DataFrame, op: str) -> pd.DataFrame:
    """The analytical answer for rows of one op (description columns, canonical ``gpu``)."""
    cols = {c: frame[c].to_numpy() for c in frame.columns}
    out = predict_columns(cols, op)
    return pd.DataFrame(out, index=frame.index)
