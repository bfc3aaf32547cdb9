"""The network blended into a backend's own trees: trained with torch, served in numpy, shipped with the forest.
Real rows: H200 Triton and cuBLAS GEMM measurements."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("xgboost")
torch = pytest.importorskip("torch")

from kernelcast.features.vector import build_features  # noqa: E402
from kernelcast.predictors import learned  # noqa: E402
from kernelcast.predictors.mlp import Mlp, blend, fit_inputs  # noqa: E402
from kernelcast.training.export import build_manifest, export_model  # noqa: E402
from kernelcast.training.mlp import fit_mlp  # noqa: E402
from kernelcast.training.xgb import LatencyRegressor, own_column  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "datasets/gemm"
SMALL = {"n_estimators": 30, "quantile_estimators": 20, "max_depth": 5}
NET = {"hidden": (24, 12), "epochs": 4, "batch": 64}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    parts = []
    for name, n in (("20261201_wide3", 900), ("20261201_cublas2", 400)):
        rows = pd.read_parquet(DATA / f"kernelcast_h200_sxm_{name}.parquet")
        parts.append(rows[(rows["status"] == "ok") & rows["repeat_of"].isna()].iloc[:n])
    out = pd.concat(parts, ignore_index=True)
    assert set(out["backend"]) == {"triton", "cublas"}
    return out


def test_inputs_log_wide_positive_columns_and_flag_missing_values():
    x = np.array([[1.0, -3.0, np.nan], [1000.0, 2.0, 5.0], [10.0, 1.0, 7.0]])
    stats = fit_inputs(x)
    assert stats.log_columns.tolist() == [True, False, False]  # 1..1000 is wide; a negative column is not logged
    assert stats.nan_columns.tolist() == [2]
    z = stats.transform(x)
    assert z.shape == (3, 4) and z.dtype == np.float32
    np.testing.assert_allclose(z[:, :3].mean(axis=0)[:2], 0.0, atol=1e-6)  # standardized on the rows it was fitted on
    assert z[:, 3].tolist() == [1.0, 0.0, 0.0] and z[0, 2] == 0.0  # a missing value: 0 and its flag
    # past the training rows' range an input is held at its edge, as a tree stays at its last leaf
    edge = stats.transform(np.array([[1e6, 9.0, 1.0]]))
    np.testing.assert_array_equal(edge, stats.transform(np.array([[1000.0, 2.0, 5.0]])))


def test_numpy_forward_is_torch_s(frame):
    """The served forward (numpy, SiLU, weights stored [in, out]) gives what the trained torch layers give."""
    feats = build_features(frame, "gemm")
    x = learned.feature_matrix(feats, "gemm")
    y = np.log(frame["latency_us"].to_numpy() / feats["scale_us"].to_numpy())
    net = fit_mlp(x, y, params={**NET, "members": 2})
    assert len(net.members) == 2
    outs = []
    for member in net.members:
        layers = []
        for i, (w, b) in enumerate(member):
            lin = torch.nn.Linear(*w.shape)
            lin.weight.data = torch.from_numpy(w.T.astype(np.float32))
            lin.bias.data = torch.from_numpy(b.astype(np.float32))
            layers += [lin] + ([torch.nn.SiLU()] if i < len(member) - 1 else [])
        with torch.no_grad():
            outs.append(torch.nn.Sequential(*layers)(torch.from_numpy(net.inputs.transform(x)))[:, 0].numpy())
    assert np.median(np.abs(outs[0] - outs[1])) > 1e-3  # two seeds, two networks
    np.testing.assert_allclose(net.predict(x), np.mean(outs, axis=0), rtol=1e-5, atol=1e-5)  # served: their mean
    one = fit_mlp(x, y, params=NET)
    np.testing.assert_array_equal(one.predict(x), Mlp(net.inputs, net.members[:1]).predict(x))  # member 0: seed 0
    alone = np.asarray([net.predict(x[i : i + 1])[0] for i in range(200)])
    np.testing.assert_array_equal(alone, net.predict(x)[:200])  # one row alone is its answer in a batch, bit for bit
    assert np.median(np.abs(net.predict(x) - y)) < np.median(np.abs(y - np.median(y)))  # it learned something
    with pytest.raises(ValueError, match="at least one batch of 64 rows; got 10"):
        fit_mlp(x[:10], y[:10], params=NET)
    with pytest.raises(ValueError, match="members must be an integer >= 1; got 0"):
        fit_mlp(x, y, params={**NET, "members": 0})


def test_a_network_is_blended_into_its_backend_s_rows_and_ships_with_the_forest(frame, tmp_path):
    feats = build_features(frame, "gemm")
    y = frame["latency_us"].to_numpy()
    own = {
        "triton": {
            "max_depth": 4,
            "n_estimators": 30,
            "learning_rate": 0.1,
            "mlp": {**NET, "weight": 0.4, "members": 2},
        }
    }
    reg = LatencyRegressor("gemm", **SMALL, own_trees=own, shared_skips_own=True).fit(feats, y)
    x = learned.feature_matrix(feats, "gemm")
    triton = (frame["backend"] == "triton").to_numpy()
    trees, served = reg.tree_margin(x), reg.point_margin(x)
    np.testing.assert_array_equal(served[~triton], trees[~triton])  # cuBLAS rows: the trees alone
    np.testing.assert_allclose(served[triton], blend(trees[triton], reg.mlps_["triton"].predict(x[triton]), 0.4))
    assert np.abs(served - trees)[triton].min() > 0

    manifest = build_manifest(reg, "gemm", frame, "0" * 16, {}, "test")
    paths = export_model(reg, manifest, "gemm", tmp_path)
    assert tmp_path / "gemm.mlp.npz" in paths
    model = learned.load_model("gemm", tmp_path)  # checks the forest and the blend on the check rows
    assert isinstance(model.mlp, Mlp) and model.manifest["mlp"]["triton"] == {
        "weight": 0.4,
        "column": own_column("gemm", "triton"),
        "members": 2,
    }
    np.testing.assert_array_equal(model.mlp.predict(x), reg.mlps_["triton"].predict(x))  # both members came back
    assert (
        "triton rows: their own trees averaged in log with the mean of 2 multilayer perceptrons (40% the network's)"
        in (model.assumptions())
    )
    p50, low, high = model.predict(feats)
    want = reg.predict_interval(feats)
    np.testing.assert_allclose(p50, want[0], rtol=1e-3)
    assert (low <= p50).all() and (p50 <= high).all()

    # a manifest whose weight or member count was altered, or an altered network file, is refused with the file named
    manifest_path = tmp_path / "gemm.json"
    shipped = manifest_path.read_text()
    for change, match in (
        ({"weight": 0.9}, r"gemm\.mlp\.npz: served margins differ"),
        ({"members": 3}, r"gemm\.mlp\.npz: holds 2 networks; its manifest says 3"),
        (None, r"gemm\.mlp\.npz: sha256 .* does not match"),
    ):
        saved = json.loads(shipped)
        if change is None:
            (tmp_path / "gemm.mlp.npz").write_bytes(b"not a network")
        else:
            saved["mlp"]["triton"].update(change)
        manifest_path.write_text(json.dumps(saved))
        learned._load.cache_clear()
        with pytest.raises(learned.ModelFileError, match=match):
            learned.load_model("gemm", tmp_path)
    learned._load.cache_clear()


def test_a_bag_is_the_mean_of_its_seeds_refits_and_ships_as_one_forest_and_one_network(frame, tmp_path):
    """``bag=2``: the served margin is the mean of the margins of the same recipe fitted at seeds 0 and 1 (trees and
    networks both), exported as one forest and one network that reproduce it on the check rows (real GEMM rows)."""
    feats = build_features(frame, "gemm")
    y = frame["latency_us"].to_numpy()
    own = {"triton": {"max_depth": 4, "n_estimators": 30, "learning_rate": 0.1, "mlp": {**NET, "weight": 0.4}}}
    recipe = {**SMALL, "own_trees": own, "shared_skips_own": True}
    fit = lambda **kw: LatencyRegressor("gemm", **recipe, **kw).fit(feats, y)  # noqa: E731
    bag, seed0, seed1 = fit(bag=2), fit(random_state=0), fit(random_state=1)
    x = learned.feature_matrix(feats, "gemm")
    want = (seed0.point_margin(x) + seed1.point_margin(x)) / 2
    np.testing.assert_allclose(bag.point_margin(x), want, rtol=0, atol=1e-6)
    assert np.median(np.abs(seed0.point_margin(x) - seed1.point_margin(x))) > 1e-3  # the seeds do disagree
    assert len(bag.members_) == 2 and len(bag.mlps_["triton"].members) == 2

    export_model(bag, build_manifest(bag, "gemm", frame, "0" * 16, {}, "test"), "gemm", tmp_path, boosters=True)
    assert (tmp_path / "gemm.bag1.ubj.gz").exists() and (tmp_path / "gemm.triton.bag1.ubj.gz").exists()
    model = learned.load_model("gemm", tmp_path)  # checks the forest against both seeds' boosters and the blend
    walk = (model.compiled or model.forest).predict(model.matrix(feats, True))[:, 0]
    triton = (frame["backend"] == "triton").to_numpy()
    np.testing.assert_allclose(walk, bag.tree_margin(x), atol=2e-5)
    np.testing.assert_allclose(blend(walk[triton], model.mlp.predict(x[triton]), 0.4), want[triton], atol=2e-5)  # noqa: E501
    with pytest.raises(ValueError, match="bag must be an integer >= 1 \\(point models averaged\\); got 0"):
        fit(bag=0)
