"""Merging shard files into ``datasets/<op>/``: validation, deduplication, and the measured noise floor."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kernelcast.collect.api import CACHE_STATES, STATUSES
from kernelcast.collect.dataset import (
    append_rows,
    dataset_filename,
    file_lock,
    parquet_files,
    parse_dataset_filename,
    read_parquet,
    read_table,
    shard_of,
)
from kernelcast.features.desc import from_row

#: a row's identity in a dataset: first measured wins; re-measurements are told apart by time
DEDUP_COLUMNS = ("desc_key", "cache", "source", "status", "timer")
#: timers that time the host, not a GPU (the CPU seam, test doubles): never training data
HOST_TIMERS = ("cpu", "synthetic")
#: the columns ``noise_floor`` reads
NOISE_COLUMNS = ("op", "desc_key", "cache", "source", "status", "repeat_of", "time", "latency_us")


def _bad(path: Path, i: int, field: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"{path}: row {i}: {field} must be {allowed}; got {value!r}")


def validate_row(row: Mapping[str, Any], path: Path, i: int) -> None:
    """One row of a shard file: a valid description matching its key, a known status, a sane label."""
    try:
        desc = from_row(row)
    except ValueError as exc:
        raise ValueError(f"{path}: row {i}: {exc}") from None
    if desc.key() != row.get("desc_key"):
        raise _bad(path, i, "desc_key", row.get("desc_key"), f"the description's key {desc.key()!r}")
    if row.get("status") not in STATUSES:
        raise _bad(path, i, "status", row.get("status"), "one of " + ", ".join(STATUSES))
    if row.get("cache") not in CACHE_STATES:
        raise _bad(path, i, "cache", row.get("cache"), "one of " + ", ".join(CACHE_STATES))
    if not row.get("source") or not row.get("time"):
        raise _bad(path, i, "source/time", (row.get("source"), row.get("time")), "non-empty")
    latency = row.get("latency_us")
    if row["status"] == "ok" and not (isinstance(latency, float) and math.isfinite(latency) and latency > 0):
        raise _bad(path, i, "latency_us", latency, "a finite number > 0 for an ok row")


def row_identity(row: Mapping[str, Any]) -> tuple:
    """(desc_key, cache, source, status, timer) for an original; re-measurements add their time.

    The timer is part of it: an ncu row of a description sits beside its CUPTI row (same desc_key).
    """
    return tuple(row.get(c) for c in DEDUP_COLUMNS) + ((row.get("time"),) if row.get("repeat_of") is not None else ())


def _existing_identities(datasets_root: Path, op: str) -> set[tuple]:
    files = parquet_files([datasets_root / op]) if (datasets_root / op).is_dir() else []
    if not files:
        return set()
    cols = list(DEDUP_COLUMNS) + ["repeat_of", "time"]
    return {row_identity(r) for f in files for r in read_parquet(f, cols).to_pylist()}


def _target(datasets_root: Path, row: Mapping[str, Any], src: Path) -> Path:
    parts = parse_dataset_filename(src.name)
    date = str(row["time"])[:10].replace("-", "")
    return (
        datasets_root
        / row["op"]
        / dataset_filename(row["source"], row["gpu"], date, shard_of(parts["shard"]) if parts else "merged")
    )


def merge(
    shard_files: Iterable[str | os.PathLike],
    datasets_root: str | os.PathLike,
    tags: Mapping[str, Mapping[str, Any]] | None = None,
    allow_host_timers: bool = False,
) -> dict[str, Any]:
    """Validate shard files, drop rows already in ``datasets_root``, append the rest; report noise.

    Originals are deduplicated on (desc_key, cache, source, status, timer), the first measured kept;
    re-measurement rows (``repeat_of`` set) are kept apart from that, for the noise floor.
    Rows go to ``datasets/<op>/<source>_<gpu>_<yyyymmdd>_<shard>.parquet`` (date of measurement).
    ``tags`` (desc_key -> sweep tags) fills the ``model`` column where empty. Rows of a host timer
    (``HOST_TIMERS``: the cpu seam, test doubles) are refused unless ``allow_host_timers``.
    """
    files, root = parquet_files(shard_files), Path(datasets_root)
    if not files:
        raise ValueError(f"merge inputs hold no parquet files: {[str(f) for f in shard_files]}")
    rows = _read_inputs(files, tags, allow_host_timers)
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root):  # two merges into one root: the second sees the first's rows
        return _merge_locked(rows, files, root)


def _read_inputs(files, tags, allow_host_timers: bool) -> list[tuple[dict, Path]]:
    rows = []
    for path in files:
        for i, row in enumerate(read_parquet(path).to_pylist()):
            validate_row(row, path, i)
            if row.get("timer") in HOST_TIMERS and not allow_host_timers:
                raise ValueError(
                    f"{path}: row {i}: timer {row['timer']!r} times the host, not a GPU; such rows "
                    "are never merged into a datasets folder (--allow-host-timers for a scratch one)"
                )
            if tags and not row.get("model"):
                row["model"] = (tags.get(row["desc_key"]) or {}).get("model")
            rows.append((row, path))
    rows.sort(key=lambda rp: str(rp[0]["time"]))
    return rows


def _merge_locked(rows: list[tuple[dict, Path]], files: list[Path], root: Path) -> dict[str, Any]:
    seen: dict[str, set[tuple]] = {}
    batches: dict[tuple[str, Path], list[dict]] = {}
    skipped = Counter()
    for row, src in rows:
        if row["op"] not in seen:
            seen[row["op"]] = _existing_identities(root, row["op"])
        known = seen[row["op"]]
        identity = row_identity(row)
        if identity in known:
            skipped[row["op"]] += 1
            continue
        known.add(identity)
        batches.setdefault((row["op"], _target(root, row, src)), []).append(row)
    added = Counter()
    for (op, target), batch in sorted(batches.items(), key=lambda kv: str(kv[0][1])):
        append_rows(target, op, batch)
        added[op] += len(batch)
    noise = noise_floor(read_table(files, NOISE_COLUMNS).to_pandas())
    return {
        "inputs": [str(f) for f in files],
        "rows_in": len(rows),
        "added": dict(sorted(added.items())),
        "duplicates_skipped": dict(sorted(skipped.items())),
        "files": sorted({str(t) for _, t in batches}),
        "noise": noise,
    }


def noise_floor(frame) -> dict[str, dict[str, float]]:
    """Per op family: median, p90, p99 of |re-measured - original| / original latency (ok rows).

    Pairs a row with ``repeat_of`` set to the first-measured original of the same
    (desc_key, cache, source). ``frame``: a pandas DataFrame of dataset rows.
    """
    keys = ["desc_key", "cache", "source"]
    ok = frame[frame["status"] == "ok"]
    originals = ok[ok["repeat_of"].isna()].sort_values("time").drop_duplicates(keys)
    repeats = ok[ok["repeat_of"].notna()]
    pairs = repeats.merge(originals[keys + ["latency_us"]], on=keys, suffixes=("", "_original"))
    rel = (pairs["latency_us"] - pairs["latency_us_original"]).abs() / pairs["latency_us_original"]
    out = {}
    for op, values in rel.groupby(pairs["op"]):
        q = np.quantile(values.to_numpy(dtype=float), [0.5, 0.9, 0.99])
        out[str(op)] = {"pairs": int(len(values)), "median": float(q[0]), "p90": float(q[1]), "p99": float(q[2])}
    return out


def format_noise(noise: Mapping[str, Mapping[str, float]]) -> str:
    """Human lines: ``gemm: 41 pairs, |Δ| median 1.3%, p90 6.6%, p99 22.0%``."""
    if not noise:
        return "noise: no re-measured pairs with an ok original"
    return "\n".join(
        f"noise {op}: {v['pairs']} pairs, |Δ| median {v['median']:.1%}, p90 {v['p90']:.1%}, p99 {v['p99']:.1%}"
        for op, v in sorted(noise.items())
    )
