"""The parent side of the measuring processes: chunks out to idle workers, rows back, crashes attributed, stops.

``WorkerPool.imap(tasks, chunk)`` yields a ``ChunkResult`` per measuring call as it arrives.
Suspects (the unmeasured descriptions of a chunk whose process died) are re-run one at a time
before anything else; see ``collect/worker.py`` for what counts against a description.
``stop()`` (from a signal handler) dispatches nothing more, lets busy workers finish their
chunk for up to ``STOP_GRACE_S``, and ends the iteration.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from multiprocessing.connection import wait
from typing import Any

from kernelcast.collect.api import LABEL_COLUMNS
from kernelcast.collect.worker import (
    DEFAULT_TIMEOUT_S,
    FATAL_STRIKES,
    OUTSIDE_EXITS,
    OUTSIDE_KILLS,
    START_TIMEOUT_S,
    STOP_GRACE_S,
    TIMERS,
    ChunkResult,
    Task,
    serve,
    timer_spec,
)
from kernelcast.features.gpu import resolve_gpu_name


class _Worker:
    """Parent-side handle of one worker process (state: starting, idle, busy)."""

    def __init__(self, ctx, gpu: int | None, timer: str, warmup_s: float):
        self.ctx, self.gpu, self.timer, self.warmup_s = ctx, gpu, timer, warmup_s
        self.provenance: dict[str, Any] = {}
        self.start()

    def start(self) -> None:
        self.conn, child_conn = self.ctx.Pipe()
        self.proc = self.ctx.Process(
            target=serve,
            args=(child_conn, self.gpu, self.timer, self.warmup_s, os.getpid()),
            daemon=True,
            name=f"kernelcast-worker-gpu{self.gpu}",
        )
        self.proc.start()
        child_conn.close()
        self.tasks: list[Task] = []
        self.state, self.deadline, self.sent_at = "starting", time.monotonic() + START_TIMEOUT_S, 0.0

    def send(self, tasks: list[Task], timeout_s: float) -> None:
        check_device(self.provenance.get("gpu_name"), tasks)
        try:
            self.conn.send(tasks)
        except OSError:  # it died since the last poll: the next poll sees it, tasks and all
            pass
        self.tasks, self.state, self.sent_at = tasks, "busy", time.monotonic()
        self.deadline = self.sent_at + timeout_s * len(tasks)

    def kill(self) -> int | None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()
        return self.proc.exitcode

    def stop(self, grace_s: float) -> None:
        if self.proc.is_alive() and self.state == "idle":
            try:
                self.conn.send(None)
                self.proc.join(grace_s)
            except OSError:
                pass
        self.kill()

    def name(self) -> str:
        return f"worker for GPU {self.gpu}"


def check_device(gpu_name: str | None, tasks: Sequence[Task]) -> None:
    """A row names the GPU that measured it: a task planned for another kind of GPU than the worker's stops the run
    before it is measured (a plan built for an H200, run on an H100, would label H100 times as the H200's). A device
    the GPU table does not know, or none (a CPU timer), is not checked."""
    try:
        device = resolve_gpu_name(gpu_name) if gpu_name else None
    except ValueError:
        return
    for task in tasks if device else ():
        planned = task.desc.get("gpu")
        if planned and resolve_gpu_name(planned) != device:
            raise ValueError(
                f"kernel_desc['gpu'] is {planned!r} (plan index {task.index}) but this worker's GPU is "
                f"{gpu_name!r} ({device}); plan for the GPU that measures (gpu_job --gpu-name {device})"
            )


class WorkerPool:
    """One worker per GPU running ``timer`` (a ``TIMERS`` name or a batch function 'module:function')."""

    def __init__(
        self,
        gpus: Sequence[int | None],
        timer: str = "cupti",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        warmup_s: float = 0.0,
    ):
        if not gpus:
            raise ValueError("gpus must list at least one GPU index; got none")
        if not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < float("inf"):
            raise ValueError(f"timeout_s must be a finite number > 0; got {timeout_s!r}")
        timer_spec(timer)
        self.timer, self.timeout_s = timer, float(timeout_s)
        self.restarts, self.stopping, self.abandoned = 0, False, []
        self.events: list[dict[str, Any]] = []
        ctx = mp.get_context("spawn")
        self.workers = [_Worker(ctx, g, timer, warmup_s) for g in gpus]
        self._queue: deque[Task] = deque()
        self._solo: deque[Task] = deque()
        self._strikes: Counter = Counter()
        self._outside: Counter = Counter()
        self._halted = False

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def stop(self) -> None:
        """Dispatch nothing more; busy workers finish their chunk (safe to call from a signal handler)."""
        self.stopping = True

    def close(self) -> None:
        for w in self.workers:
            w.stop(grace_s=2.0)

    def _restart(self, w: _Worker) -> None:
        w.kill()
        if self._halted:
            w.state = "dead"  # its tasks stay listed: ``left`` counts them
        else:
            w.start()
            self.restarts += 1

    def _failure(self, w: _Worker, task: Task, status: str, message: str) -> tuple[Task, dict[str, Any]]:
        timer = self.timer if self.timer in TIMERS else None
        row = {
            **dict.fromkeys(LABEL_COLUMNS),
            "status": status,
            "error": message,
            "cache": task.cache,
            "timer": timer,
            **w.provenance,
        }
        return task, row

    def _crashed(self, w: _Worker, tasks: list[Task], message: str) -> list[tuple[Task, dict[str, Any]]]:
        """The process died of ``tasks``: a chunk's become suspects; a lone one takes a strike."""
        if len(tasks) > 1:
            self._solo.extend(tasks)
            return []
        task = tasks[0]
        self._strikes[task.index] += 1
        if self._strikes[task.index] >= FATAL_STRIKES:
            return [
                self._failure(
                    w, task, "cuda_fatal", f"{message} (it alone killed its process {self._strikes[task.index]} times)"
                )
            ]
        self._solo.appendleft(task)
        return []

    def _killed_outside(self, tasks: list[Task], code: int | None) -> None:
        """Killed from outside: no evidence against ``tasks``; measured again (alone once it happened twice)."""
        for t in tasks:
            self._outside[t.index] += 1
        if len(tasks) == 1 and self._outside[tasks[0].index] >= OUTSIDE_KILLS:
            self.abandoned.append(tasks[0].index)
            self.events.append({"event": "abandoned", "index": tasks[0].index, "exit_code": code})
            return
        again = [t for t in tasks if self._outside[t.index] < 2 and len(tasks) > 1]
        self._solo.extendleft(reversed([t for t in tasks if t not in again]))
        self._queue.extendleft(reversed(again))

    def _died(self, w: _Worker) -> list[tuple[Task, dict[str, Any]]]:
        state, tasks = w.state, w.tasks
        w.proc.join(timeout=5)  # its pipe closes before it is reaped: wait for the exit code
        code = w.proc.exitcode
        self.events.append({"event": "worker_exit", "gpu": w.gpu, "state": state, "exit_code": code})
        if state == "starting" and code not in OUTSIDE_EXITS:
            raise RuntimeError(f"{w.name()} exited during start-up (exit code {code})")
        pairs: list[tuple[Task, dict[str, Any]]] = []
        if state == "busy" and code in OUTSIDE_EXITS:
            self._killed_outside(tasks, code)
        elif state == "busy":
            pairs = self._crashed(w, tasks, f"worker process died (exit code {code}); restarted")
        self._restart(w)
        return pairs

    def _poll(self, w: _Worker) -> ChunkResult | None:
        """Handle what one worker has to say (a message, its death, or its deadline)."""
        try:
            msg = w.conn.recv() if w.conn.poll() else None
        except (EOFError, OSError):
            msg = ("died",)
        if msg is None and not w.proc.is_alive():
            msg = ("died",)
        now = time.monotonic()
        if msg is None:
            if now <= w.deadline:
                return None
            if w.state == "starting":
                raise RuntimeError(f"{w.name()} did not start within {START_TIMEOUT_S:.0f} s")
            tasks, wall = w.tasks, now - w.sent_at
            self._restart(w)
            limit = self.timeout_s * len(tasks)
            pairs = self._crashed(w, tasks, f"timeout: no result within {limit:g} s; worker restarted")
            return ChunkResult(pairs, w.gpu, wall) if pairs else None
        if msg[0] == "hello":
            w.provenance, w.state = msg[1], "idle"
            if msg[2]:
                self.events.append({"event": "warm_up", "gpu": w.gpu, **msg[2]})
            return None
        if msg[0] == "broken":
            raise RuntimeError(f"{w.name()} could not start: {msg[1]}")
        if msg[0] == "died":
            wall = now - w.sent_at
            pairs = self._died(w)
            return ChunkResult(pairs, w.gpu, wall) if pairs else None
        tasks, wall = w.tasks, now - w.sent_at
        w.tasks, w.state = [], "idle"
        if msg[0] == "fail":
            status, message = msg[1], msg[2]
            if status == "cuda_fatal":
                self._restart(w)
                pairs = self._crashed(w, tasks, message)
            elif len(tasks) == 1:
                pairs = [self._failure(w, tasks[0], status, message)]
            else:  # whose failure is it? each alone will say
                self._solo.extend(tasks)
                pairs = []
            return ChunkResult(pairs, w.gpu, wall)
        rows = msg[1]
        fatal = next((i for i, r in enumerate(rows) if r.get("status") == "cuda_fatal"), None)
        pairs = [(t, {**r, **w.provenance}) for t, r in zip(tasks[:fatal], rows[:fatal])]
        if fatal is not None:  # rows after it ran in a poisoned context
            self._restart(w)
            pairs += self._crashed(w, tasks[fatal:], rows[fatal].get("error") or "cuda_fatal")
        return ChunkResult(pairs, w.gpu, wall)

    def _dispatch(self, chunk: int) -> None:
        for w in self.workers:
            if w.state != "idle":
                continue
            if self._solo:
                w.send([self._solo.popleft()], self.timeout_s)
            elif self._queue:
                w.send([self._queue.popleft() for _ in range(min(chunk, len(self._queue)))], self.timeout_s)

    def imap(self, tasks: Iterable[Task], chunk: int = 1, deadline: float | None = None) -> Iterator[ChunkResult]:
        """Measure ``tasks`` ``chunk`` at a time; stop starting chunks after ``deadline`` (``time.time()``)."""
        self._queue.extend(tasks)
        grace_end = None
        while True:
            self._halted = self.stopping or (deadline is not None and time.time() > deadline)
            if self.stopping and grace_end is None:
                grace_end = time.monotonic() + STOP_GRACE_S
                for w in self.workers:
                    if w.state == "busy" and w.proc.is_alive():
                        w.proc.terminate()  # finish the chunk, send its rows, exit
            if not self._halted:
                self._dispatch(chunk)
            busy = [w for w in self.workers if w.state == "busy"]
            if not busy and (self._halted or not (self._queue or self._solo)):
                return
            if grace_end is not None and time.monotonic() > grace_end:
                for w in busy:
                    w.kill()
                return
            live = [w for w in self.workers if w.state != "dead"]
            soonest = min((w.deadline for w in live if w.state != "idle"), default=time.monotonic() + 0.5)
            wait(
                [w.conn for w in live] + [w.proc.sentinel for w in live],
                timeout=min(0.5, max(0.0, soonest - time.monotonic()) + 0.01),
            )
            for w in live:
                result = self._poll(w)
                if result is not None and result.pairs:
                    yield result

    def left(self) -> int:
        """Tasks not measured when ``imap`` ended (stopped, past the deadline, or abandoned)."""
        busy = sum(len(w.tasks) for w in self.workers if w.state in ("busy", "dead"))
        return len(self._queue) + len(self._solo) + busy + len(self.abandoned)
