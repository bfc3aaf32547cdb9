"""kernelcast's fused MoE in Triton: align tokens to experts (padded to block_m), grouped GEMMs, combine.

One call = align (zero counters, count, scan, pad-fill, scatter: 5 kernels) -> grouped GEMM up(+gate)
-> SiLU(-and-mul) -> grouped GEMM down scaled by the router weights -> sum over top_k.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernelcast.collect.kernels.launch import launch
from kernelcast.collect.kernels.triton_gemm import grouped_tile


@triton.jit(do_not_specialize=["numel"])
def kc_moe_count(ids_ptr, counts_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    e = tl.load(ids_ptr + offs, mask=mask, other=0)
    tl.atomic_add(counts_ptr + e, 1, mask=mask)


@triton.jit(do_not_specialize=["experts", "nblocks"])
def kc_moe_scan(
    counts_ptr,
    starts_ptr,
    expert_ids_ptr,
    experts,
    nblocks,
    BLOCK_M: tl.constexpr,
    E_POW2: tl.constexpr,
    FILL: tl.constexpr,
):
    """Each program rescans the (small) counts and labels FILL blocks with their expert (-1 past the end)."""
    offs_e = tl.arange(0, E_POW2)
    counts = tl.load(counts_ptr + offs_e, mask=offs_e < experts, other=0)
    padded = (counts + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    ends = tl.cumsum(padded, 0)
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(starts_ptr + offs_e, ends - padded, mask=offs_e < experts)
    offs_b = pid * FILL + tl.arange(0, FILL)
    owner = tl.sum((ends[None, :] <= (offs_b * BLOCK_M)[:, None]).to(tl.int32), 1)
    owner = tl.where(owner < experts, owner, -1)
    tl.store(expert_ids_ptr + offs_b, owner, mask=offs_b < nblocks)


@triton.jit(do_not_specialize=["numel"])
def kc_moe_scatter(ids_ptr, starts_ptr, cursor_ptr, sorted_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    e = tl.load(ids_ptr + offs, mask=mask, other=0)
    slot = tl.atomic_add(cursor_ptr + e, 1, mask=mask)
    start = tl.load(starts_ptr + e, mask=mask, other=0)
    tl.store(sorted_ptr + start + slot, offs.to(tl.int32), mask=mask)


@triton.jit(do_not_specialize=["em", "numel", "row_div"])  # N, K specialized: vector loads
def kc_moe_gemm(
    a_ptr,
    b_ptr,
    c_ptr,
    w_ptr,
    sorted_ptr,
    expert_ids_ptr,
    N,
    K,
    em,
    numel,
    row_div,
    stride_am,
    stride_be,
    stride_bn,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    MUL_WEIGHT: tl.constexpr,
):
    pid = tl.program_id(0)
    pid_m, pid_n = grouped_tile(pid, tl.cdiv(em, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    expert = tl.load(expert_ids_ptr + pid_m)
    if expert < 0:
        return
    tok = tl.load(sorted_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
    tmask = tok < numel
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (tok // row_div).to(tl.int64)[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + expert.to(tl.int64) * stride_be + offs_n[None, :] * stride_bn + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=tmask[:, None] & (k + offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptrs, mask=(k + offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    if MUL_WEIGHT:
        acc = acc * tl.load(w_ptr + tok, mask=tmask, other=0.0)[:, None]
    c_ptrs = c_ptr + tok.to(tl.int64)[:, None] * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=tmask[:, None] & (offs_n[None, :] < N))


def _gemm(a, w, c, weights, sorted_ids, expert_ids, numel, row_div, cfg, mul_weight):
    n, k = w.shape[1], w.shape[2]
    em = sorted_ids.numel()
    grid = (triton.cdiv(em, cfg["block_m"]) * triton.cdiv(n, cfg["block_n"]),)
    launch(
        kc_moe_gemm,
        grid,
        a,
        w,
        c,
        weights,
        sorted_ids,
        expert_ids,
        n,
        k,
        em,
        numel,
        row_div,
        a.stride(0),
        w.stride(0),
        w.stride(1),
        c.stride(0),
        BLOCK_M=cfg["block_m"],
        BLOCK_N=cfg["block_n"],
        BLOCK_K=cfg["block_k"],
        GROUP_M=cfg["group_m"],
        MUL_WEIGHT=mul_weight,
        num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],
    )


def align(topk_ids, experts: int, block_m: int, bufs: dict):
    """Sorted flat (token*top_k + slot) ids padded per expert to ``block_m``, and each block's expert."""
    numel = topk_ids.numel()
    counters = bufs["counters"]  # [2, experts] int32: counts, cursors
    counters.zero_()
    launch(kc_moe_count, (triton.cdiv(numel, 1024),), topk_ids, counters[0], numel, BLOCK=1024)
    sorted_ids, expert_ids, starts = bufs["sorted_ids"], bufs["expert_ids"], bufs["starts"]
    e_pow2 = triton.next_power_of_2(experts)
    fill = max(1, min(64, 8192 // e_pow2))
    nblocks = expert_ids.numel()
    launch(
        kc_moe_scan,
        (triton.cdiv(nblocks, fill),),
        counters[0],
        starts,
        expert_ids,
        experts,
        nblocks,
        BLOCK_M=block_m,
        E_POW2=e_pow2,
        FILL=fill,
        num_warps=4,
    )
    sorted_ids.fill_(numel)  # padding slots point past the last token
    launch(kc_moe_scatter, (triton.cdiv(numel, 1024),), topk_ids, starts, counters[1], sorted_ids, numel, BLOCK=1024)
    return sorted_ids, expert_ids


def fused_moe(x, w1, w2, topk_ids, topk_w, cfg: dict, gated: bool, bufs: dict):
    """The routed-expert layer: x [T, H], w1 [E, (2)F, H], w2 [E, H, F], ids/weights [T, top_k] -> [T, H]."""
    import torch.nn.functional as F

    tokens, top_k = topk_ids.shape
    numel = tokens * top_k
    sorted_ids, expert_ids = align(topk_ids, w1.shape[0], cfg["block_m"], bufs)
    h = bufs["h"]
    _gemm(x, w1, h, topk_w, sorted_ids, expert_ids, numel, top_k, cfg, False)
    ffn = w2.shape[2]
    act = F.silu(h[:, :ffn]) * h[:, ffn:] if gated else F.silu(h)
    y = bufs["y"]
    _gemm(act, w2, y, topk_w, sorted_ids, expert_ids, numel, 1, cfg, True)
    return y.view(tokens, top_k, -1).sum(1)
