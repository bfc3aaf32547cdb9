"""What a description may hold, for people: each op's fields with type, default and allowed values (read from the
op registry), and typed-in text turned into field values (sizes with units, booleans, loose spellings of choices).

Registry-driven: a family registered later is listed and parsed the same way, with no edit here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kernelcast.features.fields import BoolField, ChoiceField, CustomField, Field, IntField
from kernelcast.features.ops import get_op, op_names
from kernelcast.features.validate import op_field_kinds

#: size suffixes an integer field accepts in text: binary (KiB = 1024) and decimal (KB = 1000), the B optional
UNITS = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "ki": 2**10,
    "mi": 2**20,
    "gi": 2**30,
    "ti": 2**40,
}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([kmgt]i?)?b?\s*$", re.IGNORECASE)
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _kind(fld: Field) -> str:
    if isinstance(fld, IntField):
        return "int"
    if isinstance(fld, BoolField):
        return "bool"
    if isinstance(fld, ChoiceField):
        return "choice"
    return "json" if isinstance(fld, CustomField) and fld.optional else "text"


def _default(fld: Field) -> Any:
    """A field's default as people read it: the value, 'derived: …' for a function of other fields, None: required."""
    default = fld.default
    if default is None:
        return "(none)" if isinstance(fld, CustomField) and fld.optional else None
    if callable(default):
        doc = (default.__doc__ or "").strip().splitlines()
        return f"derived: {doc[0]}" if doc else "derived from the other fields"
    return default


def field_rows(op: str) -> list[dict[str, Any]]:
    """One row per field a description of ``op`` takes, in validation order (``op`` first)."""
    spec = get_op(op)
    rows = [{"op": op, "field": "op", "type": "choice", "required": True, "default": None, "allowed": op}]
    for name, fld in op_field_kinds(op).items():
        default = _default(fld)
        allowed = fld.describe()
        if name == "dtype":
            allowed += " (torch/numpy spellings too: bfloat16, torch.float16, half, …; fp8 is fp8_e4m3)"
        rows.append(
            {
                "op": spec.name,
                "field": name,
                "type": _kind(fld),
                "required": default is None,
                "default": default,
                "allowed": allowed,
            }
        )
    return rows


def catalog(ops: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """``field_rows`` of every registered op (or of ``ops``)."""
    return [row for op in (ops or op_names()) for row in field_rows(op)]


def usage_line(op: str) -> str:
    """One line per op for ``--help``: its required fields, then optional ones with their defaults."""
    parts = []
    for row in field_rows(op)[1:]:
        d = row["default"]
        if row["required"]:
            parts.append(row["field"])
        elif not (isinstance(d, str) and d.startswith(("(", "derived"))):
            parts.append(f"[{row['field']}={json.dumps(d) if isinstance(d, bool) else d}]")
        else:
            parts.append(f"[{row['field']}]")
    return f"op={op} " + " ".join(parts) + f"   ({get_op(op).doc})"


def parse_size(text: str) -> int | None:
    """'64MiB' -> 67108864, '4k' -> 4000, '1.5KiB' -> 1536; None when ``text`` is not a whole size."""
    m = _SIZE.match(text)
    if m is None:
        return None
    value = float(m.group(1)) * UNITS[(m.group(2) or "").lower()]
    return int(value) if value.is_integer() else None


def loose_choice(text: str, choices: tuple[str, ...]) -> str | None:
    """The one choice ``text`` spells ignoring case, '_', '-' and spaces ('allreduce' -> 'all_reduce'); None when
    none or several match."""
    key = re.sub(r"[\s_\-]+", "", text.lower())
    hits = [c for c in choices if re.sub(r"[\s_\-]+", "", c.lower()) == key]
    return hits[0] if len(hits) == 1 else None


def parse_text(op: Any, name: str, text: str) -> Any:
    """A field's value from command-line text. JSON first (numbers, true, lists, mappings); then by the field's
    kind: sizes with units for integers, true/True/1/yes for booleans, loose spellings of a choice. Text that
    fits none stays text, and validation names what is wrong with it. Unknown ops or fields: JSON or text."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    try:
        fld = op_field_kinds(op).get(name) if isinstance(op, str) else None
    except ValueError:  # an unknown op: validation says so
        fld = None
    if isinstance(fld, IntField) and isinstance(value, str):
        size = parse_size(value)
        return value if size is None else size
    if isinstance(fld, BoolField) and not isinstance(value, bool):
        low = text.strip().lower()
        return True if low in _TRUE else False if low in _FALSE else value
    if isinstance(fld, ChoiceField) and isinstance(value, str) and fld.canon is None:
        return loose_choice(value, fld.choices) or value
    return value


__all__ = ["UNITS", "catalog", "field_rows", "loose_choice", "parse_size", "parse_text", "usage_line"]
