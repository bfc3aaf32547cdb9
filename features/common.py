"""Column helpers shared by every op's features: GPU spec columns, dtype lookups, tiles and waves."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Mapping

import numpy as np
import pandas as pd

from kernelcast.features import num
from kernelcast.features.fields import DTYPE_BYTES, DTYPE_PEAK, MAX_ELEMENTS, SMALL, IntField, Rule
from kernelcast.features.gpu import get_gpu

#: GPU spec numbers every feature row carries, in this order
GPU_COLUMNS = (
    "sm_count",
    "boost_clock_hz",
    "memory_bandwidth_bps",
    "l2_bytes",
    "infinity_cache_bytes",
    "shared_memory_per_sm_bytes",
    "registers_per_sm",
    "max_warps_per_sm",
    "warp_size",
    "link_bandwidth_bps",
)
_DTYPE_TABLES = {"bytes": DTYPE_BYTES, "peak": DTYPE_PEAK}


def pow2_dividing(v: np.ndarray) -> np.ndarray:
    """log2 of the largest power of two dividing each (integer) value: how a size sits against vector widths."""
    xp = num.of(v)
    iv = xp.ints(v)
    return xp.log2(iv & -iv)


def _unique(values) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(values, dtype=object)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if len(arr) == 1 or (len(arr) and (arr == arr[0]).all()):  # one GPU/dtype per call is the common case
        return arr[:1], np.zeros(len(arr), dtype=np.intp)
    codes, uniq = pd.factorize(arr)  # hashed: no sort, no str copy of every row
    return np.asarray(uniq, dtype=object), codes


def key_codes(*columns) -> tuple[np.ndarray, np.ndarray]:
    """Rows of equal-length columns -> (code per row, first row of each code); codes count distinct
    rows in order of first appearance (hashed column by column: no sort, no tuples)."""
    combined = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        codes, uniq = pd.factorize(np.asarray(column, dtype=object) if np.asarray(column).dtype.kind == "U" else column)
        combined = pd.factorize(combined * (len(uniq) + 1) + (codes + 1))[0].astype(np.int64)  # NaN: code -1 -> 0
    return combined, np.unique(combined, return_index=True)[1]


def lookup(values, table: str) -> np.ndarray:
    """Per-row number for a dtype column: ``bytes`` (element size) or ``peak`` (peak key)."""
    if isinstance(values, str):  # one description's value (features.num.SCALARS)
        return _DTYPE_TABLES[table][values]
    if isinstance(values, np.ndarray) and values.shape == (1,):  # one row: no unique pass
        return np.asarray([_DTYPE_TABLES[table][values[0]]])
    uniq, inv = _unique(values)
    return np.asarray([_DTYPE_TABLES[table][u] for u in uniq])[inv]


@functools.cache
def _gpu_row(name: str) -> tuple[float, ...]:
    spec = get_gpu(name)
    return tuple(float(spec.link_bandwidth_bps if c == "link_bandwidth_bps" else getattr(spec, c)) for c in GPU_COLUMNS)


def gpu_columns(gpus) -> dict[str, np.ndarray]:
    """The GPU spec numbers of each row's GPU (canonical names or aliases); one GPU's name: its numbers."""
    if isinstance(gpus, str):
        return {**dict(zip(GPU_COLUMNS, _gpu_row(gpus))), "_names": gpus}
    if isinstance(gpus, np.ndarray) and gpus.shape == (1,):  # one row: no unique pass
        names = np.asarray(gpus, dtype=object)
        table = np.asarray([_gpu_row(str(names[0]))])
        out = {c: table[:, i] for i, c in enumerate(GPU_COLUMNS)}
        out["_names"] = names if names is not gpus else names.copy()
        return out
    uniq, inv = _unique(gpus)
    table = np.asarray([_gpu_row(str(g)) for g in uniq])[inv]
    out = {c: table[:, i] for i, c in enumerate(GPU_COLUMNS)}
    out["_names"] = np.asarray(uniq, dtype=object)[inv]
    return out


@functools.cache
def _peak(gpu: str, dtype: str) -> float:
    return get_gpu(gpu).peak(DTYPE_PEAK[dtype])


def peak_per_row(gpu: Mapping[str, np.ndarray], dtypes) -> np.ndarray:
    """Dense peak FLOP/s for each row's (GPU, dtype)."""
    names = gpu["_names"]
    if isinstance(names, str):  # one description
        return _peak(names, dtypes)
    dts = np.asarray(dtypes, dtype=object)
    if dts.ndim == 0 or len(dts) != len(names):
        dts = np.broadcast_to(dts, names.shape)
    if len(names) == 1:
        return np.asarray([_peak(str(names[0]), str(dts[0]))], dtype=np.float64)
    if len(names) <= SMALL:  # a few rows: no hashing
        return np.fromiter((_peak(str(g), str(d)) for g, d in zip(names, dts)), np.float64, len(names))
    codes, first = key_codes(names, dts)  # each distinct (GPU, dtype) looked up once
    return np.asarray([_peak(str(names[i]), str(dts[i])) for i in first], dtype=np.float64)[codes]


