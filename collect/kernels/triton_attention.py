"""kernelcast's Triton flash-attention forward: online softmax, bottom-right causal mask, GQA by head mapping.

Q is [batch, heads_q, seq_q, head_dim], K/V [batch, heads_kv, seq_kv, head_dim]; query i attends
keys j <= i + seq_kv - seq_q when causal. Sequence lengths and head counts are not specialized
(strides are: head_dim is a multiple of 16, so they always divide), so a config compiles once
per dtype, head_dim and causal flag.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

from kernelcast.collect.kernels.launch import launch

_RUNTIME = ["heads_q", "group", "seq_q", "seq_kv"]


@triton.jit(do_not_specialize=_RUNTIME)
def kc_attn_fwd(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    qk_scale,
    stride_qb,
    stride_qh,
    stride_qm,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_ob,
    stride_oh,
    stride_om,
    heads_q,
    group,
    seq_q,
    seq_kv,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    start_m, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // heads_q, bh % heads_q
    hk = h // group
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = q_ptr + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    k_base = k_ptr + b.to(tl.int64) * stride_kb + hk.to(tl.int64) * stride_kh
    v_base = v_ptr + b.to(tl.int64) * stride_vb + hk.to(tl.int64) * stride_vh
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :], mask=offs_m[:, None] < seq_q, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    diag = seq_kv - seq_q
    hi = seq_kv
    if CAUSAL:
        hi = tl.minimum(seq_kv, (start_m + 1) * BLOCK_M + diag)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kmask = cols < seq_kv
        k = tl.load(k_base + cols[None, :] * stride_kn + offs_d[:, None], mask=kmask[None, :], other=0.0)
        qk = tl.dot(q, k) * qk_scale
        valid = kmask[None, :]
        if CAUSAL:
            valid = valid & (cols[None, :] <= offs_m[:, None] + diag)
        qk = tl.where(valid, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :], mask=kmask[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / l_i[:, None]
    o_base = o_ptr + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh
    tl.store(
        o_base + offs_m[:, None] * stride_om + offs_d[None, :],
        out.to(o_ptr.dtype.element_ty),
        mask=offs_m[:, None] < seq_q,
    )


def attention(q, k, v, out, cfg: dict, causal: bool):
    """out = softmax(q kᵀ / sqrt(d), bottom-right causal mask) v with the explicit ``cfg``."""
    batch, heads_q, seq_q, head_dim = q.shape
    heads_kv, seq_kv = k.shape[1], k.shape[2]
    scale = 1.4426950408889634 / math.sqrt(head_dim)  # log2(e) / sqrt(d): exp2 softmax
    grid = (triton.cdiv(seq_q, cfg["block_m"]), batch * heads_q)
    launch(
        kc_attn_fwd,
        grid,
        q,
        k,
        v,
        out,
        scale,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        heads_q,
        heads_q // heads_kv,
        seq_q,
        seq_kv,
        HEAD_DIM=head_dim,
        BLOCK_M=cfg["block_m"],
        BLOCK_N=cfg["block_n"],
        CAUSAL=causal,
        num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],
    )
    return out
