"""On a CUDA GPU: every backend's output matches float64 on its small shape, and the CUPTI timer measures it."""

import pytest

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:
    HAS_CUDA = False

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")]

GEMM_CFG = {"block_m": 64, "block_n": 64, "block_k": 64, "group_m": 8, "num_warps": 4, "num_stages": 3}
CASES = (
    [
        {"op": "gemm", "backend": "cublas", "dtype": d, "m": 256, "n": 512, "k": 1024, "layout": lay}
        for d in ("fp32", "tf32", "bf16", "fp16")
        for lay in ("nn", "nt")
    ]
    + [
        {"op": "gemm", "backend": "cublas", "dtype": "fp8_e4m3", "m": 64, "n": 256, "k": 512},
        {"op": "gemm", "backend": "cublas", "dtype": "bf16", "batch": 4, "m": 64, "n": 128, "k": 256, "layout": "nn"},
        {
            "op": "gemm",
            "backend": "triton",
            "dtype": "bf16",
            "m": 300,
            "n": 200,
            "k": 512,
            "config": {**GEMM_CFG, "split_k": 1},
        },
        {
            "op": "gemm",
            "backend": "triton",
            "dtype": "fp16",
            "m": 300,
            "n": 200,
            "k": 512,
            "layout": "nn",
            "batch": 2,
            "config": {**GEMM_CFG, "split_k": 4},
        },
    ]
    + [
        {
            "op": "attention",
            "backend": b,
            "dtype": "bf16",
            "batch": 1,
            "heads_q": 8,
            "heads_kv": 2,
            "seq_q": sq,
            "seq_kv": 512,
            "head_dim": d,
            "causal": c,
            "config": {"block_m": 64, "block_n": 64, "num_warps": 4, "num_stages": 2},
        }
        # the memory-efficient kernel also past the fused backends' head_dim (its gmem-buffer tile)
        for b, d in (("flash", 128), ("cudnn", 128), ("triton", 128), ("efficient", 128), ("efficient", 512))
        for sq, c in ((512, True), (1, False), (100, True))
        if not (b == "cudnn" and sq == 100)
    ]
    + [  # an explicit additive window mask (collect/workloads/attention.py's MASK_WINDOW) past the window and in it
        {
            "op": "attention",
            "backend": b,
            "dtype": "bf16",
            "batch": 2,
            "heads_q": 8,
            "heads_kv": 2,
            "seq_q": sq,
            "seq_kv": 1500,
            "head_dim": 128,
            "causal": False,
            "mask": True,
        }  # fmt: skip
        for b in ("cudnn", "efficient")
        for sq in (1500, 1)
    ]
    + [
        {
            "op": "moe",
            "backend": b,
            "dtype": "bf16",
            "tokens": 40,
            "hidden": 256,
            "ffn": 128,
            "experts": 16,
            "top_k": 4,
            "distribution": "power_law_1.5",
            "config": {**GEMM_CFG, "block_m": 16},
        }
        for b in ("triton", "torch")
    ]
    + [
        {"op": "trsm", "backend": "cublas", "dtype": "fp32", "n": 64, "nrhs": 128, "batch": 96},
        # a copy of a repeated source: long runs (repeat_kv) and runs of one element (an expanded transposed key)
        {
            "op": "copy",
            "backend": "torch",
            "dtype": "bf16",
            "fn": "copy",
            "elements": 6 * 4096 * 8,
            "run": 4096,
            "expand": 8,
        },  # fmt: skip
        {
            "op": "copy",
            "backend": "torch",
            "dtype": "fp32",
            "fn": "copy",
            "elements": 1200 * 71,
            "run": 1,
            "expand": 71,
        },
        {
            "op": "conv",
            "backend": "torch",
            "dtype": "bf16",
            "batch": 2,
            "channels": 256,
            "length": 300,
            "kernel": 4,
            "padding": 3,
        },
    ]
)


def _desc(case):
    from kernelcast.features.desc import parse_desc

    case = {"gpu": "H200", **case}
    if case["backend"] != "triton":
        case.pop("config", None)
    return parse_desc(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['op']}-{c['backend']}-{c['dtype']}")
def test_output_matches_float64(case):
    from kernelcast.collect.workloads import get_backend

    desc = _desc(case)
    backend = get_backend(desc.op, desc.backend)
    assert backend.check(desc) is None


def test_cupti_timer_measures_every_backend():
    from kernelcast.collect.measure import measure_many

    descs = [_desc(c) for c in CASES]
    rows = measure_many(descs, cache="cold", repeats=3)
    for desc, row in zip(descs, rows):
        assert row["status"] == "ok", (desc, row["error"])
        assert row["latency_us"] > 0 and row["kernel_count"] >= 1
        names = row["kernel_names"].split(";")
        assert not {"kc_flush_l2", "kc_mark", "kc_end"} & set(names)  # separators are never counted
    warm = measure_many(descs[:2], cache="warm", repeats=3)
    assert all(r["status"] == "ok" and r["cache"] == "warm" for r in warm)


def test_tune_verify_measures_on_the_gpu():
    from kernelcast.verify import verify_configs

    desc = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "triton", "m": 512, "n": 1024, "k": 768}
    out = verify_configs(desc, top=3)
    assert (out["status"] == "ok").any() and out.attrs["regret"] >= 1.0
    assert out.attrs["best_us"] == out["measured_us"].min()


def test_eager_job_times_each_kernel_of_a_graph(tmp_path):
    import json

    from kernelcast.collect import eager_job

    assert eager_job.main(["--out", str(tmp_path), "--graphs", "0:3", "--batch", "2", "--repeats", "3"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "eager.jsonl").read_text().splitlines()]
    assert [r["seed"] for r in rows] == [0, 1, 2]
    for r in rows:
        assert "error" not in r, r.get("error")
        assert r["kernels"] and all(k[1] > 0 and k[2] <= k[1] <= k[3] for k in r["kernels"])
        assert len(r["eager_device_us"]) == 3
    assert eager_job.main(["--out", str(tmp_path), "--graphs", "0:3"]) == 0  # resumed: nothing measured twice
    assert len((tmp_path / "eager.jsonl").read_text().splitlines()) == 3
