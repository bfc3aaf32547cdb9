"""SDPA's memory-efficient kernel: which calls torch sends there, how they are described and answered (learned on the
H200, where its rows were measured; analytically on GPUs of another architecture), and its launch's tiles."""

from __future__ import annotations

import json
import math

import pytest

from kernelcast import predict_latency
from kernelcast.collect.workloads import get_backend
from kernelcast.features.desc import parse_desc
from kernelcast.features.ops.attention import (
    COMPUTE_EFFICIENCY,
    EFFICIENT_TILES,
    attended_pairs,
    efficient_launch,
    kernel_head_dim,
)
from kernelcast.features.vector import categories, feature_columns
from kernelcast.graphs.lower import EFFICIENT_NOTE, attention_backend
from kernelcast.graphs.trace import _ncu_family
from kernelcast.predictors.learned import load_model

torch = pytest.importorskip("torch")


def desc(**over) -> dict:
    base = {"op": "attention", "gpu": "H200", "dtype": "bf16", "backend": "efficient", "batch": 1, "heads_q": 32,
            "heads_kv": 32, "seq_q": 1500, "seq_kv": 1500, "head_dim": 512, "causal": True}  # fmt: skip
    return {**base, **over}


@pytest.mark.parametrize(
    ("gpu", "dtype", "head_dim", "mask", "backend"),
    [
        ("H200", "bf16", 128, False, "cudnn"),
        ("H200", "bf16", 256, False, "cudnn"),  # Gemma 3's head_dim ran cuDNN on the H200
        ("H200", "bf16", 512, False, "efficient"),  # Gemma 4's full-attention layers ran fmha_cutlassF there
        ("H200", "bf16", 128, True, "cudnn"),  # cuDNN reads a mask (datasets/layers/…_sdpa_masks.jsonl)
        ("H200", "fp32", 128, False, "efficient"),  # flash and cuDNN take half precision only
        ("A100", "bf16", 128, False, "flash"),
        ("A100", "bf16", 128, True, "efficient"),  # flash takes no mask
        ("A100", "fp16", 264, False, "efficient"),
    ],
)
def test_the_backend_torch_picks(gpu, dtype, head_dim, mask, backend):
    assert attention_backend(gpu, dtype, head_dim, mask) == backend


def test_described_and_answered_by_the_model_where_measured_and_analytically_elsewhere():
    d = parse_desc(desc(causal=False, mask=True))  # the kernel takes a bias: a mask row is valid
    assert d.backend == "efficient" and d.mask
    assert "efficient" in categories("attention")["backend"]  # a one-hot column of the learned model
    p = predict_latency(desc())
    assert p.model.startswith("learned:attention") and p.in_distribution
    assert p.low_us < p.latency_us < p.high_us
    # no row on any other architecture: the roofline answers, and says it is out of distribution
    elsewhere = predict_latency(desc(gpu="B200"))
    assert elsewhere.model == "analytical" and not elsewhere.in_distribution
    assert load_model("attention") is not None


def test_tiles_and_output_buffer_follow_the_kernels_head_dim_variants():
    import numpy as np

    for head_dim, (limit, bm, bn) in zip((64, 128, 512), EFFICIENT_TILES):
        assert head_dim <= limit
        cols = {k: np.array([v], dtype=object) for k, v in parse_desc(desc(head_dim=head_dim)).to_row().items()}
        f = feature_columns(cols, "attention", learned=False)
        assert (f["block_m"][0], f["block_n"][0]) == (bm, bn)
        assert f["work_units"][0] == math.ceil(1500 / bm) * 32
    # past head_dim 128 the fp32 output buffer is read and written at every key block a query row visits
    b, hq, sq, d = (np.array([x], dtype=float) for x in (1, 32, 1500, 512))
    causal = np.array([False])
    cols = {"backend": np.array(["efficient"], dtype=object)}
    pairs = attended_pairs(sq, np.array([1500.0]), causal)
    _, buffer = efficient_launch(cols, b, hq, sq, d, causal, pairs)
    assert buffer[0] == 2 * 4 * 32 * (1500 * 1500 / 128 + 1500) * 512
    _, small = efficient_launch(cols, b, hq, sq, np.array([128.0]), causal, pairs)
    assert small[0] == 0
    # the head_dim it computes at: 64, 128, then whole blocks of its 128 keys (RESULTS §42)
    d = np.array([40.0, 96.0, 129.0, 160.0, 256.0, 288.0, 512.0])
    padded = kernel_head_dim(np.array(["efficient"] * len(d), dtype=object), d, np.ones(len(d)))
    assert padded.tolist() == [64.0, 128.0, 256.0, 256.0, 256.0, 384.0, 512.0]
    # slower than the fused kernels at the same shape: 0.17 of peak (the best H200 row) vs 0.55, plus its buffer
    assert COMPUTE_EFFICIENCY["efficient"] < COMPUTE_EFFICIENCY["flash"]
    fused = predict_latency(desc(backend="cudnn", head_dim=256), predictor="analytical")
    assert predict_latency(desc(head_dim=256)).latency_us > fused.latency_us


