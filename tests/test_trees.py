"""The numpy tree walk (predictors/trees.py) gives XGBoost's margins: shipped models on real rows,
and small models trained here on synthetic data with missing values."""

import numpy as np
import pandas as pd
import pytest

xgb = pytest.importorskip("xgboost")

from kernelcast.features.vector import feature_columns  # noqa: E402
from kernelcast.predictors.learned import MODEL_DIR, NUMPY_ROWS, feature_matrix, load_model  # noqa: E402
from kernelcast.predictors.trees import Forest  # noqa: E402
from kernelcast.training.data import load_rows  # noqa: E402


def _xgb_margins(*boosters, x):
    return np.column_stack([np.asarray(b.inplace_predict(x)).reshape(len(x), -1) for b in boosters])


@pytest.mark.parametrize("op", ["gemm", "attention", "moe", "collective"])
def test_forest_equals_xgboost_on_shipped_models_and_real_rows(op):
    model = load_model(op)
    rows = load_rows(op, sources=("kernelcast",))
    rows = rows.sample(min(400, len(rows)), random_state=0)
    cols = {c: rows[c].to_numpy() for c in rows}
    x = feature_matrix({**cols, **feature_columns(cols, op)}, op)
    want = _xgb_margins(model.booster, model.quantile_booster, x=x)
    assert np.abs(model.forest.predict(x) - want).max() < 1e-4
    one = model.predict({k: v[:1] for k, v in {**cols, **feature_columns(cols, op)}.items()})  # the numpy path
    assert NUMPY_ROWS >= 1 and np.isfinite(one[0]).all()


@pytest.mark.parametrize("op", ["gemm", "attention", "moe", "collective"])
def test_shipped_forest_file_is_the_shipped_boosters(op, tmp_path):
    model = load_model(op)
    built = Forest.from_boosters(model.booster, model.quantile_booster)
    shipped = Forest.load(MODEL_DIR / f"{op}.forest.npz")
    again = Forest.load(built.save(tmp_path / "f.npz"))
    for forest in (shipped, again):
        for name in ("feature", "threshold", "default_right", "children", "leaf_value", "roots", "combine", "base"):
            np.testing.assert_array_equal(getattr(forest, name), getattr(built, name), err_msg=name)
        assert (forest.n_features, forest.depth) == (built.n_features, built.depth)


def test_forest_missing_values_and_two_boosters_match_xgboost():
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
    forest = Forest.from_boosters(point, quant)
    probe = x[:300].copy()
    probe[:30, 1] = np.nan  # a column never missing in training
    want = _xgb_margins(point, quant, x=probe)
    assert forest.predict(probe).shape == (300, 3)
    assert np.abs(forest.predict(probe) - want).max() < 1e-5


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
    batch = np.column_stack(model.predict(feats))  # XGBoost (40 > NUMPY_ROWS rows)
    singles = np.vstack(
        [np.column_stack(model.predict({k: v[i : i + 1] for k, v in feats.items()})) for i in range(40)]
    )
    assert len(rows) > NUMPY_ROWS
    np.testing.assert_allclose(singles, batch, rtol=1e-4)
    assert not pd.isna(singles).any()
