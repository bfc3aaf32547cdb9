"""Helpers shared by the workloads: torch dtypes, seeded inputs, the output check and its tolerances."""

from __future__ import annotations

from typing import Any

#: max |out - ref| / max |ref| allowed per dtype against a float64 reference of the same inputs
TOLERANCE = {"fp32": 1e-4, "tf32": 5e-3, "bf16": 2e-2, "fp16": 1e-2, "fp8_e4m3": 2e-2}
#: attention and MoE round intermediates (P, the activation) to the input dtype: looser
TOLERANCE_FUSED = {"bf16": 4e-2, "fp16": 2e-2}


def unsupported(reason: str) -> Exception:
    """The exception a backend raises for a description it cannot run (the worker records ``unsupported``)."""
    try:
        from kernelcast.collect.worker import Unsupported
    except ImportError:
        return NotImplementedError(reason)
    return Unsupported(reason)


def torch_dtype(name: str):
    import torch

    table = {
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "fp8_e4m3": torch.float8_e4m3fn,
        "fp8_e5m2": torch.float8_e5m2,
        "int64": torch.int64,
        "int32": torch.int32,
        "bool": torch.bool,
    }
    if name not in table:
        raise ValueError(f"dtype must be one of {', '.join(table)}; got {name!r}")
    return table[name]


def randn(shape: tuple[int, ...], dtype: str, scale: float = 1.0, seed: int = 0, device: str = "cuda"):
    """Seeded normal inputs on the GPU in ``dtype`` (fp8 drawn in bf16, then cast); on ``device="meta"``
    an empty meta tensor of that shape and dtype (for compiling without a GPU call)."""
    import torch

    if device == "meta":
        return torch.empty(shape, device="meta", dtype=torch_dtype(dtype))
    gen = torch.Generator(device="cuda").manual_seed(seed)
    draw = (
        torch.float32
        if dtype in ("fp32", "tf32")
        else torch.bfloat16
        if dtype.startswith("fp8")
        else torch_dtype(dtype)
    )
    x = torch.randn(shape, device="cuda", dtype=draw, generator=gen)
    if scale != 1.0:
        x.mul_(scale)
    return x.to(torch_dtype(dtype))


def values(shape: tuple[int, ...], dtype: str, seed: int = 0):
    """Seeded inputs of any dtype a memory-bound kernel moves: normal floats, integers in [-8, 8), random bools."""
    import torch

    if dtype in ("int64", "int32"):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        return torch.randint(-8, 8, shape, device="cuda", dtype=torch_dtype(dtype), generator=gen)
    if dtype == "bool":
        return randn(shape, "bf16", seed=seed) > 0
    return randn(shape, dtype, seed=seed)


def compare(out: Any, ref: Any, dtype: str, fused: bool = False) -> str | None:
    """None when ``out`` matches the float64 ``ref`` within the dtype's tolerance, else what differs."""
    import torch

    tol = (TOLERANCE_FUSED if fused else TOLERANCE)[dtype]
    if tuple(out.shape) != tuple(ref.shape):
        return f"output shape {tuple(out.shape)} differs from the reference's {tuple(ref.shape)}"
    diff = (out.double() - ref).abs().max().item()
    scale = max(ref.abs().max().item(), 1e-12)
    if not torch.isfinite(out.double()).all().item() or diff / scale > tol:
        return (
            f"output differs from the float64 reference: max |err| / max |ref| = {diff / scale:.3g} > {tol:g} ({dtype})"
        )
    return None


def float_dtype(*dtypes: str) -> str:
    """The first of ``dtypes`` with a tolerance (bool and integer outputs are compared at fp32's)."""
    return next((d for d in dtypes if d in TOLERANCE), "fp32")


def divisible_16(x: int) -> tuple[bool, bool]:
    """How Triton specializes an integer argument: divisible by 16, or equal to 1."""
    return x % 16 == 0, x == 1


class BackendBase:
    """What every backend shares: ``prepare`` from ``build``, and the once-per-shape-class output check.

    A subclass sets ``name`` and defines ``supports(desc, device)``, ``build(desc) -> (call,
    reference)`` (reference() = float64 result of the same inputs), ``class_key(desc)`` and
    ``small(desc)`` (a small description of the same shape class).
    """

    name = ""
    fused = False  # intermediates rounded to the input dtype: looser tolerance

    def prepare(self, desc: Any):
        reason = self.supports(desc, None)
        if reason:
            raise unsupported(reason)
        return self.build(desc)[0]

    def compile_key(self, desc: Any) -> tuple | None:
        """What the backend's Triton kernels specialize on (one compile per key); None: nothing to compile."""
        return None

    def compile_only(self, desc: Any) -> None:
        """Compile ``desc``'s Triton kernels into the on-disk cache without running anything: the call is
        built on meta tensors, whose launches go through ``JITFunction.warmup`` (``kernels.launch``)."""
        self.build(desc, device="meta")[0]()

    def check(self, desc: Any) -> str | None:
        """Run a small description of ``desc``'s shape class and compare with float64; None when it matches."""
        small = self.small(desc)
        call, reference = self.build(small)
        return compare(call(), reference(), self.tolerance_dtype(small), self.fused)

    def tolerance_dtype(self, small: Any) -> str:
        """The dtype whose tolerance the output check uses (families with integer or bool outputs override it)."""
        return small.dtype
