"""The numpy tree walk (predictors/trees.py) gives XGBoost's margins: shipped models on their manifests' check rows
(XGBoost's own margins, recorded at export), and small models trained here on synthetic data with missing values."""

import numpy as np
import pandas as pd
import pytest

xgb = pytest.importorskip("xgboost")

from kernelcast.features.vector import feature_columns  # noqa: E402
from kernelcast.predictors import trees  # noqa: E402
from kernelcast.predictors.learned import CHECK_TOLERANCE, MODEL_DIR, load_model, read_manifest  # noqa: E402
from kernelcast.predictors.trees import Forest  # noqa: E402
from kernelcast.training.data import load_rows  # noqa: E402


def _xgb_margins(*boosters, x):
    return np.column_stack([np.asarray(b.inplace_predict(x)).reshape(len(x), -1) for b in boosters])


SHIPPED = sorted(p.stem for p in MODEL_DIR.glob("*.json") if "." not in p.stem)


@pytest.mark.parametrize("op", SHIPPED)
def test_shipped_forest_gives_xgboosts_margins_on_its_check_rows(op):
    """Both walks (numpy, and C where a compiler is) of the shipped forest file against the margins its training
    boosters gave on real training rows."""
    check = read_manifest(op)["check"]
    x, want = np.asarray(check["x"], np.float32), np.asarray(check["margins"])
    forest = Forest.load(MODEL_DIR / f"{op}.forest.npz")
    assert len(x) >= 32 and want.shape == (len(x), len(forest.base)) and np.ptp(want[:, 0]) > 0.1
    assert np.abs(forest.predict(x) - want).max() < CHECK_TOLERANCE
    walker = load_model(op).compiled
    if walker is not None:
        assert np.abs(walker.predict(x) - want).max() < CHECK_TOLERANCE


def test_forest_missing_values_and_two_boosters_match_xgboost(tmp_path):
    # synthetic data (a unit test of the walk's semantics, not a measurement)
    rng = np.random.default_rng(0)
    n = 4000
    x = rng.normal(size=(n, 3)).astype(np.float32)
    x[rng.random(n) < 0.2, 0] = np.nan
    y = np.where(np.isnan(x[:, 0]), 3.0, np.sin(np.nan_to_num(x[:, 0]))) + x[:, 1] * x[:, 2]
    dm = xgb.DMatrix(x, label=y)
    point = xgb.train({"max_depth": 6, "tree_method": "hist"}, dm, 30)
    quant = xgb.train(
        {"max_depth": 3, "tree_method": "hist", "objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.9]}, dm, 10
    )
    forest = Forest.load(Forest.from_boosters(point, quant).save(tmp_path / "f.npz"))  # what a shipped file holds
    probe = x[:300].copy()
    probe[:30, 1] = np.nan  # a column never missing in training
    want = _xgb_margins(point, quant, x=probe)
    assert forest.predict(probe).shape == (300, 3)
    assert np.abs(forest.predict(probe) - want).max() < 1e-5


def test_gated_forest_routes_rows_to_their_backends_own_trees(tmp_path):
    """``own``: one forest whose point output is, row by row, the shared booster's margin or, where a one-hot column is
    1, its own booster's (synthetic data: a unit test of the gating, not a measurement)."""
    rng = np.random.default_rng(1)
    n = 3000
    x = rng.normal(size=(n, 4)).astype(np.float32)
    x[:, 2] = rng.random(n) < 0.3  # one-hot "backend=a"
    x[:, 3] = (rng.random(n) < 0.3) & (x[:, 2] == 0)  # one-hot "backend=b"
    y = np.sin(x[:, 0]) + np.where(x[:, 2] == 1, 5 * x[:, 1] ** 2 + 2.0, x[:, 1]) - 3.0 * x[:, 3]
    shared = xgb.train({"max_depth": 4, "tree_method": "hist"}, xgb.DMatrix(x, label=y), 20)
    quant = xgb.train(
        {"max_depth": 2, "objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.9]}, xgb.DMatrix(x, label=y), 5
    )
    own = {
        c: xgb.train({"max_depth": 3, "tree_method": "hist"}, xgb.DMatrix(x[x[:, c] == 1], label=y[x[:, c] == 1]), 15)
        for c in (2, 3)
    }
    forest = Forest.load(Forest.from_boosters(shared, quant, own=own).save(tmp_path / "g.npz"))
    want = _xgb_margins(shared, quant, x=x)
    for c, booster in own.items():
        want[x[:, c] == 1, 0] = booster.inplace_predict(x[x[:, c] == 1])
    assert np.abs(forest.predict(x) - want).max() < 1e-5
    # the shared trees alone would be wrong on the gated rows: the routing is what makes the margins match
    assert np.abs(_xgb_margins(shared, x=x)[:, 0] - want[:, 0])[x[:, 2] == 1].max() > 0.1


def test_forest_rejects_categorical_splits():
    rng = np.random.default_rng(2)
    x = np.column_stack([rng.integers(0, 4, 500), rng.normal(size=500)]).astype(np.float32)
    dm = xgb.DMatrix(x, label=(x[:, 0] == 2) * 1.0, feature_types=["c", "q"], enable_categorical=True)
    booster = xgb.train({"max_depth": 2, "max_cat_to_onehot": 1}, dm, 3)
    with pytest.raises(ValueError, match="categorical splits are not supported"):
        Forest.from_boosters(booster)


def test_forest_rejects_wrong_width():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3)).astype(np.float32)
    booster = xgb.train({"max_depth": 2}, xgb.DMatrix(x, label=x[:, 0]), 3)
    with pytest.raises(ValueError, match=r"x must be \(rows, 3\); got shape \(1, 2\)"):
        Forest.from_boosters(booster).predict(np.zeros((1, 2), np.float32))


