"""Copy workload: contiguous and strided copies (``.contiguous()`` of a permuted view, or of an expanded one: a source
that repeats), cat, index_select (the gather behind ``F.embedding``) and index_add_ (the scatter-add MoE loops combine
experts with), in runs of ``run`` elements.

A ``contiguous=False`` cat is built as decoder layers make one: rank-``dims`` pieces ``[outer…, seq_i, run]`` joined
along the sequence dim, the largest first and contiguous (a KV cache), every other piece a transposed slice of a
wider buffer (a fused QKV projection's key, ``run`` elements contiguous); a single piece is itself the strided one."""

from __future__ import annotations

import dataclasses
import math

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, float_dtype, values
from kernelcast.features.ops.copy import CopyDesc


def strided_pieces(desc: CopyDesc) -> tuple[tuple[int, ...], list[int], int]:
    """(outer dims, sequence length of each piece, strided pieces from index) of a ``contiguous=False`` cat: pieces
    ``[*outer, seq_i, run]``, the largest first; the others share the rest equally."""
    n, d = desc.inputs, desc.run
    small = (desc.elements - desc.largest) // (n - 1) if n > 1 else desc.largest
    outer = math.gcd(desc.largest, small) // d
    seqs = [desc.largest // (outer * d)] + [small // (outer * d)] * (n - 1)
    dims = (outer,) if desc.dims == 3 else _split(outer) if desc.dims == 4 else ()
    return dims, seqs, 0 if n == 1 else 1


def strided_cat_inputs(desc: CopyDesc, make) -> list:
    """The pieces of a ``contiguous=False`` cat, tensors from ``make(shape, seed)``: the largest contiguous, each
    other one ``[s, *outer, 2·run]`` sliced to ``run`` with its sequence dim moved next to last."""
    outer, seqs, first = strided_pieces(desc)
    pieces = [make((*outer, seqs[0], desc.run), 1)] if first else []
    for i, s in enumerate(seqs[first:]):
        pieces.append(make((s, *outer, 2 * desc.run), 2 + i)[..., : desc.run].movedim(0, -2))
    return pieces


def repeated_source(desc: CopyDesc, make):
    """The view an ``expand`` copy makes contiguous, from ``make(shape)``: the distinct elements as a strided copy's
    source (``[b, a, run]``, rows ``a`` apart, or one run) with a stride-0 dim of ``expand`` inserted after the
    outermost one (``[b, expand, a, run]``): each block of ``a`` runs is written ``expand`` times in a row, as
    repeat_kv writes each KV head's cache once per query head of its group. A prime count of runs gives ``a = 1``:
    ``b`` contiguous runs, each repeated, which is repeat_kv's own layout when a run is one head's whole cache."""
    distinct = desc.elements // desc.expand
    runs = distinct // desc.run
    if runs == 1:
        return make((1, desc.run))[:, None].expand(1, desc.expand, desc.run)
    a, b = _split(runs)
    src = make((a, b, desc.run)).transpose(0, 1)
    return src[:, None].expand(b, desc.expand, a, desc.run)


def _split(runs: int) -> tuple[int, int]:
    """runs = a·b with a the largest divisor not above sqrt(runs): the permuted view's two outer dims."""
    a = max(d for d in range(1, int(runs**0.5) + 1) if runs % d == 0)
    return a, runs // a


class TorchCopy(BackendBase):
    name = "torch"

    def supports(self, desc: CopyDesc, device=None) -> str | None:
        runs = desc.elements // desc.run // desc.expand
        if desc.fn == "copy" and desc.expand == 1 and runs > 1 and _split(runs)[0] == 1:
            return f"a strided copy needs (distinct) elements/run={runs} with a divisor in [2, sqrt]; it is prime"
        if desc.fn == "cat" and not desc.contiguous:
            small = (desc.elements - desc.largest) // max(desc.inputs - 1, 1)
            if (
                desc.dims < 3
                or desc.largest % desc.run
                or small % desc.run
                or small * (desc.inputs - 1) + desc.largest != desc.elements
            ):
                return (
                    f"a strided cat is measured on rank 3-4 pieces of whole runs: dims={desc.dims}, run={desc.run} "
                    f"dividing largest={desc.largest} and the other pieces' equal share of elements={desc.elements}"
                )
            outer, seqs, first = strided_pieces(desc)
            if math.prod(outer) * seqs[first] == 1:
                return "a strided piece of one row is contiguous to torch; nothing to measure"
            return None
        if desc.fn == "cat" and (desc.elements // desc.run) % desc.inputs:
            return f"cat of {desc.inputs} pieces needs elements/run={runs} divisible by inputs"
        if desc.fn == "scatter_add" and desc.dtype not in ("fp32", "bf16", "fp16"):
            return f"scatter_add is measured on fp32/bf16/fp16; got {desc.dtype!r}"
        return None

    def class_key(self, desc: CopyDesc) -> tuple:
        return ("copy", desc.fn, desc.dtype, desc.run == desc.elements, desc.contiguous, desc.expand > 1)

    @staticmethod
    def small(desc: CopyDesc) -> CopyDesc:
        if not desc.contiguous:  # the same layout at 2 outer rows, pieces of 3 and 2 rows
            piece = 2 * 2 * desc.run
            return dataclasses.replace(desc, elements=piece * (3 + 2 * (desc.inputs - 1)), largest=piece * 3)
        run = min(desc.run, 96)
        runs = 12 * desc.inputs
        expand = min(desc.expand, 3)
        return dataclasses.replace(
            desc, elements=run * runs * expand, run=run, table_rows=min(desc.table_rows, 50),
            largest=run * runs * expand // desc.inputs, expand=expand,
        )  # fmt: skip

    def tolerance_dtype(self, small: CopyDesc) -> str:
        return float_dtype(small.dtype)

    def build(self, desc: CopyDesc):
        import torch

        runs = desc.elements // desc.run
        if desc.fn == "copy" and desc.expand > 1:
            view = repeated_source(desc, lambda shape: values(shape, desc.dtype, seed=1))
            return lambda: view.contiguous(), lambda: view.double().contiguous()
        if desc.fn == "copy":
            a, b = _split(runs)
            src = (
                values((a, b, desc.run), desc.dtype, seed=1).transpose(0, 1)
                if runs > 1
                else values((desc.elements,), desc.dtype, seed=1)
            )
            return (lambda: src.contiguous()) if runs > 1 else (lambda: src.clone()), lambda: src.double().contiguous()
        if desc.fn == "cat" and not desc.contiguous:
            pieces = strided_cat_inputs(desc, lambda shape, seed: values(shape, desc.dtype, seed=seed))
            return lambda: torch.cat(pieces, dim=-2), lambda: torch.cat([p.double() for p in pieces], dim=-2)
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