def test_a_module_past_head_dim_256_lowers_to_it():
    from kernelcast import predict_module

    def attend(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    q = torch.empty(1, 8, 1024, 512, dtype=torch.bfloat16, device="meta")
    out = predict_module(attend, (q, q, q), gpu="H200")
    (row,) = out.kernels.to_dict(orient="records")
    described = json.loads(row["desc"])
    assert described["backend"] == "efficient" and described["head_dim"] == 512
    assert row["model"].startswith("learned:attention") and row["in_distribution"] and row["note"] == EFFICIENT_NOTE
    # grouped-query heads past 256: the efficient kernel takes none, so torch runs its math path (bmm, softmax, bmm)
    k = torch.empty(1, 2, 1024, 512, dtype=torch.bfloat16, device="meta")

    def grouped(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    math_path = predict_module(grouped, (q, k, k), gpu="H200")
    assert "attention" not in set(math_path.kernels["family"]) and len(math_path.kernels) > 3


def test_the_collector_measures_it_and_a_trace_names_it():
    backend = get_backend("attention", "efficient")
    assert backend.sdpa_backend == "EFFICIENT_ATTENTION"
    assert backend.supports(parse_desc(desc())) is None
    assert "bf16, fp16" in backend.supports(parse_desc(desc(dtype="fp8_e4m3")))
    assert _ncu_family("fmha_cutlassF_bf16_aligned_32x128_gmem_sm80(PyTorchMemEffAttention::AttentionKernel") == (
        "attention"
    )
    assert _ncu_family("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT") == "gemm"


def test_compiled_code_sdpa_fallbacks_carry_their_mask_and_the_efficient_kernel():
    from kernelcast.graphs.capture import TensorMeta
    from kernelcast.graphs.compiled import _sdpa

    region = ((), ())  # the launch's source nodes and aten ops
    q = TensorMeta((1, 8, 1024, 512), (8 * 1024 * 512, 1024 * 512, 512, 1), "bfloat16", True)
    bias = TensorMeta((1, 1, 1024, 1024), (0, 0, 1024, 1), "bfloat16", False)
    efficient = _sdpa(
        "f", "_scaled_dot_product_efficient_attention", (q, q, q, bias, False, 0.0, False), {}, "H200", region
    )
    assert efficient.desc["backend"] == "efficient" and efficient.desc["mask"] and efficient.note == EFFICIENT_NOTE
    q128 = TensorMeta((1, 8, 1024, 128), (8 * 1024 * 128, 1024 * 128, 128, 1), "bfloat16", True)
    cudnn = _sdpa(
        "f", "_scaled_dot_product_cudnn_attention", (q128, q128, q128, bias, False, 0.0, False), {}, "H200", region
    )
    assert cudnn.desc["backend"] == "cudnn" and cudnn.desc["mask"] and not cudnn.note
    causal = _sdpa(
        "f", "_scaled_dot_product_cudnn_attention", (q128, q128, q128, None, False, 0.0, True), {}, "H200", region
    )
    assert causal.desc["causal"] and not causal.desc["mask"]
    flash = _sdpa("f", "_scaled_dot_product_flash_attention", (q128, q128, q128, 0.0, True), {}, "H200", region)
    assert flash.desc["backend"] == "flash" and not flash.desc["mask"]
