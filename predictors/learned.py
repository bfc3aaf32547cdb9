"""Learned models: the model matrix, shipped XGBoost models with their manifests, coverage and intervals.

A shipped model is ``models/<op>.ubj`` (the log-efficiency regressor, target
log(latency_us / scale_us), scale = roofline floor + one kernel's fixed time), ``models/<op>.quantile.ubj`` (its p10/p90 quantile model),
``models/<op>.forest.npz`` (both as numpy arrays, for a few rows) and ``models/<op>.json`` (the
manifest: features and FEATURE_VERSION, training-data fingerprint, metrics, versions, what it
covers, conformal offsets). xgboost is imported only for a batch over NUMPY_ROWS; without it
installed ``load_model`` returns None and dispatch answers analytically.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from kernelcast.features.common import key_codes
from kernelcast.features.vector import CATEGORICAL, FEATURE_VERSION, default_source, feature_names
from kernelcast.predictors.trees import Forest

MODEL_DIR = Path(__file__).with_name("models")
#: description columns whose trained range bounds what a model covers, per op
RANGE_COLUMNS = {"gemm": ("m", "n", "k", "batch"),
                 "attention": ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim"),
                 "moe": ("tokens", "hidden", "ffn", "experts", "top_k"),
                 "collective": ("bytes", "ranks")}
MANIFEST_FORMAT = 2                  # 2: categories one-hot (1: XGBoost categorical columns)
#: batches this large predict on every core; smaller ones on one thread (thread start-up costs more)
PARALLEL_ROWS = 2048
#: batches up to this size walk the trees in numpy (trees.Forest): XGBoost costs ~0.4-1.8 ms per call
#: however few the rows; the walk stays faster up to ~64 rows (32 rows, GEMM: 0.56 vs 2.1 ms)
NUMPY_ROWS = 32


def matrix_columns(op: str) -> list[str]:
    """Model input columns in order: numeric features, then one 0/1 column per category (``dtype=bf16``).

    One-hot rather than XGBoost's native categorical splits: as accurate on our rows (cuBLAS median
    APE 3.98 vs 3.94%) and 38% faster to predict, since every split is then a plain threshold.
    """
    return list(feature_names(op)) + [f"{name}={cat}" for name, cats in CATEGORICAL[op].items() for cat in cats]


def feature_matrix(features: pd.DataFrame | Mapping[str, Any], op: str) -> np.ndarray:
    """Features -> float32 matrix (``matrix_columns`` order); a category outside the fixed lists sets none
    of its group's columns.

    ``features`` is ``build_features`` output, or a mapping holding the numeric features
    (``feature_columns``) and the description columns (``source`` defaults as in ``build_features``).
    """
    get = (lambda c: features[c].to_numpy()) if isinstance(features, pd.DataFrame) else (lambda c: features[c])
    names = feature_names(op)
    n = len(np.atleast_1d(get(names[0])))
    out = np.zeros((n, len(matrix_columns(op))), dtype=np.float32)
    for j, name in enumerate(names):
        out[:, j] = get(name)
    start = len(names)
    for name, cats in CATEGORICAL[op].items():
        values = default_source(get("backend")) if name == "source" and name not in features else get(name)
        codes = category_codes(values, cats, n)
        known = codes >= 0
        out[np.flatnonzero(known), start + codes[known]] = 1.0
        start += len(cats)
    return out


def category_codes(values, cats: tuple[str, ...], n: int) -> np.ndarray:
    """Index of each value in ``cats``; -1 for a value not in it (or missing)."""
    if isinstance(values, pd.Categorical) or isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        values = np.asarray(values, dtype=object)
    lookup = {c: i for i, c in enumerate(cats)}
    values = np.broadcast_to(np.asarray(values, dtype=object), (n,))
    inverse, uniq = pd.factorize(values)                 # missing values get -1: the trailing -1
    return np.asarray([lookup.get(str(u), -1) for u in uniq] + [-1], dtype=np.intp)[inverse]


def source_codes(x: np.ndarray, op: str) -> np.ndarray:
    """Each row's source as its index in ``CATEGORICAL[op]["source"]`` (-1: none), read off the matrix."""
    first = matrix_columns(op).index(f"source={CATEGORICAL[op]['source'][0]}")
    block = x[:, first:first + len(CATEGORICAL[op]["source"])]
    return np.where(block.any(axis=1), block.argmax(axis=1), -1)


