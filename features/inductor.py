"""Inductor's output code for one call: the call traced with make_fx on its own tensors, compiled with compile_fx,
and the generated Python (Triton kernels plus the wrapper that launches them and the extern kernels) kept.

Shared by the GPU collector (real cuda tensors) and CPU serving (fake cuda tensors, see ``graphs/inductor.py``), so
it uses only APIs present in torch 2.11 through 2.13: make_fx, compile_fx, run_and_get_code and config.patch.
torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable
from typing import Any


def functional(fn: Callable, args: tuple) -> tuple[Callable, tuple]:
    """``fn`` and ``args`` unchanged, or for an ``nn.Module`` a function of (its parameters and buffers, *args) that
    calls it through ``torch.func.functional_call``, so the weights are graph inputs and not constants."""
    import torch

    if not isinstance(fn, torch.nn.Module):
        return fn, tuple(args)
    module = fn
    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}

    def call(weights: dict, *a, **kw):
        return torch.func.functional_call(module, weights, a, kw)

    return call, (state, *args)


def compile_code(
    fn: Callable, args: tuple, kwargs: dict | None = None, *, options: dict | None = None
) -> tuple[Callable, list[str]]:
    """(the compiled callable, Inductor's output code strings) for ``fn(*args, **kwargs)``; the compiled callable
    takes the call's tensors flattened in pytree order."""
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import run_and_get_code
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils import _pytree as pytree

    fn, args = functional(fn, args)
    leaves, spec = pytree.tree_flatten((args, kwargs or {}))
    where = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    tensors = [leaves[i] for i in where]

    def flat(*ts: Any):
        full = list(leaves)
        for i, t in zip(where, ts):
            full[i] = t
        a, kw = pytree.tree_unflatten(full, spec)
        return fn(*a, **kw)

    with torch.no_grad():
        gm = make_fx(flat, tracing_mode="fake")(*tensors)
        with (
            inductor_config.patch(fx_graph_cache=False, benchmark_kernel=True, **(options or {})),
            contextlib.redirect_stderr(_Without("Compiled module path: ", sys.stderr)),
        ):
            compiled, codes = run_and_get_code(compile_fx, gm, tensors)
    return compiled, list(codes)


class _Without(io.TextIOBase):
    """``stream`` without the lines that start with ``prefix`` (``benchmark_kernel`` prints one per compile)."""

    def __init__(self, prefix: str, stream):
        self.prefix, self.stream, self.dropped = prefix, stream, False

    def write(self, text: str) -> int:
        drop = text.startswith(self.prefix) or (self.dropped and text == "\n")  # print writes its end apart
        if not drop:
            self.stream.write(text)
        self.dropped = drop and text != "\n"
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


__all__ = ["compile_code", "functional"]


class _TargetDriver:
    """Triton's active driver for a GPU that is not here: the compile target only, no device to launch on."""

    def __init__(self, target) -> None:
        self.target = target

    def get_current_target(self):
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_active_torch_device(self):
        import torch

        return torch.device("cuda", 0)


@contextlib.contextmanager
def triton_target(capability: int, warp_size: int = 32):
    """Triton compiles for CUDA compute ``capability`` (90 for sm_90) while open, on a host with no GPU: used by
    CPU-side Inductor codegen (``graphs/fake_cuda.py``) and the compile facts (``collect/compile_facts.py``)."""
    from triton.backends.compiler import GPUTarget
    from triton.runtime.driver import driver

    saved = driver._active
    driver.set_active(_TargetDriver(GPUTarget("cuda", capability, warp_size)))
    try:
        yield
    finally:
        driver._active = saved