def roofline_floors(flops: np.ndarray, nbytes: np.ndarray, peak: np.ndarray, gpu) -> dict[str, np.ndarray]:
    """FLOPs, minimum bytes, arithmetic intensity and the compute, memory and roofline floors (µs) of a compute op."""
    compute_floor = flops / peak * 1e6
    memory_floor = nbytes / gpu["memory_bandwidth_bps"] * 1e6
    return {
        "flops": flops,
        "bytes": nbytes,
        "arithmetic_intensity": flops / nbytes,
        "compute_floor_us": compute_floor,
        "memory_floor_us": memory_floor,
        "floor_us": num.of(flops).maximum(compute_floor, memory_floor),
    }


def tile_waves(tiles: np.ndarray, sm_count: np.ndarray, per_sm: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Waves of ``tiles`` work units over the SMs, and the wave efficiency tiles / (waves × slots)."""
    xp = num.of(tiles)
    slots = sm_count * per_sm
    waves = xp.maximum(xp.ceil(tiles / slots), 1.0)
    return waves, tiles / (waves * slots)


def triton_configs(cols) -> np.ndarray:
    """Each row's config where its backend runs it (Triton); None elsewhere (another backend's config is only
    an annotation)."""
    if isinstance(cols["backend"], str):  # one description
        return cols.get("config") if cols["backend"] == "triton" else None
    backend = np.atleast_1d(np.asarray(cols["backend"], dtype=object))
    configs = cols.get("config")
    if configs is None:
        return np.full(len(backend), None, dtype=object)
    if len(backend) == 1 and getattr(configs, "shape", None) == (1,):  # one row: no masked select
        out = np.empty(1, dtype=object)
        out[0] = configs[0] if backend[0] == "triton" else None
        return out
    return np.where(backend == "triton", np.atleast_1d(np.asarray(configs, dtype=object)), None)


@functools.lru_cache(maxsize=1 << 16)
def parse_config(text: str) -> Mapping:
    """A canonical config's JSON text -> its mapping (cached: config search predicts the same configs again and
    again; callers must not change the result)."""
    return json.loads(text) if text else {}


@functools.lru_cache(maxsize=1 << 16)
def _config_numbers(text: str, keys: tuple[str, ...]) -> tuple[float, ...]:
    cfg = parse_config(text)
    return tuple(
        float(cfg[k]) if isinstance(cfg.get(k), (int, float)) and not isinstance(cfg.get(k), bool) else np.nan
        for k in keys
    )


def config_values(configs, keys: tuple[str, ...], defaults: tuple[float, ...]) -> list[np.ndarray]:
    """Numeric keys of each row's JSON config column; ``defaults`` where a row's config lacks one."""
    if configs is None or isinstance(configs, str):  # one description's config
        values = _config_numbers(configs or "", keys)
        return [d if v != v else v for v, d in zip(values, defaults)]
    texts = [c if isinstance(c, str) else "" for c in np.atleast_1d(configs)]
    if len(texts) <= SMALL and not any(texts):  # a few rows, none with a config: every key takes its default
        n = len(texts)
        return [
            d.astype(np.float64) if isinstance(d, np.ndarray) and d.shape == (n,) else np.full(n, d, dtype=np.float64)
            for d in defaults
        ]
    uniq, inv = _unique(np.asarray(texts, dtype=object))
    values = np.asarray([_config_numbers(u, keys) for u in uniq])[inv]
    return [np.where(np.isnan(values[:, i]), d, values[:, i]) for i, d in enumerate(defaults)]


#: fixed device time of one kernel (launch ramp, prologue, epilogue) in SM clock cycles: 2.5 µs at a
#: 1.98 GHz boost clock, about our H200's shortest kernels. Counted in cycles, not µs, so it scales with a
#: GPU's clock (A100 runs at 1.41 GHz); the learned models divide latency by floor + this (``latency_scale``).
#: What it bought is measured in benchmarks/RESULTS.md.
KERNEL_FLOOR_CYCLES = 4950.0


def kernel_floor_us(clock_hz) -> np.ndarray:
    """One kernel's fixed device time (µs) at a boost clock (Hz)."""
    return KERNEL_FLOOR_CYCLES / num.of(clock_hz).floats(clock_hz) * 1e6