def conformal_offset(scores: np.ndarray, coverage: float) -> float:
    """Split-conformal quantile of CQR scores: the ceil((n+1)·coverage)-th smallest (the largest if beyond n)."""
    n = len(scores)
    if n == 0:
        raise ValueError("calibration needs at least one row; got none")
    k = min(n, int(np.ceil((n + 1) * coverage)))
    return float(np.partition(np.asarray(scores, dtype=np.float64), k - 1)[k - 1])


def row_offsets(x: np.ndarray, op: str, conformal: Mapping[str, Any]) -> np.ndarray:
    """Each row's conformal offset: its source's (Mondrian calibration) when calibrated, else the global one."""
    sources = CATEGORICAL[op]["source"]
    table = np.asarray([conformal.get("by_source", {}).get(s, conformal["offset"]) for s in sources] + [conformal["offset"]])
    return table[source_codes(x, op)]                    # -1 picks the trailing global offset


def to_latency(scale_us: np.ndarray, point: np.ndarray, quantiles: np.ndarray, offset):
    """Log-efficiency predictions -> (p50, low, high) in µs; the interval always contains p50."""
    scale = np.asarray(scale_us, dtype=np.float64)
    p50 = scale * np.exp(point)
    low = np.minimum(scale * np.exp(quantiles[:, 0] - offset), p50)
    high = np.maximum(scale * np.exp(quantiles[:, -1] + offset), p50)
    return p50, low, high


def check_manifest(manifest: Mapping[str, Any], op: str) -> None:
    """A manifest this code cannot serve is a clear error: format, op, feature version and names."""
    problems = []
    if manifest.get("format") != MANIFEST_FORMAT:
        problems.append(f"manifest format {manifest.get('format')!r}, this code reads {MANIFEST_FORMAT}")
    if manifest.get("op") != op:
        problems.append(f"op {manifest.get('op')!r}, expected {op!r}")
    if manifest.get("feature_version") != FEATURE_VERSION:
        problems.append(f"feature_version {manifest.get('feature_version')!r}, this code builds {FEATURE_VERSION!r}")
    if list(manifest.get("features", [])) != matrix_columns(op):
        have, want = list(manifest.get("features", [])), matrix_columns(op)
        diff = sorted(set(have) ^ set(want)) or ["(same names, different order)"]
        problems.append(f"feature names differ from this code's: {', '.join(diff[:6])}")
    cats = {k: list(v) for k, v in CATEGORICAL[op].items()}
    if manifest.get("categories") != cats:
        problems.append("categorical columns or their category lists differ from this code's")
    if problems:
        raise ValueError(f"learned model for {op!r} does not match this kernelcast: " + "; ".join(problems)
                         + " — retrain with `kernelcast train --op " + op + "`")


