"""Config search judged by measured regret: on shapes where every candidate config was measured, the measured time
of a pick over the measured best, for kernelcast's ranking and the baselines it must beat.

Rows come from the dataset card's ``test`` files of the exhaustive sweeps (``TUNE_SWEEPS``) or any frame of
measured rows; a shape is every description field but ``config``, per GPU. Methods, each a pick per shape:

* ``kernelcast_top1``: the config ``rank_configs`` ranks first among the shape's measured configs;
* ``kernelcast_top5_autotune``: the best measured of its top 5 (Triton's autotuner pruned by
  ``triton_perf_model`` with ``top_k=5``);
* ``fixed_loo``: one config for every shape, chosen on the *other* shapes (best geometric-mean regret there);
* ``fixed_oracle``: the one config best on these same shapes — in-sample, an optimistic bound for any fixed config;
* ``triton_short_list`` (GEMM): the best of Triton's matmul tutorial list (``TRITON_SHORT_LIST``), what
  ``triton.autotune`` over that list picks;
* ``vllm_default`` (MoE): vLLM's ``get_default_config`` for bf16 without a tuned file (``vllm_default_config``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import tomllib

from kernelcast.features.desc import op_fields
from kernelcast.predictors.configs import rank_configs
from kernelcast.training import data

#: op -> the exhaustive config-search sweep of its test rows (collect/sweeps/<name>.toml)
TUNE_SWEEPS = {"gemm": "gemm_triton_tune", "attention": "triton_attention_tune", "moe": "moe_tune"}
#: the first 8 configs of get_cuda_autotune_config() in triton's python/tutorials/03-matrix-multiplication.py
TRITON_SHORT_LIST = tuple(
    {"block_m": bm, "block_n": bn, "block_k": bk, "group_m": 8, "num_warps": w, "num_stages": s, "split_k": 1}
    for bm, bn, bk, s, w in (
        (128, 256, 64, 3, 8),
        (64, 256, 32, 4, 4),
        (128, 128, 32, 4, 4),
        (128, 64, 32, 4, 4),
        (64, 128, 32, 4, 4),
        (128, 32, 32, 4, 4),
        (64, 32, 32, 5, 2),
        (32, 64, 32, 5, 2),
    )
)
#: a pick within this factor of the measured best counts as "within 5%"
NEAR = 1.05
#: the ranking depth the top-k figures use (Triton's autotuner benchmarks this many of kernelcast's picks)
TOP_K = 5
#: shapes with fewer measured configs than this are not exhaustive enough to judge a pick
MIN_CONFIGS = 8


def vllm_default_config(tokens: int, experts: int) -> dict:
    """vLLM's default fused_moe config for bf16 without a tuned config file: get_default_config() in
    vllm/model_executor/layers/fused_moe/fused_moe.py (vllm-project/vllm@000d1458): M <= E -> 16/32/64, group 1;
    else 64/64/32, group 8; num_warps and num_stages unset there, so Triton's launch defaults 4 and 3."""
    if tokens <= experts:
        return {"block_m": 16, "block_n": 32, "block_k": 64, "group_m": 1, "num_warps": 4, "num_stages": 3}
    return {"block_m": 64, "block_n": 64, "block_k": 32, "group_m": 8, "num_warps": 4, "num_stages": 3}


def _triton_short_list(desc: dict, times: pd.Series) -> float:
    short = [k for k in map(_key, TRITON_SHORT_LIST) if k in times.index]
    return times[short].min() if short else np.nan


def _vllm_default(desc: dict, times: pd.Series) -> float:
    return times.get(_key(vllm_default_config(desc["tokens"], desc["experts"])), np.nan)


#: op -> (method, the measured µs of its pick on a shape: NaN where that config was not measured) of its baselines
BASELINES = {"gemm": (("triton_short_list", _triton_short_list),), "moe": (("vllm_default", _vllm_default),)}


def tune_rows(op: str, datasets: Path = data.DATASETS) -> pd.DataFrame:
    """Measured rows of ``op``'s exhaustive sweep: the card's ``test`` files that list ``TUNE_SWEEPS[op]``."""
    card = Path(datasets) / data.CARD_FILES
    entries = tomllib.loads(card.read_text()).get("file", [])
    sweep = TUNE_SWEEPS[op]
    files = [Path(datasets) / e["path"] for e in entries if e.get("role") == "test" and sweep in e.get("sweeps", [])]
    if not files:
        raise ValueError(
            f"{card} lists no test file of sweep {sweep!r}: run benchmarks/results/collect_h200_20261201_tune.sh "
            "on a GPU, `kernelcast collect merge` the rows, and list the new files with role 'test'"
        )
    return measured_rows(pd.concat([pd.read_parquet(f) for f in files], ignore_index=True), op)


def measured_rows(frame: pd.DataFrame, op: str) -> pd.DataFrame:
    """Original, CUPTI-timed, cold-L2, ok rows of ``op``'s Triton backend with a positive latency, canonical."""
    keep = frame["op"].eq(op) & frame["backend"].eq("triton") & (frame["latency_us"] > 0)
    for column, good in (("status", "ok"), ("cache", "cold")):
        if column in frame:
            keep &= frame[column].eq(good)
    if "repeat_of" in frame:
        keep &= frame["repeat_of"].isna()
    if "timer" in frame:
        keep &= frame["timer"].ne("ncu")
    # (a field added after a file was written is absent from it: valid_rows gives it its default)
    columns = [c for c in (*op_fields(op), "latency_us", "source") if c in frame]
    rows = frame[keep].reindex(columns=columns).reset_index(drop=True)
    rows["source"] = rows["source"].fillna(data.OWN_SOURCE) if "source" in rows else data.OWN_SOURCE
    return data.valid_rows(rows, op, report=None, defaults=True)


