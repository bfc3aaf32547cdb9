"""Training and evaluation runs: rows -> features -> folds -> LatencyRegressor -> tables, MLflow, shipped model."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.desc import op_fields
from kernelcast.features.ops import get_op
from kernelcast.features.vector import build_features, feature_version
from kernelcast.predictors.analytical import predict_frame
from kernelcast.predictors.learned import MODEL_DIR
from kernelcast.predictors.unseen import summary_path
from kernelcast.training import data, evaluate, plots, tracking
from kernelcast.training.export import build_manifest, export_model
from kernelcast.training.gnn import GNN_OPS
from kernelcast.training.splits import FROZEN_PERCENT, FROZEN_SALT, Split, make_splits
from kernelcast.training.xgb import LatencyRegressor, skipped_backends


@dataclass(frozen=True)
class RunConfig:
    """What one train/evaluate run uses."""

    op: str
    sources: tuple[str, ...] = data.SOURCES  # row sources: our datasets and/or the aiconfigurator import
    dtype: str | None = None  # keep only this dtype (e.g. the bf16 GEMM LOGO benchmark)
    backend: str | None = None  # keep only this backend
    max_train_rows: int = 200_000  # outside rows per fold, drawn per (gpu, backend, source); ours all kept
    max_test_rows: int = 150_000  # per fold, evaluation rows (a seeded sample when more)
    params: dict = field(default_factory=dict)  # LatencyRegressor overrides
    balance_sources: bool = True  # each source the same total weight in each group of trees (source_weights)
    datasets: Path | None = None  # default <repo>/datasets
    outside: Path | None = None  # default <datasets>/outside
    log_mlflow: bool = True  # log the run (and register the model when training)
    model_dir: Path | None = None  # where a new champion is exported (default predictors/models)
    force_promote: bool = False  # move `champion` even without a lower MAPE (a serving-speed change)
    refit: bool = True  # train: ship a model refitted on refit_rows once the fold's model has scored the frozen split
    export_unseen: bool = False  # a logo evaluation writes <op>.unseen.json beside the shipped model
    gnn: bool = True  # train: ops with a graph model (training.gnn.GNN_OPS) also fit, compare and ship the GNN
    gnn_params: dict = field(default_factory=dict)  # GnnConfig overrides


def load(cfg: RunConfig, roles=("train",)) -> pd.DataFrame:
    frame = data.load_rows(cfg.op, cfg.sources, cfg.datasets, cfg.outside, roles)
    for column, value in (("dtype", cfg.dtype), ("backend", cfg.backend)):
        if value is not None:
            frame = frame[frame[column] == value].reset_index(drop=True)
    if frame.empty:
        raise ValueError(f"no {cfg.op} rows with dtype={cfg.dtype!r} backend={cfg.backend!r} from {cfg.sources}")
    return frame


def _size(frame: pd.DataFrame, op: str, split: str) -> np.ndarray | None:
    """The size measure extrapolation holds out the top of (the op's ``size_feature``); only that split needs it."""
    if split != "extrapolation":
        return None
    name = get_op(op).size_feature
    values = frame[name] if name in frame else build_features(frame, op)[name]
    return values.to_numpy(dtype=np.float64)


def _sample(mask: np.ndarray, limit: int, seed: int) -> np.ndarray:
    idx = np.flatnonzero(mask)
    return idx if len(idx) <= limit else np.sort(np.random.default_rng(seed).choice(idx, limit, replace=False))


#: no source's rows weigh more than this many times another's in the same group. MoE's shared trees hold 60 eager
#: rows beside the import's 200,000: balanced outright each would weigh ~3,300× an imported row (a shape-held-out
#: fold: 8.0% median on them before the groups, 13.6% uncapped, 10.8% at 4×, 12.4% at 6×: 16 rows). GEMM's (1.8×)
#: and attention's (3.8×) shared rows stay under it
MAX_SOURCE_WEIGHT_RATIO = 4.0


def source_weights(sources: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """Per-row weights giving every source the same total within each group of rows fitted together (mean 1 in each
    group), up to ``MAX_SOURCE_WEIGHT_RATIO``: our scarce rows count as much as the import, and rows added to one
    group's trees leave the weights of the others' rows as they were."""
    sources = sources.astype(str)
    groups = np.zeros(len(sources), dtype=int) if groups is None else groups
    out = np.empty(len(sources))
    for group in np.unique(groups):
        mine = groups == group
        _, inverse, counts = np.unique(sources[mine], return_inverse=True, return_counts=True)
        per_row = np.minimum(1.0 / counts, MAX_SOURCE_WEIGHT_RATIO / counts.max())
        weights = per_row[inverse]
        out[mine] = weights / weights.mean()
    return out


def fit_groups(backends: np.ndarray, params: dict) -> np.ndarray:
    """Which trees fit each row: a backend the shared trees skip (``xgb.skipped_backends``) is fitted alone; every
    other row shares the shared trees. The group's name: the backend, or "" for the shared rows."""
    backends = backends.astype(str)
    alone = skipped_backends(params.get("own_trees"), params.get("shared_skips_own", False))
    return np.where(np.isin(backends, alone), backends, "")


def fit_model(cfg: RunConfig, frame: pd.DataFrame, rows: np.ndarray) -> tuple[LatencyRegressor, np.ndarray]:
    """The op's recipe fitted on the frame's ``rows`` (a mask; outside rows subsampled): the model, its row index."""
    train = data.subsample(frame[rows].assign(_i=np.flatnonzero(rows)), cfg.max_train_rows)["_i"].to_numpy()
    latency = frame["latency_us"].to_numpy()
    params = {**get_op(cfg.op).train_params, **cfg.params}
    backends, sources = frame["backend"].to_numpy()[train], frame["source"].to_numpy()[train]
    weight = source_weights(sources, fit_groups(backends, params)) if cfg.balance_sources else None
    configs = frame["config"].to_numpy(dtype=object)[train] if "config" in frame else None
    model = LatencyRegressor(cfg.op, **params).fit(
        build_features(frame.iloc[train], cfg.op),
        latency[train],
        data.shape_hash(frame.iloc[train], cfg.op, config=False),
        weight,
        configs,
    )
    return model, train


def refit_rows(frame: pd.DataFrame, split: Split, hashes: np.ndarray) -> np.ndarray:
    """The rows the shipped model is refitted on once the frozen split has scored the fold's model: the train side and
    our own rows of the held-out shapes, except shapes an outside row also holds (those stay unseen on every GPU, as
    ``benchmarks/vs_aiconfigurator_heldout.py`` asks of the aiconfigurator tables' held-out shapes)."""
    own = frame["source"].eq(data.OWN_SOURCE).to_numpy()
    return split.train | (own & ~np.isin(hashes, hashes[~own]))


def fit_fold(
    cfg: RunConfig, frame: pd.DataFrame, split: Split
) -> tuple[LatencyRegressor, pd.DataFrame, np.ndarray, pd.DataFrame]:
    """Train on the fold's train side (subsampled), predict its test side.

    Returns the model, the test rows (measured, learned, interval, analytical), the train index, the test features.
    """
    model, train = fit_model(cfg, frame, split.train)
    latency = frame["latency_us"].to_numpy()
    test = _sample(split.test, cfg.max_test_rows, seed=1)
    f_test = build_features(frame.iloc[test], cfg.op)
    p50, low, high = model.predict_interval(f_test)
    _, raw_low, raw_high = model.predict_interval(f_test, calibrated=False)
    ana = predict_frame(frame.iloc[test][[c for c in op_fields(cfg.op) if c in frame]], cfg.op)
    rows = (
        frame.iloc[test][["op", "gpu", "dtype", "backend", "source"]]
        .reset_index(drop=True)
        .assign(
            measured=latency[test],
            learned=p50,
            low=low,
            high=high,
            raw_low=raw_low,
            raw_high=raw_high,
            analytical=ana["latency_us"].to_numpy(),
            analytical_low=ana["low_us"].to_numpy(),
            analytical_high=ana["high_us"].to_numpy(),
            fold=split.fold,
            size=_size_of(f_test, cfg.op),
        )
    )
    return model, rows, train, f_test


def _size_of(features: pd.DataFrame, op: str) -> np.ndarray:
    """The op's size measure of each row (what the error-vs-size plot reads); NaN where the op's features lack it."""
    name = get_op(op).size_feature
    return features[name].to_numpy(dtype=np.float64) if name in features else np.full(len(features), np.nan)


def coverage_summary(rows: pd.DataFrame) -> dict[str, float]:
    """Held-out coverage of the 80% interval before (raw quantiles) and after conformal calibration."""
    y = rows["measured"]
    return {
        "coverage_raw": float(((y >= rows["raw_low"]) & (y <= rows["raw_high"])).mean()),
        "coverage_calibrated": float(((y >= rows["low"]) & (y <= rows["high"])).mean()),
    }


def _progress(items, desc: str):
    from tqdm import tqdm

    return tqdm(items, desc=desc, file=sys.stderr, leave=False)


def _params(cfg: RunConfig, frame: pd.DataFrame, fingerprint: str, split: str) -> dict:
    model = LatencyRegressor(cfg.op, **{**get_op(cfg.op).train_params, **cfg.params})
    return {
        "op": cfg.op,
        "split": split,
        "features": ",".join(build_features(frame.head(1), cfg.op).columns),
        "feature_version": feature_version(cfg.op),
        "data_fingerprint": fingerprint,
        "rows": len(frame),
        "gpus": ",".join(sorted(frame["gpu"].unique())),
        "sources": ",".join(sorted(frame["source"].unique())),
        "backends": ",".join(sorted(frame["backend"].unique())),
        "dtype_filter": cfg.dtype,
        "backend_filter": cfg.backend,
        "max_train_rows": cfg.max_train_rows,
        "frozen_split": f"bucket(shape_hash,{FROZEN_SALT:#x})<{FROZEN_PERCENT}",
        **{f"xgb.{k}": v for k, v in model.get_params().items()},
    }


def _figures(op: str, rows: pd.DataFrame, table: pd.DataFrame, title: str, importance: pd.Series | None) -> dict:
    figs = {
        "error_by_gpu.png": plots.error_by_gpu(table, title),
        "pred_vs_measured.png": plots.predicted_vs_measured(rows, title),
        "error_cdf.png": plots.error_cdf(rows, title),
    }
    if rows["size"].notna().all():
        figs["error_vs_size.png"] = plots.error_vs_size(rows, get_op(op).size_feature, title)
    if importance is not None:
        figs["feature_importance.png"] = plots.feature_importance(importance, title)
    return figs


def _tables(rows: pd.DataFrame, table: pd.DataFrame) -> dict:
    """The evaluation table, and one line per GPU × backend in percent (the run's Artifacts tab shows it)."""
    by = evaluate.evaluation_table(rows.assign(gpu_backend=rows["gpu"] + " / " + rows["backend"]), ("gpu_backend",))
    wide = evaluate.side_by_side(by, "gpu_backend").reset_index().rename(columns={"group": "gpu / backend"})
    pct = [c for c in wide.columns if c.endswith(("_mape", "_ape", "_coverage"))]
    wide[pct] = (100 * wide[pct]).round(2)
    return {
        "evaluation_table.json": table,
        "by_gpu_backend_pct.json": wide.rename(columns={c: f"{c}_pct" for c in pct}),
    }


def run_name(op: str, kind: str, split: str, frame: pd.DataFrame, fingerprint: str) -> str:
    """What a run is, readable in MLflow's run lists and compare views: op, stage, split, row sources, data."""
    return f"{op} {kind} {split} · {'+'.join(sorted(frame['source'].unique()))} · data {fingerprint[:8]}"


def evaluate_split(cfg: RunConfig, split: str) -> dict:
    """Train and test every fold of ``split``; tables learned beside analytical; logged to MLflow."""
    start = time.time()
    frame = load(cfg, ("train", "test") if split == "independent" else ("train",))
    hashes = data.shape_hash(frame, cfg.op)
    folds = make_splits(split, frame, hashes, _size(frame, cfg.op, split))
    if not folds:
        raise ValueError(
            f"split {split!r} has no folds for op {cfg.op!r} (lomo needs rows tagged with a 'model', config rows with "
            "a Triton config)"
        )
    parts, metrics = [], {}
    for fold in _progress(folds, f"{cfg.op} {split}"):
        _, rows, _, _ = fit_fold(cfg, frame, fold)
        parts.append(rows)
        table = evaluate.evaluation_table(rows)
        metrics.update(evaluate.flat_metrics(table, f"{split}.{fold.fold}"))
        metrics.update({f"{split}.{fold.fold}.{k}": v for k, v in coverage_summary(rows).items()})
    rows = pd.concat(parts, ignore_index=True)
    by_fold = evaluate.evaluation_table(rows, groups=("fold",))
    table = evaluate.evaluation_table(rows)
    fingerprint = data.fingerprint(frame, cfg.op)
    result = {
        "op": cfg.op,
        "split": split,
        "rows": len(frame),
        "folds": [f.fold for f in folds],
        "data_fingerprint": fingerprint,
        "coverage": coverage_summary(rows),
        "seconds": round(time.time() - start, 1),
        "by_fold": by_fold.to_dict("records"),
        "table": table.to_dict("records"),
    }
    if split == "independent" and len(held := heldout_gpu_rows(cfg.op, frame[folds[0].test], cfg.model_dir)):
        # test rows of a GPU the shipped model never saw for their backend and dtype, one of an architecture it did:
        # what its answer moved there is worth
        result["unseen_gpu"] = heldout_gpu_summary(cfg.op, held, fingerprint, sorted(held["dtype"].unique()))
        result["unseen_gpu"]["backends"] = sorted(str(b) for b in held["backend"].unique())
    elif split == "logo" and len(folds) > 2:
        result["unseen_gpu"] = unseen_gpu_summary(cfg.op, rows, fingerprint, sorted(frame["dtype"].unique()))
        result["unseen_gpu"]["backends"] = sorted(str(b) for b in frame["backend"].unique())
    if cfg.export_unseen and "unseen_gpu" in result:
        written = export_unseen(result["unseen_gpu"], cfg.op, cfg.model_dir).resolve()
        # inside the checkout: the path from its root (a result file names no machine's folders)
        inside = written.is_relative_to(data.REPO)
        result["unseen_gpu_file"] = str(written.relative_to(data.REPO) if inside else written)
    if cfg.log_mlflow:
        run_id, _ = tracking.log_run(
            cfg.op,
            run_name(cfg.op, "evaluate", split, frame, fingerprint),
            _params(cfg, frame, fingerprint, split),
            {
                "kind": "evaluate",
                "split": split,
                "data_fingerprint": fingerprint,
                "feature_version": feature_version(cfg.op),
            },
            metrics,
            _figures(cfg.op, rows, table, f"{cfg.op} {split}", None),
            {**_tables(rows, table), "by_fold.json": by_fold},
        )
        result["run_id"] = run_id
    return result


#: the 80% interval served for unseen GPUs: these quantiles of log(measured / learned) over held-out GPUs
UNSEEN_QUANTILES = (0.1, 0.9)


def unseen_gpu_summary(op: str, rows: pd.DataFrame, fingerprint: str, dtypes: list[str]) -> dict:
    """What a learned answer for a GPU outside training is worth, from leave-one-GPU-out rows: per held-out GPU the
    learned and analytical MAPE and the coverage of an interval made from the OTHER held-out GPUs' residuals; pooled,
    the residual quantiles the served interval uses."""
    r = np.log(rows["measured"].to_numpy() / rows["learned"].to_numpy())
    folds = rows["fold"].to_numpy()
    lo_q, hi_q = UNSEEN_QUANTILES
    out = []
    for g in sorted(set(folds)):
        mine = folds == g
        q_low, q_high = np.quantile(r[~mine], [lo_q, hi_q])
        out.append(_gpu_fold(g, rows[mine], float(np.mean((r[mine] >= q_low) & (r[mine] <= q_high)))))
    q_low, q_high = np.quantile(r, [lo_q, hi_q])
    return {
        "op": op,
        "split": "logo",
        "dtypes": [str(d) for d in dtypes],
        "folds": out,
        "pooled": _pooled(out, float(q_low), float(q_high)),
        "data_fingerprint": fingerprint,
    }


def _gpu_fold(gpu, rows: pd.DataFrame, coverage: float) -> dict:
    """One held-out GPU's rows summarized: its learned and analytical MAPE and the coverage its interval had."""
    return {
        "gpu": str(gpu),
        "n": len(rows),
        "learned_mape": float(np.mean(np.abs(rows["learned"] / rows["measured"] - 1))),
        "analytical_mape": float(np.mean(np.abs(rows["analytical"] / rows["measured"] - 1))),
        "coverage": coverage,
    }


def _pooled(folds: list[dict], q_low: float, q_high: float) -> dict:
    """The held-out GPUs together: their mean MAPEs and coverage, and the residual quantiles of the served interval."""
    return {
        "learned_mape": float(np.mean([f["learned_mape"] for f in folds])),
        "analytical_mape": float(np.mean([f["analytical_mape"] for f in folds])),
        "q_low": q_low,
        "q_high": q_high,
        "coverage": float(np.mean([f["coverage"] for f in folds])),
    }


def heldout_gpu_rows(op: str, held: pd.DataFrame, model_dir: Path | None) -> pd.DataFrame:
    """Measured rows of GPUs the shipped model never trained on, with what serving answers them
    (``UnseenGpuModel.transfer``: the measured GPU's learned answer moved to theirs), the analytical answer and a
    shape hash."""
    from kernelcast.features.validate import validate_frame
    from kernelcast.features.vector import feature_columns
    from kernelcast.predictors.learned import load_model
    from kernelcast.predictors.unseen import UnseenGpuModel

    empty = {"split": "heldout-gpu", "dtypes": [], "folds": [], "pooled": {}}
    served = UnseenGpuModel(load_model(op, model_dir), empty)
    rows = zip(held["gpu"].astype(str), held["backend"].astype(str), held["dtype"].astype(str))
    held = held[np.fromiter((served.movable(*r) for r in rows), dtype=bool, count=len(held))]
    if held.empty:
        return pd.DataFrame()
    descs = held[[c for c in op_fields(op) if c in held]].assign(op=op).reset_index(drop=True)
    _, cols = validate_frame(descs)[0][op]
    return (
        held[["gpu", "dtype", "backend"]]
        .reset_index(drop=True)
        .assign(
            measured=held["latency_us"].to_numpy(dtype=np.float64),
            learned=served.transfer(op, cols, feature_columns(cols, op, learned=True)),
            analytical=predict_frame(descs, op)["latency_us"].to_numpy(),
            shape_hash=data.shape_hash(held, op),
        )
    )


def heldout_gpu_summary(op: str, rows: pd.DataFrame, fingerprint: str, dtypes: list[str]) -> dict:
    """What ``unseen_gpu_summary`` says, from the independent test rows of GPUs the model was not trained on
    (``heldout_gpu_rows``; a family measured on one GPU has no leave-one-GPU-out): per such GPU its learned and
    analytical MAPE and the coverage of an interval cross-fitted over two halves of its rows by shape
    (``_halves_interval``); pooled, the residual quantiles of all rows; and a backend with enough rows its own interval
    (one pooled over an op's backends held flash's rows 93% and Triton attention's 58% on the H100)."""
    folds = [_gpu_fold(gpu, mine, _halves_interval(mine)["coverage"]) for gpu, mine in rows.groupby("gpu")]
    pooled = _halves_interval(rows)
    return {
        "op": op,
        "split": "heldout-gpu",
        "dtypes": [str(d) for d in dtypes],
        "folds": folds,
        "pooled": _pooled(folds, pooled["q_low"], pooled["q_high"]),
        "data_fingerprint": fingerprint,
        "backends_interval": {
            str(b): _halves_interval(mine) for b, mine in rows.groupby("backend") if len(mine) >= MIN_INTERVAL_ROWS
        },
    }


#: rows a backend needs for an interval of its own in a held-out-GPU summary
MIN_INTERVAL_ROWS = 200


def _halves_interval(rows: pd.DataFrame) -> dict:
    """The 80% interval's log-residual quantiles over ``rows``, and its coverage when each half (by shape) is
    calibrated on the other half."""
    r = np.log(rows["measured"].to_numpy() / rows["learned"].to_numpy())
    half = (rows["shape_hash"].to_numpy() % 2).astype(bool)
    lo_q, hi_q = UNSEEN_QUANTILES
    hits = 0
    for mine in (half, ~half):
        q_low, q_high = np.quantile(r[~mine], [lo_q, hi_q])
        hits += int(((r[mine] >= q_low) & (r[mine] <= q_high)).sum())
    q_low, q_high = np.quantile(r, [lo_q, hi_q])
    return {"n": len(rows), "q_low": float(q_low), "q_high": float(q_high), "coverage": hits / len(rows)}


def export_unseen(summary: dict, op: str, model_dir: Path | None) -> Path:
    """Write ``<op>.unseen.json`` beside the shipped model, atomically; a held-out-GPU summary goes into a shipped
    leave-one-GPU-out one as its ``transfer`` part (and a leave-one-GPU-out one keeps the shipped ``transfer``)."""
    path = summary_path(op, Path(model_dir or MODEL_DIR))
    shipped = json.loads(path.read_text()) if path.exists() else None
    if shipped is not None and shipped.get("split") == "logo" and summary["split"] == "heldout-gpu":
        summary = {**shipped, "transfer": summary}
    elif shipped is not None and summary["split"] == "logo" and "transfer" in shipped:
        summary = {**summary, "transfer": shipped["transfer"]}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def champion_mape(op: str, rows: pd.DataFrame, features: pd.DataFrame) -> float | None:
    """The current champion's MAPE on the same frozen-split test rows, read with its run's fold model (what it scored
    with, never having seen these rows; a run that shipped its fold model has only ``shipped``); None without a usable
    champion."""
    from kernelcast.predictors.learned import load_model

    with tempfile.TemporaryDirectory() as tmp:
        folder = tracking.champion_files(op, Path(tmp), artifacts=tracking.SCORED)
        try:
            model = load_model(op, folder) if folder is not None else None
        except ValueError:  # features changed since: the champion cannot score these rows
            return None
        if model is None:
            return None
        p50, _, _ = model.predict(features)
    return evaluate.metrics(rows["measured"], p50)["mape"]


def _log_and_promote(cfg: RunConfig, shipped: tuple, fold: tuple | None, rows, test_features, table, metrics) -> dict:
    """Log the run with its shipped model (and the fold model that scored the frozen split, where the shipped one was
    refitted); move ``champion`` when the fold model beats the champion's on the same test rows."""
    from kernelcast.training import pyfunc  # mlflow: only when logging

    model, manifest, train_frame, fingerprint = shipped
    old = champion_mape(cfg.op, rows, test_features)
    with tempfile.TemporaryDirectory() as tmp:
        files = {"shipped": Path(tmp) / "shipped"}
        export_model(model, manifest, cfg.op, files["shipped"], boosters=True)
        if fold is not None:
            files["fold"] = Path(tmp) / "fold"
            export_model(fold[0], fold[1], cfg.op, files["fold"])
        run_id, version = tracking.log_run(
            cfg.op,
            run_name(cfg.op, "train", "random", train_frame, fingerprint),
            _params(cfg, train_frame, fingerprint, "random"),
            {
                "kind": "train",
                "split": "random",
                "data_fingerprint": fingerprint,
                "feature_version": feature_version(cfg.op),
                "fit": manifest["fit"],
            },
            {**metrics, **({"random.champion_before.mape": old} if old is not None else {})},
            _figures(cfg.op, rows, table, f"{cfg.op} frozen split", model.feature_importance()),
            _tables(rows, table),
            files,
            log_model=lambda name: pyfunc.log_model(cfg.op, files["shipped"], manifest, name),
        )
    better = old is None or metrics["random.learned.mape"] < old
    promoted = better or cfg.force_promote
    if promoted:
        tracking.promote(cfg.op, version)
    if promoted and not better:
        tracking.tag_run(run_id, "promotion", "forced")
    return {"run_id": run_id, "model_version": version, "champion": promoted, "champion_before_mape": old}


#: the manifest's ``fit``: which rows the shipped model was fitted on (its ``metrics`` are always the fold model's)
FIT_TRAIN_SIDE = "the frozen split's train side"
FIT_REFIT = "refit: the train side and our own rows of the held-out shapes (training.run.refit_rows)"


def train(cfg: RunConfig) -> dict:
    """Fit on the frozen split's train side and score on its test side; with ``cfg.refit`` refit the shipped model on
    ``refit_rows``; log, register; export a new champion."""
    start = time.time()
    frame = load(cfg)
    hashes = data.shape_hash(frame, cfg.op)
    [split] = make_splits("random", frame, hashes, None)
    model, rows, train_idx, test_features = fit_fold(cfg, frame, split)
    table = evaluate.evaluation_table(rows)
    metrics = {
        **evaluate.flat_metrics(table, "random"),
        **{f"random.{k}": v for k, v in coverage_summary(rows).items()},
    }
    summary = {k: v for k, v in metrics.items() if k.count(".") <= 2}

    covered_errors = evaluate.covered_errors(rows)  # the fold model's, as every figure of the run

    def manifest_of(fitted, idx: np.ndarray, fit: str) -> tuple:
        fitted_frame = frame.iloc[idx]
        fingerprint = data.fingerprint(fitted_frame, cfg.op)
        manifest = build_manifest(fitted, cfg.op, fitted_frame, fingerprint, summary, tracking.git_revision())
        manifest["covered_errors"] = covered_errors
        manifest["fit"] = fit
        return fitted, manifest, fitted_frame, fingerprint

    fold = manifest_of(model, train_idx, FIT_TRAIN_SIDE)
    refit = refit_rows(frame, split, hashes) if cfg.refit else None  # the trees' and the GNN's shipped rows
    shipped = manifest_of(*fit_model(cfg, frame, refit), FIT_REFIT) if refit is not None else fold
    result = {
        "op": cfg.op,
        "rows": len(frame),
        "n_train": shipped[0].n_train_,
        "n_train_fold": model.n_train_,
        "data_fingerprint": shipped[3],
        "coverage": coverage_summary(rows),
        "conformal_offset": shipped[0].conformal_offset_,
        "table": table.to_dict("records"),
        "exported": [],
        "champion": None,
    }
    if cfg.log_mlflow:
        result.update(
            _log_and_promote(cfg, shipped, fold if shipped is not fold else None, rows, test_features, table, metrics)
        )
    if result["champion"] or not cfg.log_mlflow:
        result["exported"] = [str(p) for p in export_model(shipped[0], shipped[1], cfg.op, cfg.model_dir)]
    if cfg.gnn and cfg.op in GNN_OPS:
        from kernelcast.training.gnn_run import train_gnn

        test_idx = _sample(split.test, cfg.max_test_rows, seed=1)  # the rows fit_fold scored, in its order
        # the GNN is fitted on the frozen split's train side and compared with the fold's XGBoost answers on its
        # test side, then refitted on the same rows as the XGBoost model; its registered model bundles the shipped
        # XGBoost model (the whole dispatch)
        refit_idx = np.flatnonzero(refit) if refit is not None else None
        result["gnn"] = train_gnn(cfg, frame, train_idx, test_idx, rows, shipped[0], shipped[1], refit_idx)
    result["seconds"] = round(time.time() - start, 1)
    return result


def config_dict(cfg: RunConfig) -> dict:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
