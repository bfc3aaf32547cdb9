"""The collection runner: one shard of a plan over local GPUs, chunked, resumable, every row persisted on arrival.

``run_shard`` is the one runner: ``collect run --plan P --shard i/N`` (a Slurm array task) and the
local multi-GPU job (``collect/gpu_job.py``: shard 0/1 over every GPU) both call it. One run holds
the shard's lock (a second run of the same shard waits, then measures only what is left); its
rows go to files of its own (``dataset.RowWriter``), written the moment a chunk's rows arrive.
SIGTERM and Ctrl-C stop it: busy workers finish their chunk, the rows are written, the summary
says ``interrupted``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kernelcast.collect.api import CACHE_STATES, LABEL_COLUMNS, PROVENANCE_COLUMNS
from kernelcast.collect.dataset import (
    LockBusy,
    RowWriter,
    check_row,
    file_lock,
    file_metadata,
    parse_dataset_filename,
    read_parquet,
    shard_of,
    utc_now,
)
from kernelcast.collect.plan import PlanEntry, load_plan, shard, shard_tag
from kernelcast.collect.pool import WorkerPool
from kernelcast.collect.worker import DEFAULT_TIMEOUT_S, Task, timer_spec

DEFAULT_CHUNK = 32  # descriptions per measuring call (one CUPTI profiler session)
PLAN_ID_KEY = "kernelcast.plan_id"


@dataclass(frozen=True)
class RunConfig:
    """How to run a shard; every field is checked by ``check``."""

    gpus: tuple[int | None, ...] = (0,)  # one worker process per GPU index
    timer: str = "cupti"  # a worker.TIMERS name, or a batch measure function 'module:function'
    cache: str = "cold"  # L2 state before each call
    repeats: int | None = None  # timed calls per config (None: the timer's default)
    chunk: int = DEFAULT_CHUNK  # descriptions per measuring call
    timeout_s: float = DEFAULT_TIMEOUT_S  # seconds per description before its worker is restarted
    warmup_s: float = 3.0  # the timer's warm-up per worker start (CUPTI: large matmuls)
    budget_s: float | None = None  # start no chunk after this many seconds
    limit: int | None = None  # measure at most this many descriptions this run
    retry_failed: bool = False  # measure again what is recorded as failed (the failure row stays)
    precompile_workers: int = 0  # compile the plan's Triton configs in this many processes meanwhile
    progress: bool = True  # a progress bar on stderr

    def check(self) -> None:
        if self.cache not in CACHE_STATES:
            raise ValueError(f"cache must be one of {', '.join(CACHE_STATES)}; got {self.cache!r}")
        timer_spec(self.timer)
        for name, lo in (("repeats", 1), ("chunk", 1), ("limit", 0), ("precompile_workers", 0)):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < lo):
                raise ValueError(f"{name} must be an integer >= {lo}; got {value!r}")
        for name in ("timeout_s", "warmup_s", "budget_s"):
            value = getattr(self, name)
            if value is None and name == "budget_s":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0; got {self.timeout_s!r}")


def output_files(out_dir: str | os.PathLike, plan_id: str, tag: str | None = None) -> list[Path]:
    """Shard files under ``out_dir/<op>/`` (of one shard when ``tag`` is given) written for ``plan_id``.

    A file written for another plan is an error: results of two plans never share a folder.
    """
    files = []
    for path in sorted(Path(out_dir).glob("*/*.parquet")):
        parts = parse_dataset_filename(path.name)
        if not parts or (tag is not None and shard_of(parts["shard"]) != tag):
            continue
        found = file_metadata(path).get(PLAN_ID_KEY)
        if found != plan_id:
            raise ValueError(
                f"{path} was written for plan {found!r}, not this plan ({plan_id}); "
                "use a separate --out folder per plan"
            )
        files.append(path)
    return files


def measured_statuses(files: Iterable[Path]) -> dict[int, str]:
    """plan index -> status of the rows already in ``files`` (an ``ok`` row wins over a failure)."""
    out: dict[int, str] = {}
    for path in files:
        cols = read_parquet(path, ["plan_index", "status"]).to_pydict()
        for index, status in zip(cols["plan_index"], cols["status"]):
            if out.get(index) != "ok":
                out[index] = status
    return out


def _row(entry: PlanEntry, result: dict[str, Any]) -> dict[str, Any]:
    """Description fields + labels (None where absent) + provenance + row identity + model tag."""
    row = {**entry.desc.to_row(), **dict.fromkeys(LABEL_COLUMNS), **dict.fromkeys(PROVENANCE_COLUMNS)}
    row.update(result)
    row.update(
        desc_key=entry.desc.key(),
        plan_index=entry.index,
        repeat_of=entry.repeat_of,
        model=entry.tags.get("model"),
        time=utc_now(),
    )
    return row


def _checked_row(entry: PlanEntry, result: dict[str, Any], cache: str) -> dict[str, Any]:
    """The row, or an ``error`` row saying why the measure function's result does not fit the schema."""
    row = _row(entry, result)
    try:
        check_row(entry.desc.op, row)
    except ValueError as exc:
        kept = {k: result.get(k) for k in PROVENANCE_COLUMNS}
        row = _row(
            entry,
            {
                **kept,
                "status": "error",
                "error": f"measure returned a bad row: {exc}",
                "cache": cache,
                "timer": result.get("timer"),
            },
        )
    return row


