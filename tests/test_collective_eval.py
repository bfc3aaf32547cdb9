"""The collective learned correction on real outside data: held-out Blackwell GPU beats NCCL's model."""
import numpy as np
import pytest

pytest.importorskip("xgboost")
pytest.importorskip("aiconfigurator_core")

from kernelcast.training.collective_eval import ape, ape_stats, holdout_table, load_rows, with_features  # noqa: E402


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
