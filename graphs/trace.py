"""``kernelcast trace``: a profiled run, kernel by kernel, beside kernelcast's prediction and the hardware's floor.

Input: a ``torch.profiler`` Chrome trace (``export_chrome_trace``; ``record_shapes=True`` lets the launching aten op's
shapes be recovered) or an Nsight Compute raw CSV export (``ncu --csv --page raw --print-units base``: names and
times only). Each kernel's launching op is rebuilt on meta tensors from the recorded dims, strides and dtypes and
lowered like a captured op (``graphs.lower``); its prediction and roofline floor come from the op's model. Kernels
whose op cannot be rebuilt are listed with their measured time, never dropped. ``efficiency`` = floor / measured;
rows are sorted by the time left on the table (measured − floor).
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features.desc import parse_desc
from kernelcast.features.gpu import get_gpu
from kernelcast.graphs.capture import OpRecord, _meta
from kernelcast.graphs.lower import lower
from kernelcast.graphs.predict import in_sequence
from kernelcast.predictors.dispatch import predict_many

DEVICE_CATS = ("kernel", "gpu_memset", "gpu_memcpy")
#: profiler type names -> torch dtype attribute names
TYPES = {
    "c10::BFloat16": "bfloat16",
    "c10::Half": "float16",
    "float": "float32",
    "double": "float64",
    "long int": "int64",
    "int": "int32",
    "bool": "bool",
    "unsigned char": "uint8",
    "signed char": "int8",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
}
#: SDPA ops of the profiler: where their is_causal argument sits
SDPA_CAUSAL = {
    "_cudnn_attention_forward": 6,
    "_scaled_dot_product_cudnn_attention": 6,
    "_scaled_dot_product_flash_attention": 4,
    "_flash_attention_forward": 6,
    "_scaled_dot_product_efficient_attention": 6,
    "_efficient_attention_forward": 7,
}
#: SDPA ops of the profiler whose fourth argument is the mask (an additive bias; flash's take none)
SDPA_BIAS = frozenset(
    ("_scaled_dot_product_cudnn_attention", "_scaled_dot_product_efficient_attention", "_efficient_attention_forward")
)
TABLE_COLUMNS = (
    "aten_op",
    "kernels",
    "family",
    "measured_us",
    "latency_us",
    "floor_us",
    "efficiency",
    "left_us",
    "bound",
    "model",
    "note",
)


class TraceError(ValueError):
    """The file is not a trace kernelcast can read: names the file and what is wrong."""


def _scalar(text: str) -> Any:
    if text in ("", "None"):
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    return text


def _tensor(dims, strides, type_name: str):
    import torch

    if type_name not in TYPES:
        raise ValueError(f"tensor type {type_name!r} is not one kernelcast reads")
    return torch.empty_strided(
        tuple(dims),
        tuple(strides) if strides else torch.empty(tuple(dims), device="meta").stride(),
        dtype=getattr(torch, TYPES[type_name]),
        device="meta",
    )


def rebuild(op: dict) -> OpRecord:
    """The aten op of a profiler ``cpu_op`` event, run on meta tensors of its recorded inputs."""
    import torch

    name = op["name"].removeprefix("aten::")
    a = op.get("args", {})
    dims, types = a.get("Input Dims"), a.get("Input type")
    if dims is None or types is None:
        raise ValueError("no recorded shapes (profile with record_shapes=True)")
    strides = a.get("Input Strides") or [None] * len(dims)
    concrete = a.get("Concrete Inputs") or [""] * len(dims)
    args = []
    for d, t, s, c in zip(dims, types, strides, concrete):
        if t == "TensorList":
            args.append(
                [
                    _tensor(dd, ss, "c10::BFloat16" if not dd else _list_type(op))
                    for dd, ss in zip(d, s or [None] * len(d))
                ]
            )
        elif t in TYPES:
            args.append(_tensor(d, s, t))
        else:
            args.append(_scalar(c))
    if name in SDPA_CAUSAL:
        q, k, v = args[:3]
        causal = bool(args[SDPA_CAUSAL[name]]) if len(args) > SDPA_CAUSAL[name] else False
        bias = _meta(args[3]) if name in SDPA_BIAS and len(args) > 3 else None
        opts = {"is_causal": causal, "attn_mask": bias if hasattr(bias, "shape") else None}
        return OpRecord("sdpa", (_meta(q), _meta(k), _meta(v)), opts, ())
    out = _call_aten(getattr(torch.ops.aten, name), args)
    flat = out if isinstance(out, (list, tuple)) else (out,)
    return OpRecord(
        f"aten.{name}",
        _meta(tuple(args)),
        {},
        tuple(m for m in (_meta(o) for o in flat) if m is not None and hasattr(m, "shape")),
    )


def _call_aten(packet, args: list):
    """Call an aten op with the profiler's flat argument list: the profiler records keyword-only arguments (``alpha``
    of ``add``) in line, so each overload's schema decides which trailing values are keywords."""
    errors = []
    for overload in packet.overloads():
        op = getattr(packet, overload)
        params = op._schema.arguments
        if len(args) > len(params):
            continue
        pos = [a for a, p in zip(args, params) if not p.kwarg_only]
        kw = {p.name: a for a, p in zip(args, params) if p.kwarg_only and a is not None}
        while pos and pos[-1] is None:
            pos.pop()
        try:
            return op(*pos, **kw)
        except (RuntimeError, TypeError, ValueError) as exc:
            errors.append(f"{overload}: {str(exc).splitlines()[0][:80]}")
    raise ValueError(
        f"no overload of aten.{packet._qualified_op_name.split('::')[-1]} takes these inputs ({'; '.join(errors[:3])})"
    )


