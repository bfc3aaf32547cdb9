"""Attention features: causal-aware FLOPs, Q/K/V/O bytes, q-tile × head × batch work units."""
from __future__ import annotations

import numpy as np

from kernelcast.features.common import config_values, lookup, peak_per_row, tile_waves

#: query rows per work unit when no config says otherwise (FlashAttention-2 forward on sm80/sm90)
DEFAULT_BLOCK_M = 128


def attended_pairs(seq_q: np.ndarray, seq_kv: np.ndarray, causal: np.ndarray) -> np.ndarray:
    """(query, key) pairs computed; causal masks are bottom-right aligned (query i sees keys ≤ kv−q+i)."""
    full = seq_q * seq_kv
    tri = seq_q * (seq_kv - seq_q) + seq_q * (seq_q + 1) / 2
    return np.where(causal, tri, full)


def attention_features(cols, gpu) -> dict[str, np.ndarray]:
    """Features of softmax(Q·Kᵀ)·V forward, one value per row."""
    b, hq, hkv, sq, skv, d = (np.asarray(cols[c], dtype=np.float64)
                              for c in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim"))
    causal = np.asarray(cols["causal"], dtype=bool)
    elem = lookup(cols["dtype"], "bytes")
    pairs = attended_pairs(sq, skv, causal)
    flops = 4 * b * hq * d * pairs
    q_bytes = b * hq * sq * d * elem
    kv_bytes = 2 * b * hkv * skv * d * elem
    nbytes = 2 * q_bytes + kv_bytes                     # Q read, O written, K and V read once
    peak = peak_per_row(gpu, cols["dtype"])
    compute_floor = flops / peak * 1e6
    memory_floor = nbytes / gpu["memory_bandwidth_bps"] * 1e6
    cfg = cols.get("config", np.full(len(b), None, dtype=object))
    bm, bn, warps, stages = config_values(cfg, ("block_m", "block_n", "num_warps", "num_stages"),
                                          (DEFAULT_BLOCK_M, np.nan, np.nan, np.nan))   # NaN: the library chose
    units = np.ceil(sq / bm) * hq * b
    waves, wave_eff = tile_waves(units, gpu["sm_count"])
    return {
        "flops": flops, "bytes": nbytes, "arithmetic_intensity": flops / nbytes,
        "compute_floor_us": compute_floor, "memory_floor_us": memory_floor,
        "floor_us": np.maximum(compute_floor, memory_floor),
        "log_batch": np.log2(b), "heads_q": hq, "heads_kv": hkv, "gqa_ratio": hq / hkv,
        "log_seq_q": np.log2(sq), "log_seq_kv": np.log2(skv), "head_dim": d,
        "causal": causal.astype(np.float64), "elem_bytes": elem, "peak_flops": peak,
        "causal_fraction": pairs / (sq * skv), "kv_bytes_share": kv_bytes / nbytes,
        "block_m": bm, "block_n": bn, "num_warps": warps, "num_stages": stages, "work_units": units, "waves": waves, "wave_efficiency": wave_eff,
        "kv_fits_l2": (kv_bytes <= gpu["l2_bytes"]).astype(np.float64),
    }
