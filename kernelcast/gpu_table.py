"""`kernelcast gpus`: the GPU spec database in SI units, with which shipped learned models cover each GPU."""

from __future__ import annotations

from kernelcast.features.gpu import GpuSpec, get_gpu, list_gpus
from kernelcast.show import binary, si


def _learned_ops(name: str) -> list[str]:
    from kernelcast.predictors.coverage import covered_ops

    return covered_ops(name)


def gpu_rows() -> list[dict]:
    """One row per GPU; the unit is in each column's name."""
    rows = []
    for spec in list_gpus():
        rows.append(
            {
                "name": spec.name,
                "display_name": spec.display_name,
                "arch": spec.architecture,
                "target": spec.target,
                "SMs": spec.sm_count,
                "clock_GHz": spec.boost_clock_hz / 1e9,
                "memory_GB": spec.memory_bytes / 1e9,
                "HBM_TB/s": spec.memory_bandwidth_bps / 1e12,
                "bf16_TFLOP/s": spec.peak_flops.get("bf16", 0) / 1e12,
                "fp8_TFLOP/s": spec.peak_flops.get("fp8", 0) / 1e12,
                "L2_MiB": spec.l2_bytes / 2**20,
                "smem/SM_KiB": spec.shared_memory_per_sm_bytes / 2**10,
                "link_GB/s": spec.link_bandwidth_bps / 1e9,
                "learned": ",".join(_learned_ops(spec.name)) or "-",
            }
        )
    return rows


def gpu_json(name: str) -> dict:
    """One GPU's spec as its file holds it (SI base units), with the ops whose learned model covers it."""
    from dataclasses import asdict

    return {**asdict(get_gpu(name)), "learned": _learned_ops(get_gpu(name).name)}


def _source(spec: GpuSpec, *keys: str) -> str:
    return next((spec.sources[k] for k in keys if k in spec.sources), "")


def gpu_detail(name: str) -> list[dict]:
    """One GPU as (field, value in SI units, source) rows."""
    spec = get_gpu(name)
    ic = spec.interconnect
    rows = [
        ("name", spec.name, ""),
        ("display_name", spec.display_name, ""),
        ("aliases", ", ".join(spec.aliases), ""),
        ("vendor / architecture / target", f"{spec.vendor} / {spec.architecture} / {spec.target}", ""),
        ("SMs (CUs)", str(spec.sm_count), _source(spec, "sm_count")),
        ("boost clock", si(spec.boost_clock_hz, "Hz"), _source(spec, "boost_clock_hz")),
        ("memory", si(spec.memory_bytes, "B"), _source(spec, "memory")),
        ("memory bandwidth", si(spec.memory_bandwidth_bps, "B/s"), _source(spec, "memory", "memory_bandwidth_bps")),
        ("L2", binary(spec.l2_bytes), _source(spec, "l2_bytes")),
        ("Infinity Cache", binary(spec.infinity_cache_bytes), _source(spec, "infinity_cache_bytes")),
        ("shared memory per SM", binary(spec.shared_memory_per_sm_bytes), _source(spec, "shared_memory_per_sm_bytes")),
        ("registers per SM", f"{spec.registers_per_sm:,}", _source(spec, "registers_per_sm")),
        (
            "warps / threads per SM, warp size",
            f"{spec.max_warps_per_sm} / {spec.max_threads_per_sm}, {spec.warp_size}",
            _source(spec, "occupancy_limits"),
        ),
        ("TDP", si(spec.tdp_w, "W"), _source(spec, "tdp_w")),
    ]
    rows += [(f"peak {k} (dense)", si(v, "FLOP/s"), _source(spec, "peak_flops")) for k, v in spec.peak_flops.items()]
    rows += [
        (
            "interconnect",
            f"{ic['kind']}, {si(float(ic['bandwidth_bps']), 'B/s')} both directions"
            + (", NVSwitch" if ic.get("nvswitch") else ""),
            _source(spec, "interconnect"),
        ),
        ("learned models covering it", ", ".join(_learned_ops(spec.name)) or "none", "`kernelcast coverage`"),
    ]
    return [{"field": f, "value": v, "source": s} for f, v, s in rows]


__all__ = ["gpu_detail", "gpu_json", "gpu_rows"]
