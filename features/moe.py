"""MoE features: per-expert token counts from a routing distribution, load imbalance, padded tiles."""
from __future__ import annotations

import functools
import json

import numpy as np

from kernelcast.features.common import config_values, lookup, peak_per_row, tile_waves

#: tokens per expert are padded to this block in the fused kernel when no config says otherwise
DEFAULT_BLOCK_M = 64


def round_shares(shares: np.ndarray) -> np.ndarray:
    """Largest-remainder rounding of each row of non-negative shares to integers with the same sum."""
    floors = np.floor(shares)
    left = np.rint(shares.sum(axis=1) - floors.sum(axis=1))
    order = np.argsort(floors - shares, axis=1, kind="stable")          # largest remainder first
    bump = np.empty(shares.shape, dtype=bool)
    bump[np.arange(len(shares))[:, None], order] = np.arange(shares.shape[1])[None, :] < left[:, None]
    return (floors + bump).astype(np.int64)


@functools.lru_cache(maxsize=4096)
def unit_shares(experts: int, top_k: int, distribution: str) -> np.ndarray:
    """Each expert's expected share of the tokens (sum top_k, each ≤ 1: a token visits an expert once)."""
    if distribution == "balanced":
        weights = np.ones(experts)
    else:
        weights = np.arange(1, experts + 1, dtype=np.float64) ** -float(distribution.removeprefix("power_law_"))
    shares = top_k * weights / weights.sum()
    for _ in range(experts):                       # cap at 1 and hand the excess to the others
        over = shares > 1
        if not over.any():
            break
        excess = (shares[over] - 1).sum()
        shares[over] = 1
        free = shares < 1
        shares[free] += excess * shares[free] / shares[free].sum()
    return shares


def expert_counts(tokens: int, experts: int, top_k: int, distribution) -> np.ndarray:
    """Tokens routed to each expert (sum = tokens*top_k, each ≤ tokens), deterministic.

    ``balanced`` spreads evenly; ``power_law_<alpha>`` gives expert i (0-based) a share
    proportional to (i+1)^-alpha, capped at ``tokens``; a list/tuple (or its JSON) is taken as is.
    """
    if not isinstance(distribution, str):
        return np.asarray([int(c) for c in distribution], dtype=np.int64)
    if distribution.startswith("["):
        return np.asarray(json.loads(distribution), dtype=np.int64)
    return round_shares(int(tokens) * unit_shares(int(experts), int(top_k), distribution)[None, :])[0]


def _group_stats(tokens: np.ndarray, experts: int, top_k: int, dist: str, bm: float) -> np.ndarray:
    """max load, active experts, padded rows and m-tiles for rows sharing everything but tokens."""
    if len(tokens) > 1:                                               # batches repeat token counts: round once each
        uniq, inverse = np.unique(tokens, return_inverse=True)
    else:
        uniq, inverse = tokens, np.zeros(1, dtype=np.intp)
    if dist.startswith("["):
        counts = np.asarray(json.loads(dist), dtype=np.int64)[None, :].repeat(len(uniq), 0)
    else:
        counts = round_shares(uniq[:, None] * unit_shares(int(experts), int(top_k), dist)[None, :])
    tiles = (-(-counts // int(bm))).sum(axis=1)
    return np.asarray([counts.max(axis=1), np.count_nonzero(counts, axis=1), tiles * bm, tiles])[:, inverse]


@functools.lru_cache(maxsize=65536)
def _one_stats(tokens: int, experts: int, top_k: int, dist: str, bm: float) -> tuple[float, ...]:
    return tuple(_group_stats(np.asarray([tokens]), experts, top_k, dist, bm)[:, 0])


def _load_stats(cols, block_m: np.ndarray) -> dict[str, np.ndarray]:
    """Per-row load statistics, computed per (experts, top_k, distribution, block_m) group in bulk."""
    tokens = np.asarray(cols["tokens"], dtype=np.int64)
    n = len(tokens)
    out = {name: np.empty(n) for name in ("max_tokens_per_expert", "active_experts", "padded_rows", "m_tiles")}
    groups: dict[tuple, list[int]] = {}
    keys = zip(np.asarray(cols["experts"]).tolist(), np.asarray(cols["top_k"]).tolist(),
               np.asarray(cols["distribution"], dtype=object).tolist(), np.asarray(block_m).tolist())
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    for (experts, top_k, dist, bm), idx in groups.items():
        stats = _group_stats(tokens[idx], experts, top_k, dist, bm) if len(idx) > 1 else \
            np.asarray(_one_stats(int(tokens[idx[0]]), experts, top_k, dist, bm))[:, None]
        for name, values in zip(out, stats):
            out[name][idx] = values
    return out


def moe_features(cols, gpu) -> dict[str, np.ndarray]:
    """Features of routed-expert MoE layers (router excluded), one value per row."""
    tokens, hidden, ffn = (np.asarray(cols[k], dtype=np.float64) for k in ("tokens", "hidden", "ffn"))
    experts, top_k = np.asarray(cols["experts"], np.float64), np.asarray(cols["top_k"], np.float64)
    gated = np.asarray(cols["gated"], dtype=bool)
    block_m, block_n, block_k, warps, stages = config_values(
        cols.get("config", np.full(len(tokens), None, dtype=object)),
        ("block_m", "block_n", "block_k", "num_warps", "num_stages"),
        (DEFAULT_BLOCK_M, np.nan, np.nan, np.nan, np.nan))           # NaN: no config (torch loop, outside data)
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
        "block_m": block_m, "block_n": block_n, "block_k": block_k, "num_warps": warps, "num_stages": stages,
        "weights_fit_l2": (weight_bytes <= gpu["l2_bytes"]).astype(np.float64),
    }
