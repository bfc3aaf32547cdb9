"""A fake cuda device for Inductor on a CPU-only host: ``fake_cuda(spec)`` is a context manager that, only while it
is open, answers torch's and Triton's device queries from the spec database (SM count, compute capability, memory,
L2, shared memory), lets Python indexing run on fake cuda tensors, and keeps compile_fx from loading, compiling or
timing anything on a device. Every patch is undone on exit, on error too. It changes process-wide state while open
(class attributes, one slot of c10's device-guard registry): one thread at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from kernelcast.features.gpu import GpuSpec

#: c10's DeviceType indices (c10/core/DeviceType.h)
_CUDA, _META = 1, 14


@dataclass(frozen=True)
class FakeProps:
    """What ``torch.cuda.get_device_properties`` returns, from a spec (the fields Inductor and Triton read)."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    warp_size: int
    total_memory: int
    max_threads_per_multi_processor: int
    max_threads_per_block: int
    regs_per_multiprocessor: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    L2_cache_size: int
    gcnArchName: str = ""


def device_props(spec: GpuSpec) -> FakeProps:
    """The fake device properties of an NVIDIA spec; other vendors raise a ValueError naming the vendor."""
    capability = spec.cuda_capability
    if capability is None:
        raise ValueError(
            f"gpu must be an NVIDIA GPU (Inductor's Triton code for cuda); got {spec.name!r} "
            f"(vendor {spec.vendor!r}, target {spec.target!r})"
        )
    return FakeProps(
        name=spec.display_name,
        major=capability[0],
        minor=capability[1],
        multi_processor_count=spec.sm_count,
        warp_size=spec.warp_size,
        total_memory=int(spec.memory_bytes),
        max_threads_per_multi_processor=spec.max_threads_per_sm,
        max_threads_per_block=1024,
        regs_per_multiprocessor=spec.registers_per_sm,
        shared_memory_per_block_optin=int(spec.shared_memory_per_block_bytes),
        shared_memory_per_multiprocessor=int(spec.shared_memory_per_sm_bytes),
        L2_cache_size=int(spec.l2_bytes),
    )


@contextlib.contextmanager
def _cuda_guard() -> Iterator[None]:
    """Python indexing (``x[0]``, ``x[:, None]``) opens a device guard; a CPU-only build registers none for cuda (and
    torch 2.13's ``_ensureCUDADeviceGuardSet`` no longer installs one there), so meta's no-op guard stands in."""
    import torch

    lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libc10.so"))
    base = ctypes.addressof(ctypes.c_void_p.in_dll(lib, "_ZN3c104impl26device_guard_impl_registryE"))
    slot = ctypes.c_void_p.from_address(base + ctypes.sizeof(ctypes.c_void_p) * _CUDA)
    meta = ctypes.c_void_p.from_address(base + ctypes.sizeof(ctypes.c_void_p) * _META)
    if slot.value is not None:  # a cuda build: its own guard serves
        yield
        return
    slot.value = meta.value
    try:
        yield
    finally:
        slot.value = None


def _device_caches() -> list[Callable]:
    """The functools caches that remember device facts: cleared on entry and exit so no answer leaks."""
    import torch._inductor.runtime.hints as hints
    import torch._inductor.utils as iu
    import torch.utils._triton as ut

    names = ("get_gpu_type", "is_big_gpu", "get_max_num_sms", "using_b200", "get_device_tflops", "get_gpu_dram_gbps")
    return [ut.has_triton, hints.DeviceProperties.create, *(getattr(iu, n) for n in names if hasattr(iu, n))]


@contextlib.contextmanager
def _triton_driver(props: FakeProps) -> Iterator[None]:
    from kernelcast.features.inductor import triton_target

    with triton_target(props.major * 10 + props.minor, props.warp_size):
        yield


