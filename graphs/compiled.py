"""``mode="compile"``: Inductor's output code read as the kernels its wrapper launches, each described and predicted.

The wrapper's ``call`` (the ``Runner``'s, in launch order) is read statement by statement: ``triton_*.run(...)`` is a
fused kernel (``features/fused_code.py`` parses its source and, from the wrapper's buffer flow, the bytes it reads
that an earlier kernel left in L2; ``features/ops/fused.describe`` describes it),
``extern_kernels.mm/addmm/bmm/baddbmm(...)`` a cuBLAS GEMM, ``torch.ops.aten._scaled_dot_product_*_attention`` an
attention of the backend the code names, and any other aten fallback goes through ``graphs.lower`` as eager ops do.
Tensor shapes, strides and dtypes come from the code itself: ``get_args()``'s ``rand_strided`` lines (the graph
inputs), ``empty_strided_cuda``, ``reinterpret_tensor`` and ``assert_size_stride``. Every row keeps its region (the
``# Topologically Sorted Source Nodes: [...], Original ATen: [...]`` comment above it). A launch kernelcast cannot
describe is a row with ``model="unmapped"`` and the reason, never a silent number.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

import pandas as pd

from kernelcast.features.desc import parse_desc
from kernelcast.features.fields import canonical_dtype
from kernelcast.features.fused_code import int_tuple, triton_kernels, warm_bytes, wrapper
from kernelcast.features.gpu import get_gpu
from kernelcast.features.ops.fused import describe
from kernelcast.graphs import host
from kernelcast.graphs.capture import OpRecord, TensorMeta
from kernelcast.graphs.lower import EFFICIENT_NOTE, lower
from kernelcast.graphs.predict import (
    KERNEL_COLUMNS,
    L2_WRITEBACK,
    ZERO_ROWS_NOTE,
    WorkloadPrediction,
    gemm_shape,
    in_sequence,
    workload_totals,
    zero_operands,
)
from kernelcast.predictors.dispatch import predict_many

_STRINGS = re.compile(r"'''.*?'''", re.S)
_REGION = re.compile(r"#\s*Topologically Sorted Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]")
#: the wrapper's get_args lines (indented inside ``def get_args():``): name, shape, stride, dtype of each graph input
_GET_ARGS = re.compile(
    r"^\s*(\w+) = rand_strided\(\(([^)]*)\), \(([^)]*)\), device='[^']*', dtype=torch\.(\w+)\)", re.M
)
#: calls of the wrapper that launch nothing: allocation, views, checks, stream and device handling
NO_LAUNCH = frozenset(
    "empty_strided_cuda empty_strided reinterpret_tensor assert_size_stride assert_alignment get_raw_stream "
    "copy_if_misaligned torch.cuda.set_device torch.cuda._DeviceGuard args.clear".split()
)
EXTERN_GEMMS = ("mm", "addmm", "bmm", "baddbmm")
#: SDPA fallbacks: backend, positional index of is_causal (torch's schemas)
SDPA = {
    "_scaled_dot_product_cudnn_attention": ("cudnn", 6),
    "_scaled_dot_product_flash_attention": ("flash", 4),
    "_scaled_dot_product_efficient_attention": ("efficient", 6),
}


@dataclass(frozen=True)
class Launch:
    """One kernel launch of the wrapper: what it is, its description (or why there is none) and its region."""

    kernel: str  # the Triton kernel's name, or the extern/aten call (``extern_kernels.mm``)
    aten_op: str  # the aten op it runs (``aten.mm.default``); for a Triton kernel its name
    family: str | None
    desc: dict | None
    source_nodes: tuple[str, ...]
    aten: tuple[str, ...]  # the Original ATen ops of its region
    note: str = ""


def _dtype(name: str) -> str:
    return name.removeprefix("torch.")


def _meta(shape, stride, dtype: str) -> TensorMeta:
    shape, stride = tuple(int(s) for s in shape), tuple(int(s) for s in stride)
    return TensorMeta(shape, stride, dtype, _contiguous(shape, stride))


def _contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    want = 1
    for size, st in zip(reversed(shape), reversed(stride)):
        if size != 1 and st != want:
            return False
        want *= size
    return True


def call_body(code: str) -> list[str]:
    """The lines of the wrapper's ``call`` (``fused_code.wrapper``); an error where the code has none."""
    body = wrapper(code)
    if not body:
        raise ValueError("Inductor's output code has no wrapper call(args) function")
    return body


def _statements(line: str) -> list[str]:
    """``a = b; del b  # reuse`` -> ``["a = b", "del b"]`` (comments dropped; no string in a wrapper holds ``;``)."""
    code = line.split("  #", 1)[0].strip()
    return [s.strip() for s in code.split(";") if s.strip()]


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


