"""kernelcast's Triton GEMM: grouped tile order, masked edges, optional split-K with a reduction kernel.

Only M and the split length are left unspecialized: K and N bound the masks along the
contiguous dimensions and the strides set alignment, and their divisibility by 16 is what lets
loads and stores vectorize (a config compiles once per dtype, layout and n % 16 class; the
sweeps keep k % 16 == 0). The workload pads the output's row stride to 16 elements.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernelcast.collect.kernels.launch import launch

_RUNTIME = ["M", "split_blocks"]


@triton.jit
def grouped_tile(pid, num_m, num_n, GROUP_M: tl.constexpr):
    """Program id -> (tile row, tile column), walking GROUP_M-row bands column by column so that
    programs running together share B tiles in L2 (also used by the fused-MoE kernel)."""
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    group_m = min(num_m - first_m, GROUP_M)
    return first_m + (pid % per_group) % group_m, (pid % per_group) // group_m


@triton.jit(do_not_specialize=_RUNTIME)
def kc_gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    split_blocks,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cs,
    stride_cb,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid, pid_k, pid_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    pid_m, pid_n = grouped_tile(pid, tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    k_lo = pid_k * split_blocks * BLOCK_K  # a multiple of BLOCK_K the compiler can see
    k_hi = tl.minimum(K, k_lo + split_blocks * BLOCK_K)
    a_ptrs = a_ptr + pid_b.to(tl.int64) * stride_ab + offs_m[:, None] * stride_am + (k_lo + offs_k)[None, :] * stride_ak
    b_ptrs = b_ptr + pid_b.to(tl.int64) * stride_bb + (k_lo + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (k + offs_k[None, :] < k_hi), other=0.0)
        b = tl.load(b_ptrs, mask=(k + offs_k[:, None] < k_hi) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = (
        c_ptr
        + pid_k.to(tl.int64) * stride_cs
        + pid_b.to(tl.int64) * stride_cb
        + offs_m[:, None] * stride_cm
        + offs_n[None, :] * stride_cn
    )
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit(do_not_specialize=["numel"])
def kc_gemm_splitk_reduce(ws_ptr, out_ptr, numel, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    stride = numel.to(tl.int64)  # split_k × numel passes 2**31 on large outputs (an illegal address in int32)
    for s in range(SPLIT_K):
        acc += tl.load(ws_ptr + s * stride + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _strides3(t):
    """(batch, row, col) strides of a 2-D or 3-D tensor (batch stride 0 when 2-D)."""
    return (0,) + tuple(t.stride()) if t.dim() == 2 else tuple(t.stride())


def matmul(a, b, out, cfg: dict, ws=None):
    """out = a @ b with the explicit ``cfg``; ``b`` may be a transposed view; ``out`` may be the first n columns
    of a row-padded buffer; ``ws`` (split-K) is fp32 [split_k, *padded buffer shape], contiguous."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = a.shape[0] if a.dim() == 3 else 1
    split_k = cfg["split_k"]
    split_blocks = triton.cdiv(triton.cdiv(k, split_k), cfg["block_k"])
    target = out if split_k == 1 else ws
    cs = 0 if split_k == 1 else ws.stride(0)
    cb, cm, cn = _strides3(out) if split_k == 1 else _strides3(ws[0])
    grid = (triton.cdiv(m, cfg["block_m"]) * triton.cdiv(n, cfg["block_n"]), split_k, batch)
    launch(
        kc_gemm_kernel,
        grid,
        a,
        b,
        target,
        m,
        n,
        k,
        split_blocks,
        *_strides3(a),
        *_strides3(b),
        cs,
        cb,
        cm,
        cn,
        BLOCK_M=cfg["block_m"],
        BLOCK_N=cfg["block_n"],
        BLOCK_K=cfg["block_k"],
        GROUP_M=cfg["group_m"],
        num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],
    )
    if split_k > 1:  # reduce over the whole (row-padded) output buffer
        full = out.as_strided(ws.shape[1:], ws.stride()[1:])
        numel = full.numel()
        launch(
            kc_gemm_splitk_reduce,
            (triton.cdiv(numel, 1024),),
            ws,
            full,
            numel,
            SPLIT_K=split_k,
            BLOCK=1024,
            num_warps=4,
        )
    return out
