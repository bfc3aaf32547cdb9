"""Validation of a night: the noise floor of its re-measurements, outliers, and sentinel drift against the last
published night beyond that floor, per (GPU, backend), with the software versions that changed; and the
fan-out's GPU idle share from the runner's per-chunk timestamps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.pipeline.farm import FarmConfig

GROUP = ["gpu", "backend"]
KEYS = ["desc_key", "cache", "timer"]
VERSIONS = ("driver", "cuda", "torch", "triton", "nccl")


def _ok(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[(frame["status"] == "ok") & frame["latency_us"].notna()]


def repeat_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """Each ok re-measurement beside its first-measured original: gpu, backend, desc_key, rel = |Δ| / original."""
    ok = _ok(frame)
    originals = ok[ok["repeat_of"].isna()].sort_values("time").drop_duplicates(KEYS)
    pairs = ok[ok["repeat_of"].notna()].merge(originals[KEYS + ["latency_us"]], on=KEYS, suffixes=("", "_original"))
    rel = (pairs["latency_us"] - pairs["latency_us_original"]).abs() / pairs["latency_us_original"]
    return pairs.assign(rel=rel)[GROUP + ["desc_key", "rel"]]


def noise(pairs: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per ``gpu|backend``: pair count, median and p90 of |Δ| / original."""
    out = {}
    for (gpu, backend), part in pairs.groupby(GROUP):
        q = np.quantile(part["rel"].to_numpy(dtype=float), [0.5, 0.9])
        out[f"{gpu}|{backend}"] = {"pairs": len(part), "median": float(q[0]), "p90": float(q[1])}
    return out


def outliers(pairs: pd.DataFrame, floor: dict[str, dict[str, float]], factor: float) -> dict[str, Any]:
    """Re-measurements off their original by more than ``factor`` × the group's noise p90."""
    limit = pairs.apply(lambda r: factor * floor[f"{r['gpu']}|{r['backend']}"]["p90"], axis=1) if len(pairs) else 0
    bad = pairs[pairs["rel"] > limit] if len(pairs) else pairs
    return {"count": len(bad), "first": bad.head(5)[["desc_key", "rel"]].to_dict("records")}


def _versions(frame: pd.DataFrame) -> dict[str, list[str]]:
    return {v: sorted({str(x) for x in frame[v].dropna()}) for v in VERSIONS if v in frame}


def drift(
    tonight: pd.DataFrame, last: pd.DataFrame, sentinels: set[str], floor: dict[str, dict[str, float]], min_drift: float
) -> list[dict[str, Any]]:
    """Per (GPU, backend): median sentinel latency ratio tonight / last night, flagged beyond the noise floor.

    The threshold is max(``min_drift``, tonight's noise p90 for the group): a shift the re-measurements of one
    night already show is not drift. Each record lists the software versions that differ between the nights.
    """

    def originals(frame):
        ok = _ok(frame)
        ok = ok[ok["repeat_of"].isna() & ok["desc_key"].isin(sentinels)]
        return ok.sort_values("time").drop_duplicates(KEYS)

    now, before = originals(tonight), originals(last)
    both = now.merge(before[KEYS + ["latency_us"]], on=KEYS, suffixes=("", "_last"))
    out = []
    for (gpu, backend), part in both.groupby(GROUP):
        key = f"{gpu}|{backend}"
        ratio = float(np.median(part["latency_us"] / part["latency_us_last"]))
        threshold = max(min_drift, floor.get(key, {}).get("p90", 0.0))
        old = _versions(before[(before["gpu"] == gpu) & (before["backend"] == backend)])
        new = _versions(part)
        changed = {v: {"last": old.get(v, []), "tonight": new[v]} for v in new if new[v] != old.get(v, [])}
        out.append(
            {
                "gpu": gpu,
                "backend": backend,
                "sentinels": len(part),
                "median_ratio": ratio,
                "drift": ratio - 1.0,
                "threshold": threshold,
                "flagged": abs(ratio - 1.0) > threshold,
                "versions_changed": changed,
            }
        )
    return out


def validate_night(cfg: FarmConfig, tonight: pd.DataFrame, last: pd.DataFrame | None, sentinels: set[str]) -> dict:
    """The validate stage's result: noise, outliers, drift (none without a last night), quarantine verdict."""
    pairs = repeat_pairs(tonight)
    floor = noise(pairs)
    records = drift(tonight, last, sentinels, floor, cfg.validate.min_drift) if last is not None else []
    flagged = [r for r in records if r["flagged"]]
    return {
        "noise": floor,
        "outliers": outliers(pairs, floor, cfg.validate.outlier_factor),
        "drift": records,
        "baseline": last is not None,
        "quarantine": bool(flagged),
        "flagged": [f"{r['gpu']}|{r['backend']}" for r in flagged],
    }


def idle_share(shard_dirs: list[Path], start: float, slots: int) -> dict[str, Any]:
    """Share of the fan-out's worker time with no chunk measuring: 1 - Σ chunk wall / (slots × window).

    The window runs from the fan-out's start to the last chunk's end (work is queued all that time), so
    scheduling, imports, warm-up and an unbalanced tail all count as idle. Chunks come from each shard
    folder's ``timing.jsonl`` (``wall_s`` and ``t_end`` per measuring call).
    """
    chunks = []
    for folder in shard_dirs:
        log = folder / "timing.jsonl"
        if log.exists():
            for line in log.read_text().splitlines():
                record = json.loads(line)
                if "t_end" in record and record["t_end"] >= start:
                    chunks.append((record["t_end"], record["wall_s"]))
    if not chunks:
        return {"idle_share": None, "chunks": 0}
    window = max(t for t, _ in chunks) - start
    busy = sum(w for _, w in chunks)
    return {
        "idle_share": round(max(0.0, 1.0 - busy / (slots * window)), 4) if window > 0 else None,
        "chunks": len(chunks),
        "busy_s": round(busy, 3),
        "window_s": round(window, 3),
        "slots": slots,
    }
