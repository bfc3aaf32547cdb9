"""Attention (softmax(Q·Kᵀ)·V forward): fields, causal-aware FLOPs, Q/K/V/O bytes, q-tile work units,
analytical efficiency."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from kernelcast.features import num
from kernelcast.features.common import (
    BASE_REGISTERS,
    MAX_REGISTERS,
    clock_features,
    config_values,
    key_codes,
    latency_scale,
    lookup,
    peak_per_row,
    per_backend,
    pow2_dividing,
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
from kernelcast.features.compiled import compiled_resource, compiled_resources
from kernelcast.features.fields import MAX_ELEMENTS, OUTSIDE_BACKENDS, BoolField, IntField, Rule, TritonConfig
from kernelcast.features.ops import OpSpec, register

#: query rows per work unit when no config says otherwise (FlashAttention-2 forward on sm80/sm90)
DEFAULT_BLOCK_M = 128


def attended_pairs(seq_q: np.ndarray, seq_kv: np.ndarray, causal: np.ndarray) -> np.ndarray:
    """(query, key) pairs computed; causal masks are bottom-right aligned (query i sees keys ≤ kv−q+i)."""
    full = seq_q * seq_kv
    tri = seq_q * (seq_kv - seq_q) + seq_q * (seq_q + 1) / 2
    return num.of(full).where(causal, tri, full)


def _backend(cols):
    """The backend column (one description: its name), to compare with a name."""
    backend = cols["backend"]
    return backend if isinstance(backend, str) else np.atleast_1d(np.asarray(backend, dtype=object))


def _causal(cols):
    """The causal column as booleans (one description: its bool)."""
    causal = cols["causal"]
    return causal if isinstance(causal, bool) else np.asarray(causal, dtype=bool)


class LibraryLaunch(NamedTuple):
    """What SDPA's flash, cuDNN or memory-efficient backend launches for a call (NaN tiles on other backends' rows)."""

    block_m: np.ndarray  # query rows per CTA
    block_n: np.ndarray  # keys per K/V step
    warps: np.ndarray
    splits: np.ndarray  # K/V splits (split-KV kernel + a combine kernel when > 1; 1 elsewhere)
    seq_q: np.ndarray  # query rows per (batch, head) as launched: decode GQA packs the group's heads into rows
    heads: np.ndarray  # heads as launched
    causal: np.ndarray  # a one-query causal call runs unmasked


#: FlashAttention-2's forward tiles on sm80/sm90/sm100 by rounded head_dim: (block_m, block_n, warps)
#: (``run_mha_fwd_hdim*`` in PyTorch's aten/src/ATen/native/transformers/cuda/flash_attn/flash_fwd_launch_template.h)
FLASH_TILES = {
    32: (128, 128, 4),
    64: (128, 128, 4),
    96: (128, 64, 4),
    128: (128, 64, 4),
    160: (128, 32, 4),
    192: (128, 64, 8),
    224: (128, 64, 8),
    256: (128, 64, 8),
}
#: on sm86/sm89 (100 KB of shared memory per SM): square 64×64 tiles for causal calls at head_dim 96-160, and
#: 128×32 / 128×64 (8 warps) for unmasked ones at 128 / 160
FLASH_TILES_SM8X = {
    (96, True): (64, 64, 4),
    (128, True): (64, 64, 4),
    (128, False): (128, 32, 4),
    (160, True): (64, 64, 4),
    (160, False): (128, 64, 8),
}
#: shared memory per SM below which a GPU gets the sm86/sm89 tiles (sm80: 164 KB, sm90/sm100: 228 KB)
SM8X_SHARED_PER_SM = 160 * 1024
#: the split-KV kernel: 64 query rows per CTA, 4 warps, keys per step by head_dim (``set_params_splitkv``)
SPLIT_BLOCK_M = 64
#: PyTorch's split heuristic counts 2 CTAs of 128 threads per SM and stops at 128 splits
SPLIT_CTAS_PER_SM, MAX_SPLITS = 2, 128


def _round_up(d: np.ndarray, sizes) -> np.ndarray:
    """``d`` rounded up to the smallest of ``sizes`` (ascending) that holds it; past the largest, the largest."""
    if num.of(d) is num.SCALARS:
        return next((float(s) for s in sizes if d <= s), float(sizes[-1]))
    sizes = np.asarray(sizes, dtype=np.float64)
    return sizes[np.minimum(np.searchsorted(sizes, d), len(sizes) - 1)]


def flash_tiles(d: np.ndarray, causal: np.ndarray, shared_per_sm: np.ndarray) -> tuple[np.ndarray, ...]:
    """(block_m, block_n, warps) of FlashAttention-2's standard forward kernel per row, from head_dim rounded up to
    its kernels' sizes, the mask and the GPU's shared memory per SM (which tells sm86/sm89 apart): ``flash_tile`` of
    one description, looked up once per distinct (head_dim size, mask, shared memory) over columns."""
    rounded = _round_up(d, sorted(FLASH_TILES))
    if num.of(rounded) is num.SCALARS:
        return flash_tile(rounded, causal, shared_per_sm)
    codes, first = key_codes(rounded, causal, shared_per_sm)
    out = np.array([flash_tile(rounded[i], bool(causal[i]), shared_per_sm[i]) for i in first], dtype=np.float64)
    out = out[codes]
    return out[:, 0], out[:, 1], out[:, 2]


@functools.cache
def flash_tile(rounded: float, causal: bool, shared_per_sm: float) -> tuple[float, float, float]:
    """``flash_tiles`` of one head_dim size (a ``FLASH_TILES`` key), mask and GPU shared memory per SM."""
    tile = FLASH_TILES[int(rounded)]
    sm8x = shared_per_sm < SM8X_SHARED_PER_SM
    if sm8x:
        tile = FLASH_TILES_SM8X.get((rounded, causal), tile)
    # 2·d·(128 + 2·64) bytes do not fit an sm86/sm89 block; on H100/H200/B200 64×64 gets two CTAs per SM
    if (rounded >= 224 and sm8x) or (rounded == 256 and shared_per_sm >= 4 * 256 * (64 + 2 * 64)):
        tile = (64, 64, 4)
    return tuple(float(v) for v in tile)


def flash_splits(units: np.ndarray, slots: np.ndarray, n_blocks: np.ndarray) -> np.ndarray:
    """K/V splits PyTorch's FlashAttention-2 picks (``num_splits_heuristic``): none when the CTAs almost fill
    ``slots`` (0.8); else the fewest splits whose wave efficiency is within 85% of the best over the eligible
    counts (a count is eligible when it changes the blocks per split), at most min(128, slots, n_blocks)."""
    if num.of(units) is num.SCALARS:  # one description: none, or its row through the columns' search
        if not units < 0.8 * slots:
            return 1.0
        return float(flash_splits(np.array([units]), np.array([slots]), np.array([n_blocks]))[0])
    out = np.ones(len(units))
    need = np.flatnonzero(units < 0.8 * slots)
    s = np.arange(1.0, MAX_SPLITS + 1)
    for chunk in np.array_split(need, max(1, -(-len(need) // 4096))) if len(need) else ():
        u, sl, nb = units[chunk, None], slots[chunk, None], n_blocks[chunk, None]
        eligible = ((s == 1) | (np.ceil(nb / s) != np.ceil(nb / np.maximum(s - 1, 1)))) & (
            s <= np.minimum(np.minimum(MAX_SPLITS, sl), nb)
        )
        waves = u * s / sl
        eff = np.where(eligible, waves / np.ceil(waves), 0.0)
        good = eligible & (eff >= 0.85 * eff.max(axis=1, keepdims=True))
        out[chunk] = np.argmax(good, axis=1) + 1
    return out


def flash_launch(cols, gpu, b, hq, hkv, sq, skv, d, causal) -> LibraryLaunch:
    """The kernel PyTorch's FlashAttention-2 forward (``mha_fwd``) launches, per row: a one-query causal call runs
    unmasked; a one-query GQA call (heads_q > heads_kv) runs as heads_q / heads_kv query rows of heads_kv heads;
    then the split heuristic over CTAs of 64 rows picks the split-KV kernel (its own tiles) or the standard one."""
    xp = num.of(b)
    flash = _backend(cols) == "flash"
    launched = xp.where(flash, causal & (sq > 1), causal)
    swap = (sq == 1) & (hq > hkv)
    rows = xp.where(swap, hq / hkv, sq)
    heads = xp.where(swap, hkv, hq)
    split_bn = xp.where(d <= 64, 256.0, xp.where(d <= 128, 128.0, 64.0))
    n_blocks = xp.ceil(skv / split_bn)
    slots = SPLIT_CTAS_PER_SM * gpu["sm_count"] * xp.full(b, 1.0)
    units = b * heads * xp.ceil(rows / SPLIT_BLOCK_M)
    if xp is num.SCALARS:
        splits = flash_splits(units, slots, n_blocks) if flash else 1.0
    else:
        splits = np.ones(len(b))
        if flash.any():
            splits[flash] = flash_splits(units[flash], slots[flash], n_blocks[flash])
    split = splits > 1
    std = flash_tiles(d, launched, gpu["shared_memory_per_sm_bytes"] * xp.full(b, 1.0))
    tile = (float(SPLIT_BLOCK_M), split_bn, 4.0)
    bm, bn, warps = (xp.where(flash, xp.where(split, s, t), num.NAN) for s, t in zip(tile, std))
    return LibraryLaunch(bm, bn, warps, splits, xp.where(flash, rows, sq), xp.where(flash, heads, hq), launched)


#: cuDNN's SDPA forward on the H200 (the kernel names of our rows, cuDNN 9 with torch 2.11): prefill runs the sm90
#: wgmma kernel with 64×128 tiles and 4 warps; one-query decode runs sm80 kernels over the query group packed into
#: rows — 64×32 tiles to 32 keys, 64×64 to 128 (to 248 at batch ≤ 9), else 16×128 — and, when those CTAs fill
#: at most half the SMs past 512 keys, splits the keys over the SMs with a reduction kernel after ("lean")
CUDNN_PREFILL_TILE, CUDNN_DECODE_ROWS, CUDNN_LEAN_KEYS = (64, 128, 4), 16, 512


def cudnn_launch(cols, gpu, b, hq, hkv, sq, skv, causal) -> LibraryLaunch:
    """The kernel cuDNN's SDPA forward launches per row (``CUDNN_PREFILL_TILE``, ``CUDNN_DECODE_ROWS``)."""
    xp = num.of(b)
    on = _backend(cols) == "cudnn"
    decode = sq == 1
    group = hq / hkv
    bn = xp.where(skv <= 32, 32.0, xp.where((skv <= 128) | ((skv < 249) & (b <= 9)), 64.0, 128.0))
    bm = xp.where(bn == 128, float(CUDNN_DECODE_ROWS), 64.0)
    units = b * hkv * xp.ceil(group / bm)
    lean = decode & (bn == 128) & (units <= gpu["sm_count"] / 2) & (skv > CUDNN_LEAN_KEYS)
    splits = xp.where(lean, xp.minimum(xp.ceil(gpu["sm_count"] / units), xp.ceil(skv / 128)), 1.0)
    tile = (xp.where(decode, t, float(p)) for t, p in zip((bm, bn, 4.0), CUDNN_PREFILL_TILE))
    packed = on & decode
    return LibraryLaunch(
        *(xp.where(on, t, num.NAN) for t in tile),
        xp.where(on, splits, 1.0),
        xp.where(packed, group, sq),
        xp.where(packed, hkv, hq),
        xp.where(packed, False, causal),
    )


