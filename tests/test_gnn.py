"""The fused-kernel GNN: a tiny real fit on real rows, save/load round trip, dispatch naming the GNN, fallbacks and
their reasons, and manifests that do not match this code refused with a clear error."""

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch_geometric")

from kernelcast.features.desc import op_fields  # noqa: E402
from kernelcast.features.vector import build_features  # noqa: E402
from kernelcast.predictors import gnn as served  # noqa: E402
from kernelcast.predictors.dispatch import predict_latency, predict_many  # noqa: E402
from kernelcast.predictors.learned import ModelFileError  # noqa: E402
from kernelcast.training.data import load_rows  # noqa: E402
from kernelcast.training.gnn import GnnConfig, GnnRegressor, build_manifest, export_gnn  # noqa: E402

TINY = GnnConfig(width=32, layers=2, max_epochs=3, batch_size=64, validation_percent=25)


@pytest.fixture(scope="module")
def rows():
    frame = load_rows("fused", sources=("kernelcast",), report=None)  # no outside source has fused kernels
    return frame.sample(400, random_state=0).reset_index(drop=True)


@pytest.fixture(scope="module")
def fitted(rows):
    feats = build_features(rows, "fused")
    return GnnRegressor("fused", TINY).fit(rows, feats, rows["latency_us"], rows["task"]), feats


@pytest.fixture()
def shipped(fitted, rows, tmp_path):
    model, _ = fitted
    manifest = build_manifest(
        model, rows, "0123456789abcdef", {}, ["pointwise", "reduction", "persistent_reduction"], "test"
    )
    export_gnn(model, manifest, tmp_path)
    return tmp_path


def test_a_tiny_fit_predicts_positive_finite_latencies(fitted, rows):
    model, feats = fitted
    p = model.predict(rows, feats)
    assert p.shape == (len(rows),) and np.isfinite(p).all() and (p > 0).all()
    assert model.epochs_ == 3 and model.ranges_["nodes"][0] >= 1
    assert model.interval_["q_low"] <= model.interval_["q_high"]


def test_saved_and_loaded_gnn_answers_as_the_fitted_one(fitted, rows, shipped):
    model, feats = fitted
    loaded = served.load_gnn("fused", shipped)
    cols = {c: rows[c].to_numpy() for c in rows.columns}
    got = loaded.predict_columns("fused", cols, {c: feats[c].to_numpy() for c in feats})
    assert isinstance(loaded.net, served.NumpySage)  # serving runs the numpy copy of the torch network
    np.testing.assert_allclose(got["latency_us"], model.predict(rows, feats), rtol=1e-4)
    assert sum(len(served.kernel_graph(c)[0]) for c in rows["code"]) > served.DENSE_NODES  # the batch: reduceat
    for i in range(5):  # one kernel alone: its neighbours averaged by the dense adjacency product
        one = loaded.predict_columns(
            "fused", {c: v[i : i + 1] for c, v in cols.items()}, {c: feats[c].to_numpy()[i : i + 1] for c in feats}
        )
        np.testing.assert_allclose(one["latency_us"], got["latency_us"][i : i + 1], rtol=1e-5)
    assert (got["low_us"] <= got["latency_us"]).all() and (got["latency_us"] <= got["high_us"]).all()


def test_dispatch_names_the_gnn_and_falls_back_without_code(rows, shipped):
    descs = rows[[c for c in op_fields("fused") if c in rows]]
    out = predict_many(descs.head(20), "auto", str(shipped))
    assert out["model"].str.startswith("gnn:fused@01234567").all()
    no_code = predict_many(descs.head(5).drop(columns=["code"]), "auto", str(shipped))
    assert not no_code["model"].str.startswith("gnn:").any()


def test_a_manifest_for_other_features_is_a_clear_error(shipped):
    path = shipped / "fused.gnn.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "feature_version": "0", "node_features": ["x"]}))
    served._load.cache_clear()
    with pytest.raises(ModelFileError, match=r"feature_version '0'.*node features .*retrain with `kernelcast train"):
        served.load_gnn("fused", shipped)


