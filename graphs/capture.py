"""Capture the aten ops a PyTorch call dispatches, on meta or fake tensors: nothing runs on a GPU.

A ``TorchDispatchMode`` records every aten op with its inputs' and outputs' shapes, strides and dtypes. SDPA is
taken one level up (a ``TorchFunctionMode`` on ``F.scaled_dot_product_attention``): on a GPU it is one fused kernel,
while on meta tensors torch would decompose it into the math path's matmuls and softmax.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str  # torch's name without the prefix: bfloat16, float32, int64, bool
    contiguous: bool
    storage: int = field(default=0, compare=False)  # which storage it views (0: unknown), to follow data between ops

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class OpRecord:
    """One captured op: its aten name (``aten.mm.default``; ``sdpa`` for the fused attention), inputs and outputs."""

    name: str
    args: tuple  # TensorMeta where a tensor was, lists of them kept, scalars as given
    kwargs: dict
    outputs: tuple[TensorMeta, ...]
    module: str = ""  # the innermost nn.Module class the op ran in, when known


def _meta(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        shape = tuple(int(s) for s in x.shape)
        return TensorMeta(
            shape,
            tuple(int(s) for s in x.stride()),
            str(x.dtype).removeprefix("torch."),
            x.is_contiguous(),
            x.untyped_storage()._cdata,
        )
    if isinstance(x, (list, tuple)):
        return type(x)(_meta(v) for v in x)
    if isinstance(x, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return str(x).removeprefix("torch.")
    return x


def _outputs(out: Any) -> tuple[TensorMeta, ...]:
    flat = out if isinstance(out, (list, tuple)) else (out,)
    return tuple(m for m in (_meta(o) for o in flat) if isinstance(m, TensorMeta))


@dataclass
class Capture:
    ops: list[OpRecord] = field(default_factory=list)


class CaptureError(RuntimeError):
    """The call could not run on meta tensors: names the op that failed and why."""


#: the largest head_dim SDPA's flash and cuDNN backends take (torch 2.11); past it torch runs the memory-efficient
#: kernel (measured on the H200: Gemma 4's full-attention layers, head_dim 512, ran ``fmha_cutlassF…_32x128_gmem``)
FUSED_MAX_HEAD_DIM = 256


def sdpa_head_dim(q, v=None) -> int:
    """The head_dim SDPA's backend choice reads: the larger of the query's and the value's."""
    return max(q.shape[-1], v.shape[-1] if v is not None else 0)


def runs_math_sdpa(q, k, enable_gqa: bool, v=None) -> bool:
    """Whether torch 2.11 on a GPU sends this SDPA call to its math backend: no fused kernel (flash, cuDNN,
    memory-efficient) takes query and key/value head counts that differ unless ``enable_gqa`` says to group them, and
    the memory-efficient kernel, the only one past ``FUSED_MAX_HEAD_DIM``, does not group them."""
    if q.shape[-3] == k.shape[-3]:
        return False
    return not enable_gqa or sdpa_head_dim(q, v) > FUSED_MAX_HEAD_DIM


def math_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """SDPA's math backend as torch 2.11 runs it on a GPU, in the aten ops it launches: what torch falls back to when no
    fused kernel takes the call — query and key/value head counts that differ without ``enable_gqa`` (Falcon's
    multi-query attention calls SDPA so), or with it past head_dim 256 (K and V repeated per group): fp16/bf16 inputs
    upcast to fp32, q and k each scaled by √scale, a causal mask
    built as a bool ``tril`` and turned additive, two fp32 matmuls broadcasting the heads, a softmax that zeroes fully
    masked rows (``_safe_softmax``: softmax, isneginf, all, where), the output cast back."""
    import torch

    dtype = q.dtype
    if dtype in (torch.float16, torch.bfloat16):
        q, k, v = q.float(), k.float(), v.float()
    if enable_gqa and q.shape[-3] != k.shape[-3]:  # grouped heads (past the fused kernels' head_dim): repeated
        group = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(group, -3), v.repeat_interleave(group, -3)
    root = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    q = q * root
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        attn_mask = torch.zeros(keep.shape, dtype=q.dtype, device=q.device).masked_fill(keep.logical_not(), -math.inf)
    scores = torch.matmul(q, k.transpose(-2, -1) * root)
    if attn_mask is not None:
        scores.add_(attn_mask)
    probs = torch.softmax(scores, -1)
    probs = torch.where(torch.isneginf(scores).all(-1, keepdim=True), 0.0, probs)
    return torch.matmul(probs, v).to(dtype)


def capture(fn: Callable, args: tuple = (), kwargs: dict | None = None) -> Capture:
    """Run ``fn(*args, **kwargs)`` under the recording modes; every aten op it dispatches, in order."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    cap = Capture()
    state = {"paused": False, "last": None}
    alive = []  # every output stays referenced until the capture ends, so no two tensors share a storage id

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, a=(), kw=None):
            kw = kw or {}
            if func is F.scaled_dot_product_attention:
                q, k, v = a[:3]
                rest = dict(zip(("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"), a[3:]), **kw)
                if runs_math_sdpa(q, k, rest.get("enable_gqa", False), v):
                    return math_sdpa(q, k, v, **rest)  # recorded op by op, as the GPU runs it
                cap.ops.append(
                    OpRecord("sdpa", (_meta(q), _meta(k), _meta(v)), {n: _meta(x) for n, x in rest.items()}, (), "")
                )
                state["paused"] = True
                try:
                    return torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
                finally:
                    state["paused"] = False
            return func(*a, **kw)

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, a=(), kw=None):
            kw = kw or {}
            state["last"] = str(func)
            out = func(*a, **kw)
            if not state["paused"]:
                cap.ops.append(OpRecord(str(func), _meta(tuple(a)), _meta(kw), _outputs(out)))
                alive.append(out)
            return out

    try:
        with torch.no_grad(), Functions(), Dispatch():
            fn(*args, **(kwargs or {}))
    except Exception as exc:  # noqa: BLE001 - re-raised with the op that failed
        where = state["last"] or "before the first aten op"
        raise CaptureError(
            f"the call failed on meta tensors at {where}: {type(exc).__name__}: {str(exc)[:300]} "
            "(data-dependent ops such as nonzero or .item() cannot be predicted without running them)"
        ) from exc
    return cap


def own_cache(x):
    """A Hugging Face KV cache copied down to its layers (a layer call then updates the copy's, and the caller's cache
    keeps its length and tensors); anything else as is."""
    if not isinstance(getattr(x, "layers", None), list):
        return x
    out = copy.copy(x)
    out.layers = [copy.copy(layer) for layer in x.layers]
    return out
