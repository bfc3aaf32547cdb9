"""Inductor-generated (fused) Triton kernels: pointwise and reduction kernels read from their source.

A description is what ``features/fused_code.py`` reads off one kernel of Inductor's output code (``describe``):
its kind, element counts, loads/stores/reductions, bytes of its arguments and the counts of its op classes, plus
``code``, the kernel's Triton source, from which the GNN rebuilds the op graph. The analytical answer is the memory
roofline every fused kernel is bound by in principle: bytes read and written at ``MEMORY_EFFICIENCY`` of HBM, plus one
kernel's fixed time.
"""

from __future__ import annotations

import numpy as np

from kernelcast.features.common import (
    WARM_BYTES,
    stream_assumptions,
    stream_features,
    stream_latency,
    stream_learned_features,
    warm_features,
)
from kernelcast.features.fields import MAX_ELEMENTS, BoolField, Check, ChoiceField, CustomField, IntField, is_absent
from kernelcast.features.fused_code import HINTS, KINDS, TritonKernel
from kernelcast.features.ops import OpSpec, register

COUNTS = {  # description field -> the node classes it counts
    "math": ("math",),
    "arith": ("add", "mul", "div"),
    "logic": ("compare", "where", "minmax"),
    "casts": ("cast",),
    "consts": ("const", "broadcast", "index", "copy", "other"),
}


def describe(kernel: TritonKernel, gpu: str, warm_bytes: int = 0) -> dict:
    """The fused description of one parsed kernel on ``gpu``; ``warm_bytes`` of its reads an earlier kernel of the
    same call left in L2 (``fused_code.warm_bytes``)."""
    counts = kernel.counts
    return {
        "op": "fused",
        "gpu": gpu,
        "dtype": kernel.dtype,
        "backend": "inductor",
        "kind": kernel.kind,
        "xnumel": kernel.xnumel,
        "rnumel": kernel.rnumel,
        "loads": kernel.loads,
        "stores": kernel.stores,
        "reductions": kernel.reductions,
        "read_bytes": max(kernel.read_bytes, 1),
        "write_bytes": max(kernel.write_bytes, 1),
        "looped": kernel.looped,
        **{name: sum(counts[c] for c in classes) for name, classes in COUNTS.items()},
        "hint": kernel.hint,
        "broadcast_loads": sum(n.cls == "load" and n.broadcast for n in kernel.nodes),
        "strided_loads": sum(n.cls == "load" and n.strided for n in kernel.nodes),
        "strided_stores": sum(n.cls == "store" and n.strided for n in kernel.nodes),
        "index_ops": sum(n.index_ops for n in kernel.nodes if n.cls in ("load", "store")),
        "unaligned_args": kernel.unaligned_args,
        "numel_aligned": kernel.numel_aligned,
        "warm_bytes": min(int(warm_bytes), max(kernel.read_bytes, 1)),
        "code": kernel.source,
    }


def fused_bytes(cols) -> np.ndarray:
    return np.asarray(cols["read_bytes"], dtype=np.float64) + np.asarray(cols["write_bytes"], dtype=np.float64)


def fused_elements(cols) -> np.ndarray:
    return np.asarray(cols["xnumel"], dtype=np.float64) * np.asarray(cols["rnumel"], dtype=np.float64)


def fused_flops(cols) -> np.ndarray:
    per = np.asarray(cols["arith"], dtype=np.float64) + np.asarray(cols["math"], dtype=np.float64)
    return per * fused_elements(cols)


