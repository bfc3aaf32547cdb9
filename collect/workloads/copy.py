"""Copy workload: contiguous and strided copies (``.contiguous()`` of a permuted view), cat, index_select (the gather
behind ``F.embedding``) and index_add_ (the scatter-add MoE loops combine experts with), in runs of ``run`` elements."""

from __future__ import annotations

import dataclasses

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, float_dtype, values
from kernelcast.features.ops.copy import CopyDesc


def _split(runs: int) -> tuple[int, int]:
    """runs = a·b with a the largest divisor not above sqrt(runs): the permuted view's two outer dims."""
    a = max(d for d in range(1, int(runs**0.5) + 1) if runs % d == 0)
    return a, runs // a


class TorchCopy(BackendBase):
    name = "torch"

    def supports(self, desc: CopyDesc, device=None) -> str | None:
        runs = desc.elements // desc.run
        if desc.fn == "copy" and runs > 1 and _split(runs)[0] == 1:
            return f"a strided copy needs elements/run={runs} with a divisor in [2, sqrt]; it is prime"
        if desc.fn == "cat" and (desc.elements // desc.run) % desc.inputs:
            return f"cat of {desc.inputs} pieces needs elements/run={runs} divisible by inputs"
        if desc.fn == "scatter_add" and desc.dtype not in ("fp32", "bf16", "fp16"):
            return f"scatter_add is measured on fp32/bf16/fp16; got {desc.dtype!r}"
        return None

    def class_key(self, desc: CopyDesc) -> tuple:
        return ("copy", desc.fn, desc.dtype, desc.run == desc.elements)

    @staticmethod
    def small(desc: CopyDesc) -> CopyDesc:
        run = min(desc.run, 96)
        runs = 12 * desc.inputs
        return dataclasses.replace(desc, elements=run * runs, run=run, table_rows=min(desc.table_rows, 50))

    def tolerance_dtype(self, small: CopyDesc) -> str:
        return float_dtype(small.dtype)

    def build(self, desc: CopyDesc):
        import torch

        runs = desc.elements // desc.run
        if desc.fn == "copy":
            a, b = _split(runs)
            src = (
                values((a, b, desc.run), desc.dtype, seed=1).transpose(0, 1)
                if runs > 1
                else values((desc.elements,), desc.dtype, seed=1)
            )
            return (lambda: src.contiguous()) if runs > 1 else (lambda: src.clone()), lambda: src.double().contiguous()
        if desc.fn == "cat":
            rows = runs // desc.inputs
            pieces = [values((rows, desc.run), desc.dtype, seed=1 + i) for i in range(desc.inputs)]
            return lambda: torch.cat(pieces, dim=1), lambda: torch.cat([p.double() for p in pieces], dim=1)
        gen = torch.Generator(device="cuda").manual_seed(7)
        idx = torch.randint(0, desc.table_rows, (runs,), device="cuda", generator=gen)
        if desc.fn == "gather":
            table = values((desc.table_rows, desc.run), desc.dtype, seed=1)
            return lambda: torch.index_select(table, 0, idx), lambda: torch.index_select(table.double(), 0, idx)
        src = values((runs, desc.run), desc.dtype, seed=2)
        out = torch.zeros((desc.table_rows, desc.run), device="cuda", dtype=src.dtype)
        return (
            lambda: out.index_add_(0, idx, src),  # accumulates over calls: no zeroing kernel in the timed call
            lambda: torch.zeros(out.shape, device="cuda", dtype=torch.float64).index_add_(0, idx, src.double()),
        )


register("copy", TorchCopy())
