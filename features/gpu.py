"""The GPU spec database: one TOML file per GPU under ``features/gpus/``, loaded into ``GpuSpec``."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

GPU_DIR = Path(__file__).with_name("gpus")


@dataclass(frozen=True)
class GpuSpec:
    name: str
    display_name: str
    aliases: tuple[str, ...]
    vendor: str
    architecture: str
    target: str
    sm_count: int
    boost_clock_hz: float
    memory_bytes: float
    memory_bandwidth_bps: float
    l2_bytes: float
    infinity_cache_bytes: float
    shared_memory_per_sm_bytes: float
    shared_memory_per_block_bytes: float  # the most one CTA (workgroup) may use: a Triton config over it cannot run
    registers_per_sm: int
    max_warps_per_sm: int
    max_threads_per_sm: int
    warp_size: int
    tdp_w: float
    peak_flops: dict[str, float] = field(hash=False)
    interconnect: dict[str, object] = field(hash=False)
    sources: dict[str, str] = field(hash=False)

    def peak(self, key: str) -> float:
        """Dense peak rate for a peak key (fp32, tf32, bf16, fp16, fp8, int8, fp4, fp64)."""
        if key not in self.peak_flops:
            raise ValueError(f"GPU {self.name!r} has no {key} rate; it has {', '.join(self.peak_flops)}")
        return float(self.peak_flops[key])

    @property
    def link_bandwidth_bps(self) -> float:
        return float(self.interconnect["bandwidth_bps"])

    @property
    def cuda_capability(self) -> tuple[int, int] | None:
        """(major, minor) of an NVIDIA target (sm_90a -> (9, 0), sm_100 -> (10, 0)); None for other vendors."""
        match = re.fullmatch(r"sm_(\d+)(\d)[a-z]?", self.target)
        return (int(match[1]), int(match[2])) if self.vendor == "nvidia" and match else None


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]+", " ", name.strip().lower())


@functools.cache
def _database() -> tuple[dict[str, GpuSpec], dict[str, str]]:
    specs: dict[str, GpuSpec] = {}
    index: dict[str, str] = {}
    for path in sorted(GPU_DIR.glob("*.toml")):
        raw = tomllib.loads(path.read_text())
        spec = GpuSpec(**{**raw, "aliases": tuple(raw.get("aliases", ()))})
        specs[spec.name] = spec
        for alias in (spec.name, spec.display_name, *spec.aliases):
            key = _norm(alias)
            if index.get(key, spec.name) != spec.name:
                raise RuntimeError(f"GPU alias {alias!r} names both {index[key]} and {spec.name}")
            index[key] = spec.name
    return specs, index


def list_gpus() -> list[GpuSpec]:
    return list(_database()[0].values())


@functools.lru_cache(maxsize=1024)
def _canonical(name: str) -> str | None:
    """The canonical name a name or alias normalizes to (None: none); names repeat, the normalizing is read once."""
    return _database()[1].get(_norm(name))


def resolve_gpu_name(name: str) -> str:
    """Canonical GPU name for a canonical name or alias; unknown names list the known ones."""
    canonical = _canonical(name) if isinstance(name, str) else None
    if canonical is None:
        specs = _database()[0]
        raise ValueError(
            f"kernel_desc['gpu'] must be one of {', '.join(sorted(specs))} "
            f"(or an alias, see `kernelcast gpus`); got {name!r}"
        )
    return canonical


def get_gpu(name: str) -> GpuSpec:
    return _database()[0][resolve_gpu_name(name)]