def latency_scale(floor_us, clock_hz) -> np.ndarray:
    """The learned models' latency scale: roofline floor plus one kernel's fixed time (µs).

    Their target is log(latency / scale). Over the roofline floor alone, a latency-bound kernel's
    target grows as its floor shrinks (a 4 µs GEMM with a 0.01 µs floor sits at log 400), and the
    trees spend their splits tracing that line; over floor + fixed time it is flat near 0 (the measured gain is
    in benchmarks/RESULTS.md).
    """
    return num.of(floor_us).floats(floor_us) + kernel_floor_us(clock_hz)


def clock_features(base: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The roofline floor in boost-clock cycles and HBM bytes per cycle, from ``base`` (gpu_* columns, floor_us).

    Trees cannot extrapolate a raw clock: a GPU clocked below every training GPU (A100 at 1.41 GHz
    against 1.98+ GHz) lands in the slowest training GPU's leaves, and its small, latency-bound
    kernels come out too fast. In cycles the fixed per-kernel costs line up across GPUs (benchmarks/RESULTS.md).
    """
    xp = num.of(base["floor_us"])
    clock = xp.floats(base["gpu_boost_clock_hz"])
    return {
        "log2_floor_cycles": xp.log2(xp.floats(base["floor_us"]) * 1e-6 * clock),
        "bytes_per_cycle": xp.floats(base["gpu_memory_bandwidth_bps"]) / clock,
    }


#: fraction of HBM bandwidth a streaming kernel sustains (device copy ~4.3 of 4.8 TB/s on H200;
#: weight-streaming GEMV-like kernels land lower) — the analytical model's memory assumption for every op
MEMORY_EFFICIENCY = 0.75


#: what bounds an analytical answer, by code (``roofline_latency``)
_BOUNDS = np.asarray(["compute", "memory", "latency"], dtype=object)


def roofline_latency(f: Mapping[str, np.ndarray], efficiency: np.ndarray, kernels) -> tuple[np.ndarray, np.ndarray]:
    """The analytical answer of a compute op: the slower of compute (at ``efficiency`` of peak, wave-quantized)
    and memory (at ``MEMORY_EFFICIENCY``), plus each kernel's fixed time; and which term bounds it."""
    t_compute = f["compute_floor_us"] / (efficiency * f["wave_efficiency"])
    t_memory = f["memory_floor_us"] / MEMORY_EFFICIENCY
    t_fixed = kernel_floor_us(f["gpu_boost_clock_hz"]) * kernels
    if num.of(efficiency) is num.SCALARS:  # one description's Python numbers (predict_latency): its bound by name
        body = num.SCALARS.maximum(t_compute, t_memory)
        return body + t_fixed, str(_BOUNDS[max((t_fixed > body) * 2, int(t_memory > t_compute))])
    t_fixed = np.broadcast_to(t_fixed, t_compute.shape)
    body = np.maximum(t_compute, t_memory)
    # latency where the fixed time exceeds the body, else memory where it exceeds compute, else compute
    bound = _BOUNDS[np.maximum((t_fixed > body) * 2, t_memory > t_compute)]
    return body + t_fixed, bound


def own_bound_latency(f: Mapping[str, np.ndarray], own_us: np.ndarray, own: str) -> tuple[np.ndarray, np.ndarray]:
    """The analytical answer of a kernel bound by something of its own (``own_us``, what bounds it named ``own``: a
    dependency chain, per-element work): that or its bytes at ``MEMORY_EFFICIENCY`` of HBM bandwidth, whichever is
    slower, plus one kernel's fixed time; and which of the two bounds it."""
    memory = f["memory_floor_us"] / MEMORY_EFFICIENCY
    bound = np.asarray([own, "memory"], dtype=object)[(memory > own_us).astype(np.intp)]
    return np.maximum(own_us, memory) + kernel_floor_us(f["gpu_boost_clock_hz"]), bound


def per_backend(table: Mapping[str, float], backend) -> np.ndarray:
    """A per-backend constant for each row."""
    backend = np.atleast_1d(np.asarray(backend, dtype=object))
    if len(backend) == 1:  # one row: no unique pass
        return np.asarray([table[backend[0]]], dtype=np.float64)
    uniq, inv = _unique(backend)
    return np.asarray([table[b] for b in uniq], dtype=np.float64)[inv]


def roofline_assumptions(efficiency: Mapping[str, float], kernels: str) -> str:
    eff = ", ".join(f"{b} {e:.0%}" for b, e in efficiency.items())
    return (
        f"compute efficiency {eff} of dense peak, wave-quantized; memory {MEMORY_EFFICIENCY:.0%} of HBM "
        f"bandwidth; {KERNEL_FLOOR_CYCLES:g} cycles per kernel floor, {kernels}"
    )


#: registers a thread holds besides its fp32 accumulators (addresses, loop state, operand fragments)
BASE_REGISTERS = 40
#: the most registers a thread can have; accumulators beyond spill to local memory
MAX_REGISTERS = 255


def resident_ctas(
    smem: np.ndarray,
    accumulators: np.ndarray,
    warps: np.ndarray,
    units: np.ndarray,
    base: Mapping[str, np.ndarray],
    registers: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """How a Triton kernel's CTAs sit on an SM, from its shared memory per CTA (bytes), fp32 accumulators per
    thread and warps: CTAs resident per SM (the least of what shared memory, registers and warps allow), and
    the waves of ``units`` work units over those slots. ``registers``: what a thread asks for where the op
    family models it (default: the accumulators + ``BASE_REGISTERS``); more than ``MAX_REGISTERS`` spills.
    ``base`` carries the gpu_* columns.

    Shared by every op family with a Triton config: generalising to configs never measured needs what a config
    does to the SM, not its numbers alone (benchmarks/RESULTS.md)."""
    xp = num.of(units)
    asked = accumulators + BASE_REGISTERS if registers is None else registers
    regs = xp.minimum(asked, MAX_REGISTERS)
    with np.errstate(invalid="ignore", divide="ignore") if xp is num.ARRAYS else contextlib.nullcontext():
        by_smem = xp.floor(base["gpu_shared_memory_per_sm_bytes"] / smem)
        by_regs = xp.floor(base["gpu_registers_per_sm"] / (regs * 32 * warps))
        by_warps = xp.floor(base["gpu_max_warps_per_sm"] / warps)
    ctas = xp.maximum(xp.minimum(xp.minimum(by_smem, by_regs), by_warps), 0)  # (np.clip's value, faster)
    slots = base["gpu_sm_count"] * xp.maximum(ctas, 1)
    waves = xp.maximum(xp.ceil(units / slots), 1)
    spill = xp.where(xp.isnan(asked), np.nan, xp.as_float(asked > MAX_REGISTERS))
    return {
        "smem_per_cta": smem,
        "smem_share": smem / base["gpu_shared_memory_per_sm_bytes"],
        "ctas_per_sm": ctas,
        "occupancy": ctas * warps / base["gpu_max_warps_per_sm"],
        "waves_resident": waves,
        "wave_efficiency_resident": units / (waves * slots),
        "accumulators_per_thread": accumulators,
        "accumulator_spill": spill,
        "log_units_per_slot": xp.log2(units / slots),
    }


#: bytes an SM's L1 moves per clock, where spilled registers live (local memory, L1-cached)
L1_BYTES_PER_SM_CLOCK = 128


def spill_us(spilled, warps, steps, base) -> np.ndarray:
    """Time an SM's L1 spends on spilled registers (µs): every thread stores and reloads its spilled registers
    (4 B each) once per main-loop step of every CTA (``steps``: CTAs × steps each), all SMs at
    ``L1_BYTES_PER_SM_CLOCK``. 0 without spills, NaN without a config."""
    traffic = steps * 32 * warps * spilled * 8.0
    return traffic / (L1_BYTES_PER_SM_CLOCK * base["gpu_sm_count"] * base["gpu_boost_clock_hz"]) * 1e6


#: elements one block of PyTorch's eager elementwise/copy kernels covers (TensorIterator: 128 threads × 4)
ELEMENTS_PER_BLOCK = 512
#: blocks of 128 threads resident per SM when nothing else limits them (2048 threads per SM)
BLOCKS_PER_SM = 16
#: fraction of the fp32 vector peak a pointwise kernel's arithmetic reaches (transcendentals run on the SFUs)
VECTOR_EFFICIENCY = 0.5


def stream_features(nbytes: np.ndarray, elements: np.ndarray, flops: np.ndarray, gpu) -> dict[str, np.ndarray]:
    """What the memory-bound families (elementwise, reduction, copy) share: roofline floors with the arithmetic
    at the fp32 vector peak, sizes in log2, the blocks and waves of an eager grid, whether the bytes fit L2."""
    elements = np.asarray(elements, dtype=np.float64)
    peak = peak_per_row(gpu, np.full(len(elements), "fp32", dtype=object))
    blocks = np.ceil(elements / ELEMENTS_PER_BLOCK)
    waves, wave_eff = tile_waves(blocks, gpu["sm_count"], per_sm=BLOCKS_PER_SM)
    return {
        **roofline_floors(flops, nbytes, peak, gpu),
        "log_elements": np.log2(elements),
        "log_bytes": np.log2(nbytes),
        "blocks": blocks,
        "waves": waves,
        "wave_efficiency": wave_eff,
        "fits_l2": (nbytes <= gpu["l2_bytes"]).astype(np.float64),
        "bytes_per_sm": nbytes / gpu["sm_count"],
    }


#: bytes of a kernel's reads that an earlier kernel of the same call left in L2 (0: all cold, as the harness times a
#: kernel alone after an L2 flush). ``predict_module`` follows the data between a call's kernels to fill it; the
#: fused descriptions carry it from Inductor's wrapper code.
WARM_BYTES = IntField(0, MAX_ELEMENTS, default=0)


def warm_features(cols, nbytes: np.ndarray, gpu) -> dict[str, np.ndarray]:
    """What the warm share of a kernel's reads changes: the share, and the bytes and HBM floor of the cold rest."""
    nbytes = np.asarray(nbytes, dtype=np.float64)
    given = cols["warm_bytes"] if "warm_bytes" in cols else 0.0  # absent: the field's default, all reads cold
    warm = np.minimum(np.asarray(given, dtype=np.float64), nbytes)
    return {
        "warm_share": warm / nbytes,
        "log_cold_bytes": np.log2(np.maximum(nbytes - warm, 1.0)),
        "cold_memory_floor_us": (nbytes - warm) / gpu["memory_bandwidth_bps"] * 1e6,
    }


def stream_learned_features(cols, gpu, base) -> dict[str, np.ndarray]:
    """What the memory-bound families' learned models add to ``stream_features``: the floor in clock cycles."""
    return clock_features(base)


def stream_latency(cols, f) -> tuple[np.ndarray, np.ndarray]:
    """The analytical answer of a memory-bound kernel: bytes at ``MEMORY_EFFICIENCY`` of HBM (arithmetic at
    ``VECTOR_EFFICIENCY`` of the vector peak), plus one kernel's fixed time."""
    return roofline_latency(f, np.full(len(f["bytes"]), VECTOR_EFFICIENCY), 1.0)


def stream_assumptions(what: str) -> str:
    return (
        f"{what}: bytes at {MEMORY_EFFICIENCY:.0%} of HBM bandwidth, arithmetic at {VECTOR_EFFICIENCY:.0%} of the "
        f"fp32 vector peak, {KERNEL_FLOOR_CYCLES:g} cycles per kernel floor, 1 kernel"
    )


@functools.cache
def _async_mma_target(gpu: str) -> bool:
    """A target whose Triton dot runs an asynchronous MMA reading shared memory: sm_90 (wgmma), sm_100/103
    (tcgen05); not Ampere/Ada (mma.sync), not sm_120, not AMD."""
    capability = get_gpu(gpu).cuda_capability
    return capability is not None and capability[0] in (9, 10)


def triton_ring(gpu, block_m, num_warps, num_stages) -> tuple[np.ndarray, np.ndarray]:
    """Shared-memory ring buffers Triton 3.6/3.7 keeps per pipelined operand, and whether the dot runs on wgmma:
    num_stages − 1, one more on wgmma (an async-MMA target, block_m a multiple of 64, whole warpgroups). Read from
    the compiled kernels' shared memory (collect/compile_facts.py; GEMM, attention and MoE alike: the configs it
    gives refused are exactly those our H200 refused, benchmarks/RESULTS.md §17). Per row; NaN without a config."""
    if isinstance(gpu, str):  # one description
        wgmma = _async_mma_target(gpu) and block_m % 64 == 0 and num_warps % 4 == 0
        return num_stages - 1 + wgmma, wgmma
    block_m, num_warps, num_stages = (
        np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in (block_m, num_warps, num_stages)
    )
    gpu = np.atleast_1d(np.asarray(gpu, dtype=object))
    if len(gpu) <= SMALL:
        fast = np.fromiter((_async_mma_target(g) for g in gpu), bool, len(gpu))
    else:  # each distinct GPU looked up once
        codes, first = key_codes(gpu)
        fast = np.asarray([_async_mma_target(gpu[i]) for i in first])[codes]
    wgmma = fast & (block_m % 64 == 0) & (num_warps % 4 == 0)
    return num_stages - 1 + wgmma, wgmma


def _smem_limit(gpu: str) -> float:
    return float(get_gpu(gpu).shared_memory_per_block_bytes)


def shared_memory_rule(need_bytes, keys: tuple[str, ...], formula: str) -> Rule:
    """Reject a Triton config whose shared memory per CTA exceeds the GPU's per-block limit, with the numbers.

    ``need_bytes(cols, cfg, elem_bytes)`` is what the op's kernel allocates (``cfg``: the config values of
    ``keys``): Triton's pipelined allocation (``triton_ring``; ``ops.gemm.triton_gemm_operands``,
    ``ops.attention.triton_attention_shared``, ``ops.moe.triton_moe_shared``), which gives the status of every
    measured H200 row. Registers are not a rejection: a CTA short of registers spills to local memory and runs
    (configs with 256 fp32 accumulators per thread ran on the H200), which the occupancy features describe."""

    def _bytes(c):
        cfg = triton_configs(c)
        values = dict(zip(keys, config_values(cfg, keys, (np.nan,) * len(keys))))
        need = need_bytes(c, values, lookup(c["dtype"], "bytes"))
        if isinstance(c["gpu"], str):  # one description's values: its numbers (a family's formula may give an array)
            return float(need if np.ndim(need) == 0 else np.ravel(need)[0]), _smem_limit(c["gpu"])
        limit = np.asarray([_smem_limit(g) for g in np.atleast_1d(np.asarray(c["gpu"], dtype=object))])
        return np.atleast_1d(np.asarray(need, dtype=np.float64)), limit

    def ok(c):
        backend = c["backend"]
        if isinstance(backend, str):  # one description (validate_one): no Triton config to size on most
            if backend != "triton":
                return True
        elif not (np.asarray(backend, dtype=object) == "triton").any():
            return np.ones(len(backend), dtype=bool)
        need, limit = _bytes(c)
        return not need > limit if isinstance(need, float) else ~(need > limit)  # NaN (no Triton config) passes

    def allowed(c):
        need, limit = _bytes(c)  # one row's values
        return (
            f"a config that fits {c['gpu']}'s {limit:.0f} B ({limit / 1024:g} KiB) of shared memory per block: "
            f"{formula} needs {need:.0f} B ({need / 1024:g} KiB)"
        )

    return Rule("config", ok, allowed)
