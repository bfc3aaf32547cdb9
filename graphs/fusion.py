"""Fusion benefit: one call predicted eager and compiled, side by side per region — which eager kernels each fused
kernel replaces, what each costs, and the predicted speedup.

Matching: an eager GEMM or attention kernel is the compiled call's next extern kernel of that family, in order. Any
other eager kernel (aten op ``aten.mul.Tensor``) goes to a fused kernel whose region holds that op: the region's
Source Nodes name each graph node it computed (``mul_4``: an ``aten.mul``), so a fused kernel takes as many eager
``mul`` kernels as it has ``mul`` nodes; among those with room left, the first at or after the previous match (the
two calls run in nearly the same order), else the nearest before. An eager kernel no region holds is listed as
removed (Inductor turned it into a view, or it became dead code).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from kernelcast.graphs.predict import WorkloadPrediction, predict_module

EXTERN = ("gemm", "attention", "moe", "collective")
FUSION_COLUMNS = ("kernel", "family", "compile_us", "eager_kernels", "eager_us", "saved_us", "eager_ops", "region")


@dataclass(frozen=True)
class FusionPrediction:
    """A call's eager and compiled predictions and the region-by-region table between them."""

    eager: WorkloadPrediction = field(repr=False)
    compiled: WorkloadPrediction = field(repr=False)
    table: pd.DataFrame = field(repr=False)

    @property
    def speedup(self) -> float:
        """Predicted device-time speedup of the compiled call over the eager one."""
        return self.eager.device_us / self.compiled.device_us if self.compiled.device_us > 0 else float("nan")

    @property
    def wall_speedup(self) -> float:
        return self.eager.wall_us / self.compiled.wall_us if self.compiled.wall_us > 0 else float("nan")

    def totals(self) -> dict[str, float]:
        e, c = self.eager, self.compiled
        return {
            "eager_device_us": e.device_us,
            "compile_device_us": c.device_us,
            "eager_wall_us": e.wall_us,
            "compile_wall_us": c.wall_us,
            "eager_kernels": int((e.kernels["model"] != "unmapped").sum()),
            "compile_kernels": int((c.kernels["model"] != "unmapped").sum()),
            "speedup": self.speedup,
            "wall_speedup": self.wall_speedup,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.compiled.gpu,
            **self.totals(),
            "regions": self.table.to_dict(orient="records"),
            "eager_unmapped": self.eager.unmapped["aten_op"].tolist(),
            "compile_unmapped": self.compiled.unmapped["aten_op"].tolist(),
            "assumptions": list(dict.fromkeys((*self.eager.assumptions, *self.compiled.assumptions))),
        }


def _op(aten_op: str) -> str:
    """``aten.mul.Tensor`` -> ``mul``; ``sdpa`` stays."""
    parts = str(aten_op).split(".")
    return parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[0]


def _capacity(region: str) -> dict[str, int]:
    """Graph nodes per aten op a fused kernel computed, from its Source Nodes (``mul_4`` -> mul)."""
    out: dict[str, int] = {}
    for node in (n.strip() for n in str(region).split(",")):
        if node:
            base = re.sub(r"_\d+$", "", node)
            out[base] = out.get(base, 0) + 1
    return out


def match(eager: pd.DataFrame, compiled: pd.DataFrame) -> list[int | None]:
    """For each eager kernel row, the position of the compiled row that replaces it (None: none does)."""
    fams = compiled["family"].tolist()
    ops = [{_op(a) for a in aten} if isinstance(aten, list) else set() for aten in compiled["aten"]]
    room = [_capacity(r) if f == "fused" else {} for r, f in zip(compiled["region"], fams)]
    taken = [False] * len(compiled)
    out: list[int | None] = []
    cursor = 0
    for fam, aten_op in zip(eager["family"], eager["aten_op"]):
        if fam in EXTERN:
            pick = next((j for j, f in enumerate(fams) if f == fam and not taken[j]), None)
            if pick is not None:
                taken[pick] = True
        else:
            op = _op(aten_op)
            cands = [j for j, f in enumerate(fams) if f == "fused" and op in ops[j]]
            roomy = [j for j in cands if room[j].get(op, 0) > 0] or cands
            pick = min(roomy, key=lambda j: (j < cursor, abs(j - cursor))) if roomy else None
            if pick is not None and room[pick].get(op, 0) > 0:
                room[pick][op] -= 1
        out.append(pick)
        cursor = pick if pick is not None else cursor
    return out