class _Signals:
    """SIGTERM / SIGINT stop the pool (the first one: finish in-flight chunks; a second: stop now)."""

    def __init__(self) -> None:
        self.pool: WorkerPool | None = None
        self.received: int | None = None
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.received is not None:
            raise KeyboardInterrupt(f"signal {signum} again")
        self.received = signum
        if self.pool is not None:
            self.pool.stop()

    def __exit__(self, *exc) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def _log(out_dir: Path, record: dict[str, Any]) -> None:
    with open(out_dir / "timing.jsonl", "a") as fh:
        fh.write(json.dumps(record) + "\n")


def _log_events(out_dir: Path, pool: WorkerPool, tag: str) -> None:
    """The pool's events so far (warm-ups, worker exits, abandoned configs) into the timing log."""
    for event in pool.events:
        _log(out_dir, {**event, "shard": tag})
    pool.events.clear()


def run_shard(
    plan_path: str | os.PathLike,
    shard_i: int,
    shard_n: int,
    out_dir: str | os.PathLike,
    config: RunConfig = RunConfig(),
) -> dict[str, Any]:
    """Measure the entries of shard ``shard_i/shard_n`` not yet in ``out_dir``; return a summary.

    Resumable: entries already in the shard's files are skipped (failed ones too, unless
    ``retry_failed``). ``OUT/timing.jsonl`` gets one line per measuring call (wall seconds, configs).
    """
    config.check()
    plan = load_plan(plan_path)
    tag, out_dir = shard_tag(shard_i, shard_n), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lock, waited = out_dir / f".lock_{tag}", False
    with _Signals() as signals:
        while signals.received is None:
            try:
                with file_lock(lock, wait_s=0.5):
                    return _run_locked(plan, plan_path, shard_i, shard_n, out_dir, config, signals)
            except LockBusy:
                if not waited and config.progress:
                    print(f"shard {tag}: another run holds {lock}; waiting for it to end", file=sys.stderr)
                waited = True
        return _summary(
            plan_path,
            plan.plan_id(),
            shard_i,
            shard_n,
            len(shard(plan, shard_i, shard_n)),
            0,
            0,
            Counter(),
            None,
            0.0,
            [],
            signals.received,
            config.timer,
        )


