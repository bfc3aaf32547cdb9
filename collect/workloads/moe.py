"""MoE workload: routed experts (router excluded) by kernelcast's fused Triton MoE and a per-expert torch loop.

Per-expert token counts come from ``features.ops.moe.expert_counts``; ``routing`` realises exactly
those counts with distinct experts per token, deterministically.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, divisible_16, randn
from kernelcast.features.ops.moe import MoeDesc, expert_counts

MOE_DTYPES = ("bf16", "fp16")


def routing(tokens: int, experts: int, top_k: int, distribution, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(expert ids [tokens, top_k], router weights [tokens, top_k]) realising ``expert_counts`` exactly.

    Expert occurrences are laid out in runs (one run per expert, length = its count <= tokens)
    and dealt slot s -> token s % tokens: a run never wraps onto a token twice, so every token
    gets top_k distinct experts. Tokens are then shuffled; weights are positive, rows sum to 1.
    """
    counts = expert_counts(tokens, experts, top_k, distribution)
    rng = np.random.default_rng(seed)
    order = rng.permutation(experts)
    runs = np.repeat(order, counts[order])
    slots = np.arange(tokens * top_k)
    ids = np.empty((tokens, top_k), dtype=np.int64)
    ids[slots % tokens, slots // tokens] = runs
    ids = ids[rng.permutation(tokens)]
    weights = rng.random((tokens, top_k)) + 0.05
    return ids, (weights / weights.sum(1, keepdims=True)).astype(np.float32)


def _inputs(desc: MoeDesc, device: str = "cuda"):
    import torch

    up = 2 * desc.ffn if desc.gated else desc.ffn
    x = randn((desc.tokens, desc.hidden), desc.dtype, seed=1, device=device)
    w1 = randn((desc.experts, up, desc.hidden), desc.dtype, scale=desc.hidden**-0.5, seed=2, device=device)
    w2 = randn((desc.experts, desc.hidden, desc.ffn), desc.dtype, scale=desc.ffn**-0.5, seed=3, device=device)
    ids, weights = routing(desc.tokens, desc.experts, desc.top_k, desc.distribution)
    ids_t = torch.from_numpy(ids).to(device, torch.int32)
    return x, w1, w2, ids_t, torch.from_numpy(weights).to(device)


def _act(h, ffn: int, gated: bool):
    import torch.nn.functional as F

    return F.silu(h[..., :ffn]) * h[..., ffn:] if gated else F.silu(h)


def _reference(x, w1, w2, ids, weights, gated: bool):
    """float64: out[t] = sum_j w[t, j] * W2[e] act(W1[e] x[t]) with e = ids[t, j]."""

    def ref():
        e = ids.long()
        h = (w1.double()[e] @ x.double()[:, None, :, None]).squeeze(-1)  # [T, k, up]
        y = (w2.double()[e] @ _act(h, w2.shape[2], gated)[..., None]).squeeze(-1)  # [T, k, H]
        return (y * weights.double()[..., None]).sum(1)

    return ref


def _small(desc: MoeDesc) -> MoeDesc:
    """Same dtype, gating, config, expert count (capped) and top_k; few tokens, a skewed routing."""
    experts = min(desc.experts, 16)
    top_k = min(desc.top_k, experts)
    return dataclasses.replace(
        desc, tokens=45, hidden=128, ffn=96, experts=experts, top_k=top_k, distribution="power_law_1.5"
    )


class _MoeBackend(BackendBase):
    fused = True

    def supports(self, desc: MoeDesc, device=None) -> str | None:
        if desc.dtype not in MOE_DTYPES:
            return f"moe {self.name} measures dtypes {', '.join(MOE_DTYPES)}; got {desc.dtype!r}"
        return None

    def class_key(self, desc: MoeDesc) -> tuple:
        return ("moe", self.name, desc.dtype, desc.gated, desc.config)

    small = staticmethod(_small)


class TritonMoe(_MoeBackend):
    """kernelcast's fused MoE (align -> grouped GEMM up -> act -> grouped GEMM down -> combine)."""

    name = "triton"

    def compile_key(self, desc: MoeDesc) -> tuple:
        experts_pow2 = 1 << max(0, (desc.experts - 1).bit_length())
        return (
            self.class_key(desc),
            divisible_16(desc.hidden),
            divisible_16(desc.ffn),
            experts_pow2,
            desc.experts % 4 == 0,
        )

    def build(self, desc: MoeDesc, device: str = "cuda"):
        import torch

        from kernelcast.collect.kernels import triton_moe

        x, w1, w2, ids, weights = _inputs(desc, device)
        cfg = dict(desc.config)
        bm, numel = cfg["block_m"], desc.tokens * desc.top_k
        em = -(-(numel + desc.experts * (bm - 1)) // bm) * bm
        dev = dict(device=device, dtype=torch.int32)
        bufs = {
            "counters": torch.zeros((2, desc.experts), **dev),
            "starts": torch.zeros(desc.experts, **dev),
            "sorted_ids": torch.empty(em, **dev),
            "expert_ids": torch.empty(em // bm, **dev),
            "h": torch.empty((numel, w1.shape[1]), device=device, dtype=x.dtype),
            "y": torch.empty((numel, desc.hidden), device=device, dtype=x.dtype),
        }
        flat_w = weights.reshape(-1)

        def call():
            return triton_moe.fused_moe(x, w1, w2, ids, flat_w, cfg, desc.gated, bufs)

        return call, _reference(x, w1, w2, ids, weights, desc.gated)


class TorchMoe(_MoeBackend):
    """Per-expert reference loop: gather, two F.linear, activation, weighted index_add (indices made outside)."""

    name = "torch"

    def build(self, desc: MoeDesc):
        import torch
        import torch.nn.functional as F

        x, w1, w2, ids, weights = _inputs(desc)
        routes = []
        for e in range(desc.experts):
            tok, slot = torch.nonzero(ids == e, as_tuple=True)
            if tok.numel():
                routes.append((e, tok, weights[tok, slot].to(x.dtype)[:, None]))

        def call():
            out = torch.zeros_like(x)
            for e, tok, w in routes:
                h = F.linear(x.index_select(0, tok), w1[e])
                out.index_add_(0, tok, F.linear(_act(h, desc.ffn, desc.gated), w2[e]) * w)
            return out

        return call, _reference(x, w1, w2, ids, weights, desc.gated)


register("moe", TritonMoe())
register("moe", TorchMoe())
