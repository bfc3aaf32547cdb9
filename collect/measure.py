"""The collector's entry point: measure descriptions with the CUPTI timer, outputs checked once per shape class.

``measure_many`` times a whole batch in one profiler session (the runner's workers call it once per
chunk). A backend's output is compared with a float64
reference once per shape class (dtype x backend x layout/config, on a small shape); a failed
check makes every description of that class an ``error`` row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kernelcast.collect.api import LABEL_COLUMNS, Measurement
from kernelcast.collect.timers import DEFAULT_REPEATS, DEFAULT_WARMUP, check_timing_args, time_batch
from kernelcast.collect.workloads import get_backend
from kernelcast.features.desc import Desc, parse_desc

TIMER = "cupti"
#: exception type names that mean "this Triton config cannot run here", not a collector failure
UNSUPPORTED_CONFIG_ERRORS = ("OutOfResources", "CompilationError", "PTXASError")
#: shape class -> None (output matched) or the exception its check raised / a mismatch message
_CHECKS: dict[tuple, Exception | str | None] = {}


class OutputMismatch(RuntimeError):
    """A backend's output differs from the float64 reference for this shape class."""


def failure_row(status: str, message: str, cache: str) -> dict[str, Any]:
    """A label row for a description that produced no timing (status not ``ok``)."""
    row: dict[str, Any] = {name: None for name in LABEL_COLUMNS}
    row.update(timer=TIMER, cache=cache, status=status, error=message)
    return row


def classify(exc: BaseException) -> tuple[str, str]:
    """(status, message) for an exception; a Triton config the compiler or the GPU cannot take
    (out of shared memory or registers, a compile or ptxas failure) is an ``unsupported`` config."""
    if type(exc).__name__ in UNSUPPORTED_CONFIG_ERRORS:
        return "unsupported", f"{type(exc).__name__}: {str(exc)[:500]}"
    from kernelcast.collect.worker import classify as worker_classify

    return worker_classify(exc)


def _checked(backend: Any, desc: Desc) -> None:
    """Run the shape class's output check once per process; raise what it found."""
    key = backend.class_key(desc)
    if key not in _CHECKS:
        try:
            mismatch = backend.check(desc)
            _CHECKS[key] = OutputMismatch(f"{mismatch} [shape class {key}]") if mismatch else None
        except Exception as exc:  # noqa: BLE001 - the class's failure is every member's failure
            _CHECKS[key] = exc
    if _CHECKS[key] is not None:
        raise _CHECKS[key]


def _preparer(backend: Any, desc: Desc):
    def prepare():
        _checked(backend, desc)
        return backend.prepare(desc)

    return prepare


def skip_reason(desc: Desc) -> tuple[Any, str | None]:
    """(backend, None) when a registered backend can run ``desc``, else (backend or None, the reason)."""
    try:
        backend = get_backend(desc.op, desc.backend)
    except ValueError as exc:
        return None, str(exc)
    return backend, backend.supports(desc, None)


def measure_many(
    descs: Iterable[Desc | Mapping[str, Any]],
    cache: str = "cold",
    repeats: int = DEFAULT_REPEATS,
    warmup: int = DEFAULT_WARMUP,
) -> list[dict[str, Any]]:
    """Label rows (``Measurement.to_row()`` or a failure row) for each description, in order."""
    check_timing_args(cache, repeats, warmup)
    parsed = [parse_desc(d) for d in descs]
    rows: list[dict[str, Any] | None] = [None] * len(parsed)
    runnable: list[tuple[int, Any]] = []
    for i, desc in enumerate(parsed):
        backend, reason = skip_reason(desc)
        if reason:
            rows[i] = failure_row("unsupported", reason, cache)
        else:
            runnable.append((i, _preparer(backend, desc)))
    timings = time_batch([p for _, p in runnable], cache, repeats, warmup) if runnable else []
    for (i, _), t in zip(runnable, timings):
        if t.error is None:
            rows[i] = Measurement(t.samples_us, t.kernels, TIMER, cache, t.sm_clock_hz).to_row()
        else:
            status, message = classify(t.error)
            rows[i] = failure_row(status, message, cache)
    return rows