def _shapes(rows: pd.DataFrame, op: str) -> list[tuple[dict, pd.Series]]:
    """(description without config, measured µs by canonical config JSON) per shape with >= MIN_CONFIGS configs."""
    keys = [c for c in op_fields(op) if c != "config"]
    out = []
    for _, group in rows.groupby(keys, sort=True, dropna=False):
        by_config = group.groupby("config")["latency_us"].median()
        if len(by_config) >= MIN_CONFIGS:
            desc = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in group.iloc[0][keys].items()}
            out.append((desc, by_config))
    return out


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def _fixed_picks(times: list[pd.Series]) -> tuple[list[str | None], str | None]:
    """Per shape the config best on the other shapes (geometric-mean regret over the shapes measuring it), and the
    one best over all of them (in-sample)."""
    regrets = pd.DataFrame([t / t.min() for t in times])  # shapes x configs, NaN where a config was not measured
    logs = np.log(regrets)
    total, count = logs.sum(), logs.notna().sum()
    oracle = (total / count).idxmin() if len(times) else None
    loo = []
    for i in range(len(times)):
        mine = logs.iloc[i]
        rest_count = count - mine.notna()
        mean = (total - mine.fillna(0)) / rest_count.where(rest_count > 0)
        mean = mean[mine.notna()]  # the pick must be measured on this shape
        loo.append(mean.idxmin() if mean.notna().any() else None)
    return loo, oracle


def shape_picks(rows: pd.DataFrame, op: str, predictor: str = "auto") -> pd.DataFrame:
    """One row per shape: the measured best, and each method's pick's regret (NaN where a method has no pick)."""
    shapes = _shapes(rows, op)
    loo, oracle = _fixed_picks([t for _, t in shapes])
    out = []
    for (desc, times), fixed in zip(shapes, loo):
        ranked = rank_configs(desc, candidates=[json.loads(c) for c in times.index], predictor=predictor)
        order = [_key(c) for c in ranked["config"]]
        best, best_config = times.min(), times.idxmin()
        picks = {
            "kernelcast_top1": times[order[0]],
            f"kernelcast_top{TOP_K}_autotune": times[order[:TOP_K]].min(),
            "fixed_loo": times.get(fixed, np.nan),
            "fixed_oracle": times.get(oracle, np.nan),
        }
        for method, pick in BASELINES.get(op, ()):
            picks[method] = pick(desc, times)
        out.append(
            {
                "gpu": desc["gpu"],
                "shape": _key({k: v for k, v in desc.items() if k not in ("gpu", "op", "backend")}),
                "configs": len(times),
                "best_us": best,
                # rank_configs drops candidates it judges not to fit (a spill estimate); a measured best among
                # those ranks after every ranked config
                "best_rank": order.index(best_config) + 1 if best_config in order else len(order) + 1,
                **{f"{m}_regret": t / best for m, t in picks.items()},
            }
        )
    return pd.DataFrame(out)


def summary(picks: pd.DataFrame) -> list[dict]:
    """Per GPU and method: shapes, mean / median / worst regret, share within 5% of the best; kernelcast's share
    with the best in its top 5."""
    out = []
    methods = [c.removesuffix("_regret") for c in picks if c.endswith("_regret")]
    for gpu, mine in picks.groupby("gpu"):
        for method in methods:
            r = mine[f"{method}_regret"].dropna()
            if not len(r):
                continue
            row = {
                "gpu": gpu,
                "method": method,
                "shapes": len(r),
                "mean_regret": float(r.mean()),
                "median_regret": float(r.median()),
                "worst_regret": float(r.max()),
                "within_5pct": float((r <= NEAR).mean()),
            }
            if method == "kernelcast_top1":
                row[f"best_in_top{TOP_K}"] = float((mine["best_rank"] <= TOP_K).mean())
            out.append(row)
    return out


def evaluate_tune(op: str, log_mlflow: bool = True, predictor: str = "auto", datasets: Path = data.DATASETS) -> dict:
    """``kernelcast evaluate --op <op> --split tune``: the regret summary of ``op``'s exhaustive test rows, logged
    to MLflow as metrics ``tune.<gpu>.<method>.<figure>`` (one run, tags kind=evaluate, split=tune)."""
    from kernelcast.features.vector import feature_version
    from kernelcast.training import tracking

    rows = tune_rows(op, datasets)
    picks = shape_picks(rows, op, predictor)
    table = summary(picks)
    result = {"op": op, "split": "tune", "sweep": TUNE_SWEEPS[op], "shapes": len(picks), "table": table}
    if log_mlflow:
        metrics = {
            f"tune.{r['gpu']}.{r['method']}.{k}": v
            for r in table
            for k, v in r.items()
            if k not in ("gpu", "method") and isinstance(v, float)
        }
        fingerprint = data.fingerprint(rows, op)
        result["run_id"], _ = tracking.log_run(
            op,
            "evaluate-tune",
            {"sweep": TUNE_SWEEPS[op], "rows": len(rows), "shapes": len(picks), "predictor": predictor},
            {
                "kind": "evaluate",
                "split": "tune",
                "data_fingerprint": fingerprint,
                "feature_version": feature_version(op),
            },
            metrics,
            {},
            {"regret_summary.json": pd.DataFrame(table), "regret_by_shape.json": picks},
        )
    return result


__all__ = [
    "evaluate_tune",
    "TRITON_SHORT_LIST",
    "TUNE_SWEEPS",
    "measured_rows",
    "shape_picks",
    "summary",
    "tune_rows",
    "vllm_default_config",
]
