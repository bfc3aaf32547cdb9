"""Attention workload: SDPA forced to its flash, cuDNN or memory-efficient backend, and kernelcast's Triton flash
attention.

Inputs are [batch, heads, seq, head_dim] contiguous. The description's causal mask is
bottom-right aligned: seq_q == seq_kv uses ``is_causal=True``; seq_q < seq_kv uses
``causal_lower_right`` where the backend has it. A description with ``mask`` passes an explicit additive mask
(``MASK_WINDOW``) as models do.
"""

from __future__ import annotations

import dataclasses
import functools

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, randn, unsupported
from kernelcast.features.ops.attention import AttentionDesc

SDPA_DTYPES = ("bf16", "fp16")
TRITON_HEAD_DIMS = (16, 32, 64, 128, 256)


def _inputs(desc: AttentionDesc, device: str = "cuda"):
    q = randn((desc.batch, desc.heads_q, desc.seq_q, desc.head_dim), desc.dtype, seed=1, device=device)
    k = randn((desc.batch, desc.heads_kv, desc.seq_kv, desc.head_dim), desc.dtype, seed=2, device=device)
    v = randn((desc.batch, desc.heads_kv, desc.seq_kv, desc.head_dim), desc.dtype, seed=3, device=device)
    return q, k, v


#: the explicit mask a ``mask`` description passes SDPA: a sliding window of this many keys, bottom-right aligned,
#: additive (0 or -inf in the inputs' dtype) and (seq_q, seq_kv) expanded over batch and heads — what Gemma's and
#: Mistral's eager forwards pass (layer_job's ``window_additive``, which collect/masks_merge.py labels the same way)
MASK_WINDOW = 1024


def causal_window(sq: int, skv: int, window: int, device: str = "cpu"):
    """(sq, skv) bool masks (True: attend) of ``sq`` queries at the end of ``skv`` keys: the bottom-right causal
    pattern, and within it the last ``window`` keys of each query."""
    import torch

    rows = torch.arange(sq, device=device)[:, None] + (skv - sq)
    cols = torch.arange(skv, device=device)[None, :]
    causal = cols <= rows
    return causal, causal & (cols > rows - window)


def additive(keep, dtype):
    """A bool mask as the additive one SDPA adds to the scores: 0 where kept, -inf elsewhere, in ``dtype``."""
    import torch

    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, float("-inf"))


def _window_mask(desc: AttentionDesc, dtype, device: str):
    _, keep = causal_window(desc.seq_q, desc.seq_kv, MASK_WINDOW, device)
    return additive(keep, dtype)[None, None].expand(desc.batch, 1, desc.seq_q, desc.seq_kv)


def _reference(q, k, v, causal: bool, bias=None):
    """float64 attention with the bottom-right causal mask or the additive ``bias``, K/V heads repeated for GQA."""

    def ref():
        import torch

        group = q.shape[1] // k.shape[1]
        kk = k.double().repeat_interleave(group, 1)
        vv = v.double().repeat_interleave(group, 1)
        s = (q.double() @ kk.transpose(-1, -2)) / q.shape[-1] ** 0.5
        if bias is not None:
            s = s + bias.double()
        if causal:
            sq, skv = q.shape[2], k.shape[2]
            i = torch.arange(sq, device=q.device)[:, None]
            j = torch.arange(skv, device=q.device)[None, :]
            s = s.masked_fill(j > i + (skv - sq), float("-inf"))
        return torch.softmax(s, -1) @ vv

    return ref


def _small(desc: AttentionDesc) -> AttentionDesc:
    """Same dtype, head_dim, GQA group, causal flag and prefill/decode kind; tiny sizes with ragged edges."""
    group = desc.heads_q // desc.heads_kv
    seq_q = 1 if desc.seq_q == 1 else 77 if desc.seq_q == desc.seq_kv else 37
    seq_kv = 77 if desc.seq_q == desc.seq_kv else 203
    return dataclasses.replace(desc, batch=1, heads_q=2 * group, heads_kv=2, seq_q=seq_q, seq_kv=seq_kv)


