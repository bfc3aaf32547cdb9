"""Elementwise kernels (PyTorch's eager pointwise ops): out[i] = fn(x1[i], …) over ``elements`` outputs, with full-size
and broadcast inputs, casts and strided inputs. Memory-bound: bytes, floors, blocks and waves of the eager grid.

Two kinds of non-contiguous input: ``contiguous=False`` alone is a permuted but dense one (a transpose — torch
computes in its memory order, the same vectorized kernel), ``dense=False`` a view that is not (a slice: SwiGLU's
gate half, a fused QKV's query) — torch's non-vectorized kernel computing every operand's offset per element."""

from __future__ import annotations

import numpy as np

from kernelcast.features.common import (
    WARM_BYTES,
    lookup,
    stream_assumptions,
    stream_features,
    stream_latency,
    stream_learned_features,
    warm_features,
)
from kernelcast.features.fields import MAX_ELEMENTS, BoolField, ChoiceField, IntField, Rule, canonical_dtype
from kernelcast.features.ops import OpSpec, register

#: fn -> fp32 operations per output element (what its arithmetic costs; transcendentals count their SFU steps)
FN_FLOPS = {
    "add": 1,
    "sub": 1,
    "mul": 1,
    "div": 4,
    "neg": 1,
    "abs": 1,
    "clamp": 2,
    "where": 1,
    "fill": 0,
    "cast": 0,
    "exp": 4,
    "log": 4,
    "sqrt": 4,
    "rsqrt": 4,
    "pow": 8,
    "sigmoid": 6,
    "silu": 7,
    "gelu": 12,
    "tanh": 6,
    "sin": 8,
    "cos": 8,
    "compare": 1,
}
FNS = tuple(FN_FLOPS)
#: the dtypes eager layers run pointwise kernels in (indices and masks included)
DTYPES = ("fp32", "bf16", "fp16", "int64", "int32", "bool")


def elementwise_bytes(cols) -> np.ndarray:
    """Output elements × out bytes + full-size inputs × in bytes + broadcast inputs read once."""
    e = np.asarray(cols["elements"], dtype=np.float64)
    out_b, in_b = lookup(cols["dtype"], "bytes"), lookup(cols["in_dtype"], "bytes")
    full = np.asarray(cols["inputs"], dtype=np.float64)
    bcast = np.asarray(cols["broadcast_inputs"], dtype=np.float64) * np.asarray(cols["broadcast_elements"], np.float64)
    return e * out_b + (full * e + bcast) * in_b


def elementwise_flops(cols) -> np.ndarray:
    fn = np.asarray(cols["fn"], dtype=object)
    per = np.asarray([FN_FLOPS[f] for f in fn], dtype=np.float64)
    return per * np.asarray(cols["elements"], dtype=np.float64)


def elementwise_features(cols, gpu) -> dict[str, np.ndarray]:
    e = np.asarray(cols["elements"], dtype=np.float64)
    nbytes = elementwise_bytes(cols)
    f = {**stream_features(nbytes, e, elementwise_flops(cols), gpu), **warm_features(cols, nbytes, gpu)}
    in_b, out_b = lookup(cols["in_dtype"], "bytes"), lookup(cols["dtype"], "bytes")
    bcast = np.asarray(cols["broadcast_elements"], dtype=np.float64)
    return {
        **f,
        "inputs": np.asarray(cols["inputs"], dtype=np.float64),
        "broadcast_inputs": np.asarray(cols["broadcast_inputs"], dtype=np.float64),
        "log_broadcast_ratio": np.log2(e / bcast),
        "in_bytes": in_b,
        "out_bytes": out_b,
        "contiguous": np.asarray(cols["contiguous"], dtype=np.float64),
        "dense": np.asarray(cols["dense"], dtype=np.float64),
        "vector_width": np.minimum(16 / np.minimum(in_b, out_b), 8.0),  # elements per 16 B access
        "elements_mod_vector": (e.astype(np.int64) % 8) / 8,
    }


def _default_in_dtype(c) -> np.ndarray:
    return np.asarray(c["dtype"], dtype=object)


SPEC = register(
    OpSpec(
        name="elementwise",
        doc="a pointwise kernel: out[elements] = fn(full-size inputs, broadcast inputs), "
        "dtype the output's, in_dtype the inputs'; contiguous=false: a permuted input, dense=false: a sliced one",
        fields={
            "elements": IntField(1, MAX_ELEMENTS),
            "fn": ChoiceField(FNS),
            "inputs": IntField(0, 4, default=1),
            "broadcast_inputs": IntField(0, 4, default=0),
            "broadcast_elements": IntField(1, MAX_ELEMENTS, default=1),
            "in_dtype": ChoiceField(DTYPES, default=_default_in_dtype, canon=canonical_dtype),
            "contiguous": BoolField(default=True),
            "dense": BoolField(default=True),
            "warm_bytes": WARM_BYTES,
        },
        dtypes=DTYPES,
        backends=("torch",),
        rules=(
            Rule(
                "broadcast_elements",
                lambda c: (c["broadcast_elements"] <= c["elements"]) & (c["elements"] % c["broadcast_elements"] == 0),
                lambda c: f"a divisor of elements={c['elements']} (a broadcast operand repeats over the output)",
            ),
            Rule(
                "inputs",
                lambda c: c["inputs"] + c["broadcast_inputs"] <= 4,
                lambda c: f"at most 4 - broadcast_inputs={c['broadcast_inputs']} (4 operands in all)",
            ),
            Rule(
                "dense",
                lambda c: np.asarray(c["dense"], dtype=bool) | ~np.asarray(c["contiguous"], dtype=bool),
                lambda c: "true when contiguous is true (a view that is not dense is not contiguous)",
            ),
        ),
        checks_dtype_on_gpu=False,
        features=elementwise_features,
        learned_features=stream_learned_features,
        flops=elementwise_flops,
        analytical=stream_latency,
        analytical_assumptions=stream_assumptions("pointwise"),
        example={"elements": 1 << 20, "fn": "add", "inputs": 2, "dtype": "bf16", "backend": "torch"},
        categorical=("backend", "dtype", "source", "fn", "in_dtype"),
        range_columns=("elements",),
        size_feature="bytes",
        # its kernels were measured on the H200 only: another Hopper GPU's test rows (the H100's) say the learned answer
        # from the GPU's spec beats the roofline there (``predictors/models/<op>.unseen.json``); other architectures
        # keep the analytical answer
        unseen_same_arch=True,
    )
)
ElementwiseDesc = SPEC.desc_type
