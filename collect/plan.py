"""Plans: a deterministic, seeded list of descriptions (plus a re-measure share) saved as JSON lines."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelcast.collect.dataset import atomic_path, utc_now
from kernelcast.features.desc import Desc, parse_desc
from kernelcast.features.gpu import resolve_gpu_name

PLAN_FORMAT = "kernelcast.plan/1"
MIN_REPEAT_SHARE = 0.1


@dataclass(frozen=True)
class PlanEntry:
    """One line of a plan: what to measure, the original's index when it is a re-measurement, sweep tags."""

    index: int
    desc: Desc
    repeat_of: int | None = None
    tags: Mapping[str, Any] = field(default_factory=dict)  # e.g. model, tp, layer of a real-model shape

    def to_dict(self) -> dict[str, Any]:
        out = {"index": self.index, "desc": self.desc.to_dict(), "repeat_of": self.repeat_of}
        return {**out, "tags": dict(self.tags)} if self.tags else out


@dataclass(frozen=True)
class Plan:
    header: Mapping[str, Any]
    entries: tuple[PlanEntry, ...]

    def plan_id(self) -> str:
        """Content hash of the entries (not the header's ``created``): ties shard files to a plan."""
        digest = hashlib.sha256()
        for e in self.entries:
            digest.update(json.dumps(e.to_dict(), sort_keys=True).encode() + b"\n")
        return digest.hexdigest()[:16]


def make_plan(
    descs: Iterable[Any],
    seed: int,
    repeat_share: float = MIN_REPEAT_SHARE,
    sweeps: Sequence[str] = (),
    gpu: str | None = None,
    tags: Mapping[str, Mapping[str, Any]] | None = None,
) -> Plan:
    """Shuffle (deduplicated) descriptions by ``seed``; append re-measurements of a share of them.

    The re-measurements (``repeat_share`` of the originals, at least one) come after every
    original, so each is measured later in the same run: the noise floor. ``tags`` (desc key ->
    sweep tags) travel with each entry, so every collection path writes the ``model`` column.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    if not isinstance(repeat_share, (int, float)) or not MIN_REPEAT_SHARE <= repeat_share <= 1:
        raise ValueError(f"repeat_share must be a number in [{MIN_REPEAT_SHARE}, 1]; got {repeat_share!r}")
    unique: dict[str, Desc] = {}
    for d in descs:
        desc = parse_desc(d)
        unique.setdefault(desc.key(), desc)
    if not unique:
        raise ValueError("descs must hold at least one description; got none")
    rng = random.Random(seed)
    originals = sorted(unique.values(), key=lambda d: d.key())
    rng.shuffle(originals)
    tags = tags or {}
    entries = [PlanEntry(i, d, None, dict(tags.get(d.key()) or {})) for i, d in enumerate(originals)]
    count = max(1, math.ceil(repeat_share * len(entries)))
    for j in rng.sample(range(len(entries)), count):
        entries.append(PlanEntry(len(entries), entries[j].desc, j, entries[j].tags))
    header = {
        "format": PLAN_FORMAT,
        "seed": seed,
        "sweeps": list(sweeps),
        "gpu": gpu,
        "repeat_share": repeat_share,
        "created": utc_now(),
        "count": len(entries),
    }
    return Plan(header, tuple(entries))


def build_plan(sweeps: Sequence[str], gpu: str, seed: int, repeat_share: float = MIN_REPEAT_SHARE) -> Plan:
    """A plan over named sweeps (``collect/sweeps/<name>.toml``) for one GPU."""
    from kernelcast.collect.sweeps import expand_tagged

    if not sweeps:
        raise ValueError("sweeps must name at least one sweep; got none")
    tagged = [(d, t) for name in sweeps for d, t in expand_tagged(name, gpu, seed)]
    tags = {d.key(): t for d, t in tagged if t}
    return make_plan([d for d, _ in tagged], seed, repeat_share, sweeps=sweeps, gpu=resolve_gpu_name(gpu), tags=tags)


def save_plan(plan: Plan, path: str | os.PathLike) -> Path:
    """Write the plan as JSON lines (header first) atomically: temp file + ``os.replace``."""
    path = Path(path)
    lines = [json.dumps(dict(plan.header), sort_keys=True)]
    lines += [json.dumps(e.to_dict(), sort_keys=True) for e in plan.entries]
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    return path


def _entry(line: str, lineno: int, path: Path) -> PlanEntry:
    where = f"{path}:{lineno}"
    try:
        raw = json.loads(line)
        index, desc, repeat_of, tags = raw["index"], raw["desc"], raw["repeat_of"], raw.get("tags", {})
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where}: a plan entry must be JSON with index, desc, repeat_of; {exc}") from None
    if not isinstance(tags, dict):
        raise ValueError(f"{where}: tags must be a JSON object; got {tags!r}"[:300])
    if index != lineno - 2:
        raise ValueError(f"{where}: index must be {lineno - 2} (entries are numbered in order); got {index!r}")
    if repeat_of is not None and (not isinstance(repeat_of, int) or not 0 <= repeat_of < index):
        raise ValueError(f"{where}: repeat_of must be null or an earlier index; got {repeat_of!r}")
    try:
        return PlanEntry(index, parse_desc(desc), repeat_of, tags)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def load_plan(path: str | os.PathLike) -> Plan:
    """Read and validate a plan file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"plan file {str(path)!r} does not exist")
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != PLAN_FORMAT:
        raise ValueError(f"{path}:1: the first line must be a plan header with format {PLAN_FORMAT!r}")
    entries = tuple(_entry(ln, i + 2, path) for i, ln in enumerate(lines[1:]))
    if header.get("count") != len(entries):
        raise ValueError(f"{path}: header count is {header.get('count')!r} but the file holds {len(entries)} entries")
    for e in entries:
        if e.repeat_of is not None and entries[e.repeat_of].desc != e.desc:
            raise ValueError(f"{path}:{e.index + 2}: repeat_of={e.repeat_of} points at a different description")
    return Plan(header, entries)


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` -> (i, N) with 0 <= i < N."""
    parts = str(text).split("/")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"shard must look like i/N (e.g. 0/4); got {text!r}")
    i, n = int(parts[0]), int(parts[1])
    check_shard(i, n)
    return i, n


def check_shard(i: int, n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"shard count N must be an integer >= 1; got {n!r}")
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
        raise ValueError(f"shard index i must be an integer in [0, {n - 1}] for N={n}; got {i!r}")


def shard_tag(i: int, n: int) -> str:
    """The shard part of a file name: ``s003of016``."""
    check_shard(i, n)
    return f"s{i:03d}of{n:03d}"


def shard(plan: Plan, i: int, n: int) -> list[PlanEntry]:
    """Entries with ``index % n == i``: shards are disjoint and together cover the plan."""
    check_shard(i, n)
    return [e for e in plan.entries if e.index % n == i]