def _unloaded(key: str, path: str, *args, **kwargs) -> types.ModuleType:
    """Stands in for the output code's module: loading it would compile and load its Triton kernels on the device."""

    def call(*a, **k):
        raise RuntimeError(f"Inductor code compiled for a fake cuda device cannot run; its code is in {path}")

    mod = types.ModuleType(f"kernelcast_unloaded_{key}")
    mod.__file__ = path
    mod.call = call
    return mod


def _host_constants():
    """A dispatch mode that runs ops asked for on cuda on the CPU instead: Inductor's constant folding evaluates
    constant subgraphs (a ``torch.full`` mask, an empty KV cache) for real."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def host(x):
        if isinstance(x, torch.device) and x.type == "cuda":
            return torch.device("cpu")
        return "cpu" if isinstance(x, str) and x.startswith("cuda") else x

    class HostConstants(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            args, kwargs = torch.utils._pytree.tree_map(host, (args, kwargs or {}))
            return func(*args, **kwargs)

    return HostConstants()


def _folded_on_host(run: Callable) -> Callable:
    def folded(self, *args, **kwargs):
        with _host_constants():
            return run(self, *args, **kwargs)

    return folded


def _query_patches(props: FakeProps) -> list:
    import torch
    import torch._dynamo.device_interface as di
    import torch._inductor.scheduler as scheduler
    import torch.fx.experimental.proxy_tensor as proxy_tensor
    import torch.utils._triton as ut
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.constant_folding import ConstantFolder
    from torch._inductor.fx_passes import pad_mm

    cuda = di.CudaInterface
    get_props = staticmethod(lambda device=None: props)
    cc = props.major * 10 + props.minor
    patches = [
        mock.patch.object(cuda, "is_available", staticmethod(lambda: True)),
        mock.patch.object(cuda, "get_device_properties", get_props),
        mock.patch.object(cuda, "get_compute_capability", staticmethod(lambda device=None: cc)),
        mock.patch.object(cuda, "current_device", staticmethod(lambda: 0)),
        mock.patch.object(cuda, "device_count", staticmethod(lambda: 1)),
        mock.patch.object(cuda, "is_bf16_supported", staticmethod(lambda including_emulation=False: True)),
        mock.patch.object(cuda.Worker, "get_device_properties", get_props),
        mock.patch.object(cuda.Worker, "current_device", staticmethod(lambda: 0)),
        mock.patch.object(torch.cuda, "get_device_properties", lambda device=None: props),
        mock.patch.object(torch.cuda, "get_device_capability", lambda device=None: (props.major, props.minor)),
        mock.patch.object(ut, "has_triton", lambda: True),
        mock.patch.object(PyCodeCache, "load_by_key_path", staticmethod(_unloaded)),
        # make_fx computes small constants for real (torch.tensor([], device="cuda") in a KV cache): not on cuda here
        mock.patch.object(proxy_tensor, "CONSTANT_NUMEL_LIMIT", -1),
        mock.patch.object(ConstantFolder, "run", _folded_on_host(ConstantFolder.run)),
        # pad_mm times a misaligned compute-bound matmul padded and not, on the device: here it stays unpadded
        mock.patch.object(pad_mm, "get_cached_should_pad", lambda key: False),
    ]
    if hasattr(scheduler, "has_triton"):
        patches.append(mock.patch.object(scheduler, "has_triton", lambda *a, **k: True))
    return patches


@contextlib.contextmanager
def fake_cuda(spec: GpuSpec) -> Iterator[None]:
    """While open, torch and Triton see one cuda device with ``spec``'s properties; everything is restored on exit,
    on error too."""
    props = device_props(spec)
    caches = _device_caches()
    with contextlib.ExitStack() as stack:
        for cache in caches:
            cache.cache_clear()
            stack.callback(cache.cache_clear)
        stack.enter_context(_cuda_guard())
        stack.enter_context(_triton_driver(props))
        for patch in _query_patches(props):
            stack.enter_context(patch)
        yield


__all__ = ["FakeProps", "device_props", "fake_cuda"]