def fused_features(cols, gpu) -> dict[str, np.ndarray]:
    e = fused_elements(cols)
    x = np.asarray(cols["xnumel"], dtype=np.float64)
    r = np.asarray(cols["rnumel"], dtype=np.float64)
    nbytes = fused_bytes(cols)
    kind = np.asarray(cols["kind"], dtype=object)
    out = {
        **stream_features(nbytes, e, fused_flops(cols), gpu),
        "log_xnumel": np.log2(x),
        "log_rnumel": np.log2(r),
        "rnumel_pow2": (np.log2(r) % 1 == 0).astype(np.float64),
        "rows_per_sm": x / gpu["sm_count"],
        "log_rows_per_sm": np.log2(x / gpu["sm_count"]),
        "write_share": np.asarray(cols["write_bytes"], dtype=np.float64) / nbytes,
        "bytes_per_element": nbytes / e,
        "looped": np.asarray(cols["looped"], dtype=np.float64),
        "persistent": (kind == "persistent_reduction").astype(np.float64),
        "reduction": (kind != "pointwise").astype(np.float64),
    }
    for name in ("loads", "stores", "reductions", *COUNTS, "broadcast_loads", "strided_loads", "strided_stores"):
        out[name] = np.asarray(cols[name], dtype=np.float64)
    out["index_ops"] = np.asarray(cols["index_ops"], dtype=np.float64)
    out["unaligned_args"] = np.asarray(cols["unaligned_args"], dtype=np.float64)
    out["numel_aligned"] = np.asarray(cols["numel_aligned"], dtype=np.float64)
    out.update(warm_features(cols, nbytes, gpu))
    out["math_per_byte"] = out["math"] * e / nbytes
    return out


def _code_check(name, col, ctx):
    values = np.asarray(col, dtype=object)
    bad = np.asarray([not (isinstance(v, str) or v is None or is_absent(np.asarray([v]))[0]) for v in values])
    return Check(values, bad, lambda i: "the kernel's Triton source (a string) or absent")


def _code_one(value, ctx):
    """``_code_check`` for one value (``validate_one``'s path): a string or None; anything else goes to the column
    path, which names it."""
    if value is None or isinstance(value, str):
        return value
    raise ValueError("not a string")


SPEC = register(
    OpSpec(
        name="fused",
        doc="an Inductor-generated Triton kernel (pointwise, reduction or persistent reduction) described by what its "
        "source says: element counts, loads/stores/reductions, argument bytes, op-class counts and the source itself",
        fields={
            "kind": ChoiceField(KINDS),
            "xnumel": IntField(1, MAX_ELEMENTS),
            "rnumel": IntField(1, MAX_ELEMENTS, default=1),
            "loads": IntField(0, 4096),
            "stores": IntField(0, 4096, default=1),
            "reductions": IntField(0, 4096, default=0),
            "read_bytes": IntField(1, MAX_ELEMENTS),
            "write_bytes": IntField(1, MAX_ELEMENTS),
            "looped": BoolField(default=False),
            "math": IntField(0, 1 << 16, default=0),
            "arith": IntField(0, 1 << 16, default=0),
            "logic": IntField(0, 1 << 16, default=0),
            "casts": IntField(0, 1 << 16, default=0),
            "consts": IntField(0, 1 << 16, default=0),
            "hint": ChoiceField(HINTS, default="none"),
            "warm_bytes": WARM_BYTES,
            "unaligned_args": IntField(0, 4096, default=0),
            "numel_aligned": BoolField(default=True),
            "broadcast_loads": IntField(0, 4096, default=0),
            "strided_loads": IntField(0, 4096, default=0),
            "strided_stores": IntField(0, 4096, default=0),
            "index_ops": IntField(0, 1 << 16, default=0),
            "code": CustomField(
                checker=_code_check,
                scalar_checker=_code_one,
                text="the kernel's Triton source",
                default=None,
                python_type=str,
                optional=True,
            ),
        },
        dtypes=("fp32", "bf16", "fp16"),
        backends=("inductor",),
        checks_dtype_on_gpu=False,
        features=fused_features,
        learned_features=stream_learned_features,
        flops=fused_flops,
        analytical=stream_latency,
        analytical_assumptions=stream_assumptions("memory roofline of the kernel's arguments (read + write once)"),
        example={
            "kind": "pointwise",
            "xnumel": 1 << 20,
            "loads": 2,
            "read_bytes": 4 << 20,
            "write_bytes": 2 << 20,
            "arith": 2,
            "dtype": "bf16",
            "backend": "inductor",
        },
        categorical=("backend", "dtype", "source", "kind", "hint"),
        range_columns=("xnumel", "rnumel"),
        size_feature="bytes",
    )
)
FusedDesc = SPEC.desc_type