def _run_locked(
    plan, plan_path, shard_i: int, shard_n: int, out_dir: Path, config: RunConfig, signals: _Signals
) -> dict[str, Any]:
    tag, plan_id = shard_tag(shard_i, shard_n), plan.plan_id()
    entries = shard(plan, shard_i, shard_n)
    statuses = measured_statuses(output_files(out_dir, plan_id, tag))
    done = {i for i, status in statuses.items() if status == "ok" or not config.retry_failed}
    todo = [e for e in entries if e.index not in done]
    batch = todo if config.limit is None else todo[: config.limit]
    by_index = {e.index: e for e in batch}
    writer = RowWriter(out_dir, tag, {PLAN_ID_KEY: plan_id, "kernelcast.shard": tag})
    counts, start, pool = Counter(), time.monotonic(), None
    deadline = None if config.budget_s is None else time.time() + config.budget_s
    bar = tqdm(
        total=len(batch), file=sys.stderr, disable=not config.progress, unit="cfg", desc=f"shard {shard_i}/{shard_n}"
    )
    precompile = None
    try:
        if batch and config.precompile_workers > 0:  # fills TRITON_CACHE_DIR ahead of the measuring processes
            precompile = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kernelcast.collect.precompile",
                    "--plan",
                    str(plan_path),
                    "--workers",
                    str(config.precompile_workers),
                    "--log",
                    str(out_dir / "precompile.jsonl"),
                ]
            )
        if batch:
            pool = signals.pool = WorkerPool(config.gpus, config.timer, config.timeout_s, config.warmup_s)
            if signals.received is not None:
                pool.stop()
            tasks = (Task(e.index, e.desc.to_dict(), config.cache, config.repeats) for e in batch)
            for result in pool.imap(tasks, config.chunk, deadline):
                rows = [_checked_row(by_index[t.index], r, config.cache) for t, r in result.pairs]
                written = time.perf_counter()
                writer.write(rows)
                written = time.perf_counter() - written
                ok = sum(r["status"] == "ok" for r in rows)
                counts.update(r["status"] for r in rows)
                _log(
                    out_dir,
                    {
                        "timer": config.timer,
                        "shard": tag,
                        "gpu": result.gpu,
                        "wall_s": result.wall_s,
                        "configs": len(rows),
                        "ok": ok,
                        "chunk": config.chunk,
                        "write_s": round(written, 6),
                        "t_end": round(time.time(), 3),  # epoch seconds: a chunk's span is [t_end - wall_s, t_end]
                    },
                )
                _log_events(out_dir, pool, tag)
                bar.update(len(rows))
                bar.set_postfix(dict(counts), refresh=False)
            _log_events(out_dir, pool, tag)
    finally:
        bar.close()
        if pool is not None:
            pool.close()
        if precompile is not None and signals.received is not None:
            precompile.terminate()  # stopped: no compiling on; otherwise it may finish
            precompile.wait()
    return _summary(
        plan_path,
        plan_id,
        shard_i,
        shard_n,
        len(entries),
        len(done),
        len(todo),
        counts,
        pool,
        time.monotonic() - start,
        writer.paths,
        signals.received,
        config.timer,
    )


def _summary(
    plan_path,
    plan_id: str,
    shard_i: int,
    shard_n: int,
    entries: int,
    done: int,
    todo: int,
    counts: Counter,
    pool: WorkerPool | None,
    elapsed: float,
    files,
    interrupted: int | None,
    timer: str,
) -> dict[str, Any]:
    measured = sum(counts.values())
    return {
        "plan": str(plan_path),
        "plan_id": plan_id,
        "shard": f"{shard_i}/{shard_n}",
        "timer": timer,
        "entries": entries,
        "already_done": done,
        "measured": measured,
        "left": todo - measured,
        "status_counts": dict(sorted(counts.items())),
        "restarts": pool.restarts if pool else 0,
        "abandoned": sorted(pool.abandoned) if pool else [],
        "elapsed_s": round(elapsed, 3),
        "rows_per_min": round(60 * measured / elapsed, 1) if elapsed > 0 else 0.0,
        "files": [str(p) for p in sorted(set(files))],
        "interrupted": interrupted is not None,
        "signal": signal.Signals(interrupted).name if interrupted else None,
    }


def plan_status(plan_path: str | os.PathLike, out_dir: str | os.PathLike) -> dict[str, Any]:
    """What of a plan is measured in ``out_dir``: done (ok), failed (per status), missing, per shard file."""
    plan = load_plan(plan_path)
    files = output_files(out_dir, plan.plan_id())
    statuses = measured_statuses(files)
    failed = Counter(s for s in statuses.values() if s != "ok")
    missing = [e.index for e in plan.entries if e.index not in statuses]
    return {
        "plan": str(plan_path),
        "plan_id": plan.plan_id(),
        "entries": len(plan.entries),
        "done": sum(s == "ok" for s in statuses.values()),
        "failed": dict(sorted(failed.items())),
        "missing": len(missing),
        "missing_first": missing[:20],
        "files": [str(p) for p in files],
    }
