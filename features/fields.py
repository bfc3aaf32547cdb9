"""Description fields: the kinds a field can be, how each validates a column, dtypes and their aliases.

One validation path: every field kind checks a whole column (numpy, one value per row) and
returns its canonical values plus a mask of bad rows; a scalar description is a one-row column.
A value is *absent* only when the field is not given (``ABSENT`` in a column built from mappings);
None, NaN and inf are values, and wrong ones, for every field but an optional ``config``.
"""

from __future__ import annotations

import functools
import json
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: bytes per element of every dtype a description may carry
DTYPE_BYTES = {
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_block": 1,
    "int8": 1,
    "nvfp4": 0.5,
    "int64": 8,  # indices, positions, masks: what memory-bound kernels of real layers also move
    "int32": 4,
    "bool": 1,
}
#: which peak-rate key of the GPU spec a dtype runs at
DTYPE_PEAK = {
    "fp32": "fp32",
    "tf32": "tf32",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_block": "fp8",
    "int8": "int8",
    "nvfp4": "fp4",
}
#: the names torch, numpy and the ecosystem print for a dtype (lower-cased, any ``torch.``/``numpy.`` prefix dropped)
DTYPE_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "single": "fp32",
    "f32": "fp32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "fp8": "fp8_e4m3",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e4m3": "fp8_e4m3",
    "e4m3": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "e5m2": "fp8_e5m2",
    "int8": "int8",
    "fp4": "nvfp4",
    "long": "int64",
    "bool_": "bool",
}
#: backends of outside data: aiconfigurator-core's tables keep their framework's name (another backend, not a duplicate)
OUTSIDE_BACKENDS = ("trtllm", "vllm", "sglang")
#: the largest operand (elements) any description may imply: beyond this it is not a kernel
MAX_ELEMENTS = 1 << 38
#: up to this many rows a column is checked value by value in Python (pandas' per-call cost is larger)
SMALL = 16
#: the largest value repr an error message echoes
_MAX_REPR = 60


class Absent:
    """The marker of a field not given in a row (distinct from None and NaN, which are values)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent()


def short(value: Any) -> str:
    """repr of a value (numpy scalars as the Python value they hold), cut to a readable length for error messages."""
    if isinstance(value, np.generic):
        value = value.item()
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the real error
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _MAX_REPR else f"{text[:_MAX_REPR]}… ({len(text)} chars)"


def field_error(field: str, value: Any, allowed: str) -> ValueError:
    """The one error shape for bad input: field, value received, what is allowed."""
    return ValueError(f"kernel_desc[{field!r}] must be {allowed}; got {short(value)}")


def canonical_dtype(value: Any) -> Any:
    """A dtype name as torch/numpy/users write it -> kernelcast's name; anything else is returned unchanged."""
    text = (
        value
        if isinstance(value, str)
        else str(value)
        if type(value).__module__.startswith(("torch", "numpy"))
        else None
    )
    if text is None:
        return value
    name = _dtype_name(text)
    return value if name is None else name


@functools.lru_cache(maxsize=256)
def _dtype_name(text: str) -> str | None:
    """kernelcast's name for a dtype's text (None: none); the same few texts come again and again."""
    key = text.strip().lower().removeprefix("torch.").removeprefix("numpy.").removeprefix("np.")
    return key if key in DTYPE_BYTES else DTYPE_ALIASES.get(key)


def _hash_key(value: Any) -> tuple:
    """A dict key telling values and their types apart (1, 1.0 and True differ); repr for unhashables."""
    try:
        hash(value)
        return type(value), value
    except TypeError:
        return type(value), repr(value)


