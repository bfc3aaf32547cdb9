"""The CUPTI timer: one torch.profiler session per batch, L2 flush per call, kernels split per call by marker kernels.

Every call is preceded on the stream by a named separator kernel (``kc_flush_l2`` zeroing a
256 MiB buffer when ``cache="cold"``, a one-thread ``kc_mark`` when ``"warm"``) and every
config ends with ``kc_end``. The kernels of one call are exactly those between its separator
and the next separator or end: set-up kernels (input init, compilation probes) fall after an
end and before the next separator, so they are dropped. Separators are never counted.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kernelcast.collect.api import CACHE_STATES

FLUSH_BYTES = 256 << 20  # 256 MiB zeroed before each cold call: 5x the H200's 50 MiB L2 (features/gpus/h200_sxm.toml)
DEFAULT_REPEATS = 8  # timed calls per config
DEFAULT_WARMUP = 2  # untimed calls per config before the timed ones (same trace)
FLUSH_NAME, MARK_NAME, END_NAME = "kc_flush_l2", "kc_mark", "kc_end"


@dataclass(frozen=True)
class KernelEvent:
    """One device activity from the trace (kernel, memset or memcpy)."""

    name: str
    start_ns: int
    dur_ns: int


@dataclass(frozen=True)
class CallTiming:
    """The timer's answer for one config of a batch: per-call device time or the error that stopped it."""

    samples_us: tuple[float, ...]
    kernels: tuple[str, ...]
    sm_clock_hz: float | None
    error: BaseException | None = None


def check_timing_args(cache: str, repeats: int, warmup: int) -> None:
    if cache not in CACHE_STATES:
        raise ValueError(f"cache must be one of {', '.join(CACHE_STATES)}; got {cache!r}")
    for name, value, lo in (("repeats", repeats, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= 1000:
            raise ValueError(f"{name} must be an integer in [{lo}, 1000]; got {value!r}")


def split_segments(events: Iterable[KernelEvent]) -> list[list[list[KernelEvent]]]:
    """Events of a batch (any order) -> per config, per call, the call's own kernels in launch order."""
    configs: list[list[list[KernelEvent]]] = []
    calls: list[list[KernelEvent]] = []
    segment: list[KernelEvent] | None = None
    for event in sorted(events, key=lambda e: e.start_ns):
        if FLUSH_NAME in event.name or MARK_NAME in event.name:
            segment = []
            calls.append(segment)
        elif END_NAME in event.name:
            configs.append(calls)
            calls, segment = [], None
        elif segment is not None:
            segment.append(event)
    return configs


def timing_from_segments(
    calls: Sequence[Sequence[KernelEvent]], issued: int, repeats: int, clock: float | None, error: BaseException | None
) -> CallTiming:
    """One config's timing from its call segments: the last ``repeats`` calls are the timed ones."""
    if error is None and len(calls) != issued:
        error = RuntimeError(f"trace holds {len(calls)} calls for this config, {issued} were issued")
    if error is None and issued < repeats:
        error = RuntimeError(f"only {issued} calls were issued, {repeats} needed")
    timed = list(calls[-repeats:]) if error is None else []
    if error is None and not all(timed):
        error = RuntimeError("a timed call launched no kernel on the GPU")
    if error is not None:
        return CallTiming((), (), clock, error)
    samples = tuple(sum(e.dur_ns for e in call) / 1e3 for call in timed)
    return CallTiming(samples, tuple(e.name for e in timed[-1]), clock, None)


def _trace_events(prof) -> list[KernelEvent]:
    import torch

    out = []
    for e in prof.profiler.kineto_results.events():
        if e.device_type() == torch.autograd.DeviceType.CUDA:
            out.append(KernelEvent(e.name(), int(e.start_ns()), int(e.duration_ns())))
    return out


@functools.cache
def _nvml_handle():
    """NVML handle of the GPU torch calls cuda:0 (by UUID, so CUDA_VISIBLE_DEVICES is respected)."""
    import pynvml
    import torch

    pynvml.nvmlInit()
    uuid = str(torch.cuda.get_device_properties(0).uuid)
    return pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")


def sm_clock_hz() -> float | None:
    """The SM clock now (NVML), or None where NVML is unavailable."""
    try:
        import pynvml

        return float(pynvml.nvmlDeviceGetClockInfo(_nvml_handle(), pynvml.NVML_CLOCK_SM)) * 1e6
    except Exception:  # noqa: BLE001 - no NVML, no handle: the clock is simply unknown
        return None


def warm_up(seconds: float = 3.0) -> dict[str, float]:
    """Run large bf16 matmuls for ``seconds`` so clocks and power settle before a sweep."""
    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        calls += 10
    elapsed = time.perf_counter() - start
    return {
        "seconds": elapsed,
        "tflops": calls * 2 * 8192**3 / elapsed / 1e12,
        "sm_clock_hz": sm_clock_hz() or float("nan"),
    }


def _separators(cache: str):
    import torch

    from kernelcast.collect.kernels import markers

    tag = torch.zeros(4, dtype=torch.int32, device="cuda")
    if cache == "cold":
        buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        sep = functools.partial(markers.flush, buf)
    else:
        sep = functools.partial(markers.mark, tag)
    sep(), markers.end(tag)  # compile both before the trace starts
    torch.cuda.synchronize()
    return sep, functools.partial(markers.end, tag)


def time_batch(
    prepares: Sequence[Callable[[], Callable[[], object]]],
    cache: str = "cold",
    repeats: int = DEFAULT_REPEATS,
    warmup: int = DEFAULT_WARMUP,
) -> list[CallTiming]:
    """Time each ``prepare()``'s call in ONE profiler session; one ``CallTiming`` per prepare.

    ``prepare`` allocates and compiles (its kernels are not counted) and returns the call to
    time. An exception in ``prepare`` or a call is that config's error; a CUDA error that
    survives a synchronize poisons the context and is raised (the worker must restart).
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    check_timing_args(cache, repeats, warmup)
    sep, end = _separators(cache)
    issued, errors, clocks = [], [], []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for prepare in prepares:
            count, error, call = 0, None, None
            try:
                call = prepare()
                for _ in range(warmup + repeats):
                    sep()
                    call()
                    count += 1
            except Exception as exc:  # noqa: BLE001 - recorded per config
                error = exc
            finally:
                del call
                end()
            torch.cuda.synchronize()
            clocks.append(sm_clock_hz())
            issued.append(count)
            errors.append(error)
    configs = split_segments(_trace_events(prof))
    if len(configs) != len(issued):
        raise RuntimeError(f"CUPTI trace holds {len(configs)} config ends for {len(issued)} configs: events were lost")
    return [timing_from_segments(c, n, repeats, clk, err) for c, n, clk, err in zip(configs, issued, clocks, errors)]
