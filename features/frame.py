"""Column-wise validation of many descriptions at once, from the same field table and rules as ``desc``."""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features import desc as D
from kernelcast.features.common import key_codes
from kernelcast.features.gpu import resolve_gpu_name

_BOOL_FIELDS = {"attention": {"causal": None}, "moe": {"gated": True}, "collective": {"in_place": False}}
_CHOICE_FIELDS = {"gemm": {"layout": (D.LAYOUTS, "nt"), "out_dtype": (("fp32", "bf16", "fp16"), None)},
                  "collective": {"collective": (D.COLLECTIVES, None)}}


def _row_error(index, row: int, exc: ValueError) -> ValueError:
    label = index[row]
    return ValueError(f"row {label.item() if hasattr(label, 'item') else label!r}: {exc}")


def _column(frame: pd.DataFrame, name: str, default: Any) -> np.ndarray:
    if name in frame:
        col = frame[name].to_numpy(dtype=object, copy=True)
        col[pd.isna(frame[name]).to_numpy()] = default     # an empty cell is an absent field
        return col
    return np.full(len(frame), default, dtype=object)


def _ints(frame: pd.DataFrame, op: str, out: dict) -> None:
    for name, spec in D.FIELDS[op].items():
        default = spec.default if not (op == "collective" and name == "ranks_per_node") else None
        typed = name in frame and frame[name].dtype.kind in "iuf"    # numbers by dtype: no per-value type check
        if typed:
            values = frame[name].to_numpy(dtype=np.float64, copy=True)
            values[np.isnan(values)] = np.nan if default is None else default
        else:
            raw = _column(frame, name, default)
            values = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=np.float64, copy=True)
        if op == "collective" and name == "ranks_per_node":
            missing = np.isnan(values) if typed else pd.isna(pd.Series(raw)).to_numpy()
            values[missing] = out["ranks"][missing]
            if not typed:
                raw[missing] = out["ranks"][missing]
        bad = ~np.isfinite(values) | (values != np.floor(values)) | (values < spec.lo) | (values > spec.hi)
        if not typed:
            bad |= np.asarray([isinstance(v, bool) or not isinstance(v, (int, float, np.number)) for v in raw])
        if bad.any():
            i = int(np.argmax(bad))
            value = raw[i] if not typed else (None if np.isnan(values[i]) else frame[name].iloc[i].item())
            raise _row_error(frame.index, i, D.field_error(name, value, f"an integer in [{spec.lo}, {spec.hi}]"))
        out[name] = values.astype(np.int64)


def _choices(frame: pd.DataFrame, name: str, allowed: tuple, default: Any, out: dict) -> None:
    col = _column(frame, name, default)
    if pd.api.types.infer_dtype(col, skipna=False) == "string":            # the usual case, hashed in C
        bad = ~pd.Series(col, dtype=object).isin(allowed).to_numpy()
    else:
        allowed_set = set(allowed)
        bad = np.fromiter((not (isinstance(v, str) and v in allowed_set) for v in col), bool, len(col))
    if bad.any():
        i = int(np.argmax(bad))
        raise _row_error(frame.index, i, D.field_error(name, col[i], "one of " + ", ".join(allowed)))
    out[name] = col.astype(str)


def _key(value: Any) -> tuple:
    """A dict key telling apart values and their types (1, 1.0 and True differ); JSON for unhashables."""
    try:
        hash(value)
        return type(value), value
    except TypeError:
        return type(value), json.dumps(value, default=str)


def _per_unique(frame: pd.DataFrame, values: np.ndarray, check) -> np.ndarray:
    """Run a scalar check once per distinct value; errors name the first row holding it."""
    if pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):    # strings and None: hash in C
        codes, first = key_codes(values)
        results = np.empty(len(first), dtype=object)
        for code, i in enumerate(first):
            try:
                results[code] = check(values[i], int(i))
            except ValueError as exc:
                raise _row_error(frame.index, int(i), exc) from None
        return results[codes]
    results: dict[tuple, Any] = {}
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        key = _key(value)
        if key not in results:
            try:
                results[key] = check(value, i)
            except ValueError as exc:
                raise _row_error(frame.index, i, exc) from None
        out[i] = results[key]
    return out


def _check_pairs(frame: pd.DataFrame, a: np.ndarray, b: np.ndarray, check) -> None:
    """Run ``check(a, b)`` once per distinct pair, in row order; errors name the first row holding it."""
    for i in key_codes(a, b)[1]:
        try:
            check(a[i], b[i])
        except ValueError as exc:
            raise _row_error(frame.index, int(i), exc) from None


def _gpu_name(value: Any) -> str:
    if not isinstance(value, str):
        raise D.field_error("gpu", value, "a GPU name from `kernelcast gpus`")
    return resolve_gpu_name(value)


