"""A small multilayer perceptron served beside a backend's own trees, in numpy.

Trees split on the config's numbers one axis at a time, so a Triton config no training row ran lands in leaves that
other configs shaped; a network over the same features is smooth in them. On three config-held-out folds of the Triton
GEMM training rows the network alone erred 4.9-5.1% median where the trees erred 5.8-6.0%, and their mean in log space
4.7-4.9% (benchmarks/RESULTS.md §50). ``training.mlp`` fits it; the learned model blends it into its backend's rows.

Its inputs are the forest's feature matrix columns (``predictors.learned.matrix_columns``), each held to the range its
training rows spanned (a network extrapolates past it linearly where trees stay at their last leaf), wide-ranging
positive columns in log, every column standardized, a missing value as 0 with a 0/1 column saying it was missing.
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: a positive column whose largest value is this many times its smallest is read in log
LOG_RANGE = 100.0
#: smallest standard deviation a column is divided by (a constant column stays 0)
MIN_STD = 1e-9


@dataclass(frozen=True)
class InputStats:
    """How raw feature columns become the network's inputs (fitted on the training rows, ``fit_inputs``)."""

    low: np.ndarray  # per feature column: the training rows' least and greatest values, which inputs are held to
    high: np.ndarray
    log_columns: np.ndarray  # bool per feature column: read in log
    mean: np.ndarray  # per feature column, after the log
    std: np.ndarray
    nan_columns: np.ndarray  # int: feature columns that get a missing-value indicator

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Feature-matrix rows (float, NaN for missing) -> the network's float32 inputs."""
        held = np.clip(np.asarray(x, dtype=np.float64), self.low, self.high)  # a NaN stays NaN
        logged = _logged(held, self.log_columns)
        missing = np.isnan(logged)
        z = np.where(missing, 0.0, (logged - self.mean) / self.std)
        return np.concatenate([z, missing[:, self.nan_columns]], axis=1).astype(np.float32)