class _Tensors:
    """What the wrapper's names hold: tensor metas from get_args, allocations, reinterpretations and asserts."""

    def __init__(self, code: str, body: list[str]):
        text = _STRINGS.sub("''", code)
        self.metas: dict[str, TensorMeta] = {
            m[1]: _meta(int_tuple(m[2]), int_tuple(m[3]), m[4])
            for m in _GET_ARGS.finditer(text.split("def get_args", 1)[-1])
        }
        self.items: dict[str, list[str]] = {}  # buf7 -> [buf8, ...] names bound to buf7[i]
        self.dtypes: dict[str, str] = {}  # a fallback's result (and its items): its first tensor input's dtype
        for line in body:
            for stmt in _statements(line):
                self._bind(stmt)

    def _bind(self, stmt: str) -> None:
        try:
            node = ast.parse(stmt).body[0]
        except SyntaxError:
            return
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if _dotted(call.func) == "assert_size_stride" and isinstance(call.args[0], ast.Name):
                name = call.args[0].id
                shape, stride = ast.literal_eval(call.args[1]), ast.literal_eval(call.args[2])
                old = self.metas.get(name)
                self.metas[name] = _meta(shape, stride, old.dtype if old else self.dtypes.get(name, ""))
            return
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            return
        target, value = node.targets[0].id, node.value
        if isinstance(value, ast.Name):  # buf26 = buf25: the same tensor under another name
            self.items.setdefault(value.id, []).append(target)
            self.dtypes[target] = self.dtypes.get(value.id, "")
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
            self.items.setdefault(value.value.id, []).append(target)
            self.dtypes[target] = self.dtypes.get(value.value.id, "")
            return
        if isinstance(value, ast.Call) and _dotted(value.func).startswith(("torch.ops.", "extern_kernels.")):
            first = next((m for m in map(self.value, value.args) if isinstance(m, TensorMeta)), None)
            self.dtypes[target] = first.dtype if first else ""
        meta = self.value(value)
        if meta is not None:
            self.metas[target] = meta

    def value(self, node: ast.AST):
        """The tensor meta (or plain Python value) an argument expression of the wrapper denotes."""
        if isinstance(node, ast.Name):
            return self.metas.get(node.id)
        if isinstance(node, ast.Call):
            fn = _dotted(node.func)
            if fn == "reinterpret_tensor":
                base = self.value(node.args[0])
                shape, stride = ast.literal_eval(node.args[1]), ast.literal_eval(node.args[2])
                return _meta(shape, stride, base.dtype if isinstance(base, TensorMeta) else "")
            if fn in ("empty_strided_cuda", "empty_strided"):
                shape, stride = ast.literal_eval(node.args[0]), ast.literal_eval(node.args[1])
                return _meta(shape, stride, _dtype(_dotted(node.args[2])))
            return None
        if isinstance(node, ast.Attribute):
            return _dtype(_dotted(node))
        try:
            return ast.literal_eval(node)
        except ValueError:
            return None

    def outputs(self, name: str) -> tuple[TensorMeta, ...]:
        """The metas of what a fallback assigned to ``name`` returned: itself, or the items taken from it."""
        names = self.items.get(name) or [name]
        return tuple(self.metas[n] for n in names if isinstance(self.metas.get(n), TensorMeta))


