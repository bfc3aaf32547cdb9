"""Config search: the valid Triton config space of a description on its GPU, ranked by predicted latency.

A client of the predictors (DESIGN.md "Config search"): every candidate is one row of a single batched
``predict_columns`` call. The default space of an op is the product of each config key's values in
``SPACES`` — values inside the op's ``TritonConfig`` ranges, the ones the wide training passes drew
(collect/sweeps/*_wide*.toml), so a learned model has seen each value — kept where the config fits the
GPU: at least one CTA resident per SM by shared memory, registers and warps (``features.common.resident_ctas``)
and no register spilled past the limit (the op's estimate: for GEMM ``features.ops.gemm.triton_gemm_registers``; on
the 50 exhaustively measured config-search shapes the best config never spills, while 31% of the configs do).
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features.common import parse_config
from kernelcast.features.desc import parse_desc
from kernelcast.features.fields import field_error, short
from kernelcast.features.ops import get_op
from kernelcast.features.vector import feature_columns

#: op -> config key -> the values the default candidate space takes (each inside the op's TritonConfig range)
SPACES: dict[str, dict[str, tuple[int, ...]]] = {
    "gemm": {  # gemm_triton_wide.toml's pool keys; group_m 4/16 and split_k 3 left out (12,000 configs, not 30,000)
        "block_m": (16, 32, 64, 128, 256),
        "block_n": (16, 32, 64, 128, 256),
        "block_k": (16, 32, 64, 128),
        "group_m": (1, 8),
        "num_warps": (2, 4, 8),
        "num_stages": (2, 3, 4, 5, 6),
        "split_k": (1, 2, 4, 8),
    },
    "attention": {  # triton_attention_wide.toml's
        "block_m": (16, 32, 64, 128),
        "block_n": (16, 32, 64, 128),
        "num_warps": (2, 4, 8),
        "num_stages": (1, 2, 3, 4),
    },
    "moe": {  # moe_wide.toml's
        "block_m": (16, 32, 64, 128),
        "block_n": (32, 64, 128, 256),
        "block_k": (32, 64, 128),
        "group_m": (1, 8, 16),
        "num_warps": (4, 8),
        "num_stages": (2, 3, 4, 5),
    },
}
RANK_COLUMNS = ("config", "latency_us", "low_us", "high_us", "in_distribution")


@functools.cache
def _space(op: str) -> tuple[str, ...]:
    keys = SPACES[op]
    return tuple(json.dumps(dict(zip(keys, v)), sort_keys=True) for v in itertools.product(*keys.values()))


def space(op: str) -> list[str]:
    """Every config of ``op``'s default space (before the GPU fit), as canonical JSON."""
    return list(_space(op))


def _check_rankable(d) -> None:
    if d.op not in SPACES:
        raise field_error("op", d.op, "one of " + ", ".join(SPACES) + " (ops with a Triton config to rank)")
    if d.backend != "triton":
        raise field_error("backend", d.backend, f"'triton' to rank configs of op {d.op!r}")


def _validate_candidates(op: str, candidates: Any) -> list[str]:
    """User candidates -> canonical JSON, each checked by the op's own config field (its error messages)."""
    if isinstance(candidates, (str, Mapping)) or not isinstance(candidates, Sequence) or not candidates:
        raise ValueError(f"candidates must be a non-empty list of config mappings; got {short(candidates)}")
    field = get_op(op).triton_config
    out = []
    for i, cfg in enumerate(candidates):
        if cfg is None:
            raise ValueError(f"candidates[{i}]: a config mapping with {', '.join(SPACES[op])}; got None")
        try:
            out.append(field.scalar(cfg, {"backend": "triton"}))
        except ValueError as exc:
            raise ValueError(f"candidates[{i}]: {exc}") from None
    return list(dict.fromkeys(out))  # a config given twice is ranked once


def _repeat(cols: Mapping[str, np.ndarray], rows: np.ndarray, configs: np.ndarray) -> dict[str, np.ndarray]:
    """Description columns taken at ``rows`` with the config column replaced by ``configs``."""
    out = {k: np.asarray(v)[rows] for k, v in cols.items() if k != "config"}
    out["config"] = configs
    return out


