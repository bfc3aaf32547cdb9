"""Error metrics (MAPE, median/p90 APE, Kendall τ, interval coverage and width) and grouped tables, learned beside
analytical."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: ``width``: the interval's median high / low (coverage alone rewards an interval for being wide)
METRICS = ("n", "mape", "median_ape", "p90_ape", "kendall_tau", "coverage", "width")
#: groupings of every evaluation table ("all" = every row together)
GROUPS = ("all", "op", "dtype", "backend", "gpu")
MODELS = ("learned", "analytical")


def metrics(measured, predicted, low=None, high=None) -> dict[str, float]:
    """APE statistics of predicted vs measured latency, Kendall τ of their order, interval coverage and width."""
    from scipy.stats import kendalltau

    y = np.asarray(measured, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    if len(y) != len(p):
        raise ValueError(f"measured and predicted must have the same length; got {len(y)} and {len(p)}")
    if len(y) == 0:
        return {"n": 0, **{k: float("nan") for k in METRICS[1:]}}
    ape = np.abs(p / y - 1.0)
    tau = kendalltau(y, p).statistic if len(y) > 1 else float("nan")
    if low is None:
        cover = width = float("nan")
    else:
        low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        cover, width = float(np.mean((y >= low) & (y <= high))), float(np.median(high / low))
    return {
        "n": int(len(y)),
        "mape": float(ape.mean()),
        "median_ape": float(np.median(ape)),
        "p90_ape": float(np.quantile(ape, 0.9)),
        "kendall_tau": float(tau),
        "coverage": cover,
        "width": width,
    }


def evaluation_table(rows: pd.DataFrame, groups=GROUPS) -> pd.DataFrame:
    """One row per (group_by, group, model): ``rows`` has measured, learned, low, high, analytical,
    analytical_low, analytical_high and the grouping columns."""
    out = []
    for by in groups:
        parts = [("all", rows)] if by == "all" else sorted(rows.groupby(by, observed=True), key=lambda kv: str(kv[0]))
        for value, part in parts:
            for model in MODELS:
                lo, hi = ("low", "high") if model == "learned" else ("analytical_low", "analytical_high")
                m = metrics(
                    part["measured"], part[model], part[lo] if lo in part else None, part[hi] if hi in part else None
                )
                out.append({"group_by": by, "group": str(value), "model": model, **m})
    return pd.DataFrame(out, columns=["group_by", "group", "model", *METRICS])


def flat_metrics(table: pd.DataFrame, prefix: str) -> dict[str, float]:
    """MLflow metric dict from a table: ``<prefix>.<group_by>.<group>.<model>.<metric>`` (NaN skipped)."""
    out = {}
    for row in table.itertuples(index=False):
        head = prefix if row.group_by == "all" else f"{prefix}.{row.group_by}.{row.group}"
        for name in METRICS[1:]:
            value = getattr(row, name)
            if np.isfinite(value):
                out[f"{head}.{row.model}.{name}"] = float(value)
    return out


def side_by_side(table: pd.DataFrame, group_by: str = "gpu") -> pd.DataFrame:
    """learned vs analytical MAPE / median APE, the learned interval's coverage and width, per group, one line each
    (for printing)."""
    part = table[table["group_by"] == group_by]
    wide = part.pivot(
        index="group", columns="model", values=["n", "mape", "median_ape", "p90_ape", "coverage", "width"]
    )
    wide.columns = [f"{model}_{metric}" for metric, model in wide.columns]
    keep = [
        "learned_n",
        "learned_mape",
        "analytical_mape",
        "learned_median_ape",
        "analytical_median_ape",
        "learned_p90_ape",
        "analytical_p90_ape",
        "learned_coverage",
        "learned_width",
    ]
    return wide[keep].rename(columns={"learned_n": "n"}).astype({"n": int})


def covered_errors(rows: pd.DataFrame, predicted: str = "learned") -> dict[str, dict[str, float]]:
    """Per covered ``gpu|backend|dtype`` key: test rows, median and p90 APE of ``predicted`` against measured
    (what `kernelcast coverage` prints from a manifest)."""
    keys = rows["gpu"].astype(str) + "|" + rows["backend"].astype(str) + "|" + rows["dtype"].astype(str)
    out = {}
    for key, part in rows.groupby(keys.to_numpy(), sort=True):
        m = metrics(part["measured"], part[predicted])
        out[str(key)] = {"n": m["n"], "median_ape": m["median_ape"], "p90_ape": m["p90_ape"]}
    return out
