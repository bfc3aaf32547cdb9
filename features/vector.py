"""The feature vector: one versioned, ordered set of features per op family, for training and serving."""
from __future__ import annotations

import functools
from typing import Mapping

import numpy as np
import pandas as pd

from kernelcast.features.attention import attention_features
from kernelcast.features.common import GPU_COLUMNS, clock_features, gpu_columns, latency_scale
from kernelcast.features.desc import COLLECTIVES, LAYOUTS, OP_BACKENDS, OP_DTYPES, OUTSIDE_BACKENDS
from kernelcast.features.gemm import gemm_features, gemm_shape_features
from kernelcast.features.moe import moe_features

#: bump when any feature's meaning, name or order changes (logged to MLflow, pinned in manifests)
FEATURE_VERSION = "4"
SOURCES = ("kernelcast", "aiconfigurator", "nccl-tests")
#: per-row values beside the features: the roofline floor (reported) and the target's scale (log(latency / scale_us))
TARGET_COLUMNS = ("floor_us", "scale_us")

CATEGORICAL: dict[str, dict[str, tuple[str, ...]]] = {
    "gemm": {"backend": OP_BACKENDS["gemm"], "dtype": OP_DTYPES["gemm"], "source": SOURCES, "layout": LAYOUTS},
    "attention": {"backend": OP_BACKENDS["attention"], "dtype": OP_DTYPES["attention"], "source": SOURCES},
    "moe": {"backend": OP_BACKENDS["moe"], "dtype": OP_DTYPES["moe"], "source": SOURCES},
    "collective": {"backend": OP_BACKENDS["collective"], "dtype": OP_DTYPES["collective"], "source": SOURCES,
                   "collective": COLLECTIVES},
}


def _collective(cols, gpu):
    from kernelcast.features.collective import collective_features
    return collective_features(cols, gpu)


_OP_FEATURES = {"gemm": gemm_features, "attention": attention_features, "moe": moe_features,
                "collective": _collective}


def _gemm_learned(cols, gpu, base):
    return {**gemm_shape_features(cols, gpu, base), **clock_features(base)}


def _clock_only(cols, gpu, base):
    return clock_features(base)


#: features only the learned models read, skipped when only the analytical answer is wanted
_LEARNED_ONLY = {"gemm": _gemm_learned, "attention": _clock_only, "moe": _clock_only}

#: one valid description per op, used to read off the feature names in order
_EXAMPLES = {
    "gemm": {"m": [256], "n": [256], "k": [256], "batch": [1], "dtype": ["bf16"], "out_dtype": ["bf16"]},
    "attention": {"batch": [1], "heads_q": [8], "heads_kv": [8], "seq_q": [128], "seq_kv": [128],
                  "head_dim": [128], "causal": [True], "dtype": ["bf16"]},
    "moe": {"tokens": [64], "hidden": [256], "ffn": [256], "experts": [8], "top_k": [2], "gated": [True],
            "distribution": ["balanced"], "dtype": ["bf16"]},
    "collective": {"collective": ["all_reduce"], "bytes": [1 << 20], "ranks": [8], "ranks_per_node": [8],
                   "dtype": ["bf16"], "in_place": [False], "backend": ["nccl"]},
}


def default_source(backend) -> np.ndarray:
    """Whose methodology a row is predicted under when the frame does not say."""
    return np.where(np.isin(np.asarray(backend, dtype=object), OUTSIDE_BACKENDS), "aiconfigurator", "kernelcast")


def feature_columns(cols: Mapping[str, object], op: str, learned: bool = True) -> dict[str, np.ndarray]:
    """Numeric features (``feature_names(op)`` order) plus ``floor_us`` (the roofline floor) and
    ``scale_us`` (the learned target's denominator), from description columns.

    ``learned=False`` leaves out what only the learned models read, ``scale_us`` included (the analytical
    model's inputs stay).
    """
    gpu = gpu_columns(cols["gpu"])
    out = {f"gpu_{c}": gpu[c] for c in GPU_COLUMNS}
    out.update(_OP_FEATURES[op](cols, gpu))
    if learned and op in _LEARNED_ONLY:
        floor = out.pop("floor_us")
        out.update(_LEARNED_ONLY[op](cols, gpu, {**out, "floor_us": floor}))
        out["floor_us"] = floor
    if learned:            # collectives: NCCL's model time is both (it has its own latency terms)
        out["scale_us"] = out["floor_us"] if op == "collective" else latency_scale(out["floor_us"], gpu["boost_clock_hz"])
    return out


@functools.cache
def feature_names(op: str) -> tuple[str, ...]:
    """The numeric features of ``op`` in model order (``floor_us`` and ``scale_us`` are not features)."""
    example = {**_EXAMPLES[op], "gpu": ["h200_sxm"]}
    return tuple(name for name in feature_columns(example, op) if name not in TARGET_COLUMNS)


def categorical_frame(cols: Mapping[str, object], op: str, n: int) -> dict[str, pd.Categorical]:
    out = {}
    for name, cats in CATEGORICAL[op].items():
        if name == "source" and "source" not in cols:
            values = default_source(cols["backend"])
        else:
            values = np.broadcast_to(np.asarray(cols[name], dtype=object), (n,))
        out[name] = pd.Categorical(values, categories=list(cats))
    return out


def build_features(frame: pd.DataFrame | Mapping[str, object], op: str) -> pd.DataFrame:
    """Model input for rows of one op: numeric features, categorical columns, then ``TARGET_COLUMNS``."""
    cols = frame if isinstance(frame, Mapping) else {c: frame[c].to_numpy() for c in frame.columns}
    numeric = feature_columns(cols, op)
    n = len(numeric["floor_us"])
    data = {name: numeric[name] for name in feature_names(op)}
    data.update(categorical_frame(cols, op, n))
    data.update({c: numeric[c] for c in TARGET_COLUMNS})
    index = frame.index if isinstance(frame, pd.DataFrame) else None
    return pd.DataFrame(data, index=index)
