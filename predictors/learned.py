"""Learned models: shipped tree ensembles bound to their manifests, coverage, intervals, serving.

A shipped model is ``models/<op>.forest.npz`` (the trees of two XGBoost boosters as flat arrays: the
log-efficiency regressor, target log(latency_us / scale_us), scale = roofline floor + one kernel's fixed time,
and the p10/p90 quantile model of its error) and ``models/<op>.json`` (the manifest: features and their version
(``features.vector.feature_version``), training-data fingerprint, metrics, versions, what it covers, conformal
offsets, the sha256 of the forest file, and ``check``: rows of the training matrix with XGBoost's own margins on
them, which the forest must reproduce). The boosters themselves stay with their MLflow run; serving needs neither
them nor xgboost. Every file is checked against its hash when the model loads: a stale, altered or truncated
file, a manifest that is not JSON or lacks a key, or a non-finite offset is a ``ModelFileError`` naming the file
— never a silent answer.
Serving walks the trees in compiled C (``compiled.py``); where no walker can be built (no C compiler) they are
walked in numpy (``trees.Forest``), the same answers slower.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features.common import key_codes, parse_config
from kernelcast.features.fields import OUTSIDE_BACKENDS, SMALL
from kernelcast.features.ops import get_op
from kernelcast.features.vector import categories, default_source, feature_names, feature_version
from kernelcast.predictors.compiled import CompiledForest, compile_forest
from kernelcast.predictors.mlp import Mlp, blend
from kernelcast.predictors.trees import Forest

MODEL_DIR = Path(__file__).with_name("models")
#: 6: the forest file stores each child as its distance from its parent (5: the quantile trees predict the point
#: model's error, not the target; 4: the forest is the only model file, XGBoost's margins on check rows in the manifest;
#: 3: the boosters shipped too; 2: no hashes; 1: XGBoost categorical columns)
MANIFEST_FORMAT = 6
#: the files of a shipped model besides its manifest, by role (the boosters stay in MLflow: the shipped tree must
#: travel to GPU hosts in a 64 MiB copy, and the GEMM boosters alone were 31 MB)
MODEL_FILES = {"forest": ".forest.npz"}
#: where a backend's own trees are blended with a network (``predictors.mlp``), its file (the manifest's ``mlp`` says
#: which backend, its one-hot column and its weight)
MLP_FILE = ".mlp.npz"
#: every model file by role (``verified``): the required ones and the network
ROLE_FILES = {**MODEL_FILES, "mlp": MLP_FILE}
#: manifest keys serving reads
REQUIRED_KEYS = (
    "format",
    "op",
    "feature_version",
    "features",
    "categories",
    "target",
    "data_fingerprint",
    "n_train",
    "sources",
    "covered",
    "ranges",
    "config_values",
    "conformal",
    "files",
    "check",
)


def route_column(op: str, routes, backend: str) -> int:
    """The forest input that routes ``backend``'s rows: the route columns follow the matrix columns, one per backend
    of a manifest's ``routes`` in its order (own-tree backends whose trees answer only the GPUs they were measured on,
    ``training.xgb.LatencyRegressor``'s ``measured_gpus_only``); 1 sends a row to that backend's own trees, 0 to the
    shared trees, which answer it on any other GPU from the spec they learned off every GPU's rows."""
    return len(_matrix_columns(op)) + list(routes).index(backend)


class ModelFileError(ValueError):
    """A shipped model file that cannot be served as it is: names the file and what is wrong."""


def matrix_columns(op: str) -> list[str]:
    """Model input columns in order: numeric features, then one 0/1 column per category (``dtype=bf16``).

    One-hot rather than XGBoost's native categorical splits: as accurate on our rows (cuBLAS median
    APE within noise, benchmarks/RESULTS.md) and faster to predict, since every split is then a plain threshold.
    """
    return list(_matrix_columns(op))


@functools.cache
def _matrix_columns(op: str) -> tuple[str, ...]:
    return tuple(feature_names(op)) + tuple(f"{name}={cat}" for name, cats in categories(op).items() for cat in cats)


