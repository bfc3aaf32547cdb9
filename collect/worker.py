"""Worker isolation: one measuring process per GPU, failures classified, dead or hung workers restarted."""
from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Callable, Iterable, Iterator, Sequence

DEFAULT_MEASURE = "kernelcast.collect.measure:measure"
DEFAULT_TIMEOUT_S = 120.0
START_TIMEOUT_S = 600.0
#: error text of CUDA errors that poison the context: the process must go
STICKY_CUDA_ERRORS = ("illegal memory access", "unspecified launch failure", "device-side assert",
                      "CUDA error: an illegal instruction", "misaligned address")


class Unsupported(Exception):
    """Raised by a measure function when this description cannot run here (recorded as ``unsupported``)."""


@dataclass(frozen=True)
class Task:
    """One description to measure: its plan index, the description as a dict, cache state, repeats."""

    index: int
    desc: dict
    cache: str = "cold"
    repeats: int | None = None


def load_measure(path: str) -> Callable[..., Any]:
    """Import ``"module:function"``; errors name the path and what is allowed."""
    module_name, sep, attr = str(path).partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"measure must be a dotted path 'module:function'; got {path!r}")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"measure {path!r} cannot be imported: {exc}") from None
    if not callable(fn):
        raise ValueError(f"measure {path!r} must name a callable; got {type(fn).__name__}")
    return fn


def classify(exc: BaseException) -> tuple[str, str]:
    """An exception from a measure call -> (status, message) with status in api.STATUSES."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, (Unsupported, NotImplementedError)):
        return "unsupported", text
    if type(exc).__name__ == "OutOfMemoryError" or "out of memory" in text.lower():
        return "oom", text
    if any(s.lower() in text.lower() for s in STICKY_CUDA_ERRORS):
        return "cuda_fatal", text
    return "error", text


def _measure_one(fn: Callable[..., Any], task: Task) -> dict[str, Any]:
    from kernelcast.features.desc import parse_desc

    kwargs: dict[str, Any] = {"cache": task.cache}
    if task.repeats is not None:
        kwargs["repeats"] = task.repeats
    result = fn(parse_desc(task.desc), **kwargs)
    return result.to_row() if hasattr(result, "to_row") else dict(result)


def _child(conn, gpu: int | None, measure: str, source: str) -> None:
    """The worker process: set the GPU, import the measure function, then serve tasks until None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's: it flushes, then kills us
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    try:
        from kernelcast.collect.dataset import provenance
        fn = load_measure(measure)
        conn.send(("hello", provenance(source, measure)))
    except Exception as exc:                       # start-up failure: report, then exit
        conn.send(("broken", f"{type(exc).__name__}: {exc}"))
        return
    while (task := conn.recv()) is not None:
        try:
            row = _measure_one(fn, task)
            conn.send(("row", row))
            status = row.get("status")
        except Exception as exc:
            status, message = classify(exc)
            conn.send(("fail", status, message))
        if status == "cuda_fatal":
            os._exit(3)                            # the CUDA context is poisoned: this process is done


class _Worker:
    """Parent-side handle of one worker process (state: starting, idle, busy)."""

    def __init__(self, ctx, gpu: int | None, measure: str, source: str):
        self.gpu, self.measure, self.source, self.ctx = gpu, measure, source, ctx
        self.provenance: dict[str, Any] = {}
        self.start()

    def start(self) -> None:
        self.conn, child_conn = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_child, args=(child_conn, self.gpu, self.measure, self.source),
                                     daemon=True, name=f"kernelcast-worker-gpu{self.gpu}")
        self.proc.start()
        child_conn.close()
        self.task: Task | None = None
        self.state, self.deadline = "starting", time.monotonic() + START_TIMEOUT_S

    def send(self, task: Task, timeout_s: float) -> None:
        self.conn.send(task)
        self.task, self.state, self.deadline = task, "busy", time.monotonic() + timeout_s

    def stop(self, grace_s: float = 0.0) -> None:
        if self.proc.is_alive() and grace_s and self.state == "idle":
            self.conn.send(None)
            self.proc.join(grace_s)
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def name(self) -> str:
        return f"worker for GPU {self.gpu}"


