"""SYNTHETIC test double of kernelcast.collect.measure: made-up latencies, never GPU data.

Poisons by GEMM ``m`` (chosen by the tests): 4001 kills the process (a poisoned CUDA context),
4002 raises a sticky CUDA error, 4003 is unsupported, 4004 runs out of memory, 4005 hangs,
4006 sends Ctrl-C (SIGINT) to the parent run, as a user would, 4007 returns a cuda_fatal failure row.
Each call appends the description's ``m`` to the file named by ``KC_FAKE_CALLS`` (if set).
"""
from __future__ import annotations

import os
import signal
import time

from kernelcast.collect.api import Measurement
from kernelcast.collect.worker import Unsupported

KILL, STICKY, UNSUPPORTED, OOM, HANG, INTERRUPT, FATAL_ROW = 4001, 4002, 4003, 4004, 4005, 4006, 4007


def _count(desc) -> None:
    path = os.environ.get("KC_FAKE_CALLS")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{desc.m}\n")


def fixed(desc, cache: str = "cold", repeats: int = 3) -> Measurement:
    """Never fails: a synthetic latency from the shape (timer 'synthetic')."""
    _count(desc)
    base = desc.m * desc.n * desc.k / 1e9 + 1.0
    samples = tuple(base * (1 + 0.01 * (i % 3 - 1)) for i in range(repeats))
    return Measurement(samples_us=samples, kernels=("synthetic_fake_kernel",), timer="synthetic",
                       cache=cache, extra={"ncu__gpu__time_duration.sum": base * 1000})


def measure(desc, cache: str = "cold", repeats: int = 3) -> Measurement | dict:
    """Like ``fixed`` but fails as chosen by ``m``."""
    if desc.m == KILL:
        _count(desc)
        os._exit(1)
    if desc.m == STICKY:
        _count(desc)
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    if desc.m == UNSUPPORTED:
        raise Unsupported("synthetic: this shape is not supported here")
    if desc.m == OOM:
        raise RuntimeError("CUDA out of memory. Tried to allocate 80.00 GiB")
    if desc.m == HANG:
        time.sleep(60)
    if desc.m == FATAL_ROW:
        return {"status": "cuda_fatal", "error": "CUDA error: unspecified launch failure", "cache": cache}
    if desc.m == INTERRUPT:
        os.kill(os.getppid(), signal.SIGINT)
        time.sleep(0.5)
    return fixed(desc, cache, repeats)


def bad_row(desc, cache: str = "cold", repeats: int = 3) -> dict:
    """Returns a row with a column the schema lacks."""
    return {**fixed(desc, cache, repeats).to_row(), "made_up_column": 1.0}