def runs(feats: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per row of ``feature_columns(..., learned=True)``: the GPU can run the config (>= 1 CTA per SM by shared
    memory, registers and warps)."""
    return feats["ctas_per_sm"] >= 1


def fits(feats: Mapping[str, np.ndarray]) -> np.ndarray:
    """The configs ranked: those that run (``runs``) and spill no register by the op's estimate."""
    return runs(feats) & (feats["accumulator_spill"] == 0)


def candidate_features(
    cols: Mapping[str, np.ndarray], op: str, configs: list[str] | None = None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """Every description row of ``cols`` (validated columns) crossed with the candidate configs (``None``: the
    default space) -> (the candidates' description columns, their learned feature columns, the source row of each
    candidate). Nothing is dropped: ``runs`` and ``fits`` read the features."""
    configs = space(op) if configs is None else configs
    n = len(np.atleast_1d(cols["gpu"]))
    rows = np.repeat(np.arange(n), len(configs))
    cand = np.empty(len(rows), dtype=object)
    cand[:] = configs * n
    big = _repeat(cols, rows, cand)
    return big, feature_columns(big, op, learned=True), rows


def rank_columns(
    cols: Mapping[str, np.ndarray], op: str, configs: list[str] | None, predictor: str, model_dir: str | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every description row of ``cols`` (validated columns, Triton backend) crossed with the candidate configs
    (``None``: the default space), kept where the config fits -> (predicted columns incl. ``config``, the source
    row of each candidate). One batched prediction for all rows and candidates."""
    from kernelcast.predictors.dispatch import predict_columns

    big, feats, rows = candidate_features(cols, op, configs)
    keep = fits(feats)
    if not keep.all():
        big = {k: v[keep] for k, v in big.items()}
        feats = {k: np.asarray(v)[keep] if np.shape(v) == keep.shape else v for k, v in feats.items()}
    out = predict_columns(big, op, predictor, model_dir, feats=feats)
    out["config"] = big["config"]
    return out, rows[keep]


def desc_columns(d) -> dict[str, np.ndarray]:
    """One parsed description as one-row object columns (what ``rank_columns`` and ``candidate_features`` read)."""
    cols = {}
    for k, v in d.to_row().items():
        cell = np.empty(1, dtype=object)
        cell[0] = v
        cols[k] = cell
    return cols


def rank_configs(
    desc: Any, candidates: list | None = None, top: int | None = None, predictor: str = "auto"
) -> pd.DataFrame:
    """Triton configs of a description (op gemm, attention or moe; backend triton; any GPU) ranked by predicted
    latency, best first: columns ``config`` (a dict), ``latency_us``, ``low_us``, ``high_us``,
    ``in_distribution``. A ``config`` in ``desc`` is ignored. ``candidates`` (a list of config mappings)
    restricts the default space (``SPACES``, kept where it fits the GPU); ``top`` keeps the best ``top``.
    ``attrs`` says how many candidates were asked and how many fit."""
    d = parse_desc({k: v for k, v in desc.items() if k != "config"} if isinstance(desc, Mapping) else desc)
    _check_rankable(d)
    if top is not None and (type(top) is not int or top < 1):
        raise ValueError(f"top must be a positive integer or None; got {short(top)}")
    configs = None if candidates is None else _validate_candidates(d.op, candidates)
    asked = len(space(d.op)) if configs is None else len(configs)
    out, _ = rank_columns(desc_columns(d), d.op, configs, predictor)
    if not len(out["config"]):
        raise ValueError(f"no candidate config fits {d.gpu} ({asked} asked): shared memory or registers exceeded")
    frame = pd.DataFrame(
        {
            "config": [dict(parse_config(c)) for c in out["config"]],
            **{k: out[k] for k in RANK_COLUMNS[1:]},
        }
    )
    frame = frame.sort_values("latency_us", kind="stable").reset_index(drop=True)
    frame = frame if top is None else frame.head(top)
    frame.attrs.update({"candidates": asked, "fit": len(out["config"]), "model": str(out["model"][0])})
    return frame


def best_configs(cols: Mapping[str, np.ndarray], op: str, predictor: str, model_dir: str | None = None) -> np.ndarray:
    """The top-ranked default-space config (canonical JSON) of each row of validated columns."""
    out, src = rank_columns(cols, op, None, predictor, model_dir)
    n = len(np.atleast_1d(cols["gpu"]))
    order = np.lexsort((out["latency_us"], src))  # by row, then latency; stable on ties
    first = order[np.r_[True, src[order][1:] != src[order][:-1]]]
    best = np.full(n, None, dtype=object)
    best[src[first]] = out["config"][first]
    missing = np.flatnonzero(np.equal(best, None))
    if len(missing):
        raise field_error("config", None, f"a config: none of the Triton configs of op {op!r} fits {cols['gpu'][0]}")
    return best


__all__ = ["RANK_COLUMNS", "SPACES", "best_configs", "fits", "rank_columns", "rank_configs", "space"]
