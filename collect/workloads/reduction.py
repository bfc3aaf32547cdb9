"""Reduction workload: PyTorch's eager reductions, softmax, norms, cumsum, sort and topk over [outer, reduce, inner]."""

from __future__ import annotations

import dataclasses

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, randn, torch_dtype
from kernelcast.features.ops.reduction import ReductionDesc

#: fns that take an accumulation dtype (out_dtype may differ from dtype)
WIDENING = ("sum", "mean", "softmax", "log_softmax", "cumsum")


def _call(fn: str, x, dim: int, k: int, out, params):
    import torch
    import torch.nn.functional as F

    table = {
        "sum": lambda: torch.sum(x, dim, dtype=out),
        "mean": lambda: torch.mean(x, dim, dtype=out),
        "amax": lambda: torch.amax(x, dim),
        "amin": lambda: torch.amin(x, dim),
        "argmax": lambda: torch.argmax(x, dim),
        "var": lambda: torch.var(x, dim),
        "norm": lambda: torch.linalg.vector_norm(x, dim=dim),
        "softmax": lambda: torch.softmax(x, dim, dtype=out),
        "log_softmax": lambda: torch.log_softmax(x, dim, dtype=out),
        "layer_norm": lambda: F.layer_norm(x, (x.shape[-1],), *params),
        "rms_norm": lambda: F.rms_norm(x, (x.shape[-1],), *params),
        "cumsum": lambda: torch.cumsum(x, dim, dtype=out),
        "sort": lambda: torch.sort(x, dim)[0],
        "topk": lambda: torch.topk(x, k, dim)[0],
    }
    return table[fn]


class TorchReduction(BackendBase):
    name = "torch"

    def supports(self, desc: ReductionDesc, device=None) -> str | None:
        if desc.out_dtype != desc.dtype and desc.fn not in WIDENING:
            return f"{desc.fn!r} writes its input dtype {desc.dtype!r}; got out_dtype {desc.out_dtype!r}"
        return None

    def class_key(self, desc: ReductionDesc) -> tuple:
        return ("reduction", desc.fn, desc.dtype, desc.out_dtype, desc.inner == 1)

    @staticmethod
    def small(desc: ReductionDesc) -> ReductionDesc:
        red = max(min(desc.reduce, 1000), 8)  # var of one element is NaN: the check needs a few
        return dataclasses.replace(desc, outer=3, reduce=red, inner=min(desc.inner, 5), k=min(desc.k, 4))

    def build(self, desc: ReductionDesc):
        shape = (desc.outer, desc.reduce) if desc.inner == 1 else (desc.outer, desc.reduce, desc.inner)
        x = randn(shape, desc.dtype, seed=1)
        params = []
        if desc.fn in ("layer_norm", "rms_norm"):
            params = [randn((desc.reduce,), desc.dtype, seed=2)]
            if desc.fn == "layer_norm":
                params.append(randn((desc.reduce,), desc.dtype, seed=3))
        out = torch_dtype(desc.out_dtype)
        call = _call(desc.fn, x, 1, desc.k, out, params)
        ref = _call(desc.fn, x.double(), 1, desc.k, None, [p.double() for p in params])
        return call, lambda: ref().double()


register("reduction", TorchReduction())