@functools.cache
def _category_index(cats: tuple[str, ...]) -> dict[str, int]:
    return {c: i for i, c in enumerate(cats)}


def feature_matrix(
    features: pd.DataFrame | Mapping[str, Any], op: str, row_major: bool = True, extra: int = 0
) -> np.ndarray:
    """Features -> float32 matrix (``matrix_columns`` order); a category outside the fixed lists sets none
    of its group's columns.

    ``features`` is ``build_features`` output, or a mapping holding the numeric features
    (``feature_columns``) and the description columns (``source`` defaults as in ``build_features``).
    ``row_major=False``: a large batch stays column-major as built (the compiled walker reads either order in place;
    the transpose cost a tenth of a 200,000-row batch). ``extra``: that many 0 columns after them (a forest's route
    columns, ``LearnedModel.matrix``).
    """
    names = feature_names(op)
    width = len(_matrix_columns(op)) + extra
    if not isinstance(features, pd.DataFrame):
        first = features[names[0]]
        if isinstance(first, float) or getattr(first, "shape", None) == (1,):  # one row (predict_latency): dict lookups
            row = _one_row_matrix(features, op, names, width)
            if row is not None:
                return row
    get = (lambda c: features[c].to_numpy()) if isinstance(features, pd.DataFrame) else (lambda c: features[c])
    n = len(np.atleast_1d(get(names[0])))
    if n == 1:  # one row: one write of a list (no array per feature)
        out = np.zeros((1, width), dtype=np.float32)
        out[0, : len(names)] = [_first(get(name)) for name in names]
    elif n <= SMALL:  # a few rows: one stack instead of a write per column
        out = np.zeros((n, width), dtype=np.float32)
        out[:, : len(names)] = np.stack([get(name) for name in names], axis=1)  # every feature: one value per row
    else:  # column by column into a column-major matrix: each write is contiguous
        out = np.zeros((width, n), dtype=np.float32).T
        for j, name in enumerate(names):
            out[:, j] = get(name)
    start = len(names)
    for name, cats in categories(op).items():
        values = default_source(get("backend")) if name == "source" and name not in features else get(name)
        codes = category_codes(values, cats, n)
        if n <= SMALL:
            for i, code in enumerate(codes.tolist()):
                if code >= 0:
                    out[i, start + code] = 1.0
        else:
            known = codes >= 0
            out[np.flatnonzero(known), start + codes[known]] = 1.0
        start += len(cats)
    return np.ascontiguousarray(out) if row_major else out  # row-major, as XGBoost reads fastest


@functools.cache
def _category_slots(op: str) -> tuple[tuple[str, int, dict[str, int]], ...]:
    """Per one-hot group of ``op``: its column, the matrix column of its first category, category -> index."""
    slots, start = [], len(feature_names(op))
    for name, cats in categories(op).items():
        slots.append((name, start, _category_index(cats)))
        start += len(cats)
    return tuple(slots)


def _one_row_matrix(features: Mapping[str, Any], op: str, names: tuple[str, ...], width: int) -> np.ndarray | None:
    """``feature_matrix`` of one row whose features are arrays of one value each, or one description's Python numbers
    (None: neither)."""
    out = np.zeros((1, width), dtype=np.float32)
    try:
        if isinstance(features[names[0]], float):  # features.num.SCALARS' numbers
            out[0, : len(names)] = [features[name] for name in names]
        else:
            values = np.concatenate([features[name] for name in names])
            if values.shape != (len(names),):
                return None
            out[0, : len(names)] = values
    except (ValueError, TypeError):  # some feature of another shape: the general path
        return None
    for name, start, lookup in _category_slots(op):
        if name == "source" and name not in features:
            value = "aiconfigurator" if _one_value(features["backend"]) in OUTSIDE_BACKENDS else "kernelcast"
        else:
            value = _one_value(features[name])
        code = lookup.get(value, -1) if isinstance(value, str) else -1
        if code >= 0:
            out[0, start + code] = 1.0
    return out