def test_learned_one_row_path_equals_batch_path():
    model = load_model("gemm")
    rows = load_rows("gemm", sources=("kernelcast",)).sample(40, random_state=2)
    cols = {c: rows[c].to_numpy() for c in rows}
    feats = {**cols, **feature_columns(cols, "gemm")}
    batch = np.column_stack(model.predict(feats))
    singles = np.vstack(
        [np.column_stack(model.predict({k: v[i : i + 1] for k, v in feats.items()})) for i in range(40)]
    )
    np.testing.assert_allclose(singles, batch, rtol=1e-6)
    assert not pd.isna(singles).any()


def test_numpy_walk_of_a_large_batch_goes_in_chunks_with_the_same_margins(monkeypatch):
    forest = load_model("gemm").forest
    x = np.asarray(read_manifest("gemm")["check"]["x"], np.float32)
    whole = forest.predict(x)
    monkeypatch.setattr(trees, "CHUNK_NODES", len(forest.roots) * 5)  # 5 rows a chunk: 13 chunks
    np.testing.assert_array_equal(forest.predict(x), whole)


def test_a_route_column_after_the_boosters_columns_gates_own_trees(tmp_path):
    """``own`` keyed by a column past the boosters' (a route column, ``predictors.learned.route_column``): the forest
    reads one more input; rows with it 1 take the own trees, rows with it 0 the shared trees even where their backend
    column is 1 (synthetic data: a unit test of the gating)."""
    rng = np.random.default_rng(3)
    n = 3000
    x = rng.normal(size=(n, 3)).astype(np.float32)
    x[:, 2] = rng.random(n) < 0.4  # one-hot "backend=a"
    y = np.where(x[:, 2] == 1, 4 * x[:, 0] ** 2, np.sin(x[:, 1]))
    shared = xgb.train({"max_depth": 4, "tree_method": "hist"}, xgb.DMatrix(x, label=y), 20)
    mine = x[:, 2] == 1
    own = xgb.train({"max_depth": 3, "tree_method": "hist"}, xgb.DMatrix(x[mine], label=y[mine]), 15)
    forest = Forest.load(Forest.from_boosters(shared, own={3: own}).save(tmp_path / "r.npz"))
    assert forest.n_features == 4
    routed = np.column_stack([x, x[:, 2]])  # as served on a measured GPU
    want = _xgb_margins(shared, x=x)[:, 0]
    want[mine] = own.inplace_predict(x[mine])
    assert np.abs(forest.predict(routed)[:, 0] - want).max() < 1e-5
    unrouted = np.column_stack([x, np.zeros(n, np.float32)])  # as served on a GPU the backend was not measured on
    assert np.abs(forest.predict(unrouted)[:, 0] - _xgb_margins(shared, x=x)[:, 0]).max() < 1e-5
    assert np.abs(want - _xgb_margins(shared, x=x)[:, 0])[mine].max() > 0.1  # the two answers differ there
    from kernelcast.predictors import compiled

    walker = compiled.compile_forest(forest)
    assert walker is not None, compiled.library()[1]
    for probe in (routed, unrouted, routed[:1], unrouted[mine][:1]):  # batches and single rows, in C
        np.testing.assert_allclose(walker.predict(probe), forest.predict(probe), rtol=1e-12, atol=1e-12)
