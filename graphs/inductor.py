"""The Triton code Inductor would generate for a call on a named NVIDIA GPU, produced on a CPU-only host.

``inductor_code`` turns the call's meta/fake tensors (a module's weights too) into fake cuda tensors and compiles it
with ``kernelcast.features.inductor.compile_code`` inside ``fake_cuda(spec)``. The output code is the product:
nothing is loaded or run, the kernels are never compiled to a binary, and no runtime autotuning happens (so options
such as ``max_autotune`` that time candidates cannot work here).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable

from kernelcast.features.gpu import GpuSpec, get_gpu
from kernelcast.features.inductor import compile_code, functional
from kernelcast.graphs.capture import CaptureError, own_cache, runs_math_sdpa, sdpa_head_dim
from kernelcast.graphs.fake_cuda import fake_cuda
from kernelcast.graphs.lower import attention_backend

#: Inductor options for a host with no device: compile in this process (no worker pool to start)
OFFLINE_OPTIONS = {"compile_threads": 1}


def _fused_attention(spec: GpuSpec):
    """A function mode that sends ``F.scaled_dot_product_attention`` to the fused kernel torch picks on ``spec``
    (``lower.attention_backend``: memory-efficient past head_dim 256, for dtypes other than bf16/fp16, and where the
    fused backend is flash and a mask is given). A CPU-only build has no cuda backend chooser, so SDPA on fake cuda
    tensors would trace as its math path (bmm, softmax, bmm). Flash and cuDNN take grouped-query KV heads as they
    are; memory-efficient attention does not, so a grouped-query call that would go there keeps torch's own (math)
    path, as on the GPU."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    aten = torch.ops.aten

    def backend(q, k, v, attn_mask=None, enable_gqa=False, **_) -> str | None:
        if runs_math_sdpa(q, k, enable_gqa, v):  # Falcon's multi-query call: torch's math path, traced as is
            return None
        half = q.dtype in (torch.bfloat16, torch.float16)
        name = attention_backend(spec.name, "bf16" if half else "fp32", sdpa_head_dim(q, v), attn_mask is not None)
        grouped = enable_gqa and q.shape[-3] != k.shape[-3]
        return None if name == "efficient" and grouped else name

    def fused(name, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if name == "flash":
            return aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, False, scale=scale)[0]
        if name == "cudnn":
            return aten._scaled_dot_product_cudnn_attention(
                q, k, v, attn_mask, False, dropout_p, is_causal, False, scale=scale
            )[0]
        return aten._scaled_dot_product_efficient_attention(
            q, k, v, attn_mask, False, dropout_p, is_causal, scale=scale
        )[0]

    class FusedAttention(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is F.scaled_dot_product_attention:
                names = ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
                call = dict(zip(names, args[3:]), **kwargs)
                name = backend(*args[:3], **call)
                if name is not None:
                    return fused(name, *args[:3], **call)
            return func(*args, **kwargs)

    return FusedAttention()


def _with_fused_attention(fn: Callable, spec: GpuSpec) -> Callable:
    def call(*args, **kwargs):
        with _fused_attention(spec):
            return fn(*args, **kwargs)

    return call


def inductor_code(
    fn: Callable, args: tuple, kwargs: dict | None = None, *, gpu: str, options: dict | None = None
) -> list[str]:
    """Inductor's output code for ``fn(*args, **kwargs)`` compiled for ``gpu`` (a name the spec database knows),
    from meta or fake tensors (or a module built on the meta device) on a CPU-only host. The call's own objects are
    left as they were: a Hugging Face KV cache is copied before its tensors are made fake."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    spec = get_gpu(gpu)
    if importlib.util.find_spec("triton") is None:
        raise ImportError("Inductor's code for a cuda device needs triton here: pip install 'kernelcast[graphs]'")
    fn, args = functional(fn, args)
    with fake_cuda(spec):
        # the mode make_fx finds on the inputs and traces in: a constant the call builds on the host (Gemma's
        # sliding window as a tensor) is real, and moving it to the device must be allowed, as it is on a GPU host
        with FakeTensorMode(allow_non_fake_inputs=True):
            args, kwargs = torch.utils._pytree.tree_map(_fake, (args, kwargs or {}))
        try:
            _, codes = compile_code(
                _with_fused_attention(fn, spec), args, kwargs, options={**OFFLINE_OPTIONS, **(options or {})}
            )
        except Exception as exc:  # noqa: BLE001 - re-raised with what failed
            raise CaptureError(_explain(exc, spec)) from exc
    return codes


def _fake(x):
    """A fake cuda tensor of ``x``'s shape, strides and dtype (inside a FakeTensorMode); a Hugging Face KV cache is
    copied with its layers' keys and values made fake; anything else is returned as is."""
    import torch

    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cuda")
    if isinstance(getattr(x, "layers", None), list):
        out = own_cache(x)
        for layer in out.layers:
            for name in ("keys", "values"):
                if isinstance(getattr(layer, name, None), torch.Tensor):
                    setattr(layer, name, _fake(getattr(layer, name)))
        return out
    return x


def _failed_op(exc: BaseException) -> str:
    """The aten op an error is about: fake tensors' exceptions carry it (``.func``), Inductor's lowering errors name
    it as ``target: aten...``."""
    seen = exc
    while seen is not None:
        if getattr(seen, "func", None) is not None:
            return str(seen.func)
        match = re.search(r"target: (\S+)", str(seen))
        if match:
            return match[1]
        seen = seen.__cause__ or seen.__context__
    return "an unknown op"


def _explain(exc: Exception, spec: GpuSpec) -> str:
    return (
        f"Inductor could not compile the call for {spec.name} (fake cuda device) at {_failed_op(exc)}: "
        f"{type(exc).__name__}: {str(exc)[:300]} (data-dependent ops such as nonzero or .item() cannot be compiled "
        "without running them)"
    )


__all__ = ["OFFLINE_OPTIONS", "inductor_code"]
