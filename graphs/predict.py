"""``predict_module``: the kernels a PyTorch call launches on a GPU, each predicted, and the device and wall time.

Nothing runs on a GPU: the call runs on meta tensors under ``graphs.capture``, each aten op is lowered to kernel
descriptions (``graphs.lower``), every distinct description is predicted once (``predict_many``: the learned model
where one covers it, else the analytical one), and ``graphs.host`` adds the host launch path for the wall time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features.desc import parse_desc
from kernelcast.features.gpu import get_gpu
from kernelcast.features.ops import get_op
from kernelcast.graphs import host
from kernelcast.graphs.capture import Capture, capture, own_cache
from kernelcast.graphs.l2 import L2Reads
from kernelcast.graphs.lower import check_routing, lower, tensor_args
from kernelcast.graphs.zeros import ZeroRows, zero_operand_factor
from kernelcast.predictors.dispatch import predict_many

MODES = ("eager", "compile")
KERNEL_COLUMNS = (
    "aten_op",
    "family",
    "desc",
    "floor_us",
    "latency_us",
    "label_us",
    "low_us",
    "high_us",
    "bound",
    "model",
    "in_distribution",
    "share",
    "note",
)


@dataclass(frozen=True)
class WorkloadPrediction:
    """A whole call's prediction: device time (sum of kernels), wall time (with the host launch path), their 80%
    intervals (``workload_totals``), and one row per kernel."""

    gpu: str
    mode: str
    cuda_graph: bool
    device_us: float
    wall_us: float
    low_us: float  # the device time's 80% interval
    high_us: float
    wall_low_us: float  # the wall time's (graphs.host.WALL_BAND)
    wall_high_us: float
    kernels: pd.DataFrame = field(repr=False)
    assumptions: tuple[str, ...] = ()

    @property
    def unmapped(self) -> pd.DataFrame:
        return self.kernels[self.kernels["model"] == "unmapped"]

    def by_family(self) -> pd.DataFrame:
        k = self.kernels[self.kernels["model"] != "unmapped"]
        out = k.groupby("family").agg(kernels=("latency_us", "size"), device_us=("latency_us", "sum"))
        out["share"] = out["device_us"] / max(self.device_us, 1e-12)
        return out.sort_values("device_us", ascending=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "mode": self.mode,
            "cuda_graph": self.cuda_graph,
            "device_us": self.device_us,
            "wall_us": self.wall_us,
            "low_us": self.low_us,
            "high_us": self.high_us,
            "wall_low_us": self.wall_low_us,
            "wall_high_us": self.wall_high_us,
            "kernel_count": int((self.kernels["model"] != "unmapped").sum()),
            "unmapped": self.unmapped["aten_op"].tolist(),
            "assumptions": list(self.assumptions),
            "kernels": self.kernels.to_dict(orient="records"),
        }


def warm_aware(family: str | None) -> bool:
    """Whether ``family``'s descriptions say how much of a kernel's reads are warm in L2 (its model then answers for
    the kernel inside a call, and ``in_sequence`` leaves it alone)."""
    return family is not None and "warm_bytes" in get_op(family).fields


def kernel_descs(
    cap: Capture, gpu: str, routing: Any = "balanced"
) -> tuple[pd.DataFrame, list[tuple[int, str]], list[str]]:
    """Rows (one per kernel: op index, aten op, family, description key or the reason there is none); the (op index,
    family) of every captured op; the assumptions made. A warm-aware family's kernel carries the bytes of its reads
    an earlier kernel of the call left in L2 (``graphs.l2``)."""
    rows, fams, notes = [], [], []
    l2 = L2Reads(get_gpu(gpu).l2_bytes)
    zeros = ZeroRows()
    for i, rec in enumerate(cap.ops):
        low = lower(rec, gpu, routing)
        zero_rows = zeros.op(rec)
        if low.assumption and low.assumption not in notes:
            notes.append(low.assumption)
        if low.unmapped:
            rows.append({"op_index": i, "aten_op": low.op, "family": None, "desc": None, "note": low.unmapped})
            fams.append((i, "unmapped"))
        else:
            fams.append((i, low.descs[0]["op"] if low.descs else None))
        if low.unmapped or low.descs:  # a kernel runs: its reads may be warm, and what it touches is now in L2
            warm = l2.kernel(tensor_args(rec.args), list(rec.outputs))
        for j, d in enumerate(low.descs):
            full = {**d, "gpu": gpu}
            if j == 0 and warm and warm_aware(d["op"]):
                full["warm_bytes"] = warm
            try:
                key = parse_desc(full).key()
            except ValueError as exc:
                rows.append({"op_index": i, "aten_op": low.op, "family": d["op"], "desc": None, "note": str(exc)})
                continue
            rows.append(
                {"op_index": i, "aten_op": low.op, "family": d["op"], "desc": key, "note": low.assumption,
                 "zero_rows": zero_rows if d["op"] == "gemm" else 0.0}
            )  # fmt: skip
    columns = ["op_index", "aten_op", "family", "desc", "note", "zero_rows"]
    return pd.DataFrame(rows, columns=columns).fillna({"zero_rows": 0.0}), fams, notes


def kernel_table(
    cap: Capture, gpu: str, routing: Any = "balanced"
) -> tuple[pd.DataFrame, list[tuple[int, str]], tuple[str, ...]]:
    """Rows (one per kernel) with predictions; the (op index, family) of every captured op; the assumptions made."""
    table, fams, notes = kernel_descs(cap, gpu, routing)
    mapped = table["desc"].notna()
    uniq = list(dict.fromkeys(table.loc[mapped, "desc"]))
    if uniq:
        import json

        preds = predict_many([json.loads(k) for k in uniq]).set_axis(uniq)
        for col in ("floor_us", "latency_us", "low_us", "high_us", "bound", "model", "in_distribution"):
            table.loc[mapped, col] = table.loc[mapped, "desc"].map(preds[col]).to_numpy()
        table["label_us"] = table["latency_us"]
        in_sequence(table, gpu)
        notes.append(
            f"kernels in sequence: the L2 write-back of a cold-L2 label removed ({L2_WRITEBACK:g} x min(bytes, L2) "
            "at HBM bandwidth for kernels not compute-bound and not of a warm-aware family); label_us is the kernel "
            "alone"
        )
        if zero_operands(table):
            notes.append(ZERO_ROWS_NOTE)
    table.loc[~mapped, "model"] = "unmapped"
    return table, fams, tuple(notes)


#: share of min(bytes, L2) at HBM bandwidth a kernel's cold-L2 label spends writing back dirty lines. The collector
#: makes L2 cold by zeroing 256 MiB before each call, which leaves L2 full of dirty lines: a kernel that then reads
#: from HBM evicts them at the cost of a write each. Inside a layer, L2 holds mostly clean lines (weights and
#: activations just read), so that cost is absent. Fitted on the 4 FIT models' layer device times
#: (benchmarks/eval_layers.py --fit; the other 4 are the check); physically at most 1.
L2_WRITEBACK = 0.4


def in_sequence(table: pd.DataFrame, gpu: str, factor: float | None = None) -> None:
    """Adjust each mapped kernel's prediction (and interval) from its cold-L2 label to a kernel inside a sequence."""
    spec = get_gpu(gpu)
    l2_us = spec.l2_bytes / spec.memory_bandwidth_bps * 1e6
    f = L2_WRITEBACK if factor is None else factor
    lab = table["label_us"].astype(float)
    floor = table["floor_us"].astype(float)
    own = table["family"].map(lambda f: isinstance(f, str) and warm_aware(f)).to_numpy(dtype=bool)
    memory_side = (table["bound"] != "compute").to_numpy() & ~own
    delta = np.where(memory_side, f * np.minimum(floor, l2_us), 0.0)
    new = np.maximum(lab - delta, floor)
    ratio = np.where(lab > 0, new / lab, 1.0)
    table["latency_us"] = new
    for c in ("low_us", "high_us"):
        table[c] = table[c].astype(float) * ratio


