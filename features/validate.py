"""The one validation path: columns of descriptions of one op -> canonical columns, or the first error.

Scalars (``parse_desc``, a description object's constructor) are one-row columns; frames
(``predict_many``, training rows) are many. Both run the same field checks and rules, so the same
input gets the same answer or the same error everywhere.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features.common import key_codes
from kernelcast.features.fields import (
    ABSENT,
    DTYPE_PEAK,
    SMALL,
    Check,
    ChoiceField,
    CustomField,
    Field,
    Rule,
    canonical_dtype,
    field_error,
    is_absent,
    per_value,
)
from kernelcast.features.gpu import get_gpu, list_gpus, resolve_gpu_name
from kernelcast.features.ops import OpSpec, get_op, op_names


def _gpu_check(name: str, col: np.ndarray, ctx) -> Check:
    values, ok = per_value(col, lambda v: resolve_gpu_name(v) if isinstance(v, str) else _raise())
    allowed = "one of " + ", ".join(sorted(s.name for s in list_gpus())) + " (or an alias, see `kernelcast gpus`)"
    values[~ok] = "h200_sxm"
    return Check(values, ~ok, lambda i: allowed)


def _raise():
    raise ValueError


GPU_FIELD = CustomField(
    checker=_gpu_check,
    scalar_checker=lambda v, ctx: resolve_gpu_name(v) if isinstance(v, str) else _raise(),
    text="a GPU name from `kernelcast gpus`",
)
#: the config of a non-Triton backend: optional scalar annotations
_FREE_CONFIG_KEYS: dict = {}


def op_field_kinds(op: str) -> dict[str, Field]:
    """Every field of ``op`` after ``op`` itself (gpu, dtype, backend, the family's own, config) with its kind."""
    return dict(_fields(op))


@functools.cache
def _fields(op: str) -> dict[str, Field]:
    from kernelcast.features.fields import TritonConfig

    spec = get_op(op)
    config = spec.triton_config if spec.triton_config is not None else TritonConfig(_FREE_CONFIG_KEYS).field()
    return {
        "gpu": GPU_FIELD,
        "dtype": ChoiceField(spec.dtypes, canon=canonical_dtype),
        "backend": ChoiceField(spec.all_backends()),
        **spec.fields,
        "config": config,
    }


@functools.cache
def _has_units(gpu: str, dtype: str) -> bool:
    return DTYPE_PEAK[dtype] in get_gpu(gpu).peak_flops


def _dtype_rule(spec: OpSpec) -> Rule:
    def ok(c):
        if len(c["gpu"]) <= SMALL:
            return np.fromiter((_has_units(g, d) for g, d in zip(c["gpu"], c["dtype"])), bool, len(c["gpu"]))
        codes, first = key_codes(c["gpu"], c["dtype"])
        return np.asarray([_has_units(c["gpu"][i], c["dtype"][i]) for i in first], dtype=bool)[codes]

    def allowed(c):
        runs = [d for d in spec.dtypes if _has_units(c["gpu"], d)]
        return f"one of {', '.join(runs)} on {c['gpu']} (it has no {DTYPE_PEAK[c['dtype']]} units)"

    return Rule("dtype", ok, allowed, needs=("gpu", "dtype"))


class Problems:
    """Bad rows found so far: raise on the first (``strict``), or collect one reason per bad row."""

    def __init__(self, n: int, strict: bool, labels: Any = None):
        self.bad = np.zeros(n, dtype=bool)
        self.reasons: dict[int, str] = {}
        self.strict, self.labels = strict, labels

    def add(self, bad: np.ndarray, message) -> None:
        if not bad.any():  # the usual case: one check, nothing to record
            return
        new = bad & ~self.bad
        if not new.any():
            return
        if self.strict:
            i = int(np.argmax(new))
            raise ValueError(self.prefix(i) + message(i))
        for i in np.flatnonzero(new):
            self.reasons[int(i)] = message(int(i))
        self.bad |= new

    def prefix(self, i: int) -> str:
        if self.labels is None:
            return ""
        label = self.labels[i]
        return f"row {label.item() if hasattr(label, 'item') else label!r}: "


def _scalar(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def validate_columns(
    op: str, cols: Mapping[str, Any], n: int, problems: Problems | None = None
) -> dict[str, np.ndarray]:
    """Validate description columns of one op (``ABSENT`` cells take defaults) -> canonical columns.

    ``problems`` collects bad rows instead of raising (training); canonical values of bad rows are
    placeholders. Without it, the first problem raises ``ValueError`` naming the field and value.
    """
    spec = get_op(op)
    problems = problems or Problems(n, strict=True)
    out: dict[str, np.ndarray] = {}
    pending = list(((_dtype_rule(spec),) if spec.checks_dtype_on_gpu else ()) + tuple(spec.rules))
    for name, fld in _fields(op).items():
        col = cols.get(name)
        col = np.full(n, ABSENT, dtype=object) if col is None else np.asarray(col)
        if col.ndim == 0:
            col = np.full(n, col.item() if col.dtype != object else col[()], dtype=col.dtype)
        col = _defaults(fld, col, out)
        missing = is_absent(col)
        if missing.any():
            if isinstance(fld, CustomField) and fld.optional:
                col = col.copy()
                col[missing] = None
                missing[:] = False
            else:
                problems.add(
                    missing,
                    lambda i, f=fld, n=name: field_error(n, None, f"{f.describe()} (required for op {op!r})").args[0],
                )
                col = col.copy()
                col[missing] = _placeholder(fld)
        if isinstance(fld, CustomField) and fld.optional and col.dtype == object:  # an empty config cell: none
            col = np.where(pd.isna(col), None, col)
        check = fld.check(name, col, out)
        problems.add(check.bad, lambda i, c=check, v=col, n=name: _message(n, c, v[i], i))
        out[name] = check.values
        ready = [r for r in pending if r.needs is not None and set(r.needs) <= set(out)]
        for rule in ready:
            _apply(rule, out, problems)
            pending.remove(rule)
    if spec.derived is not None:
        out.update(spec.derived(out))
    for rule in pending:
        _apply(rule, out, problems)
    return out


def validate_one(op: str, values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The canonical values of one plainly valid description (Python ints, bools and strings, known names),
    without building columns; None for anything else, which ``validate_columns`` then checks and names. It
    runs the same field checks, defaults and rules one value at a time, so it accepts nothing the column
    path rejects (the fuzz in tests/test_desc.py holds both to the same answers)."""
    spec = get_op(op)
    out: dict[str, Any] = {}
    try:
        for name, fld in _fields(op).items():
            value = values.get(name, ABSENT)
            if value is ABSENT:
                if isinstance(fld, CustomField) and fld.optional and fld.default is None:
                    value = None
                elif fld.default is None:
                    return None
                else:
                    value = fld.default({k: [v] for k, v in out.items()})[0] if callable(fld.default) else fld.default
            if value is None and not (isinstance(fld, CustomField) and fld.optional):
                return None
            out[name] = fld.scalar(value, out)
        if spec.checks_dtype_on_gpu and not _has_units(out["gpu"], out["dtype"]):
            return None
        ctx = dict(out)
        if spec.derived is not None:
            ctx.update({k: v[0] for k, v in spec.derived({k: [v] for k, v in out.items()}).items()})
        if not all(bool(rule.ok(ctx)) for rule in spec.rules):
            return None
    except (ValueError, TypeError, OverflowError):
        return None
    return out


def _apply(rule: Rule, out: dict[str, np.ndarray], problems: Problems) -> None:
    with np.errstate(all="ignore"):
        ok = np.asarray(rule.ok(out), dtype=bool)
    problems.add(
        ~ok,
        lambda i: field_error(
            rule.field, _scalar(out[rule.field][i]), rule.allowed({k: _scalar(v[i]) for k, v in out.items()})
        ).args[0],
    )


def _message(name: str, check: Check, raw: Any, i: int) -> str:
    allowed = check.allowed(i)
    if allowed.startswith("kernel_desc["):
        return allowed
    raw = _scalar(raw)
    text = field_error(name, raw, allowed).args[0]
    if raw is None or (isinstance(raw, float) and raw != raw):
        text += " (an empty cell is a value, not a default: give the field, or leave it out of the row's mapping)"
    return text


def _defaults(fld: Field, col: np.ndarray, ctx) -> np.ndarray:
    if fld.default is None or col.dtype != object:
        return col
    absent = is_absent(col)
    if not absent.any():
        return col
    col = col.copy()
    default = fld.default(ctx) if callable(fld.default) else fld.default
    col[absent] = np.asarray(default, dtype=object)[absent] if isinstance(default, np.ndarray) else default
    return col


def _placeholder(fld: Field) -> Any:
    lo = getattr(fld, "lo", None)
    if lo is not None:
        return lo
    choices = getattr(fld, "choices", None)
    return choices[0] if choices else False if fld.python_type is bool else "h200_sxm"


def all_field_names() -> set[str]:
    return {f for op in op_names() for f in get_op(op).all_fields()}


def unknown_field_error(name: Any, value: Any, allowed: Iterable[str], op: str | None = None) -> ValueError:
    """An unknown field: names it, its value, and the closest valid name."""
    allowed = sorted(allowed)
    close = difflib.get_close_matches(str(name), allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    takes = f"op {op!r} takes " if op else "description fields are "
    return field_error(str(name), value, f"absent: {takes}{', '.join(allowed)}{hint}")


def validate_frame(
    frame: pd.DataFrame, extra_columns: Iterable[str] = (), strict: bool = True
) -> tuple[dict[str, tuple[np.ndarray, dict[str, np.ndarray]]], dict[int, str]]:
    """Validate rows of descriptions (any mix of ops) -> (op -> (row positions, canonical columns), bad rows).

    A column that is no description field of any op and not in ``extra_columns`` (labels, provenance)
    is an error naming the closest field; a field of another op holding a value on a row is an error
    too, as in ``parse_desc``. ``strict=False`` skips bad rows instead of raising, returning each bad
    row's position with its reason (training reports and drops them).
    """
    known = all_field_names()
    extra = set(extra_columns) | {"op"}
    names = op_names()
    n = len(frame)
    problems = Problems(n, strict, frame.index)
    ops = frame["op"].to_numpy(dtype=object) if "op" in frame else np.full(n, None, dtype=object)
    codes, ok = per_value(ops, lambda v: v if isinstance(v, str) and v in names else _raise())
    problems.add(~ok, lambda i: field_error("op", _scalar(ops[i]), "one of " + ", ".join(names)).args[0])
    groups = {op: np.flatnonzero(ops == op) for op in names}
    for column in frame.columns:  # in column order, as parse_desc checks a mapping's keys in order
        if column in extra:
            continue
        values = frame[column].to_numpy()
        held = np.ones(n, dtype=bool) if column not in known else pd.notna(values) & ~is_absent(values)
        for op, pos in groups.items():
            fields = get_op(op).all_fields()
            if len(pos) and column not in fields:
                problems.add(
                    _at(n, pos, held[pos]),
                    lambda i, c=column, f=fields, o=op, v=values: unknown_field_error(c, _scalar(v[i]), f, o).args[0],
                )
    out = {}
    for op, pos in groups.items():
        pos = pos[~problems.bad[pos]]
        if not len(pos):
            continue
        sub = frame.iloc[pos]
        mine = set(get_op(op).all_fields())
        sub_problems = Problems(len(pos), strict, sub.index)
        cols = validate_columns(op, {c: sub[c].to_numpy() for c in sub.columns if c in mine}, len(pos), sub_problems)
        _merge(problems, sub_problems, pos)
        good = ~sub_problems.bad
        out[op] = (pos, cols) if good.all() else (pos[good], {k: v[good] for k, v in cols.items()})
    return out, problems.reasons


def _at(n: int, pos: np.ndarray, flags: np.ndarray) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    out[pos] = flags
    return out


def _merge(into: Problems, sub: Problems, pos: np.ndarray) -> None:
    for i, reason in sub.reasons.items():
        into.reasons.setdefault(int(pos[i]), reason)
    into.bad[pos[sub.bad]] = True


def columns_from_records(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Mappings -> a frame whose missing keys are ``ABSENT`` (not NaN): an omitted field takes its default,
    an explicit None/NaN stays a value (and an error)."""
    rows = list(records)
    names = op_names()
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            raise ValueError(f"row {i}: kernel_desc must be a mapping with an 'op' field; got {type(r).__name__}")
        for key in r:
            if not isinstance(key, str):
                raise ValueError(f"row {i}: kernel_desc keys must be field names (strings); got {key!r}")
        op = r.get("op")
        if isinstance(op, str) and op in names:  # a mapping's keys are checked as parse_desc does
            allowed = get_op(op).all_fields()
            for key in r:
                if key not in allowed:
                    raise ValueError(f"row {i}: " + unknown_field_error(key, r[key], allowed, op).args[0])
    keys = list(dict.fromkeys(k for r in rows for k in r))
    data = {}
    for key in keys:
        col = np.empty(len(rows), dtype=object)
        col[:] = [r.get(key, ABSENT) for r in rows]
        data[key] = col
    return pd.DataFrame(data, index=pd.RangeIndex(len(rows)))


__all__ = [
    "GPU_FIELD",
    "Problems",
    "all_field_names",
    "columns_from_records",
    "op_field_kinds",
    "unknown_field_error",
    "validate_columns",
    "validate_frame",
]