def test_altered_weights_are_refused(shipped, rows):
    (shipped / "fused.gnn.pt").write_bytes(b"not a model")
    served._load.cache_clear()
    model = served.load_gnn("fused", shipped)
    with pytest.raises(ModelFileError, match="sha256 does not match"):
        model.net  # noqa: B018 — weights are read on first use


@pytest.fixture(scope="module")
def one_kernel(rows):
    model = served.load_gnn("fused")
    if model is None:
        pytest.skip("no GNN shipped")
    row = rows[rows["kind"].isin(model.manifest["serve_kinds"])].iloc[0]
    return model, {k: row[k] for k in op_fields("fused") if k in row and row[k] is not None}


def test_predict_latency_answers_from_the_shipped_gnn(one_kernel):
    model, desc = one_kernel
    p = predict_latency(desc)
    assert p.model == model.name and p.in_distribution and p.low_us <= p.latency_us <= p.high_us


def test_a_kernel_source_takes_the_one_description_path(one_kernel):
    """A description with its source is validated one value at a time, as the column path would (the column path
    took ~1 ms of a fused call's ~2 when ``code`` had no one-value check); a source that is not a string still gets
    the column path's error naming the field."""
    from kernelcast.features.desc import parse_desc
    from kernelcast.features.validate import validate_columns, validate_one

    _, desc = one_kernel
    values = {k: (v.item() if hasattr(v, "item") else v) for k, v in desc.items() if k != "op"}
    one = validate_one("fused", values)
    assert one is not None and isinstance(one["code"], str)
    cells = {k: np.asarray([v], dtype=object) for k, v in values.items()}
    assert one == {k: v[0] for k, v in validate_columns("fused", cells, 1).items()}
    assert validate_one("fused", {**values, "code": 5}) is None
    with pytest.raises(ValueError, match=r"kernel_desc\['code'\] must be the kernel's Triton source"):
        parse_desc({**desc, "code": 5})


def test_without_code_xgboost_answers_and_says_why(one_kernel):
    _, desc = one_kernel
    p = predict_latency({k: v for k, v in desc.items() if k != "code"})
    assert p.model.startswith("learned:fused@") and "no `code` in the description" in p.assumptions


def test_a_graph_larger_than_any_trained_is_out_of_distribution(one_kernel):
    model, desc = one_kernel
    hi = model.manifest["ranges"]["nodes"][1]
    code = desc["code"]
    body_end = code.index("\n\n\ndef get_args") if "\n\n\ndef get_args" in code else len(code)
    store = next(line for line in code[:body_end].splitlines() if line.strip().startswith("tl.store("))
    indent = store[: len(store) - len(store.lstrip())]
    extra = "".join(
        f"\n{indent}tmp9{i:04d} = tmp9{i - 1:04d} + 1.0" if i else f"\n{indent}tmp90000 = 1.0" for i in range(hi + 1)
    )
    grown = code.replace(store, store + extra, 1)
    p = predict_latency({**desc, "code": grown})
    assert p.model == model.name and not p.in_distribution
    assert "outside the GNN's training graphs" in p.assumptions and "graph nodes" in p.assumptions


def test_predictions_do_not_import_torch_geometric(one_kernel):
    """A GEMM imports neither torch nor torch_geometric; a fused kernel answered by the GNN reads its weights with
    torch and runs them in numpy, without torch_geometric."""
    model, desc = one_kernel
    code = (
        "import json, sys, kernelcast; kernelcast.predict_latency({'op': 'gemm', 'gpu': 'h200', 'm': 64, 'n': 64, "
        "'k': 64, 'dtype': 'bf16', 'backend': 'cublas'}); assert 'torch_geometric' not in sys.modules; "
        "assert 'torch' not in sys.modules; p = kernelcast.predict_latency(json.loads(sys.stdin.read())); "
        f"assert p.model == {model.name!r}, p.model; assert 'torch_geometric' not in sys.modules, 'imported'"
    )
    plain = {k: (v.item() if hasattr(v, "item") else v) for k, v in desc.items()}
    subprocess.run([sys.executable, "-c", code], input=json.dumps(plain), text=True, check=True)


