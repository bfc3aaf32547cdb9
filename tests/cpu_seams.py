"""Test seams around the REAL cpu timer (real torch CPU GEMM timings), for the nightly pipeline's fault tests.

``KC_CRASH_M``/``KC_CRASH_N``: the GEMM with that m and n kills its process with SIGSEGV (a config that
crashes its worker); ``KC_SLOW_S``: seconds slept before each description (a shard long enough to cancel
mid-way); ``KC_SCALE``: latencies multiplied by it (a software update that moved the numbers).
"""

from __future__ import annotations

import os
import signal
import time

from kernelcast.collect import cpu_timer
from kernelcast.features.desc import parse_desc


def measure_many(descs, cache: str = "cold", repeats: int = cpu_timer.DEFAULT_REPEATS) -> list[dict]:
    crash = (int(os.environ.get("KC_CRASH_M", "-1")), int(os.environ.get("KC_CRASH_N", "-1")))
    slow, scale = float(os.environ.get("KC_SLOW_S", "0")), float(os.environ.get("KC_SCALE", "1"))
    rows = []
    for desc in (parse_desc(d) for d in descs):
        if (desc.m, desc.n) == crash:
            os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(slow)
        [row] = cpu_timer.measure_many([desc], cache, repeats)
        for key in ("latency_us", "p10_us", "p90_us"):
            if row.get(key) is not None:
                row[key] *= scale
        rows.append(row)
    return rows