def fusion_table(eager: WorkloadPrediction, compiled: WorkloadPrediction) -> pd.DataFrame:
    """One row per compiled kernel (launch order) with the eager kernels it replaces, then one row of the eager
    kernels no compiled kernel replaces; µs are predicted device times."""
    e = eager.kernels[eager.kernels["model"] != "unmapped"].reset_index(drop=True)
    c = compiled.kernels.reset_index(drop=True)
    where = match(e, c)
    rows = []
    for j, r in c.iterrows():
        mine = e[[w == j for w in where]]
        lat = float(r["latency_us"]) if r["model"] != "unmapped" else float("nan")
        rows.append(_row(str(r["kernel"]), r["family"] or "unmapped", lat, mine, str(r["region"])))
    lost = e[[w is None for w in where]]
    if len(lost):
        rows.append(_row("(no compiled kernel)", "-", 0.0, lost, "eager kernels Inductor removed or made views"))
    return pd.DataFrame(rows, columns=list(FUSION_COLUMNS))


def _row(kernel: str, family: str, compile_us: float, eager: pd.DataFrame, region: str) -> dict:
    eager_us = float(eager["latency_us"].astype(float).sum())
    names = eager["aten_op"].map(_op).value_counts()
    return {
        "kernel": kernel,
        "family": family,
        "compile_us": compile_us,
        "eager_kernels": len(eager),
        "eager_us": eager_us,
        "saved_us": eager_us - compile_us if compile_us == compile_us else float("nan"),
        "eager_ops": ", ".join(f"{n}x{c}" if c > 1 else n for n, c in names.items()),
        "region": region,
    }


def predict_fusion(
    fn: Callable,
    args: tuple = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    gpu: str,
    options: Mapping[str, Any] | None = None,
    cuda_graph: bool = False,
    compile_fn: Callable | None = None,
    compile_args: tuple | None = None,
) -> FusionPrediction:
    """``fn(*args, **kwargs)`` predicted eager and compiled on ``gpu``, with the table between them. ``compile_fn``
    and ``compile_args``: compile this pure form of the same call instead (a decoder layer's ``functional_layer``)."""
    if compile_fn is None:
        compiled = predict_module(fn, args, kwargs, gpu=gpu, mode="compile", options=options, cuda_graph=cuda_graph)
    else:
        compiled = predict_module(compile_fn, tuple(compile_args or ()), gpu=gpu, mode="compile", options=options,
                                  cuda_graph=cuda_graph)  # fmt: skip
    eager = predict_module(fn, args, kwargs, gpu=gpu, cuda_graph=cuda_graph)  # after: an eager call grows a KV cache
    return FusionPrediction(eager, compiled, fusion_table(eager, compiled))


def predict_layer_fusion(
    model: str,
    *,
    gpu: str,
    phase: str = "prefill",
    batch: int = 1,
    seq: int = 1,
    context: int = 0,
    tp: int = 1,
    options: Mapping[str, Any] | None = None,
    cuda_graph: bool = False,
) -> FusionPrediction:
    """Layer 0 of ``model`` (a shipped config name or a config.json path; its main layer: MoE where it has one) for
    one phase, eager against compiled, the layer built and compiled as the GPU collector compiled it."""
    from kernelcast.features import layers

    m = layers.build_model(layers.shard(layers.load_config(model), tp))
    call = layers.layer_call(m, phase, batch, seq, context)
    fn, tensors = layers.functional_layer(call)
    try:
        return predict_fusion(
            call.fn,
            call.args,
            call.kwargs,
            gpu=gpu,
            options=options,
            cuda_graph=cuda_graph,
            compile_fn=fn,
            compile_args=tuple(tensors),
        )
    finally:
        call.after()


__all__ = ["FUSION_COLUMNS", "FusionPrediction", "fusion_table", "match", "predict_fusion", "predict_layer_fusion"]