def _logged(x: np.ndarray, log_columns: np.ndarray) -> np.ndarray:
    """``x`` with its ``log_columns`` in log (their non-positive values, and NaN, left as they are)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(log_columns & (x > 0), np.log(np.where(x > 0, x, 1.0)), x)


def fit_inputs(x: np.ndarray) -> InputStats:
    """The input statistics of training rows ``x`` (one row per description, the forest's feature columns)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: its statistics are NaN, replaced below
        lo, hi = np.nanmin(x, axis=0), np.nanmax(x, axis=0)
        log_columns = (lo > 0) & (hi / np.where(lo > 0, lo, 1.0) > LOG_RANGE)
        logged = _logged(x, log_columns)
        mean, std = np.nanmean(logged, axis=0), np.nanstd(logged, axis=0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    std = np.where(np.isfinite(std) & (std > MIN_STD), std, 1.0)
    nan_columns = np.flatnonzero(np.isnan(x).any(axis=0))
    low, high = np.where(np.isfinite(lo), lo, -np.inf), np.where(np.isfinite(hi), hi, np.inf)
    return InputStats(low, high, log_columns, mean, std, nan_columns)


def blend(trees: np.ndarray, net: np.ndarray, weight: float) -> np.ndarray:
    """A row's margin from its trees' and its network's: their weighted mean in log space."""
    return (1.0 - weight) * trees + weight * net


def silu(z: np.ndarray) -> np.ndarray:
    """z / (1 + exp(-z)), the hidden layers' activation; the exponent held under 700 (no overflow: past it the answer
    is 0 in float64 anyway). numpy's exp runs about twice as fast as its tanh, the other usual form."""
    e = np.exp(-np.maximum(z, -700.0))
    e += 1.0
    return np.divide(z, e, out=e)


@dataclass(frozen=True)
class Mlp:
    """Input statistics and one or more member networks, each its layers' (weight [in, out], bias [out]) pairs with SiLU
    between layers and one output; the answer is the members' mean (networks fitted from other seeds disagree where
    the rows are thin, and their mean errs less than any one: RESULTS.md §51)."""

    inputs: InputStats
    members: tuple[tuple[tuple[np.ndarray, np.ndarray], ...], ...]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Feature-matrix rows -> the network's margin (log(latency / scale)). Computed in float64 and rounded to
        float32: a row's answer is then the same alone and in any batch (BLAS sums a batch in another order than one
        row, ~1e-16 apart, far inside float32's step), as the forest's is."""
        w0, b0, ends = self._first_layers
        first = silu(self.inputs.transform(x).astype(np.float64) @ w0 + b0)  # every member's first layer in one product
        total = np.zeros(len(first))
        for layers, lo, hi in zip(self.members, (0, *ends), ends):
            h = first[:, lo:hi]
            for i, (w, b) in enumerate(layers[1:], start=2):
                h = h @ w + b
                if i < len(layers):
                    h = silu(h)
            total += h[:, 0]
        return (total / len(self.members)).astype(np.float32).astype(np.float64)

    @functools.cached_property
    def _first_layers(self) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
        """The members' first layers side by side: weights [in, sum of widths], biases, and where each member ends."""
        ends = tuple(np.cumsum([layers[0][0].shape[1] for layers in self.members]).tolist())
        return (
            np.hstack([layers[0][0] for layers in self.members]),
            np.concatenate([layers[0][1] for layers in self.members]),
            ends,
        )

    @property
    def n_features(self) -> int:
        return len(self.inputs.mean)

    def save(self, path: Path) -> Path:
        """Write atomically (temp file + os.replace) as one npz."""
        path = Path(path)
        arrays = {
            "low": self.inputs.low,
            "high": self.inputs.high,
            "log_columns": self.inputs.log_columns,
            "mean": self.inputs.mean,
            "std": self.inputs.std,
            "nan_columns": self.inputs.nan_columns,
        }
        for j, layers in enumerate(self.members):  # trained in float32, served in float64: stored in float32, exactly
            for i, (w, b) in enumerate(layers):
                for name, a in ((f"m{j}_w{i}", w), (f"m{j}_b{i}", b)):
                    arrays[name] = a.astype(np.float32)
                    if not np.array_equal(arrays[name], a):
                        raise ValueError(f"{name}: holds values float32 cannot store exactly")
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: Path) -> Mlp:
        with np.load(path, allow_pickle=False) as z:
            inputs = InputStats(
                z["low"],
                z["high"],
                z["log_columns"].astype(bool),
                z["mean"],
                z["std"],
                z["nan_columns"].astype(np.int64),
            )
            depth = {}  # member -> its number of layers, from the array names m{member}_w{layer}
            for name in z.files:
                if name.startswith("m") and "_w" in name:
                    j = int(name[1 : name.index("_w")])
                    depth[j] = depth.get(j, 0) + 1
            members = [
                tuple((z[f"m{j}_w{i}"].astype(np.float64), z[f"m{j}_b{i}"].astype(np.float64)) for i in range(depth[j]))
                for j in range(len(depth))
            ]
        width = len(inputs.mean) + len(inputs.nan_columns)
        if not members:
            raise ValueError(f"{path}: no member network (arrays m0_w0, m0_b0, ...)")
        for j, layers in enumerate(members):
            if len(layers) < 2:
                raise ValueError(f"{path}: member {j} has no hidden layer")
            if layers[0][0].shape[0] != width or layers[-1][0].shape[1] != 1:
                raise ValueError(f"{path}: member {j}'s layers do not take {width} inputs to one output")
            chained = all(w.shape[1] == w_next.shape[0] for (w, _), (w_next, _) in zip(layers, layers[1:]))
            if not chained or any(b.shape != (w.shape[1],) for w, b in layers):
                shapes = [(w.shape, b.shape) for w, b in layers]
                raise ValueError(f"{path}: member {j}'s layer shapes do not chain: {shapes}")
        return cls(inputs, tuple(members))
