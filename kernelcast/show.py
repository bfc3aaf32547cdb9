"""What the command line prints: one table printer (pandas) and numbers in the SI units people read."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

#: SI prefixes from the largest down (a value is shown with the first whose scale it reaches)
PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))


def si(value: float, unit: str) -> str:
    """4.8e12, 'B/s' -> '4.8 TB/s'; 1.98e9, 'Hz' -> '1.98 GHz'; zero as '0 B/s'."""
    if not value:
        return f"0 {unit}"
    prefix, scale = next(((p, s) for p, s in PREFIXES if abs(value) >= s), PREFIXES[-1])
    return f"{value / scale:.4g} {prefix}{unit}"


def binary(value: float) -> str:
    """Bytes in the binary units memory sizes are quoted in: 233472 -> '228 KiB', 52428800 -> '50 MiB'."""
    for prefix, scale in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= scale:
            return f"{value / scale:.4g} {prefix}B"
    return f"{value:g} B"


def cell(value: Any) -> str:
    """A table cell: floats to 2 decimals (3 significant figures in e-notation from 10^6), None and NaN empty."""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:,.2f}" if abs(value) < 1e6 else f"{value:.3e}"
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    return str(value)


def table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """Rows as an aligned text table: numbers right-aligned, text left-aligned."""
    frame = pd.DataFrame([[r.get(c) for c in columns] for r in rows], columns=list(columns), dtype=object)
    text = frame.map(cell)
    # pandas lays out the columns; its alignment of formatted (string) cells is by its own rules, so each column
    # is padded here first: numbers to the right, text to the left (`to_string(justify=)` only moves headers)
    for c in text.columns:
        width = max([len(c), *(len(v) for v in text[c])])
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in frame[c].dropna())
        text[c] = text[c].str.rjust(width) if numeric else text[c].str.ljust(width)
    lines = text.to_string(index=False, justify="left" if len(text) else "right").splitlines()
    return "\n".join(line.rstrip() for line in lines)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN: a rate an op does not have (a collective's TFLOP/s) is null
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """``--json`` output: strict JSON (NaN and inf as null), numpy scalars and other objects as their text."""
    return json.dumps(_plain(value), indent=2, default=str, allow_nan=False)


def clip(text: str, width: int = 100) -> str:
    """Long text cut for a terminal table (``--json`` keeps all of it)."""
    return text if len(text) <= width else text[: width - 1] + "…"


__all__ = ["binary", "cell", "clip", "dumps", "si", "table"]
