"""MoE features: per-expert token counts from a routing distribution, load imbalance, padded tiles."""
from __future__ import annotations

import functools
import json

import numpy as np

from kernelcast.features.common import config_values, lookup, peak_per_row, tile_waves

#: tokens per expert are padded to this block in the fused kernel when no config says otherwise
DEFAULT_BLOCK_M = 64


def _largest_remainder(shares: np.ndarray, total: int, cap: int) -> np.ndarray:
    """Round non-negative shares (summing to total) to integers ≤ cap that sum to total."""
    counts = np.minimum(np.floor(shares).astype(np.int64), cap)
    left = total - int(counts.sum())
    order = np.argsort(-(shares - np.floor(shares)), kind="stable")
    for i in order:
        if left == 0:
            break
        if counts[i] < cap:
            counts[i] += 1
            left -= 1
    return counts


@functools.lru_cache(maxsize=65536)
def _counts_cached(tokens: int, experts: int, top_k: int, distribution: str) -> tuple[int, ...]:
    total = tokens * top_k
    if distribution.startswith("["):
        return tuple(json.loads(distribution))
    if distribution == "balanced":
        weights = np.ones(experts)
    else:
        alpha = float(distribution.removeprefix("power_law_"))
        weights = np.arange(1, experts + 1, dtype=np.float64) ** -alpha
    shares = total * weights / weights.sum()
    # an expert sees each token at most once: cap at `tokens`, hand the excess to the others
    for _ in range(experts):
        over = shares > tokens
        if not over.any():
            break
        excess = (shares[over] - tokens).sum()
        shares[over] = tokens
        free = shares < tokens
        shares[free] += excess * shares[free] / shares[free].sum()
    return tuple(int(c) for c in _largest_remainder(shares, total, tokens))


def expert_counts(tokens: int, experts: int, top_k: int, distribution) -> np.ndarray:
    """Tokens routed to each expert (sum = tokens*top_k, each ≤ tokens), deterministic.

    ``balanced`` spreads evenly; ``power_law_<alpha>`` gives expert i (0-based) a share
    proportional to (i+1)^-alpha, capped at ``tokens``; a list/tuple (or its JSON) is taken as is.
    """
    if not isinstance(distribution, str):
        distribution = json.dumps([int(c) for c in distribution])
    return np.asarray(_counts_cached(int(tokens), int(experts), int(top_k), distribution), dtype=np.int64)


def _load_stats(cols, block_m: np.ndarray) -> dict[str, np.ndarray]:
    n = len(cols["tokens"])
    out = {name: np.empty(n) for name in ("max_tokens_per_expert", "active_experts", "padded_rows", "m_tiles")}
    keys = zip(cols["tokens"], cols["experts"], cols["top_k"], cols["distribution"], block_m)
    memo: dict = {}
    for i, key in enumerate(keys):
        if key not in memo:
            tokens, experts, top_k, dist, bm = key
            c = expert_counts(tokens, experts, top_k, dist)
            tiles = -(-c // int(bm))
            memo[key] = (c.max(), np.count_nonzero(c), (tiles * int(bm)).sum(), tiles.sum())
        for name, value in zip(out, memo[key]):
            out[name][i] = value
    return out


def moe_features(cols, gpu) -> dict[str, np.ndarray]:
    """Features of routed-expert MoE layers (router excluded), one value per row."""
    tokens, hidden, ffn = (np.asarray(cols[k], dtype=np.float64) for k in ("tokens", "hidden", "ffn"))
    experts, top_k = np.asarray(cols["experts"], np.float64), np.asarray(cols["top_k"], np.float64)
    gated = np.asarray(cols["gated"], dtype=bool)
    (block_m,) = config_values(cols.get("config", np.full(len(tokens), None, dtype=object)), ("block_m",), (DEFAULT_BLOCK_M,))
    stats = _load_stats(cols, block_m)
    elem = lookup(cols["dtype"], "bytes")
    up_width = np.where(gated, 2 * ffn, ffn)            # up (+gate) GEMM output columns
    flops = 2 * tokens * top_k * hidden * (up_width + ffn)
    padded_flops = 2 * stats["padded_rows"] * hidden * (up_width + ffn)
    weight_bytes = stats["active_experts"] * hidden * (up_width + ffn) * elem
    act_bytes = 2 * tokens * hidden * elem + tokens * top_k * (up_width + ffn) * elem
    nbytes = weight_bytes + act_bytes
    peak = peak_per_row(gpu, cols["dtype"])
    compute_floor = flops / peak * 1e6
    memory_floor = nbytes / gpu["memory_bandwidth_bps"] * 1e6
    # grouped GEMM up: one tile per (expert m-block, n-block); block_n 128 assumed
    tiles = stats["m_tiles"] * np.ceil(up_width / 128)
    waves, wave_eff = tile_waves(tiles, gpu["sm_count"])
    mean_load = tokens * top_k / experts
    return {
        "flops": flops, "bytes": nbytes, "arithmetic_intensity": flops / nbytes,
        "compute_floor_us": compute_floor, "memory_floor_us": memory_floor,
        "floor_us": np.maximum(compute_floor, memory_floor),
        "log_tokens": np.log2(tokens), "hidden": hidden, "ffn": ffn, "experts": experts, "top_k": top_k,
        "gated": gated.astype(np.float64), "elem_bytes": elem, "peak_flops": peak,
        "active_experts": stats["active_experts"], "max_tokens_per_expert": stats["max_tokens_per_expert"],
        "mean_tokens_per_expert": mean_load, "load_imbalance": stats["max_tokens_per_expert"] / mean_load,
        "padding_overhead": padded_flops / flops, "weight_bytes_share": weight_bytes / nbytes,
        "tiles": tiles, "waves": waves, "wave_efficiency": wave_eff,
        "weights_fit_l2": (weight_bytes <= gpu["l2_bytes"]).astype(np.float64),
    }
