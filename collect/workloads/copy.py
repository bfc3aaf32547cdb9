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
from kernelcast.features.ops.copy import CopyDesc, default_stride, split_runs


def strided_pieces(desc: CopyDesc) -> tuple[tuple[int, ...], list[int], int]:
    """(outer dims, sequence length of each piece, strided pieces from index) of a ``contiguous=False`` cat: pieces
    ``[*outer, seq_i, run]``, the largest first; the others share the rest equally."""
    n, d = desc.inputs, desc.run
    small = (desc.elements - desc.largest) // (n - 1) if n > 1 else desc.largest
    outer = math.gcd(desc.largest, small) // d
    seqs = [desc.largest // (outer * d)] + [small // (outer * d)] * (n - 1)
    dims = (outer,) if desc.dims == 3 else split_runs(outer) if desc.dims == 4 else ()
    return dims, seqs, 0 if n == 1 else 1


def strided_cat_inputs(desc: CopyDesc, make) -> list:
    """The pieces of a ``contiguous=False`` cat, tensors from ``make(shape, seed)``: the largest contiguous, each
    other one ``[s, *outer, 2·run]`` sliced to ``run`` with its sequence dim moved next to last."""
    outer, seqs, first = strided_pieces(desc)
    pieces = [make((*outer, seqs[0], desc.run), 1)] if first else []
    for i, s in enumerate(seqs[first:]):
        pieces.append(make((s, *outer, 2 * desc.run), 2 + i)[..., : desc.run].movedim(0, -2))
    return pieces


def transposed_source(desc: CopyDesc, make):
    """The strided view a plain copy makes contiguous, from ``make(shape)``: ``[a, b, run]`` transposed to ``[b, a,
    run]``, consecutive runs ``stride = b·run`` apart, rows of ``a`` runs (one run: the flat source)."""
    distinct = desc.elements // desc.expand
    if distinct == desc.run:
        return make((1, 1, desc.run))
    b = desc.stride // desc.run
    return make((distinct // desc.stride, b, desc.run)).transpose(0, 1)


def repeated_source(desc: CopyDesc, make):
    """The view an ``expand`` copy makes contiguous, from ``make(shape)``: ``transposed_source`` with a stride-0 dim of
    ``expand`` inserted after the outermost one (``[b, expand, a, run]``): each row of ``a`` runs is written ``expand``
    times in a row, as repeat_kv writes each KV head's cache once per query head of its group. Rows of one run (``a =
    1``) are repeat_kv's own layout when a run is one head's whole cache."""
    src = transposed_source(desc, make)
    return src[:, None].expand(src.shape[0], desc.expand, *src.shape[1:])


def _layout_problem(desc: CopyDesc) -> str | None:
    """Why ``transposed_source`` cannot build this copy's stride, or None."""
    distinct = desc.elements // desc.expand
    if distinct > desc.run and (desc.stride % desc.run or distinct % desc.stride):
        return (
            f"a strided copy is measured as a transposed [a, b, run] source: stride={desc.stride} must be a multiple "
            f"of run={desc.run} and divide the distinct elements {distinct}"
        )
    return None


def _small_stride(desc: CopyDesc, run: int, runs: int) -> int:
    """The output check's stride at ``runs`` runs of ``run``: the same kind of layout as ``desc``'s (rows of one run,
    one contiguous block, or rows of several runs); a cat, gather or scatter-add keeps the default."""
    if desc.fn != "copy":
        return default_stride(run * runs, run)
    if desc.stride >= desc.elements // desc.expand:
        return run * runs
    return run if desc.stride == desc.run else run * 3


class TorchCopy(BackendBase):
    name = "torch"

    def supports(self, desc: CopyDesc, device=None) -> str | None:
        runs = desc.elements // desc.run // desc.expand
        if desc.fn == "copy" and (problem := _layout_problem(desc)):
            return problem
        if desc.fn == "copy" and desc.expand == 1 and runs > 1 and desc.stride in (desc.run, desc.elements):
            return f"a copy with stride={desc.stride} (run {desc.run}, elements {desc.elements}) is contiguous to torch"
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
            elements = piece * (3 + 2 * (desc.inputs - 1))
            return dataclasses.replace(
                desc, elements=elements, largest=piece * 3, stride=default_stride(elements, desc.run)
            )
        run = min(desc.run, 96)
        runs = 12 * desc.inputs
        expand = min(desc.expand, 3)
        return dataclasses.replace(
            desc, elements=run * runs * expand, run=run, table_rows=min(desc.table_rows, 50),
            largest=run * runs * expand // desc.inputs, expand=expand, stride=_small_stride(desc, run, runs),
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
            src = transposed_source(desc, lambda shape: values(shape, desc.dtype, seed=1))
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
