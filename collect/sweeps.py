"""Sweeps as data: expand ``collect/sweeps/<name>.toml`` into validated descriptions with tags, and say why any
point is skipped.

A sweep file holds blocks of three kinds (every key may be a scalar or a list of choices):

* ``[[grid]]``: the cartesian product of every list-valued key (``config`` = list of tables;
  ``"=key"`` copies another key's value, e.g. ``seq_kv = "=seq_q"``, and ``"=_a*(_b+1)*run"`` computes one
  from integer keys, ``_``-prefixed keys being draws that are no description field; ``config`` is dropped
  for non-Triton backends). A pool table (below; ``pool_seed`` required) is a list of its tables:
  every point gets every table. ``shape`` (a table, a list or a pool of them) merges its fields
  into the point, so ``shape = { pool = 50, m = …, n = … }`` x ``config = { pool = 60, … }`` measures
  60 configs on each of 50 drawn shapes (config search's exhaustive test sets).
* ``[[random]]``: ``count`` seeded draws; ``{log_uniform = [lo, hi]}`` draws log-uniformly
  (``multiple_of`` rounds up), a list draws one choice, a scalar is fixed. In both kinds ``{range = [lo, hi,
  step]}`` is the list lo, lo + step, … up to hi inclusive (``head_dim = { range = [32, 256, 8] }``). A table with
  ``pool`` (e.g. ``config = { pool = 128, pool_seed = 11, block_m = [16, 32, 64], num_warps = [2, 4, 8], … }``)
  first draws ``pool`` distinct tables, each sub-key drawn as above (seeded by ``pool_seed``
  when given, else by the block's draws), then gives each point one table of that pool: many
  shapes share few Triton compiles. ``pool_max = { "block_m*block_n/num_warps" = 8192 }`` rejects
  pool tables whose product/quotient of sub-keys exceeds the bound. ``pool_exclude = ["moe_test"]`` never
  draws a table that those sweeps' ``config`` pools or lists hold (training pools keep clear of the independent
  test sets' fresh configs even where the config space is small).
* ``[[models]]``: real-model shapes from ``features/models.toml`` (linear layers, attention, MoE experts)
  for ``models`` x ``tp`` x ``tokens``; each description is tagged with its model and layer.

Any block may set ``max_gflop`` or ``max_gb`` (points above that many GFLOP or GB moved are skipped, with the
reason) to bound run time and memory.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tomllib

from kernelcast.features.desc import Desc, parse_desc
from kernelcast.features.models import MODEL_OPS, model_points, models_data
from kernelcast.features.ops import get_op

SWEEP_DIR = Path(__file__).with_name("sweeps")
BLOCK_KINDS = ("grid", "random", "models")
#: keys that steer a block instead of being description fields, per block kind
CONTROL_KEYS = {
    "grid": {"max_gflop", "max_gb"},
    "random": {"max_gflop", "max_gb", "count"},
    "models": {"max_gflop", "max_gb", "models", "tp", "tokens", "kind", "seq"},
}


@dataclass
class Expansion:
    """What a sweep expands to: (description, tags) pairs and (point, reason) skips."""

    items: list[tuple[Desc, dict[str, Any]]] = field(default_factory=list)
    skipped: list[tuple[dict[str, Any], str]] = field(default_factory=list)


class SweepError(ValueError):
    """A sweep file is malformed: names the file, the key and the value."""


def _err(path: Path, key: str, value: Any, allowed: str) -> SweepError:
    return SweepError(f"sweep {path.name}: {key} must be {allowed}; got {value!r}")


def list_sweeps() -> list[str]:
    return sorted(p.stem for p in SWEEP_DIR.glob("*.toml"))


def _load(name: str) -> tuple[Path, dict]:
    path = SWEEP_DIR / f"{name}.toml"
    if not isinstance(name, str) or not path.is_file():
        raise ValueError(f"sweep must be one of {', '.join(list_sweeps())}; got {name!r}")
    try:
        return path, tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"sweep {path.name} is not valid TOML: {exc}") from None


def _grid_choices(path: Path, key: str, value: Any) -> list:
    """A grid key's choices: a list, a pool table (every table of the pool; ``pool_seed`` required), or one value."""
    if isinstance(value, dict) and "pool" in value:
        if not isinstance(value.get("pool_seed"), int):
            raise _err(path, f"{key}.pool_seed", value.get("pool_seed"), "an integer (a grid's pool is seeded)")
        return _pool(path, key, value, random.Random(value["pool_seed"]))
    value = _range(path, key, value)
    return value if isinstance(value, list) else [value]