class WorkerPool:
    """One worker per GPU; ``imap(tasks)`` yields ``(task, row)`` as results arrive, in any order.

    ``row`` carries the label columns (``Measurement.to_row()``) or, on failure, ``status`` and
    ``error`` with no latency, plus the worker's provenance. A ``cuda_fatal`` failure, a worker
    that dies, or a task past ``timeout_s`` restarts that worker; the run goes on.
    """

    def __init__(self, gpus: Sequence[int | None], measure: str = DEFAULT_MEASURE,
                 source: str = "kernelcast", timeout_s: float = DEFAULT_TIMEOUT_S):
        if not gpus:
            raise ValueError("gpus must list at least one GPU index; got none")
        if not timeout_s or timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0; got {timeout_s!r}")
        self.timeout_s, self.restarts = float(timeout_s), 0
        ctx = mp.get_context("spawn")
        self.workers = [_Worker(ctx, g, measure, source) for g in gpus]

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for w in self.workers:
            w.stop(grace_s=2.0)

    def _restart(self, w: _Worker) -> None:
        w.stop()
        w.start()
        self.restarts += 1

    def _failure(self, w: _Worker, status: str, message: str) -> tuple[Task, dict[str, Any]]:
        task = w.task
        row = {"status": status, "error": message, "cache": task.cache, **w.provenance}
        if status == "cuda_fatal":
            self._restart(w)
        else:
            w.task, w.state = None, "idle"
        return task, row

    def _poll(self, w: _Worker) -> tuple[Task, dict[str, Any]] | None:
        """Handle what one worker has to say (a message, its death, or its deadline)."""
        try:
            msg = w.conn.recv() if w.conn.poll() else None
        except (EOFError, OSError):
            msg = ("died",)
        if msg is None and not w.proc.is_alive():
            msg = ("died",)
        if msg is None:
            if time.monotonic() > w.deadline:
                if w.state == "starting":
                    raise RuntimeError(f"{w.name()} did not start within {START_TIMEOUT_S:.0f} s")
                return self._failure(w, "cuda_fatal", f"timeout: no result within {self.timeout_s:g} s; worker restarted")
            return None
        if msg[0] == "hello":
            w.provenance, w.state = msg[1], "idle"
        elif msg[0] == "broken":
            raise RuntimeError(f"{w.name()} could not start: {msg[1]}")
        elif msg[0] == "row" and msg[1].get("status") == "cuda_fatal":   # a failure row returned, not raised
            return self._failure(w, "cuda_fatal", msg[1].get("error") or "cuda_fatal")
        elif msg[0] == "row":
            task, w.task, w.state = w.task, None, "idle"
            return task, {**msg[1], **w.provenance}
        elif msg[0] == "fail":
            return self._failure(w, msg[1], msg[2])
        elif w.state == "busy":
            w.proc.join(timeout=5)          # its pipe closes before it is reaped: wait for the exit code
            return self._failure(w, "cuda_fatal", f"worker process died (exit code {w.proc.exitcode}); restarted")
        elif w.state == "idle":
            self._restart(w)
        else:
            raise RuntimeError(f"{w.name()} exited during start-up (exit code {w.proc.exitcode})")
        return None

    def imap(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, dict[str, Any]]]:
        pending = deque(tasks)
        while pending or any(w.state == "busy" for w in self.workers):
            for w in self.workers:
                if w.state == "idle" and pending:
                    w.send(pending.popleft(), self.timeout_s)
            waits = [w.conn for w in self.workers] + [w.proc.sentinel for w in self.workers]
            deadlines = [w.deadline for w in self.workers if w.state != "idle"]
            wait(waits, timeout=max(0.0, min(deadlines, default=time.monotonic() + 1.0) - time.monotonic()) + 0.01)
            for w in self.workers:
                result = self._poll(w)
                if result is not None:
                    yield result
