"""Attention (softmax(Q·Kᵀ)·V forward): fields, causal-aware FLOPs, Q/K/V/O bytes, q-tile work units,
analytical efficiency."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kernelcast.features.common import (
    BASE_REGISTERS,
    MAX_REGISTERS,
    clock_features,
    config_values,
    latency_scale,
    lookup,
    peak_per_row,
    per_backend,
    resident_ctas,
    roofline_assumptions,
    roofline_floors,
    roofline_latency,
    shared_memory_rule,
    spill_us,
    tile_waves,
    triton_configs,
    triton_ring,
)
from kernelcast.features.fields import MAX_ELEMENTS, OUTSIDE_BACKENDS, BoolField, IntField, Rule, TritonConfig
from kernelcast.features.ops import OpSpec, register

#: query rows per work unit when no config says otherwise (FlashAttention-2 forward on sm80/sm90)
DEFAULT_BLOCK_M = 128


def attended_pairs(seq_q: np.ndarray, seq_kv: np.ndarray, causal: np.ndarray) -> np.ndarray:
    """(query, key) pairs computed; causal masks are bottom-right aligned (query i sees keys ≤ kv−q+i)."""
    full = seq_q * seq_kv
    tri = seq_q * (seq_kv - seq_q) + seq_q * (seq_q + 1) / 2
    return np.where(causal, tri, full)


def attention_features(cols, gpu) -> dict[str, np.ndarray]:
    """Features of softmax(Q·Kᵀ)·V forward, one value per row."""
    b, hq, hkv, sq, skv, d = (
        np.asarray(cols[c], dtype=np.float64) for c in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim")
    )
    causal = np.asarray(cols["causal"], dtype=bool)
    elem = lookup(cols["dtype"], "bytes")
    pairs = attended_pairs(sq, skv, causal)
    flops = attention_flops(cols)
    q_bytes = b * hq * sq * d * elem
    kv_bytes = 2 * b * hkv * skv * d * elem
    nbytes = 2 * q_bytes + kv_bytes  # Q read, O written, K and V read once
    peak = peak_per_row(gpu, cols["dtype"])
    cfg = triton_configs(cols)
    bm, bn, warps, stages = config_values(
        cfg, ("block_m", "block_n", "num_warps", "num_stages"), (DEFAULT_BLOCK_M, np.nan, np.nan, np.nan)
    )  # NaN: the library chose
    units = np.ceil(sq / bm) * hq * b
    waves, wave_eff = tile_waves(units, gpu["sm_count"])
    return {
        **roofline_floors(flops, nbytes, peak, gpu),
        "log_batch": np.log2(b),
        "heads_q": hq,
        "heads_kv": hkv,
        "gqa_ratio": hq / hkv,
        "log_seq_q": np.log2(sq),
        "log_seq_kv": np.log2(skv),
        "head_dim": d,
        "causal": causal.astype(np.float64),
        "elem_bytes": elem,
        "peak_flops": peak,
        "causal_fraction": pairs / (sq * skv),
        "kv_bytes_share": kv_bytes / nbytes,
        "block_m": bm,
        "block_n": bn,
        "num_warps": warps,
        "num_stages": stages,
        "work_units": units,
        "waves": waves,
        "wave_efficiency": wave_eff,
        "kv_fits_l2": (kv_bytes <= gpu["l2_bytes"]).astype(np.float64),
    }


def attention_flops(cols) -> np.ndarray:
    """4·batch·heads_q·head_dim per attended (query, key) pair: Q·Kᵀ and P·V."""
    b, hq, sq, skv, d = (
        np.asarray(cols[c], dtype=np.float64) for c in ("batch", "heads_q", "seq_q", "seq_kv", "head_dim")
    )
    return 4 * b * hq * d * attended_pairs(sq, skv, np.asarray(cols["causal"], dtype=bool))


def learned_features(cols, gpu, base) -> dict[str, np.ndarray]:
    bm, bn, d, warps = base["block_m"], base["block_n"], base["head_dim"], base["num_warps"]
    # K and V tiles per stage plus the Q tile in shared memory; the O accumulator and the score tile in registers
    smem = base["num_stages"] * 2 * bn * d * base["elem_bytes"] + bm * d * base["elem_bytes"]
    loop = kv_loop(cols, bm, bn)
    registers = triton_attention_registers(bm, bn, d, warps)
    spilled = np.maximum(registers - MAX_REGISTERS, 0.0)
    ctas = base["work_units"]
    steps = ctas / loop.blocks * loop.steps  # K/V steps over every CTA
    # the tiles as run: every step computes a whole block_m x block_n score tile (masked rows and columns included)
    tile_flops = 4.0 * bm * bn * d
    return {
        **clock_features(base),
        **resident_ctas(smem, (bm * d + bm * bn) / (32 * warps), warps, ctas, base, registers=registers),
        "warp_tile": bm * bn / warps,
        "kv_steps_longest": loop.longest,
        "kv_steps_per_cta": loop.steps / loop.blocks,
        "padded_flops_ratio": steps * tile_flops / base["flops"],
        "padded_compute_us": steps * tile_flops / base["peak_flops"] * 1e6,
        # the longest CTA's serial K/V loop at one SM's peak: the floor when there are fewer CTAs than SMs (decode)
        "longest_cta_us": loop.longest * tile_flops / (base["peak_flops"] / base["gpu_sm_count"]) * 1e6,
        "registers_per_thread": registers,
        "spilled_registers": spilled,
        "spill_us": spill_us(spilled, warps, steps, base),
    }


class KvLoop(NamedTuple):
    blocks: np.ndarray  # block_m query blocks of one (batch, head)
    steps: np.ndarray  # K/V steps summed over those blocks
    longest: np.ndarray  # the steps of the longest query block's loop


def kv_loop(cols, bm, bn) -> KvLoop:
    """The K/V loop of kernelcast's Triton attention (``collect/kernels/triton_attention.py``): each block_m query
    block steps over the keys in block_n tiles up to its causal limit, min(seq_kv, (i + 1)·block_m + seq_kv −
    seq_q); without a mask every block steps over all of seq_kv. Steps round up per block (a half-empty last tile
    costs a whole one), taken here as half a step per block on average."""
    sq = np.asarray(cols["seq_q"], dtype=np.float64)
    skv = np.asarray(cols["seq_kv"], dtype=np.float64)
    causal = np.asarray(cols["causal"], dtype=bool)
    blocks = np.ceil(sq / bm)
    full = np.ceil(skv / bn)
    # causal: blocks 0..M-2 stop at (i + 1)·bm + diag, the last at seq_kv
    reach = bm * (blocks - 1) * blocks / 2 + (blocks - 1) * (skv - sq) + skv
    causal_steps = reach / bn + 0.5 * (blocks - 1) + (full - skv / bn)
    return KvLoop(blocks, np.where(causal, np.minimum(causal_steps, blocks * full), blocks * full), full)


def triton_attention_registers(bm, bn, d, warps) -> np.ndarray:
    """32-bit registers a thread of kernelcast's Triton attention asks for: the fp32 O accumulator and score tile,
    the 16-bit Q and P tiles (two to a register), spread over the CTA's threads, plus the addressing and softmax
    state (``BASE_REGISTERS``). More than ``MAX_REGISTERS`` spills to local memory."""
    threads = 32 * warps
    return (bm * d + bm * bn + (bm * d + bm * bn) / 2) / threads + BASE_REGISTERS


def attention_scale(f) -> np.ndarray:
    """The learned target's scale: the roofline floor, or where a Triton config says more, the compute of its tiles as
    run (padded to whole tiles) or its longest CTA's loop on one SM, plus one kernel's fixed time."""
    return latency_scale(
        np.fmax(f["floor_us"], np.fmax(f["padded_compute_us"], f["longest_cta_us"])), f["gpu_boost_clock_hz"]
    )


#: fraction of dense peak the forward kernel sustains: FlashAttention-2-class kernels reach ~50% of Hopper's
COMPUTE_EFFICIENCY = {"flash": 0.50, "cudnn": 0.55, "triton": 0.40, "trtllm": 0.55, "vllm": 0.50, "sglang": 0.50}


def analytical(cols, f) -> tuple[np.ndarray, np.ndarray]:
    return roofline_latency(f, per_backend(COMPUTE_EFFICIENCY, cols["backend"]), 1.0)


def triton_attention_shared(cols, cfg, elem_bytes) -> np.ndarray:
    """Shared memory per CTA (bytes) of kernelcast's Triton attention as Triton 3.6 allocates it on the H200: the
    block_m×head_dim Q tile once, the K and V tiles in ``triton_ring`` buffers each, and the P tile of the second
    dot when it runs on mma.sync (wgmma reads it from registers). The Required bytes of 303 of 304 configs the H200
    refused, and the fit of every measured row (benchmarks/RESULTS.md §17)."""
    d = np.atleast_1d(np.asarray(cols["head_dim"], dtype=np.float64))
    bm, bn = cfg["block_m"], cfg["block_n"]
    ring, wgmma = triton_ring(cols["gpu"], bm, cfg["num_warps"], cfg["num_stages"])
    return (bm * d + 2 * ring * bn * d + np.where(wgmma, 0.0, bm * bn)) * elem_bytes


SPEC = register(
    OpSpec(
        name="attention",
        doc="softmax(Q·Kᵀ/√d)·V forward, GQA/MQA by heads_kv, causal masks bottom-right aligned",
        fields={
            "batch": IntField(1, 1 << 16),
            "heads_q": IntField(1, 1024),
            "heads_kv": IntField(1, 1024),
            "seq_q": IntField(1, 1 << 22),
            "seq_kv": IntField(1, 1 << 22),
            "head_dim": IntField(8, 1024),
            "causal": BoolField(),
        },
        dtypes=("bf16", "fp16", "fp8_e4m3"),
        backends=("flash", "cudnn", "triton") + OUTSIDE_BACKENDS,
        rules=(
            Rule(
                "heads_q",
                lambda c: c["heads_q"] % c["heads_kv"] == 0,
                lambda c: f"a multiple of heads_kv={c['heads_kv']}",
            ),
            Rule("head_dim", lambda c: c["head_dim"] % 8 == 0, lambda c: "a multiple of 8 in [8, 1024]"),
            Rule(
                "seq_q",
                lambda c: np.logical_or(np.logical_not(c["causal"]), c["seq_q"] <= c["seq_kv"]),
                lambda c: f"at most seq_kv={c['seq_kv']} when causal (bottom-right mask)",
            ),
            Rule(
                "batch",
                lambda c: (
                    c["batch"] * c["head_dim"] * ((c["heads_q"] * c["seq_q"]) + (c["heads_kv"] * c["seq_kv"]))
                    <= MAX_ELEMENTS
                ),
                lambda c: "small enough that Q, K and V hold at most 2**38 elements",
            ),
            shared_memory_rule(
                triton_attention_shared,
                ("block_m", "block_n", "num_warps", "num_stages"),
                "its Q tile, its K and V tiles (block_n×head_dim each) in their pipeline buffers (num_stages − 1, "
                "+ 1 on wgmma) and, without wgmma, the block_m×block_n P tile (× element bytes)",
            ),
        ),
        triton_config=TritonConfig(
            {
                "block_m": (16, 256, True),
                "block_n": (16, 256, True),
                "num_warps": (1, 16, True),
                "num_stages": (1, 8, False),
            }
        ).field(),
        features=attention_features,
        learned_features=learned_features,
        scale=attention_scale,
        flops=attention_flops,
        analytical=analytical,
        analytical_assumptions=roofline_assumptions(COMPUTE_EFFICIENCY, "1 kernel per call"),
        example={
            "batch": 1,
            "heads_q": 8,
            "heads_kv": 8,
            "seq_q": 128,
            "seq_kv": 128,
            "head_dim": 128,
            "causal": True,
            "dtype": "bf16",
            "backend": "flash",
        },
        range_columns=("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim"),
        # shallow trees over many rounds: fresh Triton configs 11.3 -> 10.2% median (depth 8, 300 rounds at 0.1
        # before) in a config-held-out split of the training rows (benchmarks/RESULTS.md §19)
        train_params={"max_depth": 6, "n_estimators": 800, "learning_rate": 0.05},
    )
)
AttentionDesc = SPEC.desc_type
