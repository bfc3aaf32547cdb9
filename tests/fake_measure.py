"""SYNTHETIC test doubles of a batch measure function: made-up latencies, never GPU data (timer 'synthetic').

Poisons by GEMM ``m`` (chosen by the tests): 4001 kills the process (a poisoned CUDA context),
4002 raises a sticky CUDA error out of the batch, 4003 is unsupported, 4004 runs out of memory,
4005 hangs, 4006 sends Ctrl-C (SIGINT) to the parent run, as a user would, 4007 returns a
cuda_fatal failure row. Each description measured appends its ``m`` to the file named by
``KC_FAKE_CALLS`` (if set).
"""

from __future__ import annotations

import os
import signal
import time

from kernelcast.collect.api import LABEL_COLUMNS, Measurement

KILL, STICKY, UNSUPPORTED, OOM, HANG, INTERRUPT, FATAL_ROW = 4001, 4002, 4003, 4004, 4005, 4006, 4007


def _count(desc) -> None:
    path = os.environ.get("KC_FAKE_CALLS")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{desc.m}\n")


def _synthetic(desc, cache: str, repeats: int) -> dict:
    base = desc.m * desc.n * desc.k / 1e9 + 1.0
    samples = tuple(base * (1 + 0.01 * (i % 3 - 1)) for i in range(repeats))
    return Measurement(
        samples_us=samples,
        kernels=("synthetic_fake_kernel",),
        timer="synthetic",
        cache=cache,
        extra={"ncu__gpu__time_duration.sum": base * 1000},
    ).to_row()


def _failed(status: str, message: str, cache: str) -> dict:
    return {**dict.fromkeys(LABEL_COLUMNS), "timer": "synthetic", "cache": cache, "status": status, "error": message}


def fixed(descs, cache: str = "cold", repeats: int = 3) -> list[dict]:
    """Never fails: a synthetic latency from each shape."""
    out = []
    for desc in descs:
        _count(desc)
        out.append(_synthetic(desc, cache, repeats))
    return out


def _one(desc, cache: str, repeats: int) -> dict:
    if desc.m == KILL:
        _count(desc)
        os._exit(1)
    if desc.m == STICKY:
        _count(desc)
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    if desc.m == UNSUPPORTED:
        return _failed("unsupported", "synthetic: this shape is not supported here", cache)
    if desc.m == OOM:
        return _failed("oom", "CUDA out of memory. Tried to allocate 80.00 GiB", cache)
    if desc.m == HANG:
        time.sleep(60)
    if desc.m == FATAL_ROW:
        _count(desc)
        return _failed("cuda_fatal", "CUDA error: unspecified launch failure", cache)
    if desc.m == INTERRUPT:
        os.kill(os.getppid(), signal.SIGINT)
        time.sleep(0.5)
    _count(desc)
    return _synthetic(desc, cache, repeats)


def measure(descs, cache: str = "cold", repeats: int = 3) -> list[dict]:
    """Like ``fixed`` but fails as chosen by ``m``."""
    return [_one(d, cache, repeats) for d in descs]


def bad_row(descs, cache: str = "cold", repeats: int = 3) -> list[dict]:
    """Rows with a column the schema lacks."""
    return [{**r, "made_up_column": 1.0} for r in fixed(descs, cache, repeats)]