class Sdpa(BackendBase):
    """torch SDPA restricted to one backend with ``sdpa_kernel``; GQA native, else K/V repeated outside the timer."""

    fused = True

    def __init__(self, name: str, sdpa_backend: str, max_head_dim: int = 256):
        self.name, self.sdpa_backend, self.max_head_dim = name, sdpa_backend, max_head_dim

    def supports(self, desc: AttentionDesc, device=None) -> str | None:
        if desc.dtype not in SDPA_DTYPES:
            return f"SDPA {self.name} measures dtypes {', '.join(SDPA_DTYPES)}; got {desc.dtype!r}"
        if desc.head_dim > self.max_head_dim:
            return f"SDPA {self.name} supports head_dim <= {self.max_head_dim}; got {desc.head_dim}"
        if self.name == "cudnn" and desc.causal and desc.seq_q < desc.seq_kv:
            return "cuDNN SDPA in torch has no bottom-right causal mask (a materialized mask would time a bias kernel)"
        return None

    def class_key(self, desc: AttentionDesc) -> tuple:
        return (
            "attention",
            self.name,
            desc.dtype,
            desc.head_dim,
            desc.causal,
            desc.heads_q // desc.heads_kv,
            desc.seq_q == 1,
            desc.seq_q == desc.seq_kv,
            desc.mask,
        )

    small = staticmethod(_small)

    def build(self, desc: AttentionDesc):
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.attention.bias import causal_lower_right

        q, k, v = _inputs(desc)
        backend = getattr(SDPBackend, self.sdpa_backend)
        if desc.mask:  # (parse_desc takes a mask on uncausal calls only)
            mask = bias = _window_mask(desc, q.dtype, q.device)
        else:
            bias = None
            mask = causal_lower_right(desc.seq_q, desc.seq_kv) if desc.causal and desc.seq_q < desc.seq_kv else None
        is_causal = desc.causal and desc.seq_q == desc.seq_kv

        def make(kk, vv, gqa):
            def call():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(
                        q, kk, vv, attn_mask=mask, is_causal=is_causal, enable_gqa=gqa
                    )

            return call

        call = make(k, v, desc.heads_q != desc.heads_kv)
        try:
            call()
        except RuntimeError as exc:
            if desc.heads_q == desc.heads_kv:
                raise unsupported(f"SDPA {self.name} refused this shape: {str(exc).splitlines()[0]}") from None
            group = desc.heads_q // desc.heads_kv
            call = make(k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), False)
            try:
                call()
            except RuntimeError as exc2:
                raise unsupported(f"SDPA {self.name} refused this shape: {str(exc2).splitlines()[0]}") from None
        return call, _reference(q, k, v, desc.causal, bias)


class TritonAttention(BackendBase):
    """kernelcast's Triton flash-attention forward with the description's explicit config."""

    name = "triton"
    fused = True

    def supports(self, desc: AttentionDesc, device=None) -> str | None:
        if desc.dtype not in SDPA_DTYPES:
            return f"triton attention measures dtypes {', '.join(SDPA_DTYPES)}; got {desc.dtype!r}"
        if desc.head_dim not in TRITON_HEAD_DIMS:
            return f"triton attention needs head_dim in {TRITON_HEAD_DIMS} (power of two); got {desc.head_dim}"
        return None

    def class_key(self, desc: AttentionDesc) -> tuple:
        return ("attention", self.name, desc.dtype, desc.head_dim, desc.causal, desc.config)

    def compile_key(self, desc: AttentionDesc) -> tuple:
        return self.class_key(desc)

    small = staticmethod(_small)

    def build(self, desc: AttentionDesc, device: str = "cuda"):
        import torch

        from kernelcast.collect.kernels import triton_attention

        q, k, v = _inputs(desc, device)
        out = torch.empty_like(q)
        call = functools.partial(triton_attention.attention, q, k, v, out, dict(desc.config), desc.causal)
        return call, _reference(q, k, v, desc.causal)


register("attention", Sdpa("flash", "FLASH_ATTENTION"))
register("attention", Sdpa("cudnn", "CUDNN_ATTENTION"))
# what torch runs past head_dim 256 (flash and cuDNN stop there) and for a masked call on flash GPUs; its CUTLASS kernel
# has a tile for any head_dim (past 128 with its output in global memory); grouped-query heads are repeated
register("attention", Sdpa("efficient", "EFFICIENT_ATTENTION", max_head_dim=1024))
register("attention", TritonAttention())
