"""GEMM workload: cuBLAS through torch (matmul, F.linear, bmm, _scaled_mm) and kernelcast's Triton GEMM."""

from __future__ import annotations

import dataclasses
import functools

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, divisible_16, randn
from kernelcast.features.ops.gemm import GemmDesc, default_out_dtype

CUBLAS_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8_e4m3")
TRITON_DTYPES = ("bf16", "fp16")


def _operands(desc: GemmDesc, device: str = "cuda"):
    """A [b?, m, k] and B as [b?, k, n] (nn) or W [b?, n, k] (nt), seeded, scaled to keep sums O(1)."""
    lead = (desc.batch,) if desc.batch > 1 else ()
    b_shape = (desc.k, desc.n) if desc.layout == "nn" else (desc.n, desc.k)
    a = randn(lead + (desc.m, desc.k), desc.dtype, seed=1, device=device)
    b = randn(lead + b_shape, desc.dtype, seed=2, device=device)
    return a, b


def _reference(a, b, layout: str):
    def ref():
        b64 = b.double() if layout == "nn" else b.double().transpose(-1, -2)
        return a.double() @ b64

    return ref


def _small(desc: GemmDesc) -> GemmDesc:
    """A small GEMM of the same compile class: ragged m exercises the row masks; n and k keep the description's
    alignment (a multiple of 16 or not), since Triton compiles, and allocates shared memory for, another variant
    for each (with an aligned k the check once refused 381 ragged-k rows that would have run); fp8 needs
    n % 16 == 0."""
    n = 144 if desc.dtype.startswith("fp8") or desc.n % 16 == 0 else 131
    k = 272 if desc.k % 16 == 0 else 269
    return dataclasses.replace(desc, m=64 if desc.dtype.startswith("fp8") else 67, n=n, k=k, batch=min(desc.batch, 2))


class Cublas(BackendBase):
    """cuBLAS via torch: matmul (nn), F.linear (nt), bmm (batch > 1), _scaled_mm (fp8, nt)."""

    name = "cublas"

    def supports(self, desc: GemmDesc, device=None) -> str | None:
        if desc.dtype not in CUBLAS_DTYPES:
            return f"cublas backend measures dtypes {', '.join(CUBLAS_DTYPES)}; got {desc.dtype!r}"
        if desc.dtype == "fp8_e4m3":
            if desc.layout != "nt" or desc.batch != 1:
                return "fp8 GEMM via torch._scaled_mm needs layout 'nt' and batch 1"
            if desc.k % 16 or desc.n % 16:
                return f"torch._scaled_mm needs k and n multiples of 16; got k={desc.k}, n={desc.n}"
        elif desc.out_dtype != default_out_dtype(desc.dtype):
            return f"cublas {desc.dtype} GEMM writes {default_out_dtype(desc.dtype)}; got out_dtype {desc.out_dtype!r}"
        return None

    def class_key(self, desc: GemmDesc) -> tuple:
        return ("gemm", self.name, desc.dtype, desc.layout, desc.batch > 1, desc.out_dtype)

    small = staticmethod(_small)

    def build(self, desc: GemmDesc):
        import torch
        import torch.nn.functional as F

        a, b = _operands(desc)
        if desc.dtype == "fp8_e4m3":
            one = torch.ones((), device="cuda", dtype=torch.float32)
            out = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[desc.out_dtype]
            fn = functools.partial(torch._scaled_mm, a, b.t(), scale_a=one, scale_b=one, out_dtype=out)
        elif desc.batch > 1:
            fn = functools.partial(torch.bmm, a, b if desc.layout == "nn" else b.transpose(1, 2))
        else:
            fn = functools.partial(torch.matmul, a, b) if desc.layout == "nn" else functools.partial(F.linear, a, b)
        tf32 = desc.dtype == "tf32"

        def call():
            torch.backends.cuda.matmul.allow_tf32 = tf32
            return fn()

        return call, _reference(a, b, desc.layout)


class TritonGemm(BackendBase):
    """kernelcast's Triton GEMM with the description's explicit config (split-K adds a reduction kernel)."""

    name = "triton"

    def supports(self, desc: GemmDesc, device=None) -> str | None:
        if desc.dtype not in TRITON_DTYPES:
            return f"triton GEMM measures dtypes {', '.join(TRITON_DTYPES)}; got {desc.dtype!r}"
        if desc.out_dtype != desc.dtype:
            return f"triton GEMM writes its input dtype {desc.dtype!r}; got out_dtype {desc.out_dtype!r}"
        return None

    def class_key(self, desc: GemmDesc) -> tuple:
        return ("gemm", self.name, desc.dtype, desc.layout, desc.batch > 1, desc.config)

    def compile_key(self, desc: GemmDesc) -> tuple:
        batched = desc.batch > 1
        return (
            self.class_key(desc),
            divisible_16(desc.n),
            divisible_16(desc.k),
            divisible_16(desc.m * desc.k) if batched else None,
        )

    small = staticmethod(_small)

    def build(self, desc: GemmDesc, device: str = "cuda"):
        import torch

        from kernelcast.collect.kernels import triton_gemm

        a, b = _operands(desc, device)
        cfg = dict(desc.config)
        bt = b if desc.layout == "nn" else b.transpose(-1, -2)
        lead = (desc.batch,) if desc.batch > 1 else ()
        full = torch.empty(lead + (desc.m, -(-desc.n // 16) * 16), device=device, dtype=a.dtype)
        out = full[..., : desc.n]  # row stride padded to 16: one compile for any n
        ws = None
        if cfg["split_k"] > 1:
            ws = torch.empty((cfg["split_k"],) + full.shape, device=device, dtype=torch.float32)
        call = functools.partial(triton_gemm.matmul, a, bt, out, cfg, ws)
        return call, _reference(a, b, desc.layout)


class GroupedMm(BackendBase):
    """``torch._grouped_mm`` as Hugging Face's MoE experts call it: A[batch·m, k] against W[batch, n, k]ᵀ, groups of m
    rows (offsets every m), bf16 in and out."""

    name = "grouped"

    def supports(self, desc: GemmDesc, device=None) -> str | None:
        if desc.dtype != "bf16" or desc.out_dtype != "bf16" or desc.layout != "nt":
            return f"grouped GEMM measures bf16 in/out, layout nt; got {desc.dtype}/{desc.out_dtype}/{desc.layout}"
        if desc.k % 8 or desc.n % 8:
            return f"torch._grouped_mm needs k and n multiples of 8 (16 B rows); got k={desc.k}, n={desc.n}"
        return None

    def class_key(self, desc: GemmDesc) -> tuple:
        return ("gemm", self.name, desc.dtype)

    @staticmethod
    def small(desc: GemmDesc) -> GemmDesc:
        return dataclasses.replace(desc, m=37, n=136, k=264, batch=min(desc.batch, 4))

    def build(self, desc: GemmDesc):
        import torch

        a = randn((desc.batch * desc.m, desc.k), desc.dtype, seed=1)
        w = randn((desc.batch, desc.n, desc.k), desc.dtype, seed=2, scale=desc.k**-0.5)
        offs = torch.arange(1, desc.batch + 1, device="cuda", dtype=torch.int32) * desc.m
        bt = w.transpose(-1, -2)

        def ref():
            return torch.cat(
                [a[i * desc.m : (i + 1) * desc.m].double() @ bt[i].double() for i in range(desc.batch)], dim=0
            )

        return functools.partial(torch._grouped_mm, a, bt, offs=offs), ref


register("gemm", Cublas())
register("gemm", GroupedMm())
register("gemm", TritonGemm())