def per_value(values: np.ndarray, fn: Callable[[Any], Any]) -> tuple[np.ndarray, np.ndarray]:
    """``fn`` once per distinct value of an object column -> (results, ok mask); ``fn`` raises ValueError for a
    bad value."""
    n = len(values)
    out = np.empty(n, dtype=object)
    ok = np.ones(n, dtype=bool)
    if n <= SMALL:  # a few descriptions: no hashing at all
        for i, value in enumerate(values):
            try:
                out[i] = fn(value)
            except ValueError:
                ok[i] = False
        return out, ok
    if pd.api.types.infer_dtype(values, skipna=False) == "string":  # the usual case, hashed in C
        codes, uniq = pd.factorize(values)
        res, good = [], []
        for u in uniq:
            try:
                res.append(fn(u))
                good.append(True)
            except ValueError:
                res.append(None)
                good.append(False)
        table = np.empty(len(res), dtype=object)
        table[:] = res
        return table[codes], np.asarray(good, dtype=bool)[codes]
    cache: dict[tuple, tuple[Any, bool]] = {}
    for i, value in enumerate(values):
        key = _hash_key(value)
        if key not in cache:
            try:
                cache[key] = (fn(value), True)
            except ValueError:
                cache[key] = (None, False)
        out[i], ok[i] = cache[key]
    return out, ok


@dataclass(frozen=True)
class Check:
    """What one field's check of a column found: canonical values, bad rows, and what is allowed."""

    values: np.ndarray
    bad: np.ndarray
    allowed: Callable[[int], str]  # row position -> the allowed text for that row


class Field:
    """A description field: its default (a value, a callable of earlier validated columns, or None: required)."""

    default: Any = None
    python_type: type = object

    def check(self, name: str, col: np.ndarray, ctx: Mapping[str, np.ndarray]) -> Check:
        raise NotImplementedError

    def scalar(self, value: Any, ctx: Mapping[str, Any]) -> Any:
        """One plainly valid value -> its canonical form; raises ValueError for anything else (the caller then
        runs ``check`` on a one-row column, which says what is wrong). Never more permissive than ``check``."""
        raise ValueError

    def describe(self) -> str:
        raise NotImplementedError


def is_absent(col: np.ndarray) -> np.ndarray:
    if col.dtype != object:
        return np.zeros(len(col), dtype=bool)
    return np.asarray(col == ABSENT, dtype=bool)  # ABSENT compares equal only to itself