def _list_type(op: dict) -> str:
    """Tensor lists carry no element type in the trace: the first typed input's, else bf16."""
    types = [t for t in op["args"].get("Input type", []) if t in TYPES]
    return types[0] if types else "c10::BFloat16"


def read_chrome(path: Path) -> list[dict]:
    """One row per launching op: its name, its kernels' names and summed µs, and the rebuilt record or why not."""
    try:
        events = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TraceError(f"trace {path} is not readable JSON: {exc}") from None
    events = events.get("traceEvents") if isinstance(events, dict) else None
    if not isinstance(events, list):
        raise TraceError(f"trace {path} has no traceEvents list (expected torch.profiler's export_chrome_trace)")
    ops = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            ops[e["args"]["External id"]].append(e)
    groups: dict[Any, dict] = {}
    for e in events:
        if e.get("cat") not in DEVICE_CATS:
            continue
        ext = e.get("args", {}).get("External id")
        g = groups.setdefault(ext, {"kernels": [], "measured_us": 0.0, "ts": e.get("ts", 0)})
        g["kernels"].append(e.get("name", "?"))
        g["measured_us"] += float(e.get("dur", 0.0))
    if not groups:
        raise TraceError(f"trace {path} holds no GPU kernels (profile with ProfilerActivity.CUDA)")
    rows = []
    for ext, g in sorted(groups.items(), key=lambda kv: kv[1]["ts"]):
        cands = sorted(ops.get(ext, []), key=lambda o: o.get("dur", 0))
        row = {"aten_op": cands[0]["name"] if cands else "(no cpu op)", **g}
        try:
            if not cands:
                raise ValueError("no launching cpu_op recorded for these kernels")
            row["record"] = rebuild(cands[0])
        except Exception as exc:  # noqa: BLE001 - the kernel stays listed with the reason
            row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        rows.append(row)
    return rows


def _ncu_family(name: str) -> str:
    n = name.lower()
    for fam, keys in (
        ("attention", ("sdpa", "flash", "fmha", "attention")),  # before gemm: fmha_cutlassF… is attention
        ("gemm", ("nvjet", "gemm", "cutlass", "splitk", "cublas")),
        ("reduction", ("reduce", "softmax", "norm", "topk", "sort", "scan")),
        ("copy", ("cat", "copy", "gather", "index", "scatter")),
        ("elementwise", ("elementwise",)),
    ):
        if any(k in n for k in keys):
            return fam
    return "other"


