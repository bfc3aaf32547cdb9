"""What the command line reads as descriptions: ``key=value`` fields, a JSON file or stdin holding one description or
a list of them; typed-in values parsed by each field's kind (``features.catalog.parse_text``)."""

from __future__ import annotations

import json
import sys
from typing import Any

from kernelcast.features.catalog import parse_text


def _load(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else open(path).read()
    except OSError as exc:
        raise ValueError(f"--file {path!r} cannot be read: {exc.strerror}") from None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"--file {path!r} is not JSON (one description or a list of them): {exc}") from None


def read_descs(path: str | None, fields: list[str]) -> tuple[list[dict], bool]:
    """The descriptions asked for, and whether the input was a list. ``key=value`` fields apply to every
    description of the file (a what-if: the same shapes on another GPU)."""
    loaded = _load(path) if path else {}
    many = isinstance(loaded, list)
    descs = loaded if many else [loaded]
    for i, desc in enumerate(descs):
        if not isinstance(desc, dict):
            where = f"item {i} of --file {path!r}" if many else f"--file {path!r}"
            raise ValueError(f"{where} must be a JSON object (a description); got {type(desc).__name__}")
    if many and not descs:
        raise ValueError(f"--file {path!r} holds an empty list; give one description or a list of them")
    pairs = []
    for item in fields:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"description fields are key=value (e.g. m=4096 causal=true); got {item!r}")
        pairs.append((key, value))
    out = []
    for desc in descs:
        desc = dict(desc)
        op = dict(pairs).get("op", desc.get("op"))
        for key, value in pairs:
            desc[key] = parse_text(op, key, value)
        out.append(desc)
    return out, many


__all__ = ["read_descs"]
