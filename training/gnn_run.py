"""`kernelcast train` for an op with a graph model: fit the GNN on the frozen split's train side, compare it with
the run's XGBoost and the memory roofline on the same test rows (overall and per kernel kind), choose per kind which
one serves, log the run to MLflow, register ``kernelcast-<op>-gnn`` and move its champion only on improvement."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.vector import build_features, feature_version
from kernelcast.training import data, evaluate, tracking
from kernelcast.training.export import export_model
from kernelcast.training.gnn import GnnConfig, GnnRegressor, build_manifest, export_gnn

#: the GNN's registered model is the op's with this suffix
REGISTERED_SUFFIX = "-gnn"


def registered_name(op: str) -> str:
    return tracking.experiment_name(op) + REGISTERED_SUFFIX


def compare_by_kind(rows: pd.DataFrame) -> pd.DataFrame:
    """Median / p90 APE and MAPE of gnn, xgb and analytical per kernel kind and overall (``rows``: measured, gnn,
    xgb, analytical, kind)."""
    out = []
    for kind, part in [("all", rows), *sorted(rows.groupby("kind"), key=lambda kv: str(kv[0]))]:
        for model in ("gnn", "xgb", "analytical"):
            out.append({"kind": str(kind), "model": model, **evaluate.metrics(part["measured"], part[model])})
    return pd.DataFrame(out)


def serve_kinds(by_kind: pd.DataFrame) -> list[str]:
    """The kinds whose frozen-split median APE is lower from the GNN than from XGBoost."""
    wide = by_kind[by_kind["kind"] != "all"].pivot(index="kind", columns="model", values="median_ape")
    return sorted(str(k) for k in wide.index[wide["gnn"] < wide["xgb"]])


def _champion_mape(op: str, test_frame: pd.DataFrame, test_features: pd.DataFrame) -> float | None:
    """The current GNN champion's MAPE on the same test rows, read with its run's fold model (it never saw them; a
    run that shipped its fold model has only ``shipped``); None without one or when it cannot serve them."""
    from kernelcast.predictors.gnn import load_gnn
    from kernelcast.predictors.learned import ModelFileError

    with tempfile.TemporaryDirectory() as tmp:
        folder = tracking.champion_files(op, Path(tmp), registered_name(op), artifacts=tracking.SCORED)
        if folder is None:
            return None
        try:
            model = load_gnn(op, folder)
            if model is None:
                return None
            cols = {c: test_frame[c].to_numpy() for c in test_frame.columns}
            feats = {c: test_features[c].to_numpy() for c in test_features.columns}
            p50 = model.predict_columns(op, cols, feats)["latency_us"]
        except (ModelFileError, ValueError):
            return None
    return evaluate.metrics(test_frame["latency_us"], p50)["mape"]


def _log(cfg, shipped, fold, xgb_pair, rows, table, by_kind, metrics, old) -> dict:
    from kernelcast.training import plots, pyfunc
    from kernelcast.training.run import _tables, run_name

    model, manifest, train_frame, fingerprint = shipped
    xgb_model, xgb_manifest = xgb_pair
    title = f"{cfg.op} GNN, frozen split"
    figures = {
        "pred_vs_measured.png": plots.predicted_vs_measured(rows, title),
        "error_cdf.png": plots.error_cdf(rows, title),
        "error_by_gpu.png": plots.error_by_gpu(table, title),
    }
    params = {
        "op": cfg.op,
        "split": "random",
        "model": "gnn",
        "graph_features": ",".join(manifest["graph_features"]),
        "node_features": ",".join(manifest["node_features"]),
        "feature_version": feature_version(cfg.op),
        "data_fingerprint": fingerprint,
        "rows": len(train_frame),
        "gpus": ",".join(sorted(train_frame["gpu"].unique())),
        "serve_kinds": ",".join(manifest["serve_kinds"]),
        **{f"gnn.{k}": v for k, v in manifest["params"].items()},
    }
    tags = {
        "kind": "train-gnn",
        "split": "random",
        "data_fingerprint": fingerprint,
        "feature_version": feature_version(cfg.op),
        "fit": manifest["fit"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        # the registered model serves the whole dispatch
        files = {"shipped": Path(tmp) / "shipped"}
        export_model(xgb_model, xgb_manifest, cfg.op, files["shipped"], boosters=True)
        export_gnn(model, manifest, files["shipped"])
        if fold is not None:  # the fold's GNN, which scored the frozen split: what the next run compares with
            files["fold"] = Path(tmp) / "fold"
            export_gnn(fold[0], fold[1], files["fold"])
        requirements = tuple(
            f"{p}=={v}"
            for p, v in (
                ("torch", manifest["versions"]["torch"].split("+")[0]),
                ("torch-geometric", manifest["versions"]["torch_geometric"]),
            )
        )
        run_id, version = tracking.log_run(
            cfg.op,
            run_name(cfg.op, "train-gnn", "random", train_frame, fingerprint),
            params,
            tags,
            {**metrics, **({"random.champion_before.mape": old} if old is not None else {})},
            figures,
            {**_tables(rows, table), "by_kind.json": by_kind},
            files,
            log_model=lambda _: pyfunc.log_model(
                cfg.op,
                files["shipped"],
                {**xgb_manifest, "metrics": manifest["metrics"], "n_train": manifest["n_train"]},
                registered_name(cfg.op),
                requirements,
            ),
        )
    better = old is None or metrics["random.learned.mape"] < old
    if better or cfg.force_promote:
        tracking.promote(cfg.op, version, registered_name(cfg.op))
    if cfg.force_promote and not better:
        tracking.tag_run(run_id, "promotion", "forced")
    return {
        "run_id": run_id,
        "model_version": version,
        "champion": better or cfg.force_promote,
        "champion_before_mape": old,
    }


def _flat(by_kind: pd.DataFrame) -> dict[str, float]:
    out = {}
    for r in by_kind.itertuples(index=False):
        head = "random" if r.kind == "all" else f"random.kind.{r.kind}"
        for name in ("mape", "median_ape", "p90_ape"):
            out[f"{head}.{r.model}.{name}"] = float(getattr(r, name))
    return out


def train_gnn(cfg, frame, train_idx, test_idx, xgb_rows, xgb_model, xgb_manifest, refit_idx=None) -> dict:
    """Fit on the frozen split's train side, compare, choose kinds; with ``refit_idx`` (``training.run.refit_rows``)
    refit the shipped GNN on those rows by the same recipe, as the XGBoost model is (the run's figures and the kinds
    it serves stay the fold model's; each GNN calibrates its interval on its own early-stopping rows);
    log/register/promote, export; returns the run's summary."""
    from kernelcast.training.run import FIT_REFIT, FIT_TRAIN_SIDE

    gcfg = GnnConfig(**cfg.gnn_params)
    train_frame, test_frame = frame.iloc[train_idx].reset_index(drop=True), frame.iloc[test_idx].reset_index(drop=True)
    train_features, test_features = build_features(train_frame, cfg.op), build_features(test_frame, cfg.op)
    model = GnnRegressor(cfg.op, gcfg).fit(
        train_frame, train_features, train_frame["latency_us"], train_frame["task"], log=_progress_line
    )
    p50 = model.predict(test_frame, test_features)
    rows = xgb_rows.assign(
        xgb=xgb_rows["learned"].to_numpy(),
        learned=p50,
        low=p50 * np.exp(min(model.interval_["q_low"], 0.0)),
        high=p50 * np.exp(max(model.interval_["q_high"], 0.0)),
        gnn=p50,
        kind=test_frame["kind"].to_numpy(),
    )
    table = evaluate.evaluation_table(rows)
    by_kind = compare_by_kind(rows)
    kinds = serve_kinds(by_kind)
    metrics = {
        **evaluate.flat_metrics(table, "random"),
        **_flat(by_kind),
        "gnn.fit_seconds": model.fit_seconds_,
        "gnn.epochs": model.epochs_,
        "gnn.best_epoch": model.best_epoch_,
        "gnn.validation.median_ape": model.validation_["median_ape"],
    }
    summary = {k: v for k, v in metrics.items() if k.count(".") <= 2 or k.startswith("random.kind.")}

    def manifest_of(fitted, fitted_frame, fit):
        fingerprint = data.fingerprint(fitted_frame, cfg.op)
        manifest = build_manifest(fitted, fitted_frame, fingerprint, summary, kinds, tracking.git_revision())
        return fitted, {**manifest, "fit": fit}, fitted_frame, fingerprint

    fold = manifest_of(model, train_frame, FIT_TRAIN_SIDE)
    shipped = fold
    if refit_idx is not None:
        _progress_line("refit on the train side and our held-out shapes\n")
        refit_frame = frame.iloc[refit_idx].reset_index(drop=True)
        refit = GnnRegressor(cfg.op, gcfg).fit(
            refit_frame,
            build_features(refit_frame, cfg.op),
            refit_frame["latency_us"],
            refit_frame["task"],
            log=_progress_line,
        )
        shipped = manifest_of(refit, refit_frame, FIT_REFIT)
    fitted, manifest, _, fingerprint = shipped
    result = {
        "data_fingerprint": fingerprint,
        "n_train": fitted.n_train_,
        "n_train_fold": model.n_train_,
        "fit": manifest["fit"],
        "fit_seconds": fitted.fit_seconds_,
        "epochs": fitted.epochs_,
        "best_epoch": fitted.best_epoch_,
        "validation": fitted.validation_,
        "serve_kinds": kinds,
        "by_kind": by_kind.to_dict("records"),
        "exported": [],
        "champion": None,
    }
    if cfg.log_mlflow:
        old = _champion_mape(cfg.op, test_frame, test_features)
        folded = fold if shipped is not fold else None
        result.update(_log(cfg, shipped, folded, (xgb_model, xgb_manifest), rows, table, by_kind, metrics, old))
    if result["champion"] or not cfg.log_mlflow:
        result["exported"] = [str(p) for p in export_gnn(fitted, manifest, cfg.model_dir)]
    return result


def _progress_line(text: str) -> None:
    print(f"\r  gnn {text}", end="", file=sys.stderr, flush=True)