def _as_int(value: Any, lo: int, hi: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError
    if isinstance(value, numbers.Integral):
        out = int(value)
    else:
        f = float(value)
        if not math.isfinite(f) or not f.is_integer():
            raise ValueError
        out = int(f)
    if not lo <= out <= hi:
        raise ValueError
    return out


@dataclass(frozen=True)
class IntField(Field):
    """An integer: inclusive bounds, optional power-of-two rule, optional default."""

    lo: int
    hi: int
    default: Any = None
    pow2: bool = False
    python_type: type = int

    def describe(self) -> str:
        return f"{'a power of two' if self.pow2 else 'an integer'} in [{self.lo}, {self.hi}]"

    def scalar(self, value, ctx):
        if type(value) is not int or not self.lo <= value <= self.hi or (self.pow2 and value & (value - 1)):
            raise ValueError
        return value

    def check(self, name, col, ctx):
        if col.dtype.kind in "iu":  # typed columns: no per-value work
            values = col.astype(np.int64)
            bad = (col < self.lo) | (col > self.hi)
        elif col.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                bad = ~np.isfinite(col) | (col != np.floor(col)) | (col < self.lo) | (col > self.hi)
            values = np.where(bad, self.lo, col).astype(np.int64)
        else:
            out, ok = per_value(col, lambda v: _as_int(v, self.lo, self.hi))
            bad = ~ok
            out[bad] = self.lo
            values = out.astype(np.int64)
        if self.pow2:
            bad = bad | ((values & (values - 1)) != 0)
        return Check(values, bad, lambda i: self.describe())


@dataclass(frozen=True)
class BoolField(Field):
    default: Any = None
    python_type: type = bool

    def describe(self) -> str:
        return "true or false"

    def scalar(self, value, ctx):
        if type(value) is not bool:
            raise ValueError
        return value

    def check(self, name, col, ctx):
        if col.dtype == bool:
            return Check(col, np.zeros(len(col), dtype=bool), lambda i: self.describe())
        bad = np.fromiter((not isinstance(v, (bool, np.bool_)) for v in col), bool, len(col))
        values = np.where(bad, False, col).astype(bool)
        return Check(values, bad, lambda i: self.describe())


@dataclass(frozen=True)
class ChoiceField(Field):
    """One of a fixed set of names; ``canon`` maps what users type (aliases) to a name first."""

    choices: tuple[str, ...]
    default: Any = None
    canon: Callable[[Any], Any] | None = None
    python_type: type = str
    note: str = ""  # what the names mean, said with every error and in `kernelcast fields`

    def describe(self) -> str:
        return "one of " + ", ".join(self.choices) + (f" ({self.note})" if self.note else "")

    def scalar(self, value, ctx):
        value = self.canon(value) if self.canon is not None else value
        if not isinstance(value, str) or value not in self.choices:
            raise ValueError
        return value

    def check(self, name, col, ctx):
        allowed = set(self.choices)

        def one(v):
            v = self.canon(v) if self.canon is not None else v
            if not isinstance(v, str) or v not in allowed:
                raise ValueError
            return v

        if self.canon is None and len(col) > SMALL and pd.api.types.infer_dtype(col, skipna=False) == "string":
            bad = ~pd.Series(col, dtype=object).isin(self.choices).to_numpy()
            return Check(col.astype(object), bad, lambda i: self.describe())
        values, ok = per_value(col, one)
        return Check(values, ~ok, lambda i: self.describe())


@dataclass(frozen=True)
class CustomField(Field):
    """A field whose check is its op's own (GPU names, MoE distributions, Triton configs)."""

    checker: Callable[[str, np.ndarray, Mapping[str, np.ndarray]], Check] = None
    text: str = ""
    default: Any = None
    python_type: type = object
    optional: bool = False  # None is a value meaning "not given" (config only)
    scalar_checker: Callable[[Any, Mapping[str, Any]], Any] | None = None  # the one-value form of ``checker``

    def describe(self) -> str:
        return self.text

    def check(self, name, col, ctx):
        return self.checker(name, col, ctx)

    def scalar(self, value, ctx):
        if self.scalar_checker is None:
            raise ValueError
        return self.scalar_checker(value, ctx)


@dataclass(frozen=True)
class Rule:
    """A cross-field check written once over numpy columns: ``ok(c)`` -> bool per row."""

    field: str
    ok: Callable[[Mapping[str, np.ndarray]], Any]
    allowed: Callable[[Mapping[str, Any]], str]  # given one row's scalar values
    needs: tuple[str, ...] | None = None  # the fields it reads: checked as soon as they are (None: last)


@dataclass(frozen=True)
class TritonConfig:
    """The keys a Triton config of one op must carry: key -> (lo, hi, power of two)."""

    keys: Mapping[str, tuple[int, int, bool]] = field(default_factory=dict)

    def check_one(self, cfg: Any, backend: str) -> str | None:
        """A config value (mapping, its JSON text, or None) -> canonical JSON text (None: no config)."""
        if isinstance(cfg, str):  # rows and CLIs carry configs as JSON text
            try:
                cfg = json.loads(cfg)
            except json.JSONDecodeError:
                raise field_error(
                    "config", cfg, "a mapping of names to numbers or strings (or its JSON text)"
                ) from None
        if isinstance(cfg, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in cfg):
            cfg = dict(cfg)  # a description's own (key, value) pairs
        if cfg is None:  # backend triton: the predictors answer at the config search's top pick
            return None
        if not isinstance(cfg, Mapping):
            raise field_error("config", cfg, "a mapping of names to numbers or strings")
        for key in cfg:
            if not isinstance(key, str):
                raise field_error("config", cfg, "a mapping with string keys")
        if backend != "triton":
            for key, value in cfg.items():
                if not isinstance(value, (str, int, float, bool)) or (
                    isinstance(value, float) and not math.isfinite(value)
                ):
                    raise field_error(f"config.{key}", value, "a string, finite number or bool")
            return json.dumps(dict(cfg), sort_keys=True)
        unknown = sorted(set(cfg) - set(self.keys))
        if unknown:
            raise field_error(f"config.{unknown[0]}", cfg[unknown[0]], "absent: known keys are " + ", ".join(self.keys))
        out = {}
        for key, (lo, hi, pow2) in self.keys.items():
            value = cfg.get(key)
            if type(value) is int and lo <= value <= hi and not (pow2 and value & (value - 1)):
                out[key] = value  # plainly valid (config search checks thousands): no IntField built
                continue
            spec = IntField(lo, hi, pow2=pow2)
            if key not in cfg:
                raise field_error(f"config.{key}", None, f"{spec.describe()} (required for backend 'triton')")
            try:
                value = _as_int(cfg[key], lo, hi)
            except ValueError:
                raise field_error(f"config.{key}", cfg[key], spec.describe()) from None
            if pow2 and value & (value - 1):
                raise field_error(f"config.{key}", cfg[key], spec.describe())
            out[key] = value
        return json.dumps(out, sort_keys=True)

    def field(self) -> CustomField:
        def checker(name, col, ctx):
            backends = np.asarray(ctx["backend"], dtype=object)
            out = np.empty(len(col), dtype=object)
            bad = np.zeros(len(col), dtype=bool)
            messages: dict[int, str] = {}
            col = np.where(is_absent(col), None, col)
            # no config on a backend that needs none: nothing to check (most rows of most frames)
            rest = np.flatnonzero(~(np.equal(col, None) & (backends != "triton")))
            cache: dict[tuple, tuple] = {}
            for i in rest:
                value, backend = col[i], backends[i]
                key = (_hash_key(value), backend)
                if key not in cache:
                    try:
                        cache[key] = (self.check_one(value, backend), None)
                    except ValueError as exc:
                        cache[key] = (None, str(exc))
                out[i], msg = cache[key]
                if msg is not None:
                    bad[i] = True
                    messages[i] = msg
            return Check(out, bad, lambda i: messages[i])

        return CustomField(
            checker=checker,
            scalar_checker=lambda value, ctx: self.check_one(value, ctx["backend"]),
            text=(
                "for backend 'triton' a mapping of "
                + ", ".join(f"{k} ({IntField(lo, hi, pow2=p).describe()})" for k, (lo, hi, p) in self.keys.items())
                + " (none: the top-ranked config); for other backends none or free annotations"
                if self.keys
                else "none, or free annotations (a mapping of names to numbers or strings)"
            ),
            default=None,
            optional=True,
        )


def config_pairs(text: str | None) -> tuple[tuple[str, Any], ...] | None:
    """Canonical config JSON -> the sorted (key, value) tuple a frozen description holds."""
    return None if text is None else _pairs(text)


@functools.lru_cache(maxsize=4096)
def _pairs(text: str) -> tuple[tuple[str, Any], ...]:  # a tuple of scalars: shared safely; configs repeat
    return tuple(sorted(json.loads(text).items()))


__all__ = [
    "ABSENT",
    "DTYPE_ALIASES",
    "DTYPE_BYTES",
    "DTYPE_PEAK",
    "MAX_ELEMENTS",
    "OUTSIDE_BACKENDS",
    "BoolField",
    "Check",
    "ChoiceField",
    "CustomField",
    "Field",
    "IntField",
    "Rule",
    "TritonConfig",
    "canonical_dtype",
    "config_pairs",
    "field_error",
    "is_absent",
    "per_value",
    "short",
]
