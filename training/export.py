"""Export a fitted LatencyRegressor as shipped files: <op>.forest.npz, <op>.mlp.npz where a backend has a network, and
the <op>.json manifest (with XGBoost's margins on check rows); for an MLflow run, its boosters too (<op>.ubj.gz,
<op>.quantile.ubj.gz)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features.ops import get_op
from kernelcast.features.vector import categories, feature_version
from kernelcast.predictors.learned import (
    MANIFEST_FORMAT,
    MLP_FILE,
    MODEL_DIR,
    MODEL_FILES,
    file_sha256,
    matrix_columns,
    route_column,
)
from kernelcast.predictors.trees import Forest
from kernelcast.training.splits import FROZEN_PERCENT, FROZEN_SALT
from kernelcast.training.xgb import own_column


def coverage_of(frame: pd.DataFrame, op: str) -> dict[str, Any]:
    """What a model trained on ``frame`` covers: (gpu|backend|dtype) keys, GPUs, backends, sources, ranges."""
    keys = (frame["gpu"].astype(str) + "|" + frame["backend"].astype(str) + "|" + frame["dtype"].astype(str)).unique()
    ranges = {c: [float(frame[c].min()), float(frame[c].max())] for c in get_op(op).range_columns}
    return {
        "covered": sorted(keys.tolist()),
        "gpus": sorted(frame["gpu"].astype(str).unique().tolist()),
        "config_values": config_values_seen(frame),
        "backends": sorted(frame["backend"].astype(str).unique().tolist()),
        "sources": sorted(frame["source"].astype(str).unique().tolist()),
        "ranges": ranges,
    }


def config_values_seen(frame: pd.DataFrame) -> dict[str, list]:
    """Every value each config key took in training (a config whose values were all seen is in its family)."""
    seen: dict[str, set] = {}
    for text in frame["config"].dropna().unique():
        for key, value in json.loads(text).items():
            seen.setdefault(key, set()).add(value)
    return {k: sorted(v, key=str) for k, v in sorted(seen.items())}


def build_manifest(
    model, op: str, train_frame: pd.DataFrame, fingerprint: str, metrics: Mapping[str, Any], git_rev: str
) -> dict[str, Any]:
    from importlib.metadata import version

    import xgboost

    return {
        "format": MANIFEST_FORMAT,
        "op": op,
        "feature_version": feature_version(op),
        "features": matrix_columns(op),
        "categories": {k: list(v) for k, v in categories(op).items()},
        "target": "log(latency_us / scale_us)",
        "data_fingerprint": fingerprint,
        "n_train": model.n_train_,
        **coverage_of(train_frame, op),
        "conformal": {
            **model.conformal_,
            "quantiles": list(model.quantiles),
            "coverage_target": model.coverage,
            "n_calibration": model.n_calibration_,
            "calibration_coverage_raw": model.raw_calibration_coverage_,
            "calibration_coverage_calibrated": model.calibrated_calibration_coverage_,
        },
        "params": model.get_params(),
        "metrics": dict(metrics),
        "frozen_split": {"rule": "bucket(shape_hash, salt) < percent", "salt": FROZEN_SALT, "percent": FROZEN_PERCENT},
        "versions": {"xgboost": xgboost.__version__, "kernelcast": version("kernelcast")},
        "git_revision": git_rev,
        "trained_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def check_rows(model) -> dict[str, list]:
    """The model's check rows and both boosters' margins on them (what the forest must give back); with networks, the
    served point margins too (what the forest and the networks must give back together)."""
    x = model.check_x_
    margins = np.column_stack(
        [
            model.tree_margin(x).reshape(len(x), -1),
            np.asarray(model.quantile_booster_.inplace_predict(x)).reshape(len(x), -1),
        ]
    )
    out = {"x": model.forest_input(x).astype(np.float32).tolist(), "margins": margins.astype(np.float64).tolist()}
    if model.mlps_:
        out["point"] = model.point_margin(x).astype(np.float64).tolist()
    return out


def export_model(
    model, manifest: Mapping[str, Any], op: str, out_dir: Path | None = None, boosters: bool = False
) -> list[Path]:
    """Write the forest and the manifest (with the forest's sha256 and the check rows) atomically (temp file +
    os.replace), and with ``boosters`` the XGBoost boosters beside them (gzipped UBJ, for an MLflow run's
    artifacts: serving never reads them); returns the paths. The manifest goes last: until it lands, the old
    manifest's hash rejects a half-replaced model instead of serving it."""
    out_dir = Path(out_dir or MODEL_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    saved = [(".quantile", model.quantile_booster_)]
    for i, (booster, own_boosters) in enumerate(model.members_):  # the first seed's as before, then ".bag1", …
        bag = f".bag{i}" if i else ""
        saved += [(bag, booster), *((f".{backend}{bag}", own) for backend, own in own_boosters.items())]
    for suffix, booster in saved if boosters else ():
        path = out_dir / f"{op}{suffix}.ubj.gz"
        raw = out_dir / f".{op}{suffix}.{os.getpid()}.tmp.ubj"
        booster.save_model(str(raw))
        tmp = raw.with_suffix(".gz")
        tmp.write_bytes(gzip.compress(raw.read_bytes(), compresslevel=9, mtime=0))
        raw.unlink()
        os.replace(tmp, path)
        paths.append(path)
    # own trees gated on their backend's one-hot column, or on its route column (``model.routes``)
    routes = model.routes
    gates = lambda own_boosters: {  # noqa: E731
        (route_column(op, routes, b) if b in routes else own_column(op, b)): booster
        for b, booster in own_boosters.items()
    }
    (shared, own), *bag = model.members_
    forest = Forest.from_boosters(
        shared, model.quantile_booster_, own=gates(own), bag=tuple((b, gates(o)) for b, o in bag)
    )
    paths.append(forest.save(out_dir / f"{op}.forest.npz"))
    suffixes = list(MODEL_FILES.values())
    mlps = model.mlps_
    if len(mlps) > 1:
        raise ValueError(f"one network per model is shipped; {op} has {sorted(mlps)}")
    for net in mlps.values():
        paths.append(net.save(out_dir / f"{op}{MLP_FILE}"))
        suffixes.append(MLP_FILE)
    manifest = {
        **manifest,
        "routes": routes,
        "mlp": {
            b: {"weight": model.mlp_weight(b), "column": own_column(op, b), "members": len(net.members)}
            for b, net in mlps.items()
        },
        "files": {f"{op}{suffix}": file_sha256(out_dir / f"{op}{suffix}") for suffix in suffixes},
        "check": check_rows(model),
    }
    path = out_dir / f"{op}.json"
    tmp = out_dir / f".{op}.{os.getpid()}.tmp.json"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True, default=_json_default) + "\n")
    os.replace(tmp, path)
    return paths + [path]
