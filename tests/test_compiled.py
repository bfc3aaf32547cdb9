"""The compiled tree walker (predictors/compiled.py, forest.c): the numpy walk's margins, the same answers through
``predict_latency`` and ``predict_many``, an atomic build into its cache folder, and a clear fallback without it."""

from __future__ import annotations

import numpy as np
import pytest

from kernelcast import predict_latency, predict_many
from kernelcast.features.desc import op_fields
from kernelcast.features.ops import op_names
from kernelcast.features.vector import feature_columns
from kernelcast.predictors import compiled
from kernelcast.predictors.learned import MODEL_DIR, load_model
from kernelcast.training.data import load_rows

OPS = [op for op in op_names() if (MODEL_DIR / f"{op}.json").exists()]  # every shipped model


@pytest.fixture
def fresh_library(monkeypatch, tmp_path):
    """``library()`` rebuilt under a test's environment; the cached one is restored after."""
    monkeypatch.setenv("KERNELCAST_CACHE", str(tmp_path / "cache"))
    compiled.library.cache_clear()
    yield tmp_path / "cache"
    compiled.library.cache_clear()


def _rows(op: str, n: int):
    rows = load_rows(op, sources=("kernelcast",))
    return rows.sample(min(n, len(rows)), random_state=1)


@pytest.mark.parametrize("op", OPS)
def test_compiled_walk_gives_the_numpy_walks_margins(op):
    model = load_model(op)
    assert model.compiled is not None, compiled.library()[1]
    rows = _rows(op, 600)
    cols = {c: rows[c].to_numpy() for c in rows}
    x = model.matrix({**cols, **feature_columns(cols, op)})  # the forest's input: features and route columns
    probe = np.vstack([x, x[:100]])
    probe[len(x) :: 3, ::2] = np.nan  # missing values take each node's default direction
    np.testing.assert_allclose(model.compiled.predict(probe), model.forest.predict(probe), rtol=1e-12, atol=1e-12)
    big = np.tile(x, (8, 1))  # over PARALLEL_ROWS: split over threads, the same margins
    assert len(big) >= compiled.PARALLEL_ROWS
    np.testing.assert_allclose(model.compiled.predict(big), np.tile(model.compiled.predict(x), (8, 1)), rtol=1e-12)


@pytest.mark.parametrize("op", OPS)
def test_serving_answers_equal_the_walks_without_the_compiler(op):
    """One description and a batch: the compiled path equals the numpy walk it replaces to 1e-6 relative."""
    model = load_model(op)
    rows = _rows(op, 300)
    # without `code` the trees answer fused rows too (with it the GNN does: tests/test_gnn.py)
    keep = [c for c in rows.columns if c in op_fields(op) and c != "code" and rows[c].notna().any()]
    frame = rows[keep].reset_index(drop=True)
    descs = [{k: v for k, v in r.items() if v is not None and v == v} for r in frame.to_dict("records")[:150]]
    walker = model.compiled
    try:
        fast = [predict_latency(d) for d in descs]
        fast_many = predict_many(frame)
        model.compiled = None
        slow = [predict_latency(d) for d in descs]
        slow_many = predict_many(frame)
    finally:
        model.compiled = walker
    assert any(p.model == model.name for p in fast), "the rows must reach the learned model"
    for a, b in zip(fast, slow):
        assert (a.model, a.bound, a.in_distribution) == (b.model, b.bound, b.in_distribution)
        np.testing.assert_allclose([a.latency_us, a.low_us, a.high_us], [b.latency_us, b.low_us, b.high_us], rtol=1e-6)
    for col in ("latency_us", "low_us", "high_us"):
        np.testing.assert_allclose(fast_many[col], slow_many[col], rtol=1e-6)
    assert (fast_many["model"] == slow_many["model"]).all()


def test_the_walker_is_built_once_atomically_into_its_cache(fresh_library):
    lib, where = compiled.library()
    assert lib is not None, where
    built = sorted(p.name for p in fresh_library.iterdir())
    assert len(built) == 1 and built[0].startswith("forest-") and built[0].endswith(".so")  # no temp file left
    mtime = (fresh_library / built[0]).stat().st_mtime_ns
    compiled.library.cache_clear()
    assert compiled.library()[1] == where and (fresh_library / built[0]).stat().st_mtime_ns == mtime  # reused


@pytest.mark.parametrize(
    "cc,reason",
    [("/nonexistent/cc", r"no C compiler: '/nonexistent/cc' is not on PATH"), ("false", r"false failed on forest.c")],
)
def test_without_a_working_compiler_serving_falls_back_and_says_why(fresh_library, monkeypatch, cc, reason):
    monkeypatch.setenv("CC", cc)
    model = load_model("gemm")
    with pytest.warns(RuntimeWarning, match=reason):
        assert compiled.compile_forest(model.forest) is None
    assert not fresh_library.exists() or not list(fresh_library.glob("*.so"))  # a failed build leaves nothing


def test_gated_runs_are_skipped_or_entered_with_the_same_margins(tmp_path):
    """Per-backend trees behind gates (``Forest.from_boosters(own=...)``) form runs that ``forest.c`` skips for a block
    whose rows all take the 0 side and enters one level down where all take the other: the numpy walk's margins on
    one-sided and mixed blocks, single rows, and missing gate values (synthetic data: a unit test of the walker)."""
    xgb = pytest.importorskip("xgboost")
    from kernelcast.predictors.trees import Forest

    rng = np.random.default_rng(2)
    n = 2000
    x = rng.normal(size=(n, 3)).astype(np.float32)
    x[:, 2] = rng.random(n) < 0.4  # one-hot "backend=a"
    y = np.where(x[:, 2] == 1, 4 * x[:, 0] ** 2, np.sin(x[:, 1]))
    shared = xgb.train({"max_depth": 4}, xgb.DMatrix(x, label=y), 12)
    own = {2: xgb.train({"max_depth": 3}, xgb.DMatrix(x[x[:, 2] == 1], label=y[x[:, 2] == 1]), 9)}
    forest = Forest.load(Forest.from_boosters(shared, own=own).save(tmp_path / "g.npz"))
    walker = compiled.compile_forest(forest)
    assert walker is not None, compiled.library()[1]
    zero_side, run_end = compiled.gate_runs(forest)
    runs = {(int(t), int(run_end[t])) for t in np.flatnonzero(zero_side >= 0)}
    assert {end - start for start, end in runs} >= {12, 10} and len({e for _, e in runs}) == 2  # shared; base + own
    assert walker.gate_columns.tolist() == [2]
    probe = np.vstack([x, x[:50]])
    probe[n::2, 2] = np.nan  # a missing gate value takes the gate's default way
    for rows in (probe, x[x[:, 2] == 1], x[x[:, 2] == 0]):  # mixed, every block one side, every block the other
        np.testing.assert_allclose(walker.predict(rows), forest.predict(rows), rtol=1e-12, atol=1e-12)
    for i in range(0, len(probe), 97):  # one row alone: the grouped walk
        np.testing.assert_allclose(walker.predict(probe[i : i + 1]), forest.predict(probe[i : i + 1]), atol=1e-12)
