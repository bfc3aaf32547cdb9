"""Learned answers for GPUs outside training: the leave-one-GPU-out summary, the held-out GPU's (the H100's measured
test rows) for an answer moved from a measured GPU of the same architecture, and their use in serving."""

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("xgboost")

from kernelcast import predict_latency  # noqa: E402
from kernelcast.predictors import learned, unseen  # noqa: E402
from kernelcast.training.run import export_unseen, heldout_gpu_summary, unseen_gpu_summary  # noqa: E402


def test_summary_intervals_come_from_the_other_folds():
    # synthetic rows (a unit test of the arithmetic): GPU "b" is off by 2x, the others by +-5%
    rng = np.random.default_rng(0)
    parts = []
    for g, bias in (("a", 1.0), ("b", 2.0), ("c", 1.0), ("d", 1.0)):
        measured = rng.uniform(10, 100, 400)
        parts.append(
            pd.DataFrame(
                {
                    "fold": g,
                    "measured": measured,
                    "analytical": measured * 1.3,
                    "learned": measured / bias * rng.uniform(0.95, 1.05, 400),
                }
            )
        )
    s = unseen_gpu_summary("gemm", pd.concat(parts, ignore_index=True), "f", ["bf16"])
    by = {f["gpu"]: f for f in s["folds"]}
    assert by["a"]["learned_mape"] == pytest.approx(0.025, abs=0.01)
    assert by["b"]["coverage"] < 0.2 < by["a"]["coverage"]  # b's error is outside what the other GPUs showed
    assert s["pooled"]["analytical_mape"] == pytest.approx(0.3)
    assert s["pooled"]["q_low"] < 0 < s["pooled"]["q_high"]


SHIPPED = unseen.summary_path("gemm", learned.MODEL_DIR)


@pytest.mark.skipif(not SHIPPED.exists(), reason="no shipped gemm leave-one-GPU-out summary")
def test_unseen_nvidia_gpu_is_answered_by_the_learned_model_with_its_logo_error():
    summary = json.loads(SHIPPED.read_text())
    desc = {"op": "gemm", "gpu": "B200", "dtype": "bf16", "backend": "cublas", "m": 4096, "n": 4096, "k": 4096}
    p = predict_latency(desc)
    assert p.model.endswith(":unseen-gpu") and p.in_distribution is False
    assert f"{summary['pooled']['learned_mape']:.1%}" in p.assumptions and "leave-one-GPU-out" in p.assumptions
    assert p.low_us < p.latency_us < p.high_us
    assert predict_latency({**desc, "gpu": "H200"}).model.startswith("learned:gemm@")  # seen: the plain model
    assert predict_latency({**desc, "gpu": "MI300X"}).model == "analytical"  # no AMD row measured
    assert predict_latency({**desc, "dtype": "fp8_e4m3", "gpu": "B200"}).model != p.model  # no fp8 LOGO figure
    folds = {f["gpu"]: f for f in summary["folds"]}
    a100 = predict_latency({**desc, "gpu": "A100"}).model
    beats = folds["a100_sxm"]["learned_mape"] < folds["a100_sxm"]["analytical_mape"]
    assert a100.endswith(":unseen-gpu") == beats  # a fold GPU: its own leave-one-GPU-out figure decides


def test_a_bad_summary_file_is_an_error_naming_it(tmp_path):
    (tmp_path / "gemm.unseen.json").write_text(json.dumps({"op": "gemm"}))
    with pytest.raises(ValueError, match="gemm.unseen.json: missing keys"):
        unseen.read_summary("gemm", tmp_path)
    assert unseen.read_summary("attention", tmp_path) is None


ATTENTION = unseen.summary_path("attention", learned.MODEL_DIR)


@pytest.mark.skipif(not ATTENTION.exists(), reason="no shipped attention leave-one-GPU-out summary")
def test_attention_on_an_unseen_gpu_is_learned_only_on_a_measured_architecture():
    """SDPA's flash and cuDNN rows were measured on the H200 and the H100 (sm_90): the H20 gets a measured GPU's
    answer moved to it, with the figures of the H100's rows held out of a model (the transfer's check), a Blackwell GPU
    the analytical one with the reason; the H100 itself is answered as trained."""
    desc = {"op": "attention", "gpu": "H20", "dtype": "bf16", "backend": "flash", "batch": 8, "heads_q": 32}
    desc.update(heads_kv=8, seq_q=2048, seq_kv=2048, head_dim=128, causal=True)
    h20 = predict_latency(desc)
    assert h20.model.endswith(":unseen-gpu") and "on h100_sxm, measured and held out of the model" in h20.assumptions
    h100 = predict_latency({**desc, "gpu": "H100"})
    assert h100.model.startswith("learned:") and not h100.model.endswith(":unseen-gpu") and h100.in_distribution
    b200 = predict_latency({**desc, "gpu": "B200"})
    assert b200.model == "analytical" and "measured on sm_9x only" in b200.assumptions
    gemm = {"op": "gemm", "gpu": "B200", "dtype": "bf16", "backend": "cublas", "m": 4096, "n": 4096, "k": 4096}
    assert predict_latency(gemm).model.endswith(":unseen-gpu")  # GEMM's summary answers any architecture


