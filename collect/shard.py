"""Running one shard of a plan: resume, fan out over GPU workers, flush rows atomically, summarize."""
from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence

import pyarrow.parquet as pq
from tqdm import tqdm

from kernelcast.collect.api import CACHE_STATES, LABEL_COLUMNS, PROVENANCE_COLUMNS
from kernelcast.collect.dataset import (append_rows, check_row, dataset_filename, file_metadata,
                                        parse_dataset_filename, utc_now)
from kernelcast.collect.plan import PlanEntry, load_plan, shard, shard_tag
from kernelcast.collect.worker import DEFAULT_MEASURE, DEFAULT_TIMEOUT_S, Task, WorkerPool

SOURCE = "kernelcast"
DEFAULT_FLUSH_EVERY = 16
FLUSH_INTERVAL_S = 30.0        # also flush at least this often, so a crash loses little
PLAN_ID_KEY = "kernelcast.plan_id"


def output_files(out_dir: str | os.PathLike, plan_id: str, tag: str | None = None) -> list[Path]:
    """Shard files under ``out_dir/<op>/`` (of one shard when ``tag`` is given) written for ``plan_id``.

    A file written for another plan is an error: results of two plans never share a folder.
    """
    files = []
    for path in sorted(Path(out_dir).glob("*/*.parquet")):
        parts = parse_dataset_filename(path.name)
        if not parts or (tag is not None and parts["shard"] != tag):
            continue
        found = file_metadata(path).get(PLAN_ID_KEY)
        if found != plan_id:
            raise ValueError(f"{path} was written for plan {found!r}, not this plan ({plan_id}); "
                             "use a separate --out folder per plan")
        files.append(path)
    return files


def measured_statuses(files: Iterable[Path]) -> dict[int, str]:
    """plan index -> status of the rows already in ``files`` (an ``ok`` row wins over a failure)."""
    out: dict[int, str] = {}
    for path in files:
        cols = pq.read_table(path, columns=["plan_index", "status"]).to_pydict()
        for index, status in zip(cols["plan_index"], cols["status"]):
            if out.get(index) != "ok":
                out[index] = status
    return out


class _Writer:
    """Buffers rows per (op, gpu) and appends them to the shard's files, atomically."""

    def __init__(self, out_dir: Path, tag: str, plan_id: str, existing: Sequence[Path]):
        self.out_dir, self.tag, self.meta = out_dir, tag, {PLAN_ID_KEY: plan_id, "kernelcast.shard": tag}
        self.paths = {(p.parent.name, parse_dataset_filename(p.name)["gpu"]): p for p in existing}
        self.buffer: dict[tuple[str, str], list[dict]] = {}
        self.pending, self.last_flush = 0, time.monotonic()

    def add(self, op: str, gpu: str, row: dict) -> None:
        self.buffer.setdefault((op, gpu), []).append(row)
        self.pending += 1

    def due(self, flush_every: int) -> bool:
        return self.pending >= flush_every or time.monotonic() - self.last_flush > FLUSH_INTERVAL_S

    def flush(self) -> None:
        for (op, gpu), rows in self.buffer.items():
            if not rows:
                continue
            date = utc_now()[:10].replace("-", "")
            path = self.paths.setdefault((op, gpu), self.out_dir / op / dataset_filename(SOURCE, gpu, date, self.tag))
            append_rows(path, op, rows, self.meta)
            rows.clear()
        self.pending, self.last_flush = 0, time.monotonic()


def _row(entry: PlanEntry, result: dict[str, Any]) -> dict[str, Any]:
    """Description fields + labels (None where absent) + provenance + row identity."""
    row = {**entry.desc.to_row(), **dict.fromkeys(LABEL_COLUMNS), **dict.fromkeys(PROVENANCE_COLUMNS)}
    row.update(result)
    row.update(desc_key=entry.desc.key(), plan_index=entry.index, repeat_of=entry.repeat_of, time=utc_now())
    return row


def _checked_row(entry: PlanEntry, result: dict[str, Any], cache: str) -> dict[str, Any]:
    """The row, or an ``error`` row saying why the measure function's result does not fit the schema."""
    row = _row(entry, result)
    try:
        check_row(entry.desc.op, row)
    except ValueError as exc:
        kept = {k: result.get(k) for k in PROVENANCE_COLUMNS}
        row = _row(entry, {**kept, "status": "error", "error": f"measure returned a bad row: {exc}", "cache": cache})
    return row


