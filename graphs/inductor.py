"""The Triton code Inductor would generate for a call on a named NVIDIA GPU, produced on a CPU-only host.

``inductor_code`` turns the call's meta/fake tensors into fake cuda tensors and compiles it with
``kernelcast.features.inductor.compile_code`` inside ``fake_cuda(spec)``: a context manager that, only while it is
open, answers torch's and Triton's device queries from the spec database (SM count, compute capability, memory, L2,
shared memory) and lets Python indexing run on fake cuda tensors. Nothing is loaded or run on a device: the kernels
are code, never compiled to a binary, and runtime autotuning does not happen.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import re
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from kernelcast.features.gpu import GpuSpec, get_gpu
from kernelcast.features.inductor import compile_code, functional
from kernelcast.graphs.capture import CaptureError
from kernelcast.graphs.lower import attention_backend

#: c10's DeviceType indices (c10/core/DeviceType.h)
_CUDA, _META = 1, 14
#: Inductor options for a host with no device: compile in this process (no worker pool to start)
OFFLINE_OPTIONS = {"compile_threads": 1}


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
    match = re.fullmatch(r"sm_(\d+)(\d)a?", spec.target)
    if spec.vendor != "nvidia" or match is None:
        raise ValueError(
            f"gpu must be an NVIDIA GPU (Inductor's Triton code for cuda); got {spec.name!r} "
            f"(vendor {spec.vendor!r}, target {spec.target!r})"
        )
    return FakeProps(
        name=spec.display_name,
        major=int(match[1]),
        minor=int(match[2]),
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


class _Driver:
    """Triton's active driver while the fake device is open: the target only, no device to launch on."""

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
def _triton_driver(props: FakeProps) -> Iterator[None]:
    from triton.backends.compiler import GPUTarget
    from triton.runtime.driver import driver

    saved = driver._active
    driver.set_active(_Driver(GPUTarget("cuda", props.major * 10 + props.minor, props.warp_size)))
    try:
        yield
    finally:
        driver._active = saved


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


def _fused_attention(spec: GpuSpec):
    """A function mode that sends ``F.scaled_dot_product_attention`` to the fused kernel torch picks on ``spec``
    (``lower.attention_backend``; memory-efficient where that is flash and a mask is given or the dtype is not
    bf16/fp16). A CPU-only build has no cuda backend chooser, so SDPA on fake cuda tensors would trace as its math
    path (bmm, softmax, bmm). Flash and cuDNN take grouped-query KV heads as they are; memory-efficient attention does
    not, so a grouped-query call that would go there keeps torch's own (math) path, as on the GPU."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    aten = torch.ops.aten

    def backend(q, k, attn_mask=None, enable_gqa=False, **_) -> str | None:
        half = q.dtype in (torch.bfloat16, torch.float16)
        name = attention_backend(spec.name, "bf16" if half else "fp32")
        if name == "flash" and (attn_mask is not None or not half):
            name = "efficient"
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
                name = backend(*args[:2], **call)
                if name is not None:
                    return fused(name, *args[:3], **call)
            return func(*args, **kwargs)

    return FusedAttention()


def _with_fused_attention(fn: Callable, spec: GpuSpec) -> Callable:
    def call(*args, **kwargs):
        with _fused_attention(spec):
            return fn(*args, **kwargs)

    return call


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


def inductor_code(fn: Callable, args: tuple, kwargs: dict | None = None, *, gpu: str, options: dict | None = None):
    """Inductor's output code for ``fn(*args, **kwargs)`` compiled for ``gpu`` (a name the spec database knows),
    from meta or fake tensors (or a module built on the meta device) on a CPU-only host."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    spec = get_gpu(gpu)
    fn, args = functional(fn, args)
    with fake_cuda(spec):
        with FakeTensorMode():
            args, kwargs = torch.utils._pytree.tree_map(_fake, (args, kwargs or {}))
        try:
            _, codes = compile_code(
                _with_fused_attention(fn, spec), args, kwargs, options={**OFFLINE_OPTIONS, **(options or {})}
            )
        except Exception as exc:  # noqa: BLE001 - re-raised with what failed
            raise CaptureError(_explain(exc)) from exc
    return codes


def _fake(x):
    """A fake cuda tensor of ``x``'s shape, strides and dtype (inside a FakeTensorMode); a Hugging Face KV cache is
    copied with its layers' keys and values made fake; anything else is returned as is."""
    import torch

    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cuda")
    if isinstance(getattr(x, "layers", None), list):
        out = copy.copy(x)
        out.layers = [copy.copy(layer) for layer in x.layers]
        for layer in out.layers:
            for name in ("keys", "values"):
                if isinstance(getattr(layer, name, None), torch.Tensor):
                    setattr(layer, name, _fake(getattr(layer, name)))
        return out
    return x


def _explain(exc: Exception) -> str:
    return f"Inductor could not compile the call for a fake cuda device: {type(exc).__name__}: {str(exc)[:400]}"