#: PyTorch's memory-efficient SDPA kernel (CUTLASS, from xformers;
#: ``fmha_cutlassF_<dtype>_aligned_<bm>x<bn>_<acc>_sm80``, the sm80 build on every later GPU): the smallest of its three
#: tiles whose largest head_dim holds the call's — (head_dim up to, block_m, block_n); past 128 the 32×128 kernel keeps
#: the output in an fp32 global-memory buffer it reads and writes back at every key block (``gmem``; the others hold it
#: in registers)
EFFICIENT_TILES = ((64, 64, 64), (128, 64, 128), (1 << 16, 32, 128))
EFFICIENT_WARPS = 4


def efficient_launch(cols, b, hq, sq, d, causal, pairs) -> tuple[LibraryLaunch, np.ndarray]:
    """The memory-efficient kernel's launch per row (NaN tiles on other backends' rows; no K/V split, no grouped-query
    packing: it takes one query head per CTA row of the grid), and the bytes its fp32 output buffer moves past head_dim
    128: each valid query row's d floats read and written once per key block it visits (``pairs``: the attended
    (query, key) pairs, ``attended_pairs``)."""
    xp = num.of(b)
    on = _backend(cols) == "efficient"
    _, bm, bn = (float(v) for v in EFFICIENT_TILES[-1])
    for limit, m, n in reversed(EFFICIENT_TILES[:-1]):  # the smallest tile whose head_dim holds the call's
        bm, bn = xp.where(d <= limit, float(m), bm), xp.where(d <= limit, float(n), bn)
    row_blocks = pairs / bn + sq  # (query row, key block) visits, ceil'd per row at most
    gmem = on & (d > EFFICIENT_TILES[1][0])
    buffer_bytes = xp.where(gmem, 2.0 * 4.0 * b * hq * row_blocks * d, 0.0)
    launch = LibraryLaunch(
        xp.where(on, bm, num.NAN), xp.where(on, bn, num.NAN), xp.where(on, float(EFFICIENT_WARPS), num.NAN),
        xp.full(b, 1.0), sq, hq, causal,
    )  # fmt: skip
    return launch, buffer_bytes


