"""One launch path for kernelcast's Triton kernels: run on real tensors, compile only on meta tensors.

A call whose tensor arguments live on the ``meta`` device (shapes, strides and dtypes, no memory)
goes through ``JITFunction.warmup``: Triton specializes and compiles exactly as for the real call
(a meta view's ``data_ptr`` carries its offset, so alignment classes match) and writes its on-disk
cache, launching nothing. ``collect.precompile`` uses this to compile configs ahead of the GPU.
"""

from __future__ import annotations


def is_meta(args) -> bool:
    return any(getattr(getattr(a, "device", None), "type", None) == "meta" for a in args)


def launch(kernel, grid, *args, **kwargs):
    """``kernel[grid](*args, **kwargs)``, or a compile without launch when any argument is a meta tensor."""
    if is_meta(args):
        return kernel.warmup(*args, grid=grid, **kwargs)
    return kernel[grid](*args, **kwargs)
