"""The feature vector: one versioned, ordered set of features per op family, for training and serving."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
import pandas as pd

from kernelcast.features.common import GPU_COLUMNS, gpu_columns, latency_scale
from kernelcast.features.fields import OUTSIDE_BACKENDS, SMALL, ChoiceField
from kernelcast.features.ops import get_op

#: per op family: bump an op's version when any of its features' meaning, names or order change (logged to MLflow,
#: pinned in manifests: a model built on another version is refused); families not listed are at the base version
BASE_FEATURE_VERSION = "5"
#: gemm 6: Triton GEMM register pressure (registers per thread, spills); attention and moe 6: their Triton kernels'
#: registers and spills, tiles as run (padded to whole tiles) and the target's scale from them
#: attention 7: the kernel SDPA's flash and cuDNN backends launch (tiles, K/V splits, decode packing), Triton's
#: shared memory by the config rule's formula
#: attention 8: Triton's dot instruction (wgmma), K/V pipeline buffers, sub-partitions a CTA occupies, the K/V step's
#: modelled cycles (dots, exp2, fp32 softmax) and the loop and SM-busy times from them, which Triton rows' scale reads
#: reduction 6: the kernel path and kernel count each fn launches, and its main kernel's launch (Reduce.cuh's
#: config, softmax, scan and norm blocks)
#: attention 9: Triton's registers and spilled bytes as compiled for the GPU's architecture (features/compiled/), the
#: estimate where no table holds the config
#: attention 10: an explicit mask's bytes (read per head) beside Q, K, V and O
#: attention 12: the head_dim a library kernel computes at (``kernel_head_dim``), which its tiles, K/V steps and shared
#: memory are counted at
#: attention 13: the memory-efficient kernel's head_dim past 128 rounded to its 128-wide blocks; the byte alignment of
#: the mask rows cuDNN reads (``mask_row_align``)
FEATURE_VERSIONS = {"gemm": "7", "attention": "13", "moe": "6", "reduction": "7", "elementwise": "6", "copy": "8"}


def feature_version(op: str) -> str:
    """The feature version of ``op``'s learned models (``FEATURE_VERSIONS``)."""
    return FEATURE_VERSIONS.get(op, BASE_FEATURE_VERSION)


SOURCES = ("kernelcast", "aiconfigurator", "nccl-tests")
#: per-row values beside the features: the roofline floor (reported) and the target's scale (log(latency / scale_us))
TARGET_COLUMNS = ("floor_us", "scale_us")


@functools.cache
def categories(op: str) -> dict[str, tuple[str, ...]]:
    """The one-hot encoded description columns of ``op`` and their fixed category lists."""
    spec = get_op(op)
    out = {}
    for name in spec.categorical:
        if name == "source":
            out[name] = SOURCES
        elif name == "backend":
            out[name] = spec.backends  # the unmeasured ones get no column: no model has seen them
        elif name == "dtype":
            out[name] = spec.dtypes
        else:
            field = spec.fields[name]
            if not isinstance(field, ChoiceField):
                raise ValueError(f"op {op!r}: categorical column {name!r} is not a choice field")
            out[name] = field.choices
    return out


def default_source(backend) -> np.ndarray:
    """Whose methodology a row is predicted under when the frame does not say."""
    backend = np.asarray(backend, dtype=object)
    if backend.size <= SMALL:  # a few rows: no set operations
        outside = np.fromiter((b in OUTSIDE_BACKENDS for b in backend.ravel()), bool, backend.size).reshape(
            backend.shape
        )
    else:
        outside = np.isin(backend, OUTSIDE_BACKENDS)
    return np.where(outside, "aiconfigurator", "kernelcast")


def feature_columns(cols: Mapping[str, object], op: str, learned: bool = True) -> dict[str, np.ndarray]:
    """Numeric features (``feature_names(op)`` order) plus ``floor_us`` (the physical floor) and
    ``scale_us`` (the learned target's denominator), from description columns.

    ``learned=False`` leaves out what only the learned models read, ``scale_us`` included (the analytical
    model's inputs stay).
    """
    spec = get_op(op)
    gpu = gpu_columns(cols["gpu"])
    out = {f"gpu_{c}": gpu[c] for c in GPU_COLUMNS}
    out.update(spec.features(cols, gpu))
    if learned and spec.learned_features is not None:
        floor = out.pop("floor_us")
        out.update(spec.learned_features(cols, gpu, {**out, "floor_us": floor}))
        out["floor_us"] = floor
    if learned:
        out["scale_us"] = (
            spec.scale(out) if spec.scale is not None else latency_scale(out["floor_us"], gpu["boost_clock_hz"])
        )
    return out


@functools.cache
def feature_names(op: str) -> tuple[str, ...]:
    """The numeric features of ``op`` in model order (``floor_us`` and ``scale_us`` are not features)."""
    from kernelcast.features.desc import parse_desc

    example = parse_desc({"op": op, "gpu": "h200_sxm", **get_op(op).example}).to_row()
    cols = {k: np.asarray([v], dtype=object if isinstance(v, (str, type(None))) else None) for k, v in example.items()}
    return tuple(name for name in feature_columns(cols, op) if name not in TARGET_COLUMNS)


def categorical_frame(cols: Mapping[str, object], op: str, n: int) -> dict[str, pd.Categorical]:
    out = {}
    for name, cats in categories(op).items():
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