#: the head_dim a library kernel is built for, up to which a call's own is padded (the last size in its kernel's
#: name): cuDNN's sm90 kernels come in multiples of 64 and its one-query sm80 kernels at 64, 128 and 256 (our H100
#: rows: head_dim 72 runs ``…_wgmma_f16_knob_7_64x128x128``, 160 ``…_64x128x192``, one-query 160 and 192
#: ``…_16x128x256``); FlashAttention-2 rounds up to its ``FLASH_TILES`` sizes; the memory-efficient kernel to 64 and
#: 128, and past 128 to a multiple of 128 (its 32×128 kernel steps over the output's head_dim in blocks of its 128 keys:
#: CUTLASS example 41, ``kernel_forward.h``; with head_dim 192 and 320 each held out of the training rows in turn, this
#: rule missed them by 5.6 / 5.4% median against 6.5 / 10.1% taking head_dim as is, benchmarks/RESULTS.md §42);
#: kernelcast's Triton kernel takes head_dim as it is
CUDNN_DECODE_HEAD_DIMS = (64.0, 128.0, 256.0)


def kernel_head_dim(backend: np.ndarray, d: np.ndarray, sq: np.ndarray) -> np.ndarray:
    """The head_dim each row's kernel computes at (``CUDNN_DECODE_HEAD_DIMS``, ``FLASH_TILES``)."""
    xp = num.of(d)
    flash = _round_up(d, sorted(FLASH_TILES))
    cudnn = xp.where(sq == 1, _round_up(d, CUDNN_DECODE_HEAD_DIMS), xp.ceil(d / 64.0) * 64.0)
    efficient = xp.where(d <= 64, 64.0, xp.ceil(d / 128.0) * 128.0)
    out = xp.where(backend == "flash", xp.maximum(flash, d), d)
    out = xp.where(backend == "cudnn", xp.maximum(cudnn, d), out)
    return xp.where(backend == "efficient", efficient, out)