def _range(path: Path, key: str, spec: Any) -> Any:
    """``{range = [lo, hi, step]}`` as its list of integers (hi included when the steps reach it); other specs as
    they are."""
    if not (isinstance(spec, dict) and "range" in spec):
        return spec
    bounds = spec["range"]
    ok = isinstance(bounds, list) and len(bounds) == 3 and all(type(b) is int for b in bounds)
    if not ok or bounds[2] < 1 or bounds[0] > bounds[1] or len(spec) > 1:
        raise _err(path, f"{key}.range", bounds, "[lo, hi, step] integers with lo <= hi and step >= 1, no other key")
    lo, hi, step = bounds
    return list(range(lo, hi + 1, step))


def _points_grid(path: Path, block: dict) -> Iterator[dict]:
    keys = [k for k in block if k not in CONTROL_KEYS["grid"]]
    choices = [_grid_choices(path, k, block[k]) for k in keys]
    for k, c in zip(keys, choices):
        if not c:
            raise _err(path, k, block[k], "a value or a non-empty list")
        if k == "shape" and not all(isinstance(t, dict) for t in c):
            raise _err(path, "shape", block[k], "a table of fields, a list of them, or a pool of them")
    for combo in itertools.product(*choices):
        point = dict(zip(keys, combo))
        yield {**{k: v for k, v in point.items() if k != "shape"}, **point.get("shape", {})}