#: the assumption a prediction states when ``zero_operands`` scaled a GEMM
ZERO_ROWS_NOTE = (
    "GEMMs whose A the call fills mostly with zero rows (Llama 4's router-scaled expert inputs): a compute-bound one's "
    "time scaled by the share (0.88x at half the rows, 0.81x at 127 of 128: graphs/zeros.py, measured on an H100), "
    "the power a zero operand does not draw leaving the clock higher"
)


def gemm_shape(key: str) -> tuple:
    """A GEMM description's (dtype, batch, m, n, k): what the eager and the compiled lowering of one GEMM share."""
    import json

    d = json.loads(key)
    return (d.get("dtype"), d.get("batch", 1), d.get("m"), d.get("n"), d.get("k"))


def zero_row_shares(fn: Callable, args: tuple, kwargs: Mapping[str, Any] | None, gpu: str) -> dict[tuple, float]:
    """The zero-row share of each GEMM's A in the eager call (``graphs.zeros``), by ``gemm_shape``. A compiled call
    keeps Llama 4's expert bmms as extern kernels of the same shapes; the fused kernels that feed them compute the
    same zeros, which the output code does not show."""
    args = tuple(map(own_cache, args if isinstance(args, tuple) else (args,)))
    kwargs = {k: own_cache(v) for k, v in (kwargs or {}).items()}
    table, _, _ = kernel_descs(capture(fn, args, kwargs), gpu)
    hit = table[(table["family"] == "gemm") & (table["zero_rows"] > 0)]
    out: dict[tuple, float] = {}
    for shape, share in zip(map(gemm_shape, hit["desc"]), hit["zero_rows"]):
        out[shape] = max(out.get(shape, 0.0), float(share))
    return out


