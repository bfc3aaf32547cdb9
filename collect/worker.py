"""Measuring processes: one per GPU, a chunk of descriptions per call, failures classified, crashes attributed.

A worker measures a chunk with its timer's batch function (one profiler session for CUPTI) and
sends the rows back as soon as it has them. A chunk that kills its process is re-run one
description at a time; a description is recorded ``cuda_fatal`` only when it alone killed its
process twice (a sticky CUDA error, a crash, or a hang past the timeout). A process killed from
outside (SIGKILL, SIGTERM) is no evidence against what it was measuring. SIGTERM to a worker
lets it finish its chunk, send the rows, and exit.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_TIMEOUT_S = 120.0  # seconds per description: a chunk of n gets n times this
START_TIMEOUT_S = 600.0  # import + warm-up of a fresh worker
STOP_GRACE_S = 25.0  # on stop, busy workers get this long to finish their chunk (Slurm waits 30 s)
FATAL_STRIKES = 2  # solo deaths that make a description cuda_fatal
OUTSIDE_KILLS = 3  # solo deaths by an outside SIGKILL/SIGTERM before this run leaves it unmeasured
EXIT_STOPPED = 143  # a worker that stopped on SIGTERM
#: error text of CUDA errors that poison the context: the process must go
STICKY_CUDA_ERRORS = (
    "illegal memory access",
    "unspecified launch failure",
    "device-side assert",
    "CUDA error: an illegal instruction",
    "misaligned address",
)
OUTSIDE_EXITS = {-signal.SIGKILL, -signal.SIGTERM, -signal.SIGINT, EXIT_STOPPED}


class Unsupported(Exception):
    """Raised by a measure function when this description cannot run here (recorded as ``unsupported``)."""


@dataclass(frozen=True)
class TimerSpec:
    """A measuring backend: its batch function, its warm-up (or None), and the ``source`` of its rows."""

    measure: str  # "module:function": (descs, cache=, repeats=) -> one label row per desc
    warm_up: str | None = None  # "module:function": (seconds) -> facts, run at each worker start
    source: str = "kernelcast"


#: the measuring backends by name; ``--measure module:function`` names any other batch function
TIMERS = {
    "cupti": TimerSpec("kernelcast.collect.measure:measure_many", "kernelcast.collect.timers:warm_up"),
    "cpu": TimerSpec(
        "kernelcast.collect.cpu_timer:measure_many", "kernelcast.collect.cpu_timer:warm_up", "kernelcast-cpu"
    ),
}


def timer_spec(name: str) -> TimerSpec:
    """A timer by name, or a batch function given as ``module:function`` (rows labelled ``kernelcast-test``)."""
    if name in TIMERS:
        return TIMERS[name]
    if ":" in str(name):
        return TimerSpec(str(name), None, "kernelcast-test")
    raise ValueError(f"timer must be one of {', '.join(TIMERS)} or a batch function 'module:function'; got {name!r}")


@dataclass(frozen=True)
class Task:
    """One description to measure: its plan index, the description as a dict, cache state, repeats."""

    index: int
    desc: dict
    cache: str = "cold"
    repeats: int | None = None


@dataclass
class ChunkResult:
    """What one measuring call gave: (task, row) pairs, the worker's GPU, the call's wall seconds."""

    pairs: list[tuple[Task, dict[str, Any]]]
    gpu: int | None
    wall_s: float


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


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when its parent dies (the parent alone writes rows)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(EXIT_STOPPED)


def serve(conn, gpu: int | None, timer: str, warmup_s: float, parent: int) -> None:
    """The worker process: set the GPU, load the timer, warm up, then measure chunks until None or SIGTERM."""
    state = {"busy": False, "stop": False}

    def on_term(signum, frame):
        if not state["busy"]:
            os._exit(EXIT_STOPPED)
        state["stop"] = True  # finish the chunk, send its rows, then exit

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops us
    signal.signal(signal.SIGTERM, on_term)
    _die_with_parent(parent)
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    try:
        from kernelcast.collect.dataset import provenance

        spec = timer_spec(timer)
        fn = load_measure(spec.measure)
        warm = load_measure(spec.warm_up)(warmup_s) if spec.warm_up else None
        conn.send(("hello", provenance(spec.source, timer), warm))
    except Exception as exc:  # start-up failure: report, then exit
        conn.send(("broken", f"{type(exc).__name__}: {exc}"))
        return
    while (tasks := conn.recv()) is not None:
        state["busy"] = True
        from kernelcast.features.desc import parse_desc

        kwargs: dict[str, Any] = {"cache": tasks[0].cache}
        if tasks[0].repeats is not None:
            kwargs["repeats"] = tasks[0].repeats
        try:
            rows = [dict(r) for r in fn([parse_desc(t.desc) for t in tasks], **kwargs)]
            if len(rows) != len(tasks):
                raise RuntimeError(f"measure returned {len(rows)} rows for {len(tasks)} descriptions")
            conn.send(("rows", rows))
            fatal = any(r.get("status") == "cuda_fatal" for r in rows)
        except Exception as exc:
            status, message = classify(exc)
            conn.send(("fail", status, message))
            fatal = status == "cuda_fatal"
        if fatal:
            os._exit(3)  # the CUDA context is poisoned: this process is done
        state["busy"] = False
        if state["stop"]:
            os._exit(EXIT_STOPPED)
