"""Kernel descriptions: the validated, frozen form of what a user asks about.

A description is a plain mapping (JSON-able). ``parse_desc`` validates it into the frozen class of
its op family (made from the family's field table by ``make_desc_type``); bad input raises
``ValueError`` naming the field, the value and what is allowed. Constructing a description class
directly, or ``dataclasses.replace`` on one, runs the same validation.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from kernelcast.features.fields import ABSENT, config_pairs, field_error
from kernelcast.features.ops import get_op, op_names


class Desc:
    """Shared behaviour of the frozen description classes (one per op family)."""

    op: str = ""

    def __post_init__(self) -> None:
        from kernelcast.features.validate import validate_columns, validate_one

        values = {name: getattr(self, name) for name in _field_names(type(self))}
        canonical = validate_one(self.op, values)  # plainly valid input: no columns built
        if canonical is None:  # anything else: the column path names it
            cols = {}
            for name, value in values.items():
                cell = np.empty(1, dtype=object)
                cell[0] = value
                cols[name] = cell
            canonical = {k: v[0] for k, v in validate_columns(self.op, cols, 1).items()}
        for name in values:
            object.__setattr__(self, name, _python(name, canonical[name]))

    def to_dict(self) -> dict[str, Any]:
        out = {"op": self.op}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            if name == "config" and value is not None:
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_row(self) -> dict[str, Any]:
        """Flat, parquet-friendly form: ``config`` and list values (explicit distributions) become JSON strings."""
        row = self.to_dict()
        for key, value in row.items():
            if isinstance(value, (dict, list)):
                row[key] = json.dumps(value, sort_keys=True)
        return row

    def key(self) -> str:
        """A stable identity string (used for dataset deduplication)."""
        return self.to_json()


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    """The fields of a description class, in order (``dataclasses.fields``, read once per class)."""
    return tuple(f.name for f in dataclasses.fields(cls))


def _python(name: str, value: Any) -> Any:
    """A canonical column cell -> the value a frozen description holds."""
    if isinstance(value, np.generic):
        return value.item()
    if name == "config":
        return config_pairs(value)
    if isinstance(value, str) and value.startswith("["):  # explicit per-row lists (MoE token counts)
        return tuple(json.loads(value))
    return value


def row_keys(op: str, cols) -> list[str]:
    """``Desc.key()`` of every row of canonical columns (``validate_columns`` output) without building the objects."""
    names = get_op(op).all_fields()[1:]
    n = len(cols["gpu"])
    out = []
    for i in range(n):
        d = {"op": op}
        for name in names:
            value = _python(name, cols[name][i])
            d[name] = (
                dict(value)
                if name == "config" and value is not None
                else list(value)
                if isinstance(value, tuple)
                else value
            )
        out.append(json.dumps(d, sort_keys=True))
    return out


def make_desc_type(spec) -> type:
    """The frozen description class of an op family: its fields in order, each defaulting to ``ABSENT``
    (filled with the field's real default, or reported missing, by validation)."""
    names = ("gpu", "dtype", "backend", *spec.fields, "config")
    types = {"gpu": str, "dtype": str, "backend": str, "config": Any}
    fields = [
        (n, types.get(n, getattr(spec.fields.get(n), "python_type", Any)), dataclasses.field(default=ABSENT))
        for n in names
    ]
    cls_name = "".join(p.title() for p in spec.name.split("_")) + "Desc"
    cls = dataclasses.make_dataclass(cls_name, fields, bases=(Desc,), frozen=True, namespace={"op": spec.name})
    cls.__module__ = __name__
    cls.__doc__ = f"A validated {spec.name} description: {spec.doc}"
    return cls


def op_fields(op: str) -> tuple[str, ...]:
    """Every key a description of ``op`` may carry (``op`` included)."""
    return get_op(op).all_fields()


def parse_desc(d: Any) -> Desc:
    """Validate a mapping into a frozen description, or raise ``ValueError`` naming the field."""
    from kernelcast.features.validate import unknown_field_error

    if isinstance(d, Desc):
        return d
    if not isinstance(d, Mapping):
        raise ValueError(f"kernel_desc must be a mapping with an 'op' field; got {type(d).__name__}")
    for key in d:
        if not isinstance(key, str):
            raise ValueError(f"kernel_desc keys must be field names (strings); got {key!r}")
    spec = get_op(d.get("op"))
    allowed = spec.all_fields()
    for key in d:
        if key not in allowed:
            raise unknown_field_error(key, d[key], allowed, spec.name)
    return spec.desc_type(**{k: v for k, v in d.items() if k != "op"})


def from_row(row: Mapping[str, Any]) -> Desc:
    """Inverse of ``to_row``: keeps the fields of the row's op (other columns are labels or another op's);
    an empty ``config`` cell is no config."""
    if not isinstance(row, Mapping):
        raise field_error("op", row, "one of " + ", ".join(op_names()))
    spec = get_op(row.get("op"))
    d = {}
    for name in spec.all_fields():
        if name not in row:
            continue
        value = row[name]
        if name == "config" and (value is None or (isinstance(value, float) and math.isnan(value))):
            continue
        if isinstance(value, str) and value.startswith("[") and name != "config":
            value = json.loads(value)
        d[name] = value.item() if isinstance(value, np.generic) else value
    return parse_desc(d)


def from_json(text: str) -> Desc:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"kernel_desc is not valid JSON: {exc}") from None
    return parse_desc(data)


__all__ = ["Desc", "from_json", "from_row", "make_desc_type", "op_fields", "parse_desc", "row_keys"]
