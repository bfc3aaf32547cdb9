"""Reductions and row-wise kernels of eager layers over an input viewed as [outer, reduce, inner]: sum/mean/amax/…
(reduce away the middle dim), softmax, layer and RMS norm, cumsum, sort (same shape out), topk (k of reduce)."""

from __future__ import annotations

import numpy as np

from kernelcast.features.common import (
    lookup,
    stream_assumptions,
    stream_features,
    stream_latency,
    stream_learned_features,
)
from kernelcast.features.fields import MAX_ELEMENTS, ChoiceField, IntField, Rule, canonical_dtype
from kernelcast.features.ops import OpSpec, register

#: fn -> (fp32 operations per input element, output is the input's shape, parameters of length reduce)
FN_SHAPE = {
    "sum": (1, False, 0),
    "mean": (1, False, 0),
    "amax": (1, False, 0),
    "amin": (1, False, 0),
    "argmax": (1, False, 0),
    "var": (3, False, 0),
    "norm": (2, False, 0),
    "softmax": (6, True, 0),
    "log_softmax": (6, True, 0),
    "layer_norm": (8, True, 2),
    "rms_norm": (5, True, 1),
    "cumsum": (1, True, 0),
    "sort": (20, True, 0),
    "topk": (8, False, 0),
}
FNS = tuple(FN_SHAPE)
#: outputs that are int64 indices (argmax) or carry an int64 index beside each value (sort, topk)
INDEX_BYTES = {"argmax": 8, "sort": 8, "topk": 8}
NORMS = ("layer_norm", "rms_norm")


def _default_out_dtype(c) -> np.ndarray:
    return np.asarray(c["dtype"], dtype=object)


def reduction_bytes(cols) -> np.ndarray:
    outer, red, inner = (np.asarray(cols[c], dtype=np.float64) for c in ("outer", "reduce", "inner"))
    fn = np.asarray(cols["fn"], dtype=object)
    in_b, out_b = lookup(cols["dtype"], "bytes"), lookup(cols["out_dtype"], "bytes")
    same = np.asarray([FN_SHAPE[f][1] for f in fn])
    params = np.asarray([FN_SHAPE[f][2] for f in fn], dtype=np.float64)
    index = np.asarray([INDEX_BYTES.get(f, 0) for f in fn], dtype=np.float64)
    out_elems = np.where(same, outer * red * inner, outer * inner * np.where(fn == "topk", cols["k"], 1))
    value_b = np.where(fn == "argmax", 0.0, out_b)
    return outer * red * inner * in_b + out_elems * (value_b + index) + params * red * in_b


def reduction_flops(cols) -> np.ndarray:
    per = np.asarray([FN_SHAPE[f][0] for f in np.asarray(cols["fn"], dtype=object)], dtype=np.float64)
    elems = np.prod([np.asarray(cols[c], dtype=np.float64) for c in ("outer", "reduce", "inner")], axis=0)
    return per * elems


def reduction_features(cols, gpu) -> dict[str, np.ndarray]:
    outer, red, inner = (np.asarray(cols[c], dtype=np.float64) for c in ("outer", "reduce", "inner"))
    f = stream_features(reduction_bytes(cols), outer * red * inner, reduction_flops(cols), gpu)
    rows = outer * inner  # independent reductions
    return {
        **f,
        "log_outer": np.log2(outer),
        "log_reduce": np.log2(red),
        "log_inner": np.log2(inner),
        "log_rows": np.log2(rows),
        "rows_per_sm": rows / gpu["sm_count"],
        "last_dim": (inner == 1).astype(np.float64),
        "in_bytes": lookup(cols["dtype"], "bytes"),
        "out_bytes": lookup(cols["out_dtype"], "bytes"),
        "log_k": np.log2(np.asarray(cols["k"], dtype=np.float64)),
        "row_bytes": red * lookup(cols["dtype"], "bytes"),
        **row_alignment(red, lookup(cols["dtype"], "bytes")),
    }


def row_alignment(red: np.ndarray, elem_bytes: np.ndarray) -> dict[str, np.ndarray]:
    """How a row sits against vector widths: PyTorch's norm and reduce kernels take their vectorized single-kernel
    paths only when a row is a multiple of the vector width (LayerNorm: 2 kernels, moments then normalize, on
    ragged rows; 1 fused kernel on aligned ones, as the H200 rows show)."""
    iv = red.astype(np.int64)
    return {
        "reduce_align_log2": np.minimum(np.log2(iv & -iv), 8.0),
        "row_16b_aligned": ((iv * elem_bytes) % 16 == 0).astype(np.float64),
        "reduce_mod_32": (iv % 32) / 32,
    }


SPEC = register(
    OpSpec(
        name="reduction",
        doc="a reduction or row-wise kernel over an input viewed as [outer, reduce, inner] "
        "(sum/mean/amax/argmax/var/norm, softmax, layer/RMS norm, cumsum, sort, topk along the middle dim)",
        fields={
            "outer": IntField(1, MAX_ELEMENTS),
            "reduce": IntField(1, MAX_ELEMENTS),
            "inner": IntField(1, MAX_ELEMENTS, default=1),
            "fn": ChoiceField(FNS),
            "k": IntField(1, 1 << 20, default=1),
            "out_dtype": ChoiceField(("fp32", "bf16", "fp16"), default=_default_out_dtype, canon=canonical_dtype),
        },
        dtypes=("fp32", "bf16", "fp16"),
        backends=("torch",),
        rules=(
            Rule(
                "reduce",
                lambda c: c["outer"] * c["reduce"] * c["inner"] <= MAX_ELEMENTS,
                lambda c: f"such that outer*reduce*inner={(c['outer'], c['reduce'], c['inner'])} is at most 2**38",
            ),
            Rule(
                "k",
                lambda c: (c["k"] <= c["reduce"]) & ((c["fn"] == "topk") | (c["k"] == 1)),
                lambda c: f"at most reduce={c['reduce']}, and 1 unless fn is 'topk' (fn={c['fn']!r})",
            ),
            Rule(
                "inner",
                lambda c: ~np.isin(c["fn"], NORMS) | (c["inner"] == 1),
                lambda c: f"1 for {c['fn']} (norms run over the last dim)",
            ),
        ),
        checks_dtype_on_gpu=False,
        features=reduction_features,
        learned_features=stream_learned_features,
        flops=reduction_flops,
        analytical=stream_latency,
        analytical_assumptions=stream_assumptions("one pass over the input"),
        example={"outer": 4096, "reduce": 4096, "fn": "rms_norm", "dtype": "bf16", "backend": "torch"},
        categorical=("backend", "dtype", "source", "fn", "out_dtype"),
        range_columns=("outer", "reduce", "inner"),
        size_feature="bytes",
    )
)
ReductionDesc = SPEC.desc_type