def zero_operands(table: pd.DataFrame) -> bool:
    """Scale each compute-bound GEMM whose A has zero rows (``graphs.zeros``) and its interval; whether any was."""
    hit = (table["zero_rows"].astype(float) > 0) & (table["bound"] == "compute")
    if not hit.any():
        return False
    factor = table.loc[hit, "zero_rows"].astype(float).map(zero_operand_factor)
    for c in ("latency_us", "low_us", "high_us"):
        table.loc[hit, c] = table.loc[hit, c].astype(float) * factor
    return True


def op_steps(table: pd.DataFrame, fams: list[tuple[int, str | None]], lat: pd.Series) -> list[tuple[str | None, list]]:
    """Per captured op, in order: the family of its kernels (None: it launches none) and their predicted µs."""
    per_op: dict[int, list[float]] = {}
    for i, v in zip(table["op_index"], lat):
        per_op.setdefault(int(i), []).append(float(v))
    return [("elementwise" if f == "unmapped" else f, per_op.get(i, [])) for i, f in fams]


def predict_capture(
    cap: Capture,
    gpu: str,
    cuda_graph: bool = False,
    mode: str = "eager",
    routing: Any = "balanced",
    host_probe_us: float | None = None,
) -> WorkloadPrediction:
    gpu = get_gpu(gpu).name
    speed = host.host_speed(host_probe_us)
    table, fams, notes = kernel_table(cap, gpu, routing)
    ok = table["model"] != "unmapped"
    lat = table["latency_us"].where(ok, 0.0).astype(float)
    device = float(lat.sum())
    steps = op_steps(table, fams, lat)
    wall = host.timeline([(host.host_us(f, speed), k) for f, k in steps], cuda_graph)
    if not cuda_graph:
        notes = (*notes, _host_note(host_probe_us))
    table["share"] = lat / device if device > 0 else 0.0
    table = table.drop(columns=["op_index"]).reindex(columns=list(KERNEL_COLUMNS))
    n_unmapped = int((~ok).sum())
    if n_unmapped:
        notes = (*notes, f"{n_unmapped} kernels unmapped (listed with model='unmapped', not in the totals)")
    return WorkloadPrediction(
        gpu=gpu,
        mode=mode,
        cuda_graph=cuda_graph,
        **workload_totals(table, ok, device, wall, host.wall_band(host_probe_us, cuda_graph)),
        kernels=table,
        assumptions=notes,
    )