def mask_row_align(backend: np.ndarray, mask: np.ndarray, skv: np.ndarray) -> np.ndarray:
    """log2 of the byte alignment (up to 16 B) of the rows of the mask a kernel reads: cuDNN reads SDPA's 2-byte
    additive mask as given, seq_kv elements a row; PyTorch pads it to a multiple of 8 elements for the memory-efficient
    kernel (``preprocess_mask``); 16 B where no mask is read. On our H100 and H200 cuDNN rows a K/V step with an odd
    seq_kv took ~1.6× as long as with an even one (benchmarks/RESULTS.md §42)."""
    xp = num.of(skv)
    unpadded = (backend == "cudnn") & (mask > 0)
    return xp.where(unpadded, xp.minimum(pow2_dividing(skv) + 1.0, 4.0), 4.0)


#: the backends whose kernels read an explicit mask
MASK_BACKENDS = ("cudnn", "efficient")


def mask_read(c):
    """The ``mask`` rule: no mask, or one a kernel reads (causal false, a ``MASK_BACKENDS`` backend); one
    description's Python values (``validate_one``) in plain comparisons, no numpy call."""
    if isinstance(c["backend"], str):
        return not c["mask"] or (not c["causal"] and c["backend"] in MASK_BACKENDS)
    return np.logical_not(c["mask"]) | (~np.asarray(c["causal"], dtype=bool) & np.isin(c["backend"], MASK_BACKENDS))