def _check_args(cache: str, repeats: int | None, flush_every: int, limit: int | None) -> None:
    if cache not in CACHE_STATES:
        raise ValueError(f"cache must be one of {', '.join(CACHE_STATES)}; got {cache!r}")
    for name, value, lo in (("repeats", repeats, 1), ("flush_every", flush_every, 1), ("limit", limit, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < lo):
            raise ValueError(f"{name} must be an integer >= {lo}; got {value!r}")


def run_shard(plan_path: str | os.PathLike, shard_i: int, shard_n: int, out_dir: str | os.PathLike,
              gpus: Sequence[int | None] = (0,), measure: str = DEFAULT_MEASURE, cache: str = "cold",
              repeats: int | None = None, flush_every: int = DEFAULT_FLUSH_EVERY,
              timeout_s: float = DEFAULT_TIMEOUT_S, limit: int | None = None,
              retry_failed: bool = False, progress: bool = True) -> dict[str, Any]:
    """Measure the entries of shard ``shard_i/shard_n`` not yet in ``out_dir``; return a summary.

    Resumable: entries already in the shard's files are skipped (failed ones too, unless
    ``retry_failed``: then they are measured again, the failure row kept). ``limit`` measures at
    most that many this run. Rows are flushed every ``flush_every`` rows (and every 30 s); Ctrl-C flushes
    what is done and returns the summary with ``interrupted`` set.
    """
    _check_args(cache, repeats, flush_every, limit)
    plan = load_plan(plan_path)
    tag, plan_id, out_dir = shard_tag(shard_i, shard_n), plan.plan_id(), Path(out_dir)
    existing = output_files(out_dir, plan_id, tag)
    done = {i for i, status in measured_statuses(existing).items() if status == "ok" or not retry_failed}
    todo = [e for e in shard(plan, shard_i, shard_n) if e.index not in done]
    batch = todo if limit is None else todo[:limit]
    by_index = {e.index: e for e in batch}
    writer, counts, interrupted, start = _Writer(out_dir, tag, plan_id, existing), Counter(), False, time.monotonic()
    bar = tqdm(total=len(batch), file=sys.stderr, disable=not progress, unit="cfg", desc=f"shard {shard_i}/{shard_n}")
    pool = None
    try:
        if batch:
            pool = WorkerPool(gpus, measure, SOURCE, timeout_s)
            tasks = (Task(e.index, e.desc.to_dict(), cache, repeats) for e in batch)
            for task, result in pool.imap(tasks):
                entry = by_index[task.index]
                row = _checked_row(entry, result, cache)
                writer.add(entry.desc.op, entry.desc.gpu, row)
                counts[row["status"]] += 1
                bar.update(1)
                bar.set_postfix(dict(counts), refresh=False)
                if writer.due(flush_every):
                    writer.flush()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        writer.flush()
        bar.close()
        if pool is not None:
            pool.close()
    elapsed = time.monotonic() - start
    measured = sum(counts.values())
    return {"plan": str(plan_path), "plan_id": plan_id, "shard": f"{shard_i}/{shard_n}",
            "entries": len(shard(plan, shard_i, shard_n)), "already_done": len(done),
            "measured": measured, "left": len(todo) - measured, "status_counts": dict(sorted(counts.items())),
            "restarts": pool.restarts if pool else 0, "elapsed_s": round(elapsed, 3),
            "rows_per_min": round(60 * measured / elapsed, 1) if elapsed > 0 else 0.0,
            "files": [str(p) for p in sorted(set(writer.paths.values()))], "interrupted": interrupted}


def plan_status(plan_path: str | os.PathLike, out_dir: str | os.PathLike) -> dict[str, Any]:
    """What of a plan is measured in ``out_dir``: done (ok), failed (per status), missing, per shard file."""
    plan = load_plan(plan_path)
    files = output_files(out_dir, plan.plan_id())
    statuses = measured_statuses(files)
    failed = Counter(s for s in statuses.values() if s != "ok")
    missing = [e.index for e in plan.entries if e.index not in statuses]
    return {"plan": str(plan_path), "plan_id": plan.plan_id(), "entries": len(plan.entries),
            "done": sum(s == "ok" for s in statuses.values()), "failed": dict(sorted(failed.items())),
            "missing": len(missing), "missing_first": missing[:20], "files": [str(p) for p in files]}