def read_ncu_csv(path: Path) -> list[dict]:
    """Kernel names and ``gpu__time_duration.sum`` (ns, base units) of an ncu raw CSV export; no shapes."""
    text = Path(path).read_text()
    start = text.find('"ID"')
    if start < 0:
        raise TraceError(f'ncu CSV {path} has no header row starting with "ID" (export with --csv --page raw)')
    reader = csv.DictReader(text[start:].splitlines())
    rows = []
    for r in reader:
        dur = r.get("gpu__time_duration.sum", "")
        if not re.fullmatch(r"[0-9.]+", dur.replace(",", "")):
            continue  # the units row
        rows.append(
            {
                "aten_op": "(ncu: no shapes)",
                "kernels": [r["Kernel Name"]],
                "measured_us": float(dur.replace(",", "")) / 1e3,
                "family": _ncu_family(r["Kernel Name"]),
                "error": "ncu exports carry no shapes: not predicted",
            }
        )
    if not rows:
        raise TraceError(f"ncu CSV {path} has no kernel rows with gpu__time_duration.sum")
    return rows


def analyze(path: str | Path, gpu: str) -> pd.DataFrame:
    """The table of ``kernelcast trace``: one row per launching op, sorted by time left on the table."""
    gpu = get_gpu(gpu).name
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"trace {path} does not exist")
    rows = read_ncu_csv(path) if path.suffix.lower() == ".csv" else read_chrome(path)
    out, descs = [], []
    for r in rows:
        row = {
            "aten_op": r["aten_op"],
            "kernels": " | ".join(k[:60] for k in r["kernels"]),
            "measured_us": r["measured_us"],
            "family": r.get("family"),
            "note": r.get("error", ""),
        }
        rec = r.get("record")
        if rec is not None:
            low = lower(rec, gpu)
            if low.unmapped or not low.descs:
                row["note"] = low.unmapped or "lowered to no kernel"
            else:
                try:
                    descs.append((len(out), parse_desc({**low.descs[0], "gpu": gpu}).to_row()))
                    row["family"] = low.descs[0]["op"]
                    row["note"] = low.assumption
                except ValueError as exc:
                    row["note"] = str(exc)
        out.append(row)
    table = pd.DataFrame(out)
    cols = ("latency_us", "low_us", "high_us", "floor_us", "bound", "model")
    for c in cols:
        table[c] = np.nan if c.endswith("_us") else None
    if descs:
        pos, recs = zip(*descs)
        preds = predict_many(list(recs))
        for c in cols:
            table.loc[list(pos), c] = preds[c].to_numpy()
        mapped = table.loc[list(pos)].copy()
        mapped["label_us"] = mapped["latency_us"]
        in_sequence(mapped, gpu)  # a profiled run's kernels ran in sequence, as predict_module composes them
        table.loc[list(pos), "latency_us"] = mapped["latency_us"].to_numpy()
    table.loc[table["model"].isna(), "model"] = "unmapped"
    table["efficiency"] = table["floor_us"] / table["measured_us"]
    table["left_us"] = table["measured_us"] - table["floor_us"].fillna(0.0)
    return table.sort_values("left_us", ascending=False).reindex(columns=list(TABLE_COLUMNS)).reset_index(drop=True)


def totals(table: pd.DataFrame) -> pd.DataFrame:
    """Measured, predicted and floor µs by op family (unmapped kernels under their guessed family or 'unmapped')."""
    t = table.assign(family=table["family"].fillna("unmapped"))
    out = t.groupby("family").agg(
        ops=("measured_us", "size"),
        measured_us=("measured_us", "sum"),
        predicted_us=("latency_us", "sum"),
        floor_us=("floor_us", "sum"),
    )
    out["efficiency"] = out["floor_us"] / out["measured_us"]
    return out.sort_values("measured_us", ascending=False)


def plot(table: pd.DataFrame, path: str | Path, title: str) -> Path:
    """Measured vs floor (and predicted) per op, largest first: where the time left on the table is."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    top = table.head(40)
    fig, ax = plt.subplots(figsize=(11, 0.28 * len(top) + 1.5))
    y = np.arange(len(top))[::-1]
    ax.barh(y, top["measured_us"], color="#c44", label="measured")
    ax.barh(y, top["floor_us"].fillna(0), color="#4a4", label="roofline floor")
    ax.scatter(top["latency_us"], y, color="k", s=12, zorder=3, label="kernelcast")
    ax.set_yticks(
        y, [f"{a.removeprefix('aten::')} ({f})" for a, f in zip(top["aten_op"], top["family"].fillna("?"))], fontsize=7
    )
    ax.set_xlabel("µs")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = Path(path)
    tmp = path.with_suffix(".tmp" + path.suffix)
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
    return path