def attention_features(cols, gpu) -> dict[str, np.ndarray]:
    """Features of softmax(Q·Kᵀ)·V forward, one value per row."""
    xp = num.of(cols["batch"])
    b, hq, hkv, sq, skv, d = (
        xp.floats(cols[c]) for c in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim")
    )
    causal = _causal(cols)
    mask = xp.floats(cols["mask"]) if "mask" in cols else xp.full(b, 0.0)
    mask_bytes = mask * b * hq * sq * skv * 2.0  # an explicit mask: read per head (broadcast over them)
    backend = _backend(cols)
    elem = lookup(cols["dtype"], "bytes")
    pairs = attended_pairs(sq, skv, causal)
    flops = attention_flops(cols)
    q_bytes = b * hq * sq * d * elem
    kv_bytes = 2 * b * hkv * skv * d * elem
    efficient, buffer_bytes = efficient_launch(cols, b, hq, sq, d, causal, pairs)
    nbytes = 2 * q_bytes + kv_bytes + buffer_bytes  # Q read, O written, K and V read once (+ an fp32 output buffer)
    peak = peak_per_row(gpu, cols["dtype"])
    cfg = triton_configs(cols)
    bm, bn, warps, stages = config_values(
        cfg, ("block_m", "block_n", "num_warps", "num_stages"), (DEFAULT_BLOCK_M, np.nan, np.nan, np.nan)
    )  # NaN: the library chose
    flash = flash_launch(cols, gpu, b, hq, hkv, sq, skv, d, causal)
    cudnn = cudnn_launch(cols, gpu, b, hq, hkv, sq, skv, causal)
    fa = LibraryLaunch(*(xp.where(xp.isnan(cudnn.block_m), f, c) for f, c in zip(flash, cudnn)))
    fa = LibraryLaunch(*(xp.where(xp.isnan(efficient.block_m), f, e) for f, e in zip(fa, efficient)))
    configured = xp.isnan(fa.block_m)  # else the library's own tiles; one K/V buffer each (no pipeline stages)
    bm, bn = xp.where(configured, bm, fa.block_m), xp.where(configured, bn, fa.block_n)
    warps, stages = xp.where(configured, warps, fa.warps), xp.where(configured, stages, 1.0)
    units = xp.ceil(fa.seq_q / bm) * fa.heads * b * fa.splits
    waves, wave_eff = tile_waves(units, gpu["sm_count"])
    return {
        **roofline_floors(flops, nbytes, peak, gpu),
        "log_batch": xp.log2(b),
        "heads_q": hq,
        "heads_kv": hkv,
        "gqa_ratio": hq / hkv,
        "log_seq_q": xp.log2(sq),
        "log_seq_kv": xp.log2(skv),
        "head_dim": d,
        "kernel_head_dim": kernel_head_dim(backend, d, sq),
        "mask_row_align": mask_row_align(backend, mask, skv),
        "causal": xp.as_float(causal),
        "mask_bytes_share": mask_bytes / (nbytes + mask_bytes),
        "elem_bytes": elem,
        "peak_flops": peak,
        "causal_fraction": pairs / (sq * skv),
        "kv_bytes_share": kv_bytes / nbytes,
        "block_m": bm,
        "block_n": bn,
        "num_warps": warps,
        "num_stages": stages,
        "kv_splits": fa.splits,
        "launch_seq_q": fa.seq_q,
        "launch_causal": xp.as_float(fa.causal),
        # the split-KV partial outputs (fp32 O and log-sum-exp per split) the combine kernel reads back
        "split_accum_bytes": xp.where(fa.splits > 1, fa.splits * b * fa.heads * fa.seq_q * (d + 1) * 4.0, 0.0),
        "work_units": units,
        "waves": waves,
        "wave_efficiency": wave_eff,
        "kv_fits_l2": xp.as_float(kv_bytes <= gpu["l2_bytes"]),
    }


def attention_flops(cols) -> np.ndarray:
    """4·batch·heads_q·head_dim per attended (query, key) pair: Q·Kᵀ and P·V."""
    xp = num.of(cols["batch"])
    b, hq, sq, skv, d = (xp.floats(cols[c]) for c in ("batch", "heads_q", "seq_q", "seq_kv", "head_dim"))
    return 4 * b * hq * d * attended_pairs(sq, skv, _causal(cols))