def _validate_op(frame: pd.DataFrame, op: str) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    gpus = _column(frame, "gpu", None)
    out["gpu"] = _per_unique(frame, gpus, lambda v, i: _gpu_name(v))
    _choices(frame, "dtype", D.OP_DTYPES[op], None, out)
    _check_pairs(frame, out["gpu"], out["dtype"], lambda g, t: D.check_dtype_on_gpu(op, g, t))
    _choices(frame, "backend", D.OP_BACKENDS[op], None, out)
    for name, (allowed, default) in _CHOICE_FIELDS.get(op, {}).items():
        if name == "out_dtype":
            col = _column(frame, name, None)
            missing = pd.isna(pd.Series(col)).to_numpy()
            if missing.any():
                codes, dtypes = pd.factorize(out["dtype"][missing])
                col[missing] = np.asarray([D.default_out_dtype(d) for d in dtypes], dtype=object)[codes]
            frame = frame.assign(out_dtype=col)
        _choices(frame, name, allowed, default, out)
    for name, default in _BOOL_FIELDS.get(op, {}).items():
        col = _column(frame, name, default)
        typed = name in frame and frame[name].dtype == bool
        bad = np.zeros(len(col), bool) if typed else np.asarray([not isinstance(v, (bool, np.bool_)) for v in col])
        if bad.any():
            i = int(np.argmax(bad))
            raise _row_error(frame.index, i, D.field_error(name, col[i], "true or false"))
        out[name] = col.astype(bool)
    _ints(frame, op, out)
    if op == "collective":
        out["elem_bytes"] = np.asarray([D.DTYPE_BYTES[x] for x in out["dtype"]])
    for rule in D.RULES[op]:
        ok = np.asarray(rule.ok(out), dtype=bool)
        if not ok.all():
            i = int(np.argmin(ok))
            row = {k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in out.items()}
            raise _row_error(frame.index, i, D.field_error(rule.field, row[rule.field], rule.allowed(row)))
    out["config"] = _per_unique(frame, _column(frame, "config", None),
                                lambda v, i: _config_json(v, op, out["backend"][i]))
    if op == "moe":
        dist = _column(frame, "distribution", "balanced")
        named = np.asarray([isinstance(v, str) and not v.startswith("[") for v in dist], dtype=bool)
        out["distribution"] = np.empty(len(dist), dtype=object)
        # a named distribution does not depend on the row's sizes: checked once per name
        out["distribution"][named] = _per_unique(frame.iloc[named], dist[named], lambda v, i: _dist_json(v, 1, 1, 1))
        if not named.all():
            rest = ~named
            keyed = np.empty(int(rest.sum()), dtype=object)
            keyed[:] = list(zip(dist[rest], out["tokens"][rest].tolist(), out["experts"][rest].tolist(),
                                out["top_k"][rest].tolist()))
            out["distribution"][rest] = _per_unique(frame.iloc[rest], keyed, lambda v, i: _dist_json(*v))
    return out


def _config_json(value: Any, op: str, backend: str) -> str | None:
    cfg = D.check_config({"config": value}, op, backend)
    return None if cfg is None else json.dumps(dict(cfg), sort_keys=True)


def _dist_json(dist: Any, tokens: int, experts: int, top_k: int) -> str:
    value = json.loads(dist) if isinstance(dist, str) and dist.startswith("[") else dist
    out = D.check_distribution(value, tokens, experts, top_k)
    return out if isinstance(out, str) else json.dumps(list(out))


def validate_frame(frame: pd.DataFrame) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Validate rows of descriptions; returns op -> (row positions, canonical columns).

    Columns that are no description field (labels, provenance) are ignored; a field of another
    op holding a value (``m`` on an attention row) is an error, as in ``parse_desc``.
    """
    if "op" not in frame:
        raise ValueError("kernel_desc frame must have an 'op' column; got columns " + ", ".join(map(str, frame.columns)))
    ops = frame["op"].to_numpy(dtype=object)
    if pd.api.types.infer_dtype(ops, skipna=False) == "string":
        bad = ~pd.Series(ops, dtype=object).isin(D.OPS).to_numpy()
    else:
        bad = np.fromiter((not (isinstance(v, str) and v in D.OPS) for v in ops), bool, len(ops))
    if bad.any():
        i = int(np.argmax(bad))
        raise _row_error(frame.index, i, D.field_error("op", ops[i], "one of " + ", ".join(D.OPS)))
    out = {}
    for op in D.OPS:
        pos = np.flatnonzero(ops == op)
        if len(pos):
            sub = frame.iloc[pos]
            allowed = set(D.op_fields(op))
            foreign = {f for o in D.OPS for f in D.op_fields(o)} - allowed
            extra = [c for c in sub.columns if c in foreign and sub[c].notna().any()]
            if extra:
                i = int(np.argmax(sub[extra[0]].notna().to_numpy()))
                raise _row_error(sub.index, i, D.field_error(extra[0], sub[extra[0]].iloc[i],
                                                             f"absent: op {op!r} takes " + ", ".join(sorted(allowed))))
            out[op] = (pos, _validate_op(sub, op))
    return out