def _row(gpu: str, **kw) -> dict:
    return {"op": "copy", "gpu": gpu, "dtype": "bf16", "backend": "torch", "fn": "copy", **kw}


def test_an_answer_moves_to_a_gpu_of_its_architecture_by_what_bounds_it():
    """``transfer``: the share of a measured GPU's answer its bytes keep HBM busy scales by the two GPUs' bandwidths,
    the rest by their SMs x clock. The H20 (sm_90, 78 SMs, 4.0 TB/s) starts from a measured sm_90 GPU (the H100: 132
    SMs, 3.35 TB/s): a 4 KiB contiguous copy's answer, all latency, grows by the SM ratio; a 1 GiB one's, mostly
    bytes, moves toward the bandwidth ratio instead. A Blackwell GPU's eager kernels are answered analytically, with
    the reason."""
    from kernelcast.features.desc import parse_desc
    from kernelcast.features.gpu import get_gpu
    from kernelcast.features.vector import feature_columns
    from kernelcast.predictors.dispatch import _unseen

    moved = _unseen("copy")
    ref = moved.reference("h20", "torch|bf16")
    rows = [parse_desc(_row("H20", elements=e)).to_row() for e in (1 << 29, 2048)]
    cols = {k: np.asarray([r[k] for r in rows], dtype=object) for k in rows[0]}
    at_h20 = moved.transfer("copy", cols, feature_columns(cols, "copy", learned=True))
    at_ref = np.asarray([predict_latency(_row(ref, elements=e)).latency_us for e in (1 << 29, 2048)])
    r, h = get_gpu(ref), get_gpu("H20")
    bandwidth = r.memory_bandwidth_bps / h.memory_bandwidth_bps
    sms = r.sm_count * r.boost_clock_hz / (h.sm_count * h.boost_clock_hz)
    big, small = at_h20 / at_ref
    assert ref == "h100_sxm" and bandwidth < 1 < sms
    assert small == pytest.approx(sms, rel=0.01) and bandwidth <= big < (bandwidth + sms) / 2
    p = predict_latency(_row("H20", elements=1 << 29))
    assert p.model.endswith(":unseen-gpu") and "on h100_sxm, measured and held out of the model" in p.assumptions
    assert p.latency_us == pytest.approx(at_h20[0]) and p.low_us < p.latency_us < p.high_us
    b200 = predict_latency(_row("B200", elements=1 << 29))
    assert b200.model == "analytical" and "measured on sm_9x only" in b200.assumptions


def test_a_heldout_gpu_summary_cross_fits_its_interval_and_joins_a_logo_one(tmp_path):
    # synthetic rows (a unit test of the arithmetic): one held-out GPU, the learned answer within +-10%
    rng = np.random.default_rng(1)
    measured = rng.uniform(10, 100, 600)
    learned = measured * rng.uniform(0.9, 1.1, 600)
    rows = pd.DataFrame({"gpu": "h100_sxm", "measured": measured, "analytical": measured * 1.5, "learned": learned,
                         "shape_hash": rng.integers(0, 2**40, 600), "backend": ["a"] * 450 + ["b"] * 150})  # fmt: skip
    rows.loc[rows.index < 450, "learned"] = measured[:450] * rng.uniform(0.7, 1.3, 450)  # backend a: wider errors
    s = heldout_gpu_summary("copy", rows, "f" * 16, ["bf16"])
    # a backend with enough rows gets its own (wider) interval, cross-fitted; one with few rows keeps the pooled one
    own = s["backends_interval"]
    assert set(own) == {"a"} and own["a"]["n"] == 450 and 0.7 < own["a"]["coverage"] < 0.9
    assert own["a"]["q_high"] - own["a"]["q_low"] > s["pooled"]["q_high"] - s["pooled"]["q_low"]
    (fold,) = s["folds"]
    assert s["split"] == "heldout-gpu" and fold["gpu"] == "h100_sxm" and fold["n"] == 600
    assert fold["learned_mape"] < 0.15 and fold["analytical_mape"] == pytest.approx(0.5)
    assert 0.7 < fold["coverage"] < 0.9  # each half's 80% interval from the other half's residuals
    logo = {"op": "copy", "split": "logo", "dtypes": ["bf16"], "folds": [], "data_fingerprint": "x",
            "pooled": {"learned_mape": 0.1, "analytical_mape": 0.2, "q_low": -0.1, "q_high": 0.1}}  # fmt: skip
    export_unseen(logo, "copy", tmp_path)
    export_unseen(s, "copy", tmp_path)  # into the shipped leave-one-GPU-out summary, as its transfer part
    assert unseen.read_summary("copy", tmp_path)["transfer"]["split"] == "heldout-gpu"
    export_unseen(logo, "copy", tmp_path)  # a new leave-one-GPU-out summary keeps it
    assert unseen.read_summary("copy", tmp_path)["transfer"]["folds"] == s["folds"]
