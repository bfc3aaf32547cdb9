"""Evaluation splits: frozen random-by-shape, extrapolation (largest sizes), leave-one-GPU-out, leave-one-model-out,
held-out Triton configs, and the independent test set (the card's ``test`` files: other seeds and distributions, never
trained on)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kernelcast.features.common import triton_configs

SPLITS = ("random", "extrapolation", "logo", "lomo", "config", "independent")
#: the frozen evaluation split: a shape is held out when bucket(shape_hash, FROZEN_SALT) < FROZEN_PERCENT.
#: It never changes (the champion alias only moves on it), so neither may these two numbers.
FROZEN_SALT = 0x6B63_6576_616C_7631  # "kcevalv1"
FROZEN_PERCENT = 20
#: config: Triton configs hashed into this many folds with this salt (fixed, so every run holds out the same configs)
CONFIG_FOLDS = 5
CONFIG_SALT = 0x6B63_6366_6F6C_6431  # "kccfold1"
#: salt of the calibration slice drawn inside the training rows (by shape, and by Triton config)
CALIBRATION_SALT = 0x6B63_6361_6C69_6231  # "kccalib1"
#: extrapolation: per GPU, rows above this quantile of the size measure are held out
EXTRAPOLATION_QUANTILE = 0.9


@dataclass(frozen=True)
class Split:
    """One train/test partition (boolean masks over the frame's rows)."""

    name: str
    fold: str
    train: np.ndarray
    test: np.ndarray


def bucket(hashes: np.ndarray, salt: int) -> np.ndarray:
    """0..99 from a uint64 hash and a salt (splitmix64 finalizer: well mixed, deterministic)."""
    z = np.asarray(hashes, dtype=np.uint64) ^ np.uint64(salt)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(100)).astype(np.int64)


def frozen_test(hashes: np.ndarray) -> np.ndarray:
    return bucket(hashes, FROZEN_SALT) < FROZEN_PERCENT


def random_split(hashes: np.ndarray) -> list[Split]:
    """Random by shape, frozen: the same shape (every GPU and backend of it) is on one side only.

    Not scikit-learn's GroupShuffleSplit: it permutes the groups present, so new rows move old shapes across the
    split (benchmarks/bench_libraries.py: adding 1% new shapes to 20,000 moved 6,461 of them; the hash bucket
    moves none), and the champion is only comparable on a split that never moves."""
    test = frozen_test(hashes)
    return [Split("random", "frozen", ~test, test)]


def extrapolation_split(size: np.ndarray, gpus: np.ndarray) -> list[Split]:
    """Per GPU, the largest sizes (above the EXTRAPOLATION_QUANTILE) are held out."""
    size = np.asarray(size, dtype=np.float64)
    threshold = pd.Series(size).groupby(np.asarray(gpus)).transform(lambda s: s.quantile(EXTRAPOLATION_QUANTILE))
    test = size > threshold.to_numpy()
    return [Split("extrapolation", f"largest{round((1 - EXTRAPOLATION_QUANTILE) * 100)}pct", ~test, test)]


def logo_splits(gpus: np.ndarray) -> list[Split]:
    """Leave one GPU out: each GPU predicted from a model that never saw it (its spec is in the features).

    scikit-learn's LeaveOneGroupOut gives the same folds but index arrays, not masks: on the 2.9 M aiconfigurator
    GEMM rows it took 1.9 s against 0.6 s for these comparisons (benchmarks/bench_libraries.py)."""
    gpus = np.asarray(gpus)
    return [Split("logo", str(g), gpus != g, gpus == g) for g in sorted(set(gpus))]


def lomo_splits(models: pd.Series | None) -> list[Split]:
    """Leave one model out over rows tagged with a real model's name; untagged rows always train."""
    if models is None or models.notna().sum() == 0:
        return []
    values = models.to_numpy(dtype=object)
    tagged = models.notna().to_numpy()
    return [Split("lomo", str(m), values != m, tagged & (values == m)) for m in sorted(models.dropna().unique())]


def config_hashes(backends: np.ndarray, configs: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(has, hash): whether each row runs a Triton config (``triton_configs``), and a uint64 hash of its text."""
    configs = triton_configs({"backend": backends, "config": configs})
    has = np.asarray([isinstance(c, str) and c != "" for c in configs], dtype=bool)
    return has, pd.util.hash_array(np.where(has, configs, "").astype(str).astype(object))


def config_splits(backends: np.ndarray, configs: np.ndarray) -> list[Split]:
    """Held-out Triton configs: the configs the rows' backend runs (``triton_configs``) hashed into ``CONFIG_FOLDS``
    folds; a fold tests every row of its configs and trains on the rest. Rows without such a config (library
    backends: cuBLAS, flash, cuDNN, torch) are never tested and train in every fold; no folds without configs."""
    has, hashes = config_hashes(backends, configs)
    if not has.any():
        return []
    fold = np.where(has, bucket(hashes, CONFIG_SALT) * CONFIG_FOLDS // 100, -1)
    return [Split("config", f"fold{k}", fold != k, fold == k) for k in range(CONFIG_FOLDS) if (fold == k).any()]


def calibration_slice(
    shape_hashes: np.ndarray, backends: np.ndarray, configs: np.ndarray | None, percent: int
) -> tuple[np.ndarray, np.ndarray]:
    """(slice, probe): the training rows an interval is calibrated on, and the rows the probe point model is fitted
    on, which share neither a shape nor a Triton config with the slice. ``shape_hashes`` hash the description without
    its config; ``percent`` of shapes are drawn, and of configs. A row without a Triton config is in the slice when its
    shape is drawn; one with a config when its shape and its config both are — fresh to the probe on both counts, as
    a Triton test set's rows are to the served model (configs drawn by shape alone: the Triton GEMM interval covered
    70% of its test rows). The probe trains on rows whose shape and config are both undrawn."""
    shape = bucket(np.asarray(shape_hashes, dtype=np.uint64), CALIBRATION_SALT) < percent
    has, hashes = config_hashes(backends, configs)
    config = has & (bucket(hashes, CALIBRATION_SALT) < percent)
    return shape & (config | ~has), ~shape & ~config


def independent_split(roles: np.ndarray) -> list[Split]:
    """Train on every ``train`` row, test on the independent test set (none when the card lists no test files)."""
    test = roles == "test"
    return [Split("independent", "test_files", roles == "train", test)] if test.any() else []


def make_splits(name: str, frame: pd.DataFrame, hashes: np.ndarray, size: np.ndarray) -> list[Split]:
    """The folds of one split kind for the rows of ``frame``."""
    if name == "random":
        return random_split(hashes)
    if name == "extrapolation":
        return extrapolation_split(size, frame["gpu"].to_numpy())
    if name == "logo":
        return logo_splits(frame["gpu"].to_numpy())
    if name == "lomo":
        return lomo_splits(frame["model"] if "model" in frame else None)
    if name == "config":
        configs = frame["config"].to_numpy(dtype=object) if "config" in frame else np.full(len(frame), None)
        return config_splits(frame["backend"].to_numpy(dtype=object), configs)
    if name == "independent":
        return independent_split(frame["role"].to_numpy(dtype=object))
    raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {name!r}")
