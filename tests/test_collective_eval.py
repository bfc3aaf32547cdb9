"""The collective learned correction on real outside data: held-out Blackwell GPU beats NCCL's model."""

import numpy as np
import pytest

pytest.importorskip("xgboost")
pytest.importorskip("aiconfigurator_core")

from kernelcast.training.collective_eval import ape, ape_stats, holdout_table, load_rows, with_features  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def collective_cache():
    """The aiconfigurator NCCL import training reads (built once if this checkout has none yet)."""
    from kernelcast.collect.importers.aiconfigurator import ensure_cache

    ensure_cache(["collective"])


def test_ape_stats_by_hand():
    s = ape_stats(ape([110, 90, 100, 150], [100, 100, 100, 100]), np.array([1, 1 << 20, 1 << 21, 1 << 22]))
    assert (s["n"], s["n_1mib"]) == (4, 3)
    assert s["median"] == pytest.approx(10.0) and s["median_1mib"] == pytest.approx(10.0)


def test_leave_one_blackwell_gpu_out_beats_nccls_model():
    frame = load_rows()
    frame = frame[frame["gpu"].isin(["b200_sxm", "b300_sxm", "gb200"])].reset_index(drop=True)
    rows = holdout_table(frame, with_features(frame), "gpu")
    gb200 = next(r for r in rows if r["held_out"] == "gb200")
    assert gb200["learned"]["median"] < gb200["nccl_model"]["median"] / 3
    assert gb200["learned"]["p90"] < gb200["nccl_model"]["p90"]


def test_per_collective_rows_and_mlflow_table(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from kernelcast.training import tracking
    from kernelcast.training.collective_eval import log_mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    frame = load_rows()
    frame = frame[frame["gpu"].isin(["b200_sxm", "gb200"])].reset_index(drop=True)
    rows = holdout_table(frame, with_features(frame), "gpu")
    b200 = [r for r in rows if r["held_out"] == "b200_sxm"]
    assert {r["collective"] for r in b200} == {"all", *frame.loc[frame["gpu"] == "b200_sxm", "collective"]}
    assert sum(r["nccl_model"]["n"] for r in b200 if r["collective"] != "all") == next(
        r["nccl_model"]["n"] for r in b200 if r["collective"] == "all"
    )
    run_id = log_mlflow(rows, len(frame))
    run = tracking.setup().get_run(run_id)
    assert run.data.tags["kind"] == "nccl-comparison"
    key = "leave_one_gpu_out.b200_sxm.aiconfigurator.all_reduce.learned.median_ape"
    cell = next(r for r in b200 if r["collective"] == "all_reduce")
    assert run.data.metrics[key] == pytest.approx(cell["learned"]["median"])
    artifacts = {a.path for a in tracking.setup().list_artifacts(run_id)}
    assert {"nccl_comparison.json", "leave_one_gpu_out.png"} <= artifacts