def test_each_kind_is_served_by_the_model_with_the_lower_frozen_split_median():
    import pandas as pd

    from kernelcast.training.gnn_run import compare_by_kind, serve_kinds

    y = np.ones(6)
    rows = pd.DataFrame(
        {
            "measured": y,
            "gnn": [1.05, 1.05, 1.05, 1.3, 1.3, 1.3],
            "xgb": [1.1, 1.1, 1.1, 1.1, 1.1, 1.1],
            "analytical": 2 * y,
            "kind": ["pointwise"] * 3 + ["reduction"] * 3,
        }
    )
    by_kind = compare_by_kind(rows)
    assert serve_kinds(by_kind) == ["pointwise"]
    got = by_kind.set_index(["kind", "model"])["median_ape"]
    assert got["reduction", "gnn"] == pytest.approx(0.3) and got["all", "analytical"] == pytest.approx(1.0)


def test_a_graph_feature_outside_training_is_out_of_distribution_with_its_name(one_kernel):
    model, desc = one_kernel
    lo, hi = model.manifest["feature_ranges"]["bytes_per_element"]
    elements = desc["xnumel"] * desc.get("rnumel", 1)
    p = predict_latency({**desc, "read_bytes": int(2 * hi * elements)})
    assert p.model == model.name and not p.in_distribution
    assert "bytes_per_element=" in p.assumptions and "trained on" in p.assumptions


def test_train_refits_the_shipped_gnn_and_compares_champions_with_the_fold_model(tmp_path, monkeypatch):
    """`kernelcast train --op fused` on a small real card: the shipped GNN is refitted on the train side and our
    held-out shapes (more rows than the fold's), the run logs the fold's GNN beside it, and the next run compares
    with that fold model — the MAPE it reads is the one the first run scored, not the refit's (which saw the rows)."""
    pytest.importorskip("mlflow")
    import pandas as pd

    from kernelcast.training import run, tracking
    from kernelcast.training.data import DATASETS

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    name = "fused/kernelcast_h200_sxm_20261201_train.parquet"
    frame = pd.read_parquet(DATASETS / name)
    tasks = frame["task"].drop_duplicates().sample(250, random_state=1)
    (tmp_path / "fused").mkdir()
    frame[frame["task"].isin(tasks)].to_parquet(tmp_path / name)
    (tmp_path / "files.toml").write_text(f'[[file]]\npath = "{name}"\nrole = "train"\n')
    cfg = run.RunConfig(
        "fused",
        sources=("kernelcast",),
        datasets=tmp_path,
        params={"n_estimators": 40, "quantile_estimators": 20, "max_depth": 4},
        gnn_params={"width": 32, "layers": 2, "max_epochs": 3, "batch_size": 64, "validation_percent": 25},
        model_dir=tmp_path / "models",
    )
    first = run.train(cfg)["gnn"]
    assert first["fit"] == run.FIT_REFIT and first["n_train"] > first["n_train_fold"]
    shipped = json.loads((tmp_path / "models" / "fused.gnn.json").read_text())
    assert shipped["fit"] == run.FIT_REFIT and shipped["n_train"] == first["n_train"]
    client = tracking.setup()
    assert {"shipped", "fold"} <= {a.path for a in client.list_artifacts(first["run_id"])}
    scored = client.get_run(first["run_id"]).data.metrics["random.learned.mape"]
    second = run.train(cfg)["gnn"]
    assert second["champion_before_mape"] == pytest.approx(scored, rel=1e-4)