def _draw(path: Path, key: str, spec: Any, rng: random.Random) -> Any:
    spec = _range(path, key, spec)
    if isinstance(spec, list):
        if not spec:
            raise _err(path, key, spec, "a non-empty list of choices")
        return rng.choice(spec)
    if isinstance(spec, dict) and "log_uniform" in spec:
        lo, hi = spec["log_uniform"] if len(spec["log_uniform"]) == 2 else (0, 0)
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise _err(path, f"{key}.log_uniform", spec["log_uniform"], "[lo, hi] integers with 1 <= lo <= hi")
        step = spec.get("multiple_of", 1)
        value = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        return max(step, -(-value // step) * step)
    return spec


POOL_KEYS = ("pool", "pool_seed", "pool_max", "pool_exclude")


def _ratio(path: Path, key: str, expr: str, table: dict) -> float:
    """Value of ``"a*b/c*d"`` over the sub-keys of one pool table."""
    num, _, den = expr.partition("/")
    value = 1.0
    for names, sign in ((num, 1), (den, -1)):
        for name in filter(None, names.split("*")):
            if name not in table or not isinstance(table[name], (int, float)):
                raise _err(path, f"{key}.pool_max", expr, f"products/quotients of numeric sub-keys of {key}")
            value *= table[name] ** sign
    return value


#: (sweep file, its mtime, config key) -> the tables its blocks hold for that key: an excluded sweep's pools are
#: drawn once per process, not again for every sweep that excludes it (nested exclusions made that exponential)
_SWEEP_TABLES: dict[tuple[str, int, str], frozenset] = {}


def _excluded_tables(path: Path, key: str, names: Any, stack: tuple[str, ...]) -> set:
    """The ``key`` tables of sweeps ``names``: their seeded pools, their lists and single tables."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _err(path, f"{key}.pool_exclude", names, "a list of sweep names")
    out: set = set()
    for name in names:
        if name in stack:
            raise _err(path, f"{key}.pool_exclude", names, f"sweeps that do not exclude each other ({name} does)")
        out.update(_sweep_tables(name, key, stack))
    return out


def _sweep_tables(name: str, key: str, stack: tuple[str, ...]) -> frozenset:
    path = SWEEP_DIR / f"{name}.toml"
    ident = (str(path), path.stat().st_mtime_ns, key) if path.is_file() else None
    if ident in _SWEEP_TABLES:  # a hit neither reads nor parses the file
        return _SWEEP_TABLES[ident]
    other, data = _load(name)  # a name that is no sweep raises here, with the list of sweeps
    out: set = set()
    for kind in ("grid", "random"):
        for block in data.get(kind, []):
            value = block.get(key)
            if isinstance(value, dict) and "pool" in value:
                if not isinstance(value.get("pool_seed"), int):
                    raise _err(other, f"{key}.pool_seed", value.get("pool_seed"), "an integer (it is excluded)")
                tables = _pool(other, key, value, random.Random(value["pool_seed"]), (*stack, name))
            else:
                tables = [t for t in (value if isinstance(value, list) else [value]) if isinstance(t, dict)]
            out.update(tuple(sorted(t.items())) for t in tables)
    _SWEEP_TABLES[ident] = frozenset(out)
    return _SWEEP_TABLES[ident]


def _pool(path: Path, key: str, spec: dict, rng: random.Random, stack: tuple[str, ...] = ()) -> list:
    """``spec["pool"]`` distinct tables drawn from the sub-key specs (rejecting those over ``pool_max`` and those
    of the ``pool_exclude`` sweeps)."""
    size, seed, limits = spec["pool"], spec.get("pool_seed"), spec.get("pool_max", {})
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise _err(path, f"{key}.pool", size, "a positive integer")
    if not isinstance(limits, dict):
        raise _err(path, f"{key}.pool_max", limits, 'a table of "a*b/c" = bound')
    draw_rng = random.Random(seed) if seed is not None else rng
    subs = {k: v for k, v in spec.items() if k not in POOL_KEYS}
    pool: list[dict] = []
    stack = stack or (path.stem,)
    seen: set = _excluded_tables(path, key, spec["pool_exclude"], stack) if "pool_exclude" in spec else set()
    for _ in range(200 * size):
        if len(pool) == size:
            break
        table = {k: _draw(path, f"{key}.{k}", v, draw_rng) for k, v in subs.items()}
        ident = tuple(sorted(table.items()))
        if ident in seen or any(_ratio(path, key, e, table) > b for e, b in limits.items()):
            continue
        seen.add(ident)
        pool.append(table)
    if len(pool) < size:
        raise _err(
            path, f"{key}.pool", size, f"at most the {len(pool)} distinct tables its sub-keys and pool_max allow"
        )
    return pool


def _points_random(path: Path, block: dict, rng: random.Random) -> Iterator[dict]:
    count = block.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise _err(path, "random.count", count, "a positive integer")
    keys = [k for k in block if k not in CONTROL_KEYS["random"]]
    specs = {
        k: (_pool(path, k, block[k], rng) if isinstance(block[k], dict) and "pool" in block[k] else block[k])
        for k in keys
    }
    for _ in range(count):
        yield {k: _draw(path, k, specs[k], rng) for k in keys}


def _as_list(v: Any) -> list:
    return v if isinstance(v, list) else [v]


def _points_models(path: Path, block: dict) -> Iterator[tuple[dict, dict | str]]:
    data = models_data()
    for model in _as_list(block.get("models", [])):
        if model not in data:
            raise _err(path, "models.models", model, "a model of models.toml: " + ", ".join(data))
    for model, tp, tokens in itertools.product(
        _as_list(block["models"]), _as_list(block.get("tp", 1)), _as_list(block.get("tokens", 1))
    ):
        base = {k: v for k, v in block.items() if k not in CONTROL_KEYS["models"]}
        if base.get("op") not in MODEL_OPS:
            raise _err(path, "models.op", base.get("op"), "one of " + ", ".join(MODEL_OPS))
        for point, extra in model_points(
            base,
            model,
            tp,
            tokens,
            block.get("kind", "prefill"),
            _as_list(block.get("batch", 1)),
            _as_list(block.get("seq", tokens)),
        ):
            if isinstance(extra, str):
                yield point, extra
                continue
            for sub in _points_grid(path, point):
                yield sub, extra


_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _arith(path: Path, key: str, expr: str, point: dict) -> int:
    """Value of ``"_outer*(_seq+_new)*run"``: integers, other keys of the point, ``+ - * //`` and parentheses."""

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and isinstance(point.get(node.id), int):
            return point[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            return _ARITH[type(node.op)](ev(node.left), ev(node.right))
        raise _err(path, key, "=" + expr, "an expression of integers, integer keys of the point, + - * // and ()")

    return ev(ast.parse(expr, mode="eval"))


def _refs(expr: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


def _resolve(path: Path, point: dict) -> dict:
    """``"=other"`` values copy another key's value, ``"=a*(b+c)"`` computes one from integer keys; keys starting
    with ``_`` are draws such expressions use, not description fields; ``config`` is kept for Triton backends only."""
    out = dict(point)
    todo = [k for k, v in point.items() if isinstance(v, str) and v.startswith("=")]
    while todo:  # in the order their references resolve: `elements = "=largest"` after `largest = "=_a*_b"`
        ready = [k for k in todo if not (_refs(out[k][1:]) & set(todo)) - {k}]
        for k in ready or todo[:1]:  # a cycle: the first one fails with its expression named
            expr = out[k][1:]
            out[k] = out[expr] if expr in out else _arith(path, k, expr, out)
            todo.remove(k)
    out = {k: v for k, v in out.items() if not k.startswith("_")}
    if out.get("backend") != "triton":
        out.pop("config", None)
    return out


def _gflop(desc: Desc) -> float:
    """GFLOP of a description (its op family's FLOPs), for ``max_gflop``."""
    return float(get_op(desc.op).flops(_columns(desc))[0]) / 1e9


def _gb(desc: Desc) -> float:
    """GB a description moves at least (its op family's ``bytes`` feature), for ``max_gb``."""
    from kernelcast.features.vector import feature_columns

    return float(feature_columns(_columns(desc), desc.op, learned=False)["bytes"][0]) / 1e9


def _columns(desc: Desc) -> dict[str, np.ndarray]:
    """One description as columns of one value (text and None as objects)."""
    return {
        k: np.asarray([v], dtype=object if isinstance(v, (str, type(None))) else None) for k, v in desc.to_row().items()
    }


def _admit(
    path: Path, out: Expansion, seen: set, point: dict, tags: dict, gpu: str, limit: float | None, max_gb=None
) -> None:
    point = _resolve(path, point)
    try:
        desc = parse_desc({**point, "gpu": gpu})
    except ValueError as exc:
        out.skipped.append((point, str(exc)))
        return
    if desc.backend == "triton" and desc.config is None:  # serving ranks a config; a measurement needs one
        out.skipped.append((point, "a measured Triton kernel needs an explicit config"))
        return
    if limit is not None and (gflop := _gflop(desc)) > limit:
        out.skipped.append((point, f"{gflop:.0f} GFLOP is over the block's max_gflop={limit}"))
        return
    if max_gb is not None and (gb := _gb(desc)) > max_gb:
        out.skipped.append((point, f"{gb:.1f} GB moved is over the block's max_gb={max_gb}"))
        return
    if desc.key() not in seen:
        seen.add(desc.key())
        out.items.append((desc, tags))


def expand_report(name: str, gpu: str, seed: int = 0) -> Expansion:
    """Every (description, tags) of sweep ``name`` for ``gpu``, deduplicated in file order, and the skips."""
    path, data = _load(name)
    rng = random.Random(seed)
    out, seen = Expansion(), set()
    unknown = sorted(set(data) - set(BLOCK_KINDS) - {"description"})
    if unknown:
        raise _err(
            path, unknown[0], data[unknown[0]], "absent: top-level keys are description, " + ", ".join(BLOCK_KINDS)
        )
    for kind in BLOCK_KINDS:
        for i, block in enumerate(data.get(kind, [])):
            limit, max_gb = block.get("max_gflop"), block.get("max_gb")
            base_tags = {"sweep": name, "block": f"{kind}[{i}]"}
            if kind == "models":
                for point, extra in _points_models(path, block):
                    if isinstance(extra, str):
                        out.skipped.append((point, extra))
                    else:
                        _admit(path, out, seen, point, {**base_tags, **extra}, gpu, limit, max_gb)
                continue
            points = _points_grid(path, block) if kind == "grid" else _points_random(path, block, rng)
            for point in points:
                _admit(path, out, seen, point, base_tags, gpu, limit, max_gb)
    return out


def expand_tagged(name: str, gpu: str, seed: int = 0) -> list[tuple[Desc, dict[str, Any]]]:
    return expand_report(name, gpu, seed).items


def expand(name: str, gpu: str, seed: int = 0) -> list[Desc]:
    """The validated descriptions of sweep ``name`` for ``gpu`` (seeded; same seed, same list)."""
    return [d for d, _ in expand_report(name, gpu, seed).items]