@dataclass
class LearnedModel:
    """A loaded learned model: manifest, the trees as a numpy forest, and (on first need) the XGBoost boosters."""

    op: str
    manifest: dict
    forest: Forest                        # both boosters' trees, for numpy walks of a few rows
    model_dir: Path
    threads: int = 0                      # the nthread both boosters were last set to (0: never)
    _boosters: tuple | None = None        # loaded on the first batch over NUMPY_ROWS (importing xgboost: ~1 s)

    @property
    def booster(self):
        return self._load_boosters()[0]

    @property
    def quantile_booster(self):
        return self._load_boosters()[1]

    def _load_boosters(self) -> tuple:
        if self._boosters is None:
            self._boosters = _read_boosters(self.model_dir, self.op)
        return self._boosters

    @property
    def name(self) -> str:
        return f"learned:{self.op}@{self.manifest['data_fingerprint'][:8]}"

    @property
    def assumptions(self) -> str:
        m = self.manifest
        return (f"XGBoost on {m['target']}, {m['n_train']:,} training rows from {', '.join(m['sources'])} "
                f"(feature version {m['feature_version']}); 80% interval split-conformal calibrated")

    def covers(self, cols: pd.DataFrame | Mapping[str, Any]) -> np.ndarray:
        """In distribution: (GPU, backend, dtype) seen in training, every range column inside its trained range."""
        get = (lambda c: cols[c].to_numpy()) if isinstance(cols, pd.DataFrame) else (lambda c: np.asarray(cols[c]))
        gpu, backend, dtype = get("gpu"), get("backend"), get("dtype")
        codes, first = key_codes(gpu, backend, dtype)          # each distinct (gpu, backend, dtype) looked up once
        covered = set(self.manifest["covered"])
        ok = np.asarray([f"{gpu[i]}|{backend[i]}|{dtype[i]}" in covered for i in first], dtype=bool)[codes]
        for col, (lo, hi) in self.manifest["ranges"].items():
            values = np.asarray(get(col), dtype=np.float64)
            ok = ok & (values >= lo) & (values <= hi)
        return ok

    def predict(self, features: pd.DataFrame | Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Features (see ``feature_matrix``) -> (p50_us, low_us, high_us) for the calibrated 80% interval."""
        x = feature_matrix(features, self.op)
        if len(x) <= NUMPY_ROWS:
            margins = self.forest.predict(x)
            point, quantiles = margins[:, 0], margins[:, 1:]
        else:
            threads = 1 if len(x) < PARALLEL_ROWS else (os.cpu_count() or 1)
            if threads != self.threads:          # set_param drops XGBoost's predictor cache: only on a change
                for booster in (self.booster, self.quantile_booster):
                    booster.set_param({"nthread": threads})
                self.threads = threads
            point = self.booster.inplace_predict(x)
            quantiles = np.asarray(self.quantile_booster.inplace_predict(x)).reshape(len(x), -1)
        return to_latency(np.asarray(features["scale_us"], dtype=np.float64), point, quantiles,
                          row_offsets(x, self.op, self.manifest["conformal"]))


def read_manifest(op: str, model_dir: Path | None = None) -> dict | None:
    path = Path(model_dir or MODEL_DIR) / f"{op}.json"
    return json.loads(path.read_text()) if path.exists() else None


@functools.cache
def _load(op: str, model_dir: str) -> LearnedModel | None:
    manifest = read_manifest(op, Path(model_dir))
    if manifest is None:
        return None
    check_manifest(manifest, op)
    if importlib.util.find_spec("xgboost") is None:
        warnings.warn(f"xgboost is not installed: the shipped {op} model is not loaded and {op} answers are "
                      "analytical (pip install 'kernelcast[train]')", RuntimeWarning, stacklevel=3)
        return None
    folder = Path(model_dir)
    forest_path = folder / f"{op}.forest.npz"
    if forest_path.exists():                             # no xgboost import until a batch needs it
        return LearnedModel(op, manifest, Forest.load(forest_path), folder)
    boosters = _read_boosters(folder, op)                 # a model exported before forests were shipped
    return LearnedModel(op, manifest, Forest.from_boosters(*boosters), folder, _boosters=boosters)


def _read_boosters(folder: Path, op: str) -> tuple:
    import xgboost as xgb

    return tuple(xgb.Booster(model_file=str(folder / f"{op}{suffix}.ubj")) for suffix in ("", ".quantile"))


def load_model(op: str, model_dir: str | Path | None = None) -> LearnedModel | None:
    """The shipped model for ``op`` (cached), None when none is shipped or xgboost is missing.

    A manifest that does not match this code's features raises ``ValueError``.
    """
    return _load(op, str(Path(model_dir or MODEL_DIR).resolve()))
