"""Predict, then verify: measure the top-ranked Triton configs of a description on this host's GPU, return the best.

``kernelcast tune --verify K`` on a GPU host: ``rank_configs`` picks the K configs with the lowest predicted latency,
the collector (``kernelcast.collect.measure.measure_many``: CUPTI, cold L2, outputs checked) times them, and the
measured best comes back with the regret of the predicted top-1 (its measured time over the measured best of the K).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd


class NoGpuError(ValueError):
    """Measuring was asked for where no CUDA device is (a ValueError: the CLI reports it as bad input)."""


def local_gpu() -> str:
    """The spec-database name of this host's CUDA device 0; a clear error where there is none."""
    from kernelcast.features.gpu import get_gpu

    try:
        import torch
    except ImportError as exc:
        raise NoGpuError("tune --verify measures on a GPU host: torch is not installed here") from exc
    if not torch.cuda.is_available():
        raise NoGpuError("tune --verify measures on a GPU host: no CUDA device is visible here")
    return get_gpu(torch.cuda.get_device_name(0)).name


def verify_configs(
    desc: Mapping[str, Any],
    top: int = 5,
    candidates: list | None = None,
    measure: Callable[[list[dict]], list[dict]] | None = None,
) -> pd.DataFrame:
    """The ``top`` predicted-best configs of ``desc`` measured: the ranking's columns plus ``measured_us`` and
    ``status``, sorted by measured time; ``attrs`` add ``best`` (the measured best config), ``regret`` (measured
    time of the predicted top-1 / measured best) and ``gpu``. ``measure`` (descriptions -> label rows) defaults to the
    collector on this host's GPU, whose name replaces ``desc``'s ``gpu``; ``candidates`` restricts the ranking as in
    ``rank_configs``."""
    from kernelcast import rank_configs

    if type(top) is not int or top < 1:
        raise ValueError(f"top must be a positive integer; got {top!r}")
    if measure is None:
        from kernelcast.collect.measure import measure_many

        desc = {**desc, "gpu": local_gpu()}
        measure = measure_many
    ranked = rank_configs(desc, candidates=candidates, top=top)
    descs = [{**{k: v for k, v in desc.items() if k != "config"}, "config": c} for c in ranked["config"]]
    rows = measure(descs)
    ranked["predicted_rank"] = range(1, len(ranked) + 1)
    ranked["measured_us"] = [r.get("latency_us") if r.get("status") == "ok" else None for r in rows]
    ranked["status"] = [r.get("status") for r in rows]
    ok = ranked["measured_us"].notna()
    if not ok.any():
        raise RuntimeError(f"none of the {len(ranked)} top configs ran: {sorted(set(ranked['status']))}")
    out = ranked.sort_values("measured_us", na_position="last", kind="stable").reset_index(drop=True)
    best = out.iloc[0]
    first = ranked.iloc[0]
    regret = float(first["measured_us"] / best["measured_us"]) if pd.notna(first["measured_us"]) else float("nan")
    out.attrs.update({**ranked.attrs, "best": best["config"], "best_us": float(best["measured_us"]), "regret": regret})
    out.attrs["gpu"] = desc.get("gpu")
    return out


__all__ = ["NoGpuError", "local_gpu", "verify_configs"]