def _one_value(values):
    """The first value of a column given as an array, a list, a categorical or one value (``category_codes``'s)."""
    if isinstance(values, str):
        return values
    if isinstance(values, pd.Categorical) or isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        values = np.asarray(values, dtype=object)
    if np.ndim(values) == 0:
        return values.item() if isinstance(values, np.ndarray) else values
    return next(iter(values))


def _first(value):
    """A one-row column's value (an array of one, or the value itself)."""
    return value[0] if getattr(value, "ndim", 0) else value


def category_codes(values, cats: tuple[str, ...], n: int) -> np.ndarray:
    """Index of each value in ``cats``; -1 for a value not in it (or missing)."""
    if isinstance(values, pd.Categorical) or isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        values = np.asarray(values, dtype=object)
    lookup = _category_index(cats)
    if n <= SMALL:  # a few rows: dict lookups beat hashing the column
        if isinstance(values, str) or np.ndim(values) == 0:
            values = [values.item() if isinstance(values, np.ndarray) else values] * n
        return np.fromiter((lookup.get(v, -1) if isinstance(v, str) else -1 for v in values), np.intp, n)
    values = np.broadcast_to(np.asarray(values, dtype=object), (n,))
    inverse, uniq = pd.factorize(values)  # missing values get -1: the trailing -1
    return np.asarray([lookup.get(str(u), -1) for u in uniq] + [-1], dtype=np.intp)[inverse]


def onehot_codes(x: np.ndarray, op: str, name: str) -> np.ndarray:
    """Each row's ``name`` (a one-hot description column) as its index in ``categories(op)[name]`` (-1: none)."""
    values = categories(op)[name]
    first = _matrix_columns(op).index(f"{name}={values[0]}")
    block = x[:, first : first + len(values)]
    return np.where(block.any(axis=1), block.argmax(axis=1), -1)


def source_codes(x: np.ndarray, op: str) -> np.ndarray:
    """Each row's source as its index in ``categories(op)["source"]`` (-1: none), read off the matrix."""
    return onehot_codes(x, op, "source")


def row_offsets(x: np.ndarray, op: str, conformal: Mapping[str, Any]) -> np.ndarray:
    """Each row's conformal offset (Mondrian calibration): its (source, backend) cell's where calibrated
    (``by_backend``, keys ``source/backend``), else its source's, else the global one."""
    sources = categories(op)["source"]
    glob = conformal["offset"]
    if len(x) == 1:  # one row: a lookup, not array passes (``onehot_codes``'s rule read off the row)
        return np.asarray([_one_row_offset(x[0], op, conformal)])
    src = source_codes(x, op)
    out = np.asarray([conformal.get("by_source", {}).get(s, glob) for s in sources] + [glob])[src]
    cells = conformal.get("by_backend") or {}
    if cells:
        backend = onehot_codes(x, op, "backend")
        backends = categories(op)["backend"]
        for key, offset in cells.items():
            s, b = key.split("/", 1)
            if s in sources and b in backends:
                out = np.where((src == sources.index(s)) & (backend == backends.index(b)), offset, out)
    return out


@functools.cache
def _group_slice(op: str, name: str) -> tuple[int, tuple[str, ...]]:
    """Where a one-hot group starts in ``op``'s matrix, and its categories."""
    values = categories(op)[name]
    return _matrix_columns(op).index(f"{name}={values[0]}"), values


def _one_row_offset(row: np.ndarray, op: str, conformal: Mapping[str, Any]) -> float:
    def value(name: str) -> str | None:  # the set column of a one-hot group (a list: no numpy call per group)
        first, values = _group_slice(op, name)
        block = row[first : first + len(values)].tolist()
        return values[block.index(max(block))] if any(block) else None

    source = value("source")
    cells = conformal.get("by_backend") or {}
    if source is not None and cells:
        offset = cells.get(f"{source}/{value('backend')}")
        if offset is not None:
            return offset
    return conformal.get("by_source", {}).get(source, conformal["offset"])