def launches(code: str, gpu: str) -> list[Launch]:
    """Every kernel launch of one output code's wrapper, in launch order."""
    kernels = triton_kernels(code)
    warm = warm_bytes(code, get_gpu(gpu).l2_bytes)  # what each kernel reads that an earlier one left in L2
    kernels = {name: (k, warm.get(name, 0)) for name, k in kernels.items()}
    body = call_body(code)
    tensors = _Tensors(code, body)
    region: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    out: list[Launch] = []
    for line in body:
        found = _REGION.search(line)
        if found:
            region = tuple(_names(found[1])), tuple(_names(found[2]))
            continue
        for stmt in _statements(line):
            if stmt.startswith("with ") and stmt.endswith(":"):
                continue
            launch = _launch(stmt, tensors, kernels, gpu, region)
            if launch is not None:
                out.append(launch)
    return out


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _launch(stmt: str, tensors: _Tensors, kernels: dict, gpu: str, region) -> Launch | None:
    try:
        node = ast.parse(stmt).body[0]
    except SyntaxError:
        return Launch(stmt[:80], stmt[:80], None, None, *region, note=f"unreadable wrapper statement: {stmt[:200]}")
    target = None
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.targets[0], ast.Name):
        target, call = node.targets[0].id, node.value
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
    else:
        return None  # assignments of names, del, return
    fn = _dotted(call.func)
    if fn in NO_LAUNCH or fn.endswith(".clear"):
        return None
    if fn.startswith("triton_") and fn.endswith(".run"):
        name = fn.removesuffix(".run")
        if name not in kernels:
            why = "a Triton template or foreach kernel (no fused model reads it)" if "_tem_" in name else "not parsed"
            return Launch(name, name, None, None, *region, note=f"Triton kernel {name}: {why}")
        kernel, warm = kernels[name]
        return Launch(name, name, "fused", describe(kernel, gpu, warm), *region)
    args = [tensors.value(a) for a in call.args]
    kwargs = {k.arg: tensors.value(k.value) for k in call.keywords if k.arg}
    if fn.startswith("extern_kernels."):
        op = fn.removeprefix("extern_kernels.")
        out = kwargs.pop("out", None)
        outs = (out,) if isinstance(out, TensorMeta) else tensors.outputs(target) if target else ()
        return _extern(fn, op, args, kwargs, outs, gpu, region)
    if fn.startswith("torch.ops.aten."):
        parts = fn.removeprefix("torch.ops.aten.").split(".")
        if parts[0] in SDPA:
            return _sdpa(fn, parts[0], args, kwargs, gpu, region)
        outs = tensors.outputs(target) if target else tuple(a for a in args[:1] if isinstance(a, TensorMeta))
        return _extern(fn, parts[0], args, kwargs, outs, gpu, region, overload=parts[1] if len(parts) > 1 else "")
    owner = tensors.value(call.func.value) if isinstance(call.func, ast.Attribute) else None
    if isinstance(owner, TensorMeta):  # buf.copy_(x), buf.zero_(): an in-place method of a tensor
        return _extern(fn, call.func.attr, [owner, *args], kwargs, (owner,), gpu, region)
    return Launch(fn, fn, None, None, *region, note=f"wrapper call kernelcast does not know: {stmt[:200]}")


def _extern(fn, op, args, kwargs, outs, gpu, region, overload="default") -> Launch | None:
    """An extern kernel or aten fallback through ``graphs.lower`` (a bmm against a stride-0 broadcast weight as the
    one (batch·m)×n×k GEMM it is)."""
    name = f"aten.{op}.{overload or 'default'}"
    if op in EXTERN_GEMMS and any(not isinstance(a, TensorMeta) for a in args[: 3 if op[0] in "ab" else 2]):
        return Launch(fn, name, None, None, *region, note=f"{fn}: an operand's shape is not in the code")
    note = ""
    if op == "bmm" and args[1].stride[0] == 0 and _flat(args[0]):
        a, b = args[0], args[1]
        args = [_meta((a.shape[0] * a.shape[1], a.shape[2]), a.stride[1:], a.dtype), _meta(b.shape[1:], b.stride[1:],
                b.dtype)]  # fmt: skip
        outs = tuple(_meta((o.shape[0] * o.shape[1], o.shape[2]), (o.shape[2], 1), o.dtype) for o in outs)
        name, note = "aten.mm.default", "bmm against a stride-0 broadcast weight taken as one (batch·m)×n×k GEMM"
    low = lower(OpRecord(name, tuple(args), kwargs, tuple(outs)), gpu)
    if low.unmapped:
        return Launch(fn, name, None, None, *region, note=low.unmapped)
    if not low.descs:
        return None  # a view or an empty result: nothing launched
    if len(low.descs) > 1:
        return Launch(fn, name, None, None, *region, note=f"{name} lowers to {len(low.descs)} kernels (one expected)")
    desc = low.descs[0]
    return Launch(fn, name, desc["op"], desc, *region, note="; ".join(n for n in (note, low.assumption) if n))


def _flat(a: TensorMeta) -> bool:
    """A [batch, m, k] operand whose batch and row dims merge into one row dim (rows evenly strided)."""
    return len(a.shape) == 3 and (a.shape[1] == 1 or a.stride[0] == a.shape[1] * a.stride[1] or a.shape[0] == 1)


