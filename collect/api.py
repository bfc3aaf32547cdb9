"""The collector's shared types: a workload backend, a measurement, the row schema and statuses.

Every workload module registers backends in ``WORKLOADS``; one runner owns timing and the L2
policy, so every backend is measured the same way. A row in ``datasets/<op>/*.parquet`` is
``desc.to_row()`` + ``Measurement.to_row()`` + provenance (see ``PROVENANCE_COLUMNS``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

STATUSES = ("ok", "oom", "unsupported", "cuda_fatal", "error")
CACHE_STATES = ("cold", "warm")

#: label columns every measured row carries (NaN/None where the status is not ``ok``)
LABEL_COLUMNS = (
    "latency_us",
    "p10_us",
    "p90_us",
    "repeats",
    "kernel_count",
    "kernel_names",
    "timer",
    "cache",
    "sm_clock_hz",
    "status",
    "error",
)
#: provenance columns every row carries
PROVENANCE_COLUMNS = (
    "source",
    "gpu_name",
    "driver",
    "cuda",
    "torch",
    "triton",
    "nccl",
    "collector_version",
    "git_rev",
    "host",
    "time",
    "method",
)


@dataclass(frozen=True)
class Measurement:
    """Device time of one description: one sample per timed call, in microseconds."""

    samples_us: tuple[float, ...]
    kernels: tuple[str, ...]  # kernel names of one call, in launch order
    timer: str  # "cupti" | "ncu" | "rocprof" | "cuda_graph" | "nccl-tests"
    cache: str  # "cold" (L2 flushed before each call) | "warm"
    sm_clock_hz: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"ncu__dram__bytes_read.sum": ...}

    def quantile(self, q: float) -> float:
        xs = sorted(self.samples_us)
        if len(xs) == 1:
            return xs[0]
        return statistics.quantiles(xs, n=100, method="inclusive")[max(0, min(98, round(q * 100) - 1))]

    def to_row(self) -> dict[str, Any]:
        return {
            "latency_us": statistics.median(self.samples_us),
            "p10_us": self.quantile(0.10),
            "p90_us": self.quantile(0.90),
            "repeats": len(self.samples_us),
            "kernel_count": len(self.kernels),
            "kernel_names": ";".join(self.kernels),
            "timer": self.timer,
            "cache": self.cache,
            "sm_clock_hz": self.sm_clock_hz,
            "status": "ok",
            "error": None,
            **dict(self.extra),
        }


class Backend(Protocol):
    """One implementation of a workload: setup outside the timer, the call inside."""

    name: str

    def supports(self, desc: Any, device: Mapping[str, Any]) -> str | None:
        """None when the backend can run ``desc`` here, else the reason it cannot."""

    def prepare(self, desc: Any) -> Callable[[], Any]:
        """Allocate inputs and compile; return the zero-argument call to time."""