def to_latency(scale_us: np.ndarray, point: np.ndarray, quantiles: np.ndarray, offset):
    """Log-efficiency predictions -> (p50, low, high) in µs. ``quantiles`` are the p10/p90 of the point model's error
    (log target minus point margin), widened by the conformal ``offset``; the interval always contains p50."""
    scale = np.asarray(scale_us, dtype=np.float64)
    p50 = scale * np.exp(point)
    low = np.minimum(p50 * np.exp(quantiles[:, 0] - offset), p50)
    high = np.maximum(p50 * np.exp(quantiles[:, -1] + offset), p50)
    return p50, low, high


def check_manifest(manifest: Any, op: str, path: Path | str = "manifest") -> None:
    """A manifest this code cannot serve is a clear error: keys, format, op, feature version and names, offsets."""
    if not isinstance(manifest, Mapping):
        raise ModelFileError(f"{path}: a model manifest must be a JSON object; got {type(manifest).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in manifest]
    if missing and manifest.get("format") == MANIFEST_FORMAT:
        raise ModelFileError(f"{path}: manifest lacks {', '.join(missing)} — retrain with `kernelcast train --op {op}`")
    problems = []
    if manifest.get("format") != MANIFEST_FORMAT:
        problems.append(f"manifest format {manifest.get('format')!r}, this code reads {MANIFEST_FORMAT}")
    if manifest.get("op") != op:
        problems.append(f"op {manifest.get('op')!r}, expected {op!r}")
    if manifest.get("feature_version") != feature_version(op):
        problems.append(
            f"feature_version {manifest.get('feature_version')!r}, this code builds {feature_version(op)!r}"
        )
    if list(manifest.get("features", [])) != matrix_columns(op):
        have, want = list(manifest.get("features", [])), matrix_columns(op)
        diff = sorted(set(map(str, have)) ^ set(want)) or ["(same names, different order)"]
        problems.append(f"feature names differ from this code's: {', '.join(diff[:6])}")
    if manifest.get("categories") != {k: list(v) for k, v in categories(op).items()}:
        problems.append("categorical columns or their category lists differ from this code's")
    routes = manifest.get("routes", [])
    backends = categories(op).get("backend", ())
    if not isinstance(routes, list) or any(r not in backends for r in routes) or len(set(routes)) != len(routes):
        problems.append(f"routes must be distinct backends of {op!r} ({', '.join(backends)}); got {routes!r}")
    if not problems:
        problems += _offset_problems(manifest["conformal"])
    if problems:
        raise ModelFileError(
            f"{path}: learned model for {op!r} does not match this kernelcast: "
            + "; ".join(problems)
            + f" — retrain with `kernelcast train --op {op}`"
        )


def _offset_problems(conformal: Any) -> list[str]:
    if not isinstance(conformal, Mapping):
        return ["conformal is not a mapping"]
    offsets = [conformal.get("offset")] + [
        o for cells in ("by_source", "by_backend") for o in (conformal.get(cells) or {}).values()
    ]
    bad = [o for o in offsets if not isinstance(o, (int, float)) or isinstance(o, bool) or not math.isfinite(o)]
    return [f"conformal offsets must be finite numbers; got {bad[0]!r}"] if bad else []


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(folder: Path, op: str, role: str, manifest: Mapping[str, Any]) -> Path:
    """The path of one model file, checked against the sha256 its manifest records."""
    path = Path(folder) / f"{op}{ROLE_FILES[role]}"
    want = manifest["files"].get(path.name) if isinstance(manifest["files"], Mapping) else None
    if not path.exists():
        raise ModelFileError(
            f"{path}: missing (the manifest {op}.json lists it) — retrain with `kernelcast train --op {op}`"
        )
    if want is None:
        raise ModelFileError(f"{path}: its manifest {op}.json records no sha256 for it")
    have = file_sha256(path)
    if have != want:
        raise ModelFileError(
            f"{path}: sha256 {have[:12]}… does not match its manifest's {str(want)[:12]}… "
            f"(a stale, altered or truncated file) — retrain with `kernelcast train --op {op}`"
        )
    return path


def config_in_family(configs, seen: Mapping[str, list]) -> np.ndarray:
    """Each row's config (canonical JSON or None) has only key values seen in training (None: no config, in family)."""
    if getattr(configs, "shape", None) == (1,) and not isinstance(configs[0], str):  # one row without a config
        return np.ones(1, dtype=bool)
    configs = np.atleast_1d(np.asarray(configs, dtype=object))
    texts = [c if isinstance(c, str) else "" for c in configs]
    if not any(texts):  # no row has a config: all in family
        return np.ones(len(texts), dtype=bool)
    seen_sets = {k: set(v) for k, v in seen.items()}
    codes, uniq = pd.factorize(np.asarray(texts, dtype=object))
    return np.asarray([_config_seen(text, seen_sets) for text in uniq], dtype=bool)[codes]


def _config_seen(text: str, seen_sets: Mapping[str, set]) -> bool:
    """One config's JSON text has only key values seen in training."""
    cfg = parse_config(text)
    return not cfg or all(v in seen_sets.get(k, ()) for k, v in cfg.items())


@dataclass
class LearnedModel:
    """A loaded learned model: its manifest and its trees (walked in C, or in numpy without a C compiler).

    Implements the predictor contract (``predictors.base.Predictor``) for its op.
    """

    op: str
    manifest: dict
    forest: Forest  # both boosters' trees
    model_dir: Path
    compiled: CompiledForest | None = None  # the same trees walked in C (None: no C compiler; numpy walks them)
    mlp: Mlp | None = None  # the network blended into one backend's rows (the manifest's ``mlp``)
    needs_learned_features = True

    @functools.cached_property
    def _covered(self) -> frozenset:
        return frozenset(self.manifest["covered"])

    @property
    def name(self) -> str:
        return f"learned:{self.op}@{self.manifest['data_fingerprint'][:8]}"

    def assumptions(self, op: str | None = None) -> str:
        return self._assumptions

    @functools.cached_property
    def _assumptions(self) -> str:  # the manifest's, said with every answer: formatted once per model
        m = self.manifest
        nets = "".join(
            f"; {b} rows: their own trees averaged in log with "
            + (
                "a multilayer perceptron"
                if w.get("members", 1) == 1
                else f"the mean of {w['members']} multilayer perceptrons"
            )
            + f" ({w['weight']:.0%} the network's)"
            for b, w in m.get("mlp", {}).items()
        )
        return (
            f"XGBoost on {m['target']}, {m['n_train']:,} training rows from {', '.join(m['sources'])} "
            f"(feature version {m['feature_version']}){nets}; 80% interval: the model's error on held-out shapes, "
            "split-conformal calibrated"
        )

    def covers_row(self, values: Mapping[str, Any]) -> bool:
        """``covers`` of one description's Python values (``Desc.to_row``): plain comparisons, as the arrays'."""
        if f"{values['gpu']}|{values['backend']}|{values['dtype']}" not in self._covered:
            return False
        return all(lo <= float(values[col]) <= hi for col, (lo, hi) in self.manifest["ranges"].items())

    def covers(self, op: str, cols: pd.DataFrame | Mapping[str, Any]) -> np.ndarray:
        """(GPU, backend, dtype) seen in training and every range column inside its trained range."""
        get = (lambda c: cols[c].to_numpy()) if isinstance(cols, pd.DataFrame) else (lambda c: np.asarray(cols[c]))
        gpu, backend, dtype = get("gpu"), get("backend"), get("dtype")
        covered = self._covered
        ranges = self.manifest["ranges"]
        if all(np.shape(cols[c]) == (1,) for c in ("gpu", "backend", "dtype", *ranges)):  # one row: ``covers_row``
            return np.asarray([self.covers_row({c: get(c)[0] for c in ("gpu", "backend", "dtype", *ranges)})])
        if len(gpu) <= SMALL:
            ok = np.fromiter((f"{g}|{b}|{d}" in covered for g, b, d in zip(gpu, backend, dtype)), bool, len(gpu))
        else:
            codes, first = key_codes(gpu, backend, dtype)  # each distinct (gpu, backend, dtype) looked up once
            ok = np.asarray([f"{gpu[i]}|{backend[i]}|{dtype[i]}" in covered for i in first], dtype=bool)[codes]
        return self._covers_columns(ok, get)

    def _covers_columns(self, ok, get) -> np.ndarray:
        for col, (lo, hi) in self.manifest["ranges"].items():
            values = np.asarray(get(col), dtype=np.float64)
            ok = ok & (values >= lo) & (values <= hi)
        return ok

    def predict_columns(self, op: str, cols, features) -> dict[str, np.ndarray]:
        p50, low, high = self.predict({**cols, **features})
        return {
            "latency_us": p50,
            "low_us": low,
            "high_us": high,
            "in_distribution": config_in_family(cols["config"], self.manifest["config_values"]),
        }

    def predict_row(self, values: Mapping[str, Any], features: Mapping[str, float]) -> tuple[float, float, float, bool]:
        """``predict_columns`` of one description (``covers_row``) from its Python values and features
        (``features.num.SCALARS``): (p50_us, low_us, high_us, in_distribution)."""
        p50, low, high = self.predict({**values, **features})
        config = values["config"]
        return float(p50[0]), float(low[0]), float(high[0]), config is None or _config_seen(config, self._seen_sets)

    @functools.cached_property
    def _seen_sets(self) -> dict[str, set]:
        return {k: set(v) for k, v in self.manifest["config_values"].items()}

    @functools.cached_property
    def _routes(self) -> tuple[tuple[int, int], ...]:
        """(route column, its backend's one-hot column) per route column of the forest (``route_column``)."""
        routes = self.manifest.get("routes", ())
        columns = _matrix_columns(self.op)
        return tuple((route_column(self.op, routes, b), columns.index(f"backend={b}")) for b in routes)

    def matrix(self, features: pd.DataFrame | Mapping[str, Any], measured: bool = True) -> np.ndarray:
        """The forest's input: ``feature_matrix`` and the route columns, which send a routed backend's rows to its own
        trees where ``measured`` (the rows' GPU is one that backend was measured on) and to the shared trees else."""
        x = feature_matrix(features, self.op, row_major=self.compiled is None, extra=len(self._routes))
        for route, backend in self._routes if measured else ():
            x[:, route] = x[:, backend]
        return x

    def predict(
        self, features: pd.DataFrame | Mapping[str, Any], measured: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Features (see ``feature_matrix``) -> (p50_us, low_us, high_us) for the calibrated 80% interval;
        ``measured=False`` for rows of GPUs the model never saw (``unseen.UnseenGpuModel``: see ``matrix``)."""
        x = self.matrix(features, measured)
        margins = (self.compiled or self.forest).predict(x)
        point, quantiles = self.blended(x, margins[:, 0]), margins[:, 1:]
        return to_latency(
            np.asarray(features["scale_us"], dtype=np.float64),
            point,
            quantiles,
            row_offsets(x, self.op, self.manifest["conformal"]),
        )

    def blended(self, x: np.ndarray, point: np.ndarray) -> np.ndarray:
        """The forest's point margins with the network blended into its backend's rows (``x``: ``matrix`` rows)."""
        if self.mlp is None:
            return point
        ((_, spec),) = self.manifest["mlp"].items()
        mine = x[:, spec["column"]] == 1
        if mine.any():
            point = point.copy()
            point[mine] = blend(point[mine], self.mlp.predict(x[mine, : self.mlp.n_features]), spec["weight"])
        return point


def read_manifest(op: str, model_dir: Path | None = None) -> dict | None:
    """The manifest of a shipped model (None when none is shipped); unreadable JSON names the file."""
    path = Path(model_dir or MODEL_DIR) / f"{op}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFileError(
            f"{path}: not a valid model manifest ({exc}) — retrain with `kernelcast train --op {op}`"
        ) from None


@functools.cache
def _load(op: str, model_dir: str) -> LearnedModel | None:
    folder = Path(model_dir)
    manifest = read_manifest(op, folder)
    if manifest is None:
        return None
    check_manifest(manifest, op, folder / f"{op}.json")
    path = verified(folder, op, "forest", manifest)
    try:
        forest = Forest.load(path)
    except Exception as exc:  # hash matched but the file is not a forest: say which
        raise ModelFileError(f"{path}: not a readable forest ({exc})") from None
    inputs = len(manifest["features"]) + len(manifest.get("routes", []))
    if forest.n_features != inputs:
        raise ModelFileError(
            f"{path}: reads {forest.n_features} inputs; its manifest lists {len(manifest['features'])} features and "
            f"{len(manifest.get('routes', []))} route columns"
        )
    walker = compile_forest(forest)
    check_forest(walker or forest, manifest["check"], path)
    net = _load_mlp(folder, op, manifest) if manifest.get("mlp") else None
    model = LearnedModel(op, manifest, forest, folder, walker, net)
    if net is not None:
        check_blend(model, manifest["check"], folder / f"{op}{MLP_FILE}")
    return model


def _load_mlp(folder: Path, op: str, manifest: Mapping[str, Any]) -> Mlp:
    spec = manifest["mlp"]
    backends = categories(op).get("backend", ())
    if not isinstance(spec, Mapping) or len(spec) != 1 or any(b not in backends for b in spec):
        raise ModelFileError(f"{folder / f'{op}.json'}: mlp must name one backend of {op!r}; got {spec!r}")
    path = verified(folder, op, "mlp", manifest)
    try:
        net = Mlp.load(path)
    except Exception as exc:  # hash matched but the file is not a network: say which
        raise ModelFileError(f"{path}: not a readable network ({exc})") from None
    if net.n_features != len(manifest["features"]):
        raise ModelFileError(f"{path}: reads {net.n_features} inputs; its manifest lists {len(manifest['features'])}")
    ((_, entry),) = spec.items()
    if len(net.members) != (said := entry.get("members", 1)):
        raise ModelFileError(f"{path}: holds {len(net.members)} networks; its manifest says {said}")
    return net


def check_blend(model: LearnedModel, check: Any, path: Path) -> None:
    """The forest and the network give the trained model's served point margins on the manifest's check rows."""
    try:
        x = np.asarray(check["x"], dtype=np.float32)
        want = np.asarray(check["point"], dtype=np.float64)
    except (TypeError, KeyError, ValueError) as exc:
        raise ModelFileError(f"{path}: the manifest's check rows have no served margins ({exc})") from None
    got = model.blended(x, (model.compiled or model.forest).predict(x)[:, 0])
    worst = float(np.max(np.abs(got - want))) if len(want) == len(got) else math.inf
    if not worst <= CHECK_TOLERANCE:
        raise ModelFileError(
            f"{path}: served margins differ from the trained model's on the manifest's check rows by up to "
            f"{worst:.3g} (allowed {CHECK_TOLERANCE})"
        )


#: how far a forest's margins may sit from XGBoost's on the check rows (float32 sums in another order: ~1e-5)
CHECK_TOLERANCE = 2e-4


def check_forest(walker: Forest | CompiledForest, check: Any, path: Path) -> None:
    """The forest gives XGBoost's margins on the manifest's check rows (its training boosters' own answers)."""
    try:
        x = np.asarray(check["x"], dtype=np.float32)
        want = np.asarray(check["margins"], dtype=np.float64)
        got = walker.predict(x)
    except (TypeError, KeyError, ValueError) as exc:
        raise ModelFileError(f"{path}: the manifest's check rows cannot be read ({exc})") from None
    if got.shape != want.shape or not len(want):
        raise ModelFileError(f"{path}: check margins of shape {want.shape}; the forest gives {got.shape}")
    worst = float(np.max(np.abs(got - want)))
    if not worst <= CHECK_TOLERANCE:
        raise ModelFileError(
            f"{path}: margins differ from XGBoost's on the manifest's check rows by up to {worst:.3g} "
            f"(allowed {CHECK_TOLERANCE})"
        )


def load_model(op: str, model_dir: str | Path | None = None) -> LearnedModel | None:
    """The shipped model for ``op`` (cached), None when none is shipped.

    A manifest or model file that does not match this code raises ``ModelFileError`` (a ``ValueError``).
    """
    get_op(op)
    return _load(op, str(Path(model_dir or MODEL_DIR).resolve()))
