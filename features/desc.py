"""Kernel descriptions: the validated, frozen form of what a user asks about.

A description is a plain mapping (JSON-able). ``parse_desc`` validates it into one of the
frozen dataclasses below; bad input raises ``ValueError`` naming the field, the value and what
is allowed. The field table (``FIELDS``) is the one source of truth: the scalar validator here
and the column validator in ``features.frame`` both read it.
"""
from __future__ import annotations

import dataclasses
import json
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from kernelcast.features.gpu import get_gpu, resolve_gpu_name

OPS = ("gemm", "attention", "moe", "collective")

#: bytes per element of every dtype a description may carry
DTYPE_BYTES = {
    "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2,
    "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_block": 1, "int8": 1, "nvfp4": 0.5,
}
#: which peak-rate key of the GPU spec a dtype runs at
DTYPE_PEAK = {
    "fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16", "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8", "fp8_block": "fp8", "int8": "int8", "nvfp4": "fp4",
}

OP_DTYPES = {
    "gemm": ("fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "fp8_block", "nvfp4"),
    "attention": ("bf16", "fp16", "fp8_e4m3"),
    "moe": ("bf16", "fp16", "fp8_e4m3", "fp8_block", "nvfp4"),
    "collective": ("fp32", "bf16", "fp16", "int8", "fp8_e4m3"),
}
OUTSIDE_BACKENDS = ("trtllm", "vllm", "sglang")
OP_BACKENDS = {
    "gemm": ("cublas", "triton") + OUTSIDE_BACKENDS,
    "attention": ("flash", "cudnn", "triton") + OUTSIDE_BACKENDS,
    "moe": ("triton", "torch") + OUTSIDE_BACKENDS,
    "collective": ("nccl", "rccl"),
}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
LAYOUTS = ("nn", "nt")
DISTRIBUTION_RE = re.compile(r"^(balanced|power_law_(\d+(\.\d+)?))$")

#: Triton configs: key -> (lo, hi, must be a power of two)
TRITON_CONFIG = {
    "gemm": {"block_m": (16, 256, True), "block_n": (16, 256, True), "block_k": (16, 256, True),
             "group_m": (1, 64, False), "num_warps": (1, 16, True), "num_stages": (1, 8, False),
             "split_k": (1, 64, False)},
    "attention": {"block_m": (16, 256, True), "block_n": (16, 256, True),
                  "num_warps": (1, 16, True), "num_stages": (1, 8, False)},
    "moe": {"block_m": (16, 256, True), "block_n": (16, 256, True), "block_k": (16, 256, True),
            "group_m": (1, 64, False), "num_warps": (1, 16, True), "num_stages": (1, 8, False)},
}


@dataclass(frozen=True)
class IntField:
    """An integer field: inclusive bounds and an optional default."""

    lo: int
    hi: int
    default: int | None = None


#: op -> field -> IntField; non-integer fields are checked by name in ``_check_common``
FIELDS: dict[str, dict[str, IntField]] = {
    "gemm": {"m": IntField(1, 1 << 24), "n": IntField(1, 1 << 24), "k": IntField(1, 1 << 24),
             "batch": IntField(1, 1 << 16, 1)},
    "attention": {"batch": IntField(1, 1 << 16), "heads_q": IntField(1, 1024),
                  "heads_kv": IntField(1, 1024), "seq_q": IntField(1, 1 << 22),
                  "seq_kv": IntField(1, 1 << 22), "head_dim": IntField(8, 1024)},
    "moe": {"tokens": IntField(1, 1 << 22), "hidden": IntField(16, 1 << 17),
            "ffn": IntField(16, 1 << 18), "experts": IntField(1, 4096), "top_k": IntField(1, 64)},
    "collective": {"bytes": IntField(1, 1 << 42), "ranks": IntField(1, 1 << 16),
                   "ranks_per_node": IntField(1, 1 << 10)},
}
#: the largest operand (elements) any description may imply: beyond this it is not a kernel
MAX_ELEMENTS = 1 << 38


@dataclass(frozen=True)
class Rule:
    """A cross-field check written once for scalars and numpy columns alike."""

    field: str
    ok: Any        # c -> bool (or bool array): c maps field names to values or columns
    allowed: Any   # c -> str, given one row's scalar values


RULES: dict[str, tuple[Rule, ...]] = {
    "gemm": (
        Rule("m", lambda c: np.maximum(np.maximum(c["m"] * c["k"], c["k"] * c["n"]), c["m"] * c["n"]) * c["batch"]
             <= MAX_ELEMENTS,
             lambda c: f"such that every operand of batch*(m,n,k)={(c['batch'], c['m'], c['n'], c['k'])} has at most 2**38 elements"),
    ),
    "attention": (
        Rule("heads_q", lambda c: c["heads_q"] % c["heads_kv"] == 0, lambda c: f"a multiple of heads_kv={c['heads_kv']}"),
        Rule("head_dim", lambda c: c["head_dim"] % 8 == 0, lambda c: "a multiple of 8 in [8, 1024]"),
        Rule("seq_q", lambda c: np.logical_or(np.logical_not(c["causal"]), c["seq_q"] <= c["seq_kv"]),
             lambda c: f"at most seq_kv={c['seq_kv']} when causal (bottom-right mask)"),
        Rule("batch", lambda c: c["batch"] * c["head_dim"] * ((c["heads_q"] * c["seq_q"]) + (c["heads_kv"] * c["seq_kv"])) <= MAX_ELEMENTS,
             lambda c: "small enough that Q, K and V hold at most 2**38 elements"),
    ),
    "moe": (
        Rule("top_k", lambda c: c["top_k"] <= c["experts"], lambda c: f"at most experts={c['experts']}"),
        Rule("experts", lambda c: c["experts"] * c["hidden"] * c["ffn"] <= MAX_ELEMENTS,
             lambda c: f"such that experts*hidden*ffn (hidden={c['hidden']}, ffn={c['ffn']}) is at most 2**38"),
    ),
    "collective": (
        Rule("ranks", lambda c: c["ranks"] >= 2, lambda c: "an integer >= 2 (a collective needs two ranks)"),
        Rule("ranks_per_node", lambda c: c["ranks"] % c["ranks_per_node"] == 0, lambda c: f"a divisor of ranks={c['ranks']}"),
        Rule("bytes", lambda c: c["bytes"] % c["elem_bytes"] == 0,
             lambda c: f"a multiple of the {c['dtype']} element size ({c['elem_bytes']} B)"),
    ),
}


def check_rules(op: str, c: Mapping[str, Any]) -> None:
    for rule in RULES[op]:
        if not rule.ok(c):
            raise field_error(rule.field, c[rule.field], rule.allowed(c))


def field_error(field: str, value: Any, allowed: str) -> ValueError:
    """The one error shape for bad input: field, value received, what is allowed."""
    return ValueError(f"kernel_desc[{field!r}] must be {allowed}; got {value!r}")


def _choice(d: Mapping, field: str, allowed: tuple, default: Any = None) -> Any:
    value = d.get(field, default)
    if not isinstance(value, str) or value not in allowed:
        raise field_error(field, value, "one of " + ", ".join(allowed))
    return value


def as_int(field: str, value: Any, spec: IntField) -> int:
    """Validate one integer field (ints and integral floats; never bools)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise field_error(field, value, f"an integer in [{spec.lo}, {spec.hi}]")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif math.isfinite(value) and float(value).is_integer():
        out = int(value)
    else:
        raise field_error(field, value, f"an integer in [{spec.lo}, {spec.hi}]")
    if not spec.lo <= out <= spec.hi:
        raise field_error(field, value, f"an integer in [{spec.lo}, {spec.hi}]")
    return out


def as_bool(field: str, value: Any) -> bool:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise field_error(field, value, "true or false")


def _ints(d: Mapping, op: str) -> dict[str, int]:
    out = {}
    for name, spec in FIELDS[op].items():
        if name not in d and spec.default is None:
            raise field_error(name, None, f"an integer in [{spec.lo}, {spec.hi}] (required for op {op!r})")
        out[name] = as_int(name, d.get(name, spec.default), spec)
    return out


def check_config(d: Mapping, op: str, backend: str) -> tuple[tuple[str, Any], ...] | None:
    """Triton backends need a full, checked config; others may carry scalar annotations."""
    cfg = d.get("config")
    if isinstance(cfg, str):                     # rows and CLIs carry configs as JSON text
        try:
            cfg = json.loads(cfg)
        except json.JSONDecodeError:
            raise field_error("config", cfg, "a mapping of names to numbers or strings (or its JSON text)") from None
    if cfg is None:
        if backend == "triton":
            raise field_error("config", None, f"a mapping with {', '.join(TRITON_CONFIG[op])} for backend 'triton'")
        return None
    if not isinstance(cfg, Mapping):
        raise field_error("config", cfg, "a mapping of names to numbers or strings")
    if backend != "triton":
        for key, value in cfg.items():
            if not isinstance(key, str) or not isinstance(value, (str, int, float, bool)):
                raise field_error(f"config.{key}", value, "a string, number or bool")
        return tuple(sorted(cfg.items()))
    spec = TRITON_CONFIG[op]
    unknown = sorted(set(map(str, cfg)) - set(spec))
    if unknown:
        raise field_error(f"config.{unknown[0]}", cfg[unknown[0]], "absent: known keys are " + ", ".join(spec))
    out = {}
    for key, (lo, hi, pow2) in spec.items():
        if key not in cfg:
            raise field_error(f"config.{key}", None, f"an integer in [{lo}, {hi}] (required for backend 'triton')")
        value = as_int(f"config.{key}", cfg[key], IntField(lo, hi))
        if pow2 and value & (value - 1):
            raise field_error(f"config.{key}", cfg[key], f"a power of two in [{lo}, {hi}]")
        out[key] = value
    return tuple(sorted(out.items()))


def _check_common(d: Any) -> tuple[str, str, str, str]:
    if not isinstance(d, Mapping):
        raise ValueError(f"kernel_desc must be a mapping with an 'op' field; got {type(d).__name__}")
    op = _choice(d, "op", OPS)
    unknown = sorted(set(map(str, d)) - set(op_fields(op)))
    if unknown:
        raise field_error(unknown[0], d[unknown[0]], f"absent: op {op!r} takes " + ", ".join(op_fields(op)))
    gpu_value = d.get("gpu")
    if not isinstance(gpu_value, str):
        raise field_error("gpu", gpu_value, "a GPU name from `kernelcast gpus`")
    gpu = resolve_gpu_name(gpu_value)
    dtype = _choice(d, "dtype", OP_DTYPES[op])
    check_dtype_on_gpu(op, gpu, dtype)
    backend = _choice(d, "backend", OP_BACKENDS[op])
    return op, gpu, dtype, backend


def check_dtype_on_gpu(op: str, gpu: str, dtype: str) -> None:
    """Compute ops need the GPU to have units for the dtype (no fp8 on an A100, no fp4 on a Hopper)."""
    if op == "collective":
        return
    spec = get_gpu(gpu)
    if DTYPE_PEAK[dtype] not in spec.peak_flops:
        runs = [d for d in OP_DTYPES[op] if DTYPE_PEAK[d] in spec.peak_flops]
        raise field_error("dtype", dtype, f"one of {', '.join(runs)} on {gpu} (it has no {DTYPE_PEAK[dtype]} units)")


class _Desc:
    """Shared behaviour of the frozen description classes."""

    def to_dict(self) -> dict[str, Any]:
        out = {"op": self.op}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "config" and value is not None:
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_row(self) -> dict[str, Any]:
        """Flat, parquet-friendly form: ``config`` and explicit distributions become JSON strings."""
        row = self.to_dict()
        row["config"] = None if row["config"] is None else json.dumps(row["config"], sort_keys=True)
        if isinstance(row.get("distribution"), list):
            row["distribution"] = json.dumps(row["distribution"])
        return row

    def key(self) -> str:
        """A stable identity string (used for dataset deduplication)."""
        return self.to_json()


@dataclass(frozen=True)
class GemmDesc(_Desc):
    gpu: str
    dtype: str
    backend: str
    m: int
    n: int
    k: int
    batch: int = 1
    layout: str = "nt"
    out_dtype: str = "bf16"
    config: tuple[tuple[str, Any], ...] | None = None
    op = "gemm"


@dataclass(frozen=True)
class AttentionDesc(_Desc):
    gpu: str
    dtype: str
    backend: str
    batch: int
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_kv: int
    head_dim: int
    causal: bool
    config: tuple[tuple[str, Any], ...] | None = None
    op = "attention"


@dataclass(frozen=True)
class MoeDesc(_Desc):
    gpu: str
    dtype: str
    backend: str
    tokens: int
    hidden: int
    ffn: int
    experts: int
    top_k: int
    gated: bool = True
    distribution: str | tuple[int, ...] = "balanced"
    config: tuple[tuple[str, Any], ...] | None = None
    op = "moe"


@dataclass(frozen=True)
class CollectiveDesc(_Desc):
    gpu: str
    dtype: str
    backend: str
    collective: str
    bytes: int
    ranks: int
    ranks_per_node: int
    in_place: bool = False
    config: tuple[tuple[str, Any], ...] | None = None
    op = "collective"


DESC_TYPES = {"gemm": GemmDesc, "attention": AttentionDesc, "moe": MoeDesc, "collective": CollectiveDesc}
Desc = GemmDesc | AttentionDesc | MoeDesc | CollectiveDesc


def op_fields(op: str) -> tuple[str, ...]:
    """Every key a description of ``op`` may carry (``op`` included)."""
    return ("op",) + tuple(f.name for f in dataclasses.fields(DESC_TYPES[op]))


def default_out_dtype(dtype: str) -> str:
    return {"fp32": "fp32", "tf32": "fp32", "fp16": "fp16"}.get(dtype, "bf16")


def _gemm(d: Mapping, gpu: str, dtype: str, backend: str) -> GemmDesc:
    ints = _ints(d, "gemm")
    check_rules("gemm", ints)
    m, n, k = ints["m"], ints["n"], ints["k"]
    layout = _choice(d, "layout", LAYOUTS, "nt")
    out_dtype = _choice(d, "out_dtype", ("fp32", "bf16", "fp16"), default_out_dtype(dtype))
    return GemmDesc(gpu, dtype, backend, m, n, k, ints["batch"], layout, out_dtype,
                    check_config(d, "gemm", backend))


def _attention(d: Mapping, gpu: str, dtype: str, backend: str) -> AttentionDesc:
    ints = _ints(d, "attention")
    causal = as_bool("causal", d.get("causal"))
    check_rules("attention", {**ints, "causal": causal})
    return AttentionDesc(gpu, dtype, backend, ints["batch"], ints["heads_q"], ints["heads_kv"],
                         ints["seq_q"], ints["seq_kv"], ints["head_dim"], causal,
                         check_config(d, "attention", backend))


def check_distribution(value: Any, tokens: int, experts: int, top_k: int) -> str | tuple[int, ...]:
    if isinstance(value, str):
        if not DISTRIBUTION_RE.match(value) or (value != "balanced" and float(value[10:]) > 10):
            raise field_error("distribution", value, "'balanced', 'power_law_<alpha>' (0 <= alpha <= 10) or per-expert token counts")
        return value
    if not isinstance(value, (list, tuple)) or len(value) != experts:
        raise field_error("distribution", value, f"'balanced', 'power_law_<alpha>' or a list of {experts} per-expert token counts")
    counts = tuple(as_int(f"distribution[{i}]", c, IntField(0, tokens)) for i, c in enumerate(value))
    if sum(counts) != tokens * top_k:
        raise field_error("distribution", value, f"counts summing to tokens*top_k={tokens * top_k}")
    return counts


def _moe(d: Mapping, gpu: str, dtype: str, backend: str) -> MoeDesc:
    ints = _ints(d, "moe")
    check_rules("moe", ints)
    gated = as_bool("gated", d.get("gated", True))
    dist = check_distribution(d.get("distribution", "balanced"), ints["tokens"], ints["experts"], ints["top_k"])
    return MoeDesc(gpu, dtype, backend, ints["tokens"], ints["hidden"], ints["ffn"], ints["experts"],
                   ints["top_k"], gated, dist, check_config(d, "moe", backend))


def _collective(d: Mapping, gpu: str, dtype: str, backend: str) -> CollectiveDesc:
    collective = _choice(d, "collective", COLLECTIVES)
    ints = _ints({"ranks_per_node": d.get("ranks"), **d}, "collective")
    check_rules("collective", {**ints, "dtype": dtype, "elem_bytes": DTYPE_BYTES[dtype]})
    in_place = as_bool("in_place", d.get("in_place", False))
    return CollectiveDesc(gpu, dtype, backend, collective, ints["bytes"], ints["ranks"],
                          ints["ranks_per_node"], in_place, check_config(d, "collective", backend))


_BUILDERS = {"gemm": _gemm, "attention": _attention, "moe": _moe, "collective": _collective}


def parse_desc(d: Any) -> Desc:
    """Validate a mapping into a frozen description, or raise ``ValueError`` naming the field."""
    if isinstance(d, _Desc):
        return d
    if isinstance(d, Mapping):                    # NaN is an empty cell (a frame's record): absent
        d = {k: v for k, v in d.items() if not (isinstance(v, float) and math.isnan(v))}
    op, gpu, dtype, backend = _check_common(d)
    return _BUILDERS[op](d, gpu, dtype, backend)


def from_row(row: Mapping[str, Any]) -> Desc:
    """Inverse of ``to_row``: drops columns that are not fields of the row's op, NaN/None as absent."""
    if not isinstance(row, Mapping) or row.get("op") not in DESC_TYPES:
        raise field_error("op", row.get("op") if isinstance(row, Mapping) else row, "one of " + ", ".join(OPS))
    d = {}
    for name in op_fields(row["op"]):
        value = row.get(name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if name == "distribution" and isinstance(value, str) and value.startswith("["):
            value = json.loads(value)
        d[name] = value.item() if hasattr(value, "item") else value
    return parse_desc(d)


def from_json(text: str) -> Desc:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"kernel_desc is not valid JSON: {exc}") from None
    return parse_desc(data)