def _sdpa(fn: str, op: str, args, kwargs, gpu: str, region) -> Launch:
    backend, causal_at = SDPA[op]
    q, k, v = args[:3]
    if not all(isinstance(t, TensorMeta) and len(t.shape) == 4 for t in (q, k, v)):
        return Launch(fn, f"aten.{op}", None, None, *region, note=f"{op}: q/k/v shapes are not in the code")
    causal = bool(kwargs.get("is_causal", args[causal_at] if len(args) > causal_at else False))
    note = EFFICIENT_NOTE if backend == "efficient" else ""
    # cuDNN's and the memory-efficient kernel's fourth argument is the mask (flash's takes none)
    mask = backend != "flash" and isinstance(kwargs.get("attn_bias", args[3] if len(args) > 3 else None), TensorMeta)
    b, hq, sq, d = q.shape
    desc = {
        "op": "attention",
        "dtype": canonical_dtype(q.dtype),
        "backend": backend,
        "batch": b,
        "heads_q": hq,
        "heads_kv": k.shape[1],
        "seq_q": sq,
        "seq_kv": k.shape[2],
        "head_dim": -(-max(d, v.shape[-1]) // 8) * 8,
        "causal": causal and sq <= k.shape[2],
        "mask": mask and not causal,
    }
    return Launch(fn, f"aten.{op}", "attention", desc, *region, note=note)


def predict_codes(
    codes: list[str],
    gpu: str,
    cuda_graph: bool = False,
    host_probe_us: float | None = None,
    zero_rows: dict[tuple, float] | None = None,
) -> WorkloadPrediction:
    """The compiled call's prediction from Inductor's output codes (one per compiled graph, run in order).
    ``zero_rows``: the eager call's zero-row share of each GEMM's A by shape (``graphs.predict.zero_row_shares``)."""
    gpu = get_gpu(gpu).name
    rows = []
    for code in codes:
        for la in launches(code, gpu):
            key, note = None, la.note
            if la.desc:
                try:
                    key = parse_desc({**la.desc, "gpu": gpu}).key()
                except ValueError as exc:
                    note = str(exc)
            row = {"kernel": la.kernel, "aten_op": la.aten_op, "family": la.family, "desc": key, "note": note}
            rows.append({**row, "region": ", ".join(la.source_nodes), "aten": list(la.aten)})
    table = pd.DataFrame(rows, columns=["kernel", "aten_op", "family", "desc", "note", "region", "aten"])
    mapped = table["desc"].notna()
    notes = []
    for col in ("floor_us", "latency_us", "low_us", "high_us", "bound", "model", "in_distribution"):
        table[col] = None
    if mapped.any():
        uniq = list(dict.fromkeys(table.loc[mapped, "desc"]))
        preds = predict_many([json.loads(k) for k in uniq]).set_axis(uniq)
        for col in ("floor_us", "latency_us", "low_us", "high_us", "bound", "model", "in_distribution"):
            table.loc[mapped, col] = table.loc[mapped, "desc"].map(preds[col]).to_numpy()
    table["label_us"] = table["latency_us"]
    extern = mapped & (table["family"] != "fused")
    if extern.any():
        part = table.loc[extern].copy()
        in_sequence(part, gpu)
        table.loc[extern, ["latency_us", "low_us", "high_us"]] = part[["latency_us", "low_us", "high_us"]]
        notes.append(
            f"extern kernels in sequence: the L2 write-back of their cold-L2 labels removed ({L2_WRITEBACK:g} x "
            "min(bytes, L2) at HBM bandwidth, not compute-bound ones); fused kernels' labels were measured inside "
            "compiled calls (in sequence) and are used as predicted"
        )
        shares = zero_rows or {}
        part["zero_rows"] = [
            shares.get(gemm_shape(k), 0.0) if f == "gemm" else 0.0 for k, f in zip(part["desc"], part["family"])
        ]
        if zero_operands(part):
            table.loc[extern, ["latency_us", "low_us", "high_us"]] = part[["latency_us", "low_us", "high_us"]]
            notes.append(ZERO_ROWS_NOTE)
    table.loc[~mapped, "model"] = "unmapped"
    return _compose(table, gpu, cuda_graph, notes, host_probe_us)


def _compose(
    table: pd.DataFrame, gpu: str, cuda_graph: bool, notes: list[str], host_probe_us: float | None
) -> WorkloadPrediction:
    speed = host.host_speed(host_probe_us)
    ok = table["model"] != "unmapped"
    lat = table["latency_us"].where(ok, 0.0).astype(float)
    device = float(lat.sum())
    steps = [(host.compiled_host_us(f, speed), [v] if k else []) for f, v, k in zip(table["family"], lat, ok)]
    wall = host.timeline(steps, cuda_graph)
    table["share"] = lat / device if device > 0 else 0.0
    table = table.reindex(columns=list(COMPILE_COLUMNS))
    n_unmapped = int((~ok).sum())
    notes.append("host: Inductor's wrapper issues each launch at the probe's per-call cost (graphs/host.py)")
    if n_unmapped:
        notes.append(f"{n_unmapped} kernels unmapped (listed with model='unmapped', not in the totals)")
    return WorkloadPrediction(
        gpu=gpu,
        mode="compile",
        cuda_graph=cuda_graph,
        **workload_totals(table, ok, device, wall, host.wall_band(host_probe_us, cuda_graph)),
        kernels=table,
        assumptions=tuple(notes),
    )


#: a compile-mode kernel table's columns: the launch, the eager table's columns, and the launch's region
COMPILE_COLUMNS = ("kernel", *KERNEL_COLUMNS, "region", "aten")

__all__ = ["COMPILE_COLUMNS", "Launch", "call_body", "launches", "predict_codes"]