def workload_totals(
    table: pd.DataFrame, ok: pd.Series, device: float, wall: float, band: tuple[float, float]
) -> dict[str, float]:
    """Device and wall time with their 80% intervals. The device interval sums the mapped kernels' intervals (one
    model's errors on a call's kernels move together, so their ends add); the wall interval is ``band`` (the log
    error of measured layer spans, ``host.WALL_BAND``) around the wall time, never below the device interval."""
    low = float(table["low_us"].where(ok, 0.0).astype(float).sum())
    high = float(table["high_us"].where(ok, 0.0).astype(float).sum())
    wall = max(wall, device)
    return {
        "device_us": device,
        "wall_us": wall,
        "low_us": low,
        "high_us": high,
        "wall_low_us": max(wall * math.exp(min(band[0], 0.0)), low),
        "wall_high_us": wall * math.exp(max(band[1], 0.0)),
    }


def _host_note(host_probe_us: float | None) -> str:
    if host_probe_us is None:
        return (
            f"host: the H200 host's launch path at its reference speed (host probe {host.REFERENCE_PROBE_US} µs per "
            "small eager op; pass host_probe_us to scale it to yours)"
        )
    return f"host: launch path scaled to a host probe of {host_probe_us} µs per small eager op"


def predict_module(
    fn_or_module: Callable,
    args: tuple = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    gpu: str,
    mode: str = "eager",
    cuda_graph: bool = False,
    routing: Any = "balanced",
    options: Mapping[str, Any] | None = None,
    host_probe_us: float | None = None,
) -> WorkloadPrediction:
    """Predict every kernel ``fn_or_module(*args, **kwargs)`` launches on ``gpu``, and the call's device and wall time.

    ``args`` are meta (``torch.empty(..., device="meta")``) or fake tensors; a module built under
    ``torch.device("meta")`` (e.g. a Hugging Face model from its config) has no weights and allocates nothing.
    ``cuda_graph=True`` drops the host launch path from the wall time. ``routing`` says how MoE experts' grouped
    GEMMs split their rows (the routing is data-dependent: nothing on meta tensors can say): ``balanced``,
    ``power_law_<alpha>`` or per-expert row counts (tokens × top_k in all). ``host_probe_us``: the host's speed,
    as ``kernelcast.collect.layer_job.host_probe`` reads it on the GPU host (µs to issue one small eager op); the wall
    time's host costs scale with it (None: the reference H200 host, ``graphs.host.REFERENCE_PROBE_US``).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if not isinstance(cuda_graph, bool):
        raise ValueError(f"cuda_graph must be true or false; got {cuda_graph!r}")
    if not callable(fn_or_module):
        raise ValueError(f"fn_or_module must be a callable or an nn.Module; got {type(fn_or_module).__name__}")
    get_gpu(gpu)  # a bad GPU name (or host probe) fails before any work
    host.host_speed(host_probe_us)
    args = args if isinstance(args, tuple) else (args,)
    if options is not None and (mode != "compile" or not isinstance(options, Mapping)):
        raise ValueError(f"options must be a mapping of Inductor options, with mode='compile'; got {options!r}")
    if mode == "compile":
        from kernelcast.graphs.compiled import predict_codes
        from kernelcast.graphs.inductor import inductor_code

        codes = inductor_code(fn_or_module, args, dict(kwargs or {}), gpu=gpu, options=dict(options or {}))
        return predict_codes(codes, gpu, cuda_graph, host_probe_us, zero_row_shares(fn_or_module, args, kwargs, gpu))
    routing = check_routing(routing)
    cap = capture(fn_or_module, args, dict(kwargs or {}))
    return predict_capture(cap, gpu, cuda_graph, mode, routing, host_probe_us)


def summary_line(p: WorkloadPrediction) -> str:
    n = int((p.kernels["model"] != "unmapped").sum())
    return (
        f"{p.gpu}: {n} kernels, device {p.device_us:,.1f} µs ({p.low_us:,.1f}-{p.high_us:,.1f}), "
        f"wall {p.wall_us:,.1f} µs ({p.wall_low_us:,.1f}-{p.wall_high_us:,.1f}; "
        f"{'CUDA graph' if p.cuda_graph else 'eager'}; 80% intervals)"
        + (f", {len(p.unmapped)} unmapped" if len(p.unmapped) else "")
    )


__all__ = ["WorkloadPrediction", "predict_capture", "predict_module", "summary_line"]