def learned_features(cols, gpu, base) -> dict[str, np.ndarray]:
    bm, bn, warps = base["block_m"], base["block_n"], base["num_warps"]
    # shared memory per CTA: Triton's as it allocates it (the config rule's formula); a library kernel's Q tile and
    # one K and one V tile; the tiles and steps at the head_dim the kernel computes at
    xp = num.of(bm)
    triton = _backend(cols) == "triton"
    d = xp.where(triton, base["head_dim"], base["kernel_head_dim"])
    library = (bm * d + 2 * bn * d) * base["elem_bytes"]
    cfg = {"block_m": bm, "block_n": bn, "num_warps": warps, "num_stages": base["num_stages"]}
    smem = xp.where(triton, triton_attention_shared(cols, cfg, base["elem_bytes"]), library)
    split = base["kv_splits"] > 1  # each split's CTAs step over its share of the K/V blocks
    skv = xp.floats(cols["seq_kv"])
    loop = kv_loop(
        {
            "seq_q": base["launch_seq_q"],
            "seq_kv": xp.where(split, xp.ceil(xp.ceil(skv / bn) / base["kv_splits"]) * bn, skv),
            "causal": base["launch_causal"] > 0,
        },
        bm,
        bn,
    )
    # FlashAttention-2's kernels are built for 255 registers a thread (no spills); Triton's as compiled for the
    # GPU's architecture where the config's table holds it (its stack frame: what spills), else the estimate
    estimate = triton_attention_registers(bm, bn, d, warps)
    compiled, stack = compiled_attention_resources(cols, triton, d, bm, bn, warps, base["num_stages"])
    # (what a thread asks for: the registers it got plus the 4-byte words it spilled)
    asked = xp.where(xp.isnan(compiled), estimate, compiled + stack / 4.0)
    registers = xp.where(triton, asked, xp.where(xp.isnan(bn), num.NAN, float(MAX_REGISTERS)))
    spilled = xp.where(xp.isnan(stack), xp.maximum(registers - MAX_REGISTERS, 0.0), stack / 4.0)
    ctas = base["work_units"]
    steps = ctas / loop.blocks * loop.steps  # K/V steps over every CTA
    # the tiles as run: every step computes a whole block_m x block_n score tile (masked rows and columns included)
    tile_flops = 4.0 * bm * bn * d
    ring, wgmma = triton_ring(cols["gpu"], bm, warps, base["num_stages"])
    step = step_cycles(bm, bn, d, warps, xp.where(triton, wgmma, True), base)
    clock = base["gpu_boost_clock_hz"]
    return {
        # the dot's instruction (wgmma reads its operands from shared memory, mma.sync from registers) and the K/V
        # tiles' pipeline buffers: what Triton compiled for the config (NaN on the library kernels' rows)
        "wgmma": xp.where(triton, xp.as_float(wgmma), num.NAN),
        "kv_buffers": xp.where(triton, ring, num.NAN),
        "smsp_share": smsp_share(warps),
        "step_mma_share": step.mma / step.total,
        "step_cycles": step.total,
        # the longest CTA's loop at its own step time, and every CTA's steps spread over the SMs
        "loop_us": loop.longest * step.total / clock * 1e6,
        "busy_us": steps * step.total / base["gpu_sm_count"] / clock * 1e6,
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


def compiled_attention_resources(cols, triton, d, bm, bn, warps, stages):
    """(registers, stack bytes) a thread of kernelcast's Triton attention got from ptxas for the row's config on its
    GPU's architecture (``features.compiled``'s ``triton_attention`` table); NaN on the library kernels' rows."""
    keys = (cols["dtype"], d, cols["causal"], bm, bn, warps, stages)
    if num.of(bm) is num.SCALARS:  # one description: a library kernel looks nothing up
        return compiled_resource("triton_attention", cols["gpu"], *keys) if triton else (num.NAN, num.NAN)
    compiled, stack = compiled_resources("triton_attention", cols["gpu"], *keys)
    return np.where(triton, compiled, np.nan), np.where(triton, stack, np.nan)


#: one Hopper/Ampere SM per clock: exp2 on its special-function units, fp32 lanes; mma.sync sustains about half the
#: tensor rate wgmma does; fp32 operations per score element (scale, mask, max, subtract, sum, convert) and per
#: O element (the online softmax's rescale) in each K/V step
SFU_PER_SM_CLOCK, FP32_PER_SM_CLOCK, MMA_SYNC_RATE = 16.0, 128.0, 0.5
SCORE_OPS, RESCALE_OPS = 8.0, 2.0
#: SM sub-partitions (each with its own tensor core and SFUs): a CTA of fewer warps leaves some idle
SUB_PARTITIONS = 4


class StepCycles(NamedTuple):
    mma: np.ndarray  # the two dots of one K/V step
    total: np.ndarray  # dots + exp2 + fp32 softmax work


def smsp_share(warps) -> np.ndarray:
    """The share of an SM's sub-partitions one CTA's warps occupy (its dots and exp2 run on theirs only)."""
    return num.of(warps).minimum(warps, SUB_PARTITIONS) / SUB_PARTITIONS


def step_cycles(bm, bn, d, warps, wgmma, base) -> StepCycles:
    """SM cycles of one CTA's K/V step, alone on its SM: the block_m×block_n×head_dim dots at the dtype's peak per SM
    (``MMA_SYNC_RATE`` of it without wgmma), the score tile's exp2 and fp32 softmax work and the O rescale, each on
    the sub-partitions its warps occupy. Serial: a step's dots wait for its softmax (no warp specialization)."""
    share = smsp_share(warps)
    per_clock = base["peak_flops"] / base["gpu_sm_count"] / base["gpu_boost_clock_hz"]
    mma = 4.0 * bm * bn * d / (per_clock * num.of(bm).where(wgmma, 1.0, MMA_SYNC_RATE)) / share
    softmax = bm * bn / SFU_PER_SM_CLOCK + (SCORE_OPS * bm * bn + RESCALE_OPS * bm * d) / FP32_PER_SM_CLOCK
    return StepCycles(mma, mma + softmax / share)


class KvLoop(NamedTuple):
    blocks: np.ndarray  # block_m query blocks of one (batch, head)
    steps: np.ndarray  # K/V steps summed over those blocks
    longest: np.ndarray  # the steps of the longest query block's loop


def kv_loop(cols, bm, bn) -> KvLoop:
    """The K/V loop of kernelcast's Triton attention (``collect/kernels/triton_attention.py``): each block_m query
    block steps over the keys in block_n tiles up to its causal limit, min(seq_kv, (i + 1)·block_m + seq_kv −
    seq_q); without a mask every block steps over all of seq_kv. Steps round up per block (a half-empty last tile
    costs a whole one), taken here as half a step per block on average."""
    xp = num.of(cols["seq_kv"])
    sq, skv = xp.floats(cols["seq_q"]), xp.floats(cols["seq_kv"])
    causal = _causal(cols)
    blocks = xp.ceil(sq / bm)
    full = xp.ceil(skv / bn)
    # causal: blocks 0..M-2 stop at (i + 1)·bm + diag, the last at seq_kv
    reach = bm * (blocks - 1) * blocks / 2 + (blocks - 1) * (skv - sq) + skv
    causal_steps = reach / bn + 0.5 * (blocks - 1) + (full - skv / bn)
    return KvLoop(blocks, xp.where(causal, xp.minimum(causal_steps, blocks * full), blocks * full), full)


def triton_attention_registers(bm, bn, d, warps) -> np.ndarray:
    """32-bit registers a thread of kernelcast's Triton attention asks for: the fp32 O accumulator and score tile,
    the 16-bit Q and P tiles (two to a register), spread over the CTA's threads, plus the addressing and softmax
    state (``BASE_REGISTERS``). More than ``MAX_REGISTERS`` spills to local memory."""
    threads = 32 * warps
    return (bm * d + bm * bn + (bm * d + bm * bn) / 2) / threads + BASE_REGISTERS


def attention_scale(f) -> np.ndarray:
    """The learned target's scale: the roofline floor or, where the tiles say more, plus one kernel's fixed time:
    on Triton rows (``wgmma`` set) the K/V steps at their modelled cycles (``step_cycles``: every CTA's over the
    SMs, or the longest CTA's loop); on the library kernels' rows their padded tiles' compute at peak or the longest
    CTA's loop on one SM at peak."""
    xp = num.of(f["floor_us"])
    library = xp.fmax(f["padded_compute_us"], f["longest_cta_us"])
    body = xp.where(xp.isnan(f["wgmma"]), library, xp.fmax(f["busy_us"], f["loop_us"]))
    return latency_scale(xp.fmax(f["floor_us"], body), f["gpu_boost_clock_hz"])


#: fraction of dense peak the forward kernel sustains: FlashAttention-2-class kernels reach ~50% of Hopper's; the
#: memory-efficient kernel runs sm80 mma.sync instructions without FlashAttention-2's split of the work between warps
#: (and past head_dim 128 with its output in global memory): on the H200 its best measured row sustains 0.17 of dense
#: bf16 peak, the 90th percentile per head_dim 0.04-0.10 (datasets/attention/…_20261205_efficient.parquet)
COMPUTE_EFFICIENCY = {
    "flash": 0.50,
    "cudnn": 0.55,
    "efficient": 0.17,
    "triton": 0.40,
    "trtllm": 0.55,
    "vllm": 0.50,
    "sglang": 0.50,
}


def analytical(cols, f) -> tuple[np.ndarray, np.ndarray]:
    backend = cols["backend"]  # one description's name: its Python number (its features are Python numbers too)
    eff = COMPUTE_EFFICIENCY[backend] if isinstance(backend, str) else per_backend(COMPUTE_EFFICIENCY, backend)
    return roofline_latency(f, eff, 1.0)


def triton_attention_shared(cols, cfg, elem_bytes) -> np.ndarray:
    """Shared memory per CTA (bytes) of kernelcast's Triton attention as Triton 3.6 allocates it on the H200: the
    block_m×head_dim Q tile once, the K and V tiles in ``triton_ring`` buffers each, and the P tile of the second
    dot when it runs on mma.sync (wgmma reads it from registers). The Required bytes of 303 of 304 configs the H200
    refused, and the fit of every measured row (benchmarks/RESULTS.md §17)."""
    xp = num.of(cols["head_dim"])
    d = xp.floats1d(cols["head_dim"])
    bm, bn = cfg["block_m"], cfg["block_n"]
    ring, wgmma = triton_ring(cols["gpu"], bm, cfg["num_warps"], cfg["num_stages"])
    return (bm * d + 2 * ring * bn * d + xp.where(wgmma, 0.0, bm * bn)) * elem_bytes


SPEC = register(
    OpSpec(
        name="attention",
        doc="softmax(Q·Kᵀ/√d)·V forward, GQA/MQA by heads_kv, causal masks bottom-right aligned; `mask`: the kernel "
        "reads an explicit additive mask of (batch, 1, seq_q, seq_kv) (SDPA's attn_mask, which cuDNN takes as a "
        "bias over every key)",
        fields={
            "batch": IntField(1, 1 << 16),
            "heads_q": IntField(1, 1024),
            "heads_kv": IntField(1, 1024),
            "seq_q": IntField(1, 1 << 22),
            "seq_kv": IntField(1, 1 << 22),
            "head_dim": IntField(8, 1024),
            "causal": BoolField(),
            "mask": BoolField(default=False),
        },
        dtypes=("bf16", "fp16", "fp8_e4m3"),
        # "efficient": SDPA's memory-efficient kernel, what torch runs past head_dim 256 (Gemma 4's full-attention
        # layers, 512) and, on GPUs whose fused backend is flash, for a call with an explicit mask
        backends=("flash", "cudnn", "efficient", "triton") + OUTSIDE_BACKENDS,
        rules=(
            Rule(
                "heads_q",
                lambda c: c["heads_q"] % c["heads_kv"] == 0,
                lambda c: f"a multiple of heads_kv={c['heads_kv']}",
            ),
            Rule("head_dim", lambda c: c["head_dim"] % 8 == 0, lambda c: "a multiple of 8 in [8, 1024]"),
            Rule(
                "mask",
                mask_read,
                lambda c: (
                    "false unless causal is false and backend is cudnn or efficient (the kernels that read a mask: "
                    "SDPA's flash backend takes none, Triton's here has none)"
                ),
            ),
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
        scalar_features=True,
        # many rounds at depth 8: with the library kernels' launch features, flash 1.90 -> 1.59% and cuDNN 2.66 ->
        # 2.22% median in a shape-held-out split of the training rows, Triton 9.21 -> 9.37% config-held-out (depth 6)
        # (benchmarks/RESULTS.md §21). Triton rows get trees of their own and the shared trees are fitted without
        # them (``shared_skips_own``): on a shape-held-out fold of the training rows flash 2.43 -> 2.06%, cuDNN 3.37
        # -> 2.69%, Triton 5.19 -> 4.05%; on a config-held-out fold Triton 7.29 -> 6.58% (RESULTS §25). Own trees
        # beside shared trees fitted on every row were worse on the fourth Triton test set (12.9 -> 14.8%). The Triton
        # rows' trees are blended (in log, 70% the network's) with a network fitted on the same rows (``training.mlp``):
        # on three config-held-out folds of the Triton rows 6.7 -> 4.9% median (RESULTS §50). Three seeds' point models
        # averaged (``bag``): on the frozen split's held-out training shapes cuDNN 3.56 -> 3.45%, memory-efficient 4.21
        # -> 3.94%, flash 2.19 -> 2.08%, Triton 2.54 -> 2.44% median, each under the best single seed (RESULTS §62-§63)
        # SDPA's flash backend is PyTorch's FlashAttention-2 on mma.sync on every target: its share of the peak differs
        # per architecture unlike TRT-LLM's native kernels, which the leave-one-GPU-out study transfers (RESULTS §33)
        unseen_same_arch=True,
        train_params={
            "max_depth": 8,
            "n_estimators": 800,
            "learning_rate": 0.05,
            "own_trees": {
                "triton": {
                    "max_depth": 6,
                    "n_estimators": 1200,
                    "learning_rate": 0.05,
                    "colsample_bytree": 0.6,
                    "mlp": {"weight": 0.7},
                }
            },
            "shared_skips_own": True,
            "bag": 3,
        },
    )
)
AttentionDesc = SPEC.desc_type
