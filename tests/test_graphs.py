"""graphs/: capture on meta tensors, lowering to kernels, predict_module / predict_model, traces — on real torch, real
Hugging Face modules built from shipped configs, and the profiler trace and ncu CSV recorded on the H200."""

import json
import math
import statistics
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch.nn.functional as F  # noqa: E402

from kernelcast.features import layers  # noqa: E402
from kernelcast.graphs import host, trace  # noqa: E402
from kernelcast.graphs.capture import CaptureError, capture  # noqa: E402
from kernelcast.graphs.lower import lower  # noqa: E402
from kernelcast.graphs.model import predict_model  # noqa: E402
from kernelcast.graphs.predict import predict_module  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "datasets" / "layers"


def meta(*shape, dtype=torch.bfloat16):
    return torch.empty(*shape, device="meta", dtype=dtype)


def lowered(fn, *args, gpu="H200"):
    return [d for rec in capture(fn, args).ops for d in lower(rec, gpu).descs]


def test_views_launch_nothing_and_linear_is_one_nt_gemm():
    x, w = meta(64, 4096), meta(1024, 4096)
    descs = lowered(lambda x, w: F.linear(x.view(64, 4096).t().t(), w).reshape(8, 8, 1024)[:, :4], x, w)
    assert [d["op"] for d in descs] == ["gemm"]
    assert descs[0] | {"m": 64, "n": 1024, "k": 4096, "layout": "nt", "backend": "cublas"} == descs[0]


def test_float_is_a_cast_kernel_and_contiguous_of_a_transpose_is_a_strided_copy():
    (cast,) = lowered(lambda x: x.float(), meta(4, 128))
    assert (
        cast["op"] == "elementwise" and cast["fn"] == "cast" and cast["in_dtype"] == "bf16" and cast["dtype"] == "fp32"
    )
    (copy,) = lowered(lambda x: x.transpose(1, 2).contiguous(), meta(2, 16, 8, 128))
    assert copy["op"] == "copy" and copy["fn"] == "copy" and copy["run"] == 128 and copy["elements"] == 2 * 16 * 8 * 128


def test_sdpa_picks_the_backend_torch_picks_on_that_gpu():
    q, k = meta(1, 32, 128, 128), meta(1, 8, 128, 128)

    def attn(q, k):
        return F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)

    (h200,) = lowered(attn, q, k)
    (a100,) = lowered(attn, q, k, gpu="A100")
    assert (h200["backend"], a100["backend"]) == ("cudnn", "flash")
    assert h200 | {"heads_q": 32, "heads_kv": 8, "seq_q": 128, "seq_kv": 128, "causal": True} == h200


def test_data_dependent_op_is_an_error_naming_the_op():
    with pytest.raises(CaptureError, match="nonzero"):
        capture(lambda x: torch.nonzero(x), (meta(16),))


def test_bad_arguments_are_errors_naming_the_field():
    with pytest.raises(ValueError, match="mode must be one of eager, compile; got 'trace'"):
        predict_module(lambda x: x + 1, (meta(4),), gpu="H200", mode="trace")
    with pytest.raises(ValueError, match="gpu"):
        predict_module(lambda x: x + 1, (meta(4),), gpu="H9000")
    with pytest.raises(ValueError, match="cuda_graph"):
        predict_module(lambda x: x + 1, (meta(4),), gpu="H200", cuda_graph="yes")
    for bad in (0, -3.0, float("nan"), "12", True):
        with pytest.raises(ValueError, match="host_probe_us must be a positive number"):
            predict_module(lambda x: x + 1, (meta(4),), gpu="H200", host_probe_us=bad)


def _measured(model, phase, batch, seq, context):
    for line in (DATA / "kernelcast_h200_sxm_20261203_layers.jsonl").read_text().splitlines():
        r = json.loads(line)
        if (r["model"], r["phase"], r["batch"], r["seq"], r["context"]) == (model, phase, batch, seq, context):
            return r
    raise KeyError(model)


@pytest.mark.parametrize(
    ("model", "phase", "batch", "seq", "context"),
    [
        ("llama3_8b", "prefill", 1, 2048, 0),
        ("mistral_7b_v0_3", "decode", 32, 1, 1024),
    ],
)
def test_hf_layer_prediction_is_near_the_h200_measurement(model, phase, batch, seq, context):
    m = layers.build_model(layers.load_config(model))
    r = _measured(model, phase, batch, seq, context)
    call = layers.layer_call(m, phase, batch, seq, context, layers.replay_inputs(r.get("layer_inputs")))
    p = predict_module(call.fn, call.args, call.kwargs, gpu="H200")
    measured = statistics.median(r["eager"]["device_us"])
    assert p.unmapped.empty
    assert abs(p.device_us / measured - 1) < 0.2, (p.device_us, measured)
    assert abs(len(p.kernels) - r["eager"]["kernels"]) <= 8  # cuBLAS split-K reductions are second kernels there
    call.after()  # the capture ran the call: its KV cache grew
    graph = predict_module(call.fn, call.args, call.kwargs, gpu="H200", cuda_graph=True)
    assert graph.device_us == pytest.approx(p.device_us)
    assert graph.wall_us <= p.wall_us + len(p.kernels) * host.GRAPH_GAP_US  # no host term: never slower but the gaps


def test_the_host_probe_scales_a_launch_bound_layer_to_its_measured_span():
    """A decode layer at batch 1 is launch-bound: its span follows the host's speed, which the probe beside each
    measured repeat records; predicted with its own probe, the wall lands near the measured span."""
    m = layers.build_model(layers.load_config("mistral_7b_v0_3"))
    r = _measured("mistral_7b_v0_3", "decode", 1, 1, 512)
    call = layers.layer_call(m, "decode", 1, 1, 512, layers.replay_inputs(r.get("layer_inputs")))
    probe = statistics.median(r["eager"]["host_probe_us"])
    p = predict_module(call.fn, call.args, call.kwargs, gpu="H200", host_probe_us=probe)
    call.after()
    assert abs(p.wall_us / statistics.median(r["eager"]["span_us"]) - 1) < 0.2
    assert any(f"host probe of {probe} µs" in a for a in p.assumptions)
    # two intervals: the device time's (the kernels' summed) holds no host time, which a launch-bound span is mostly
    assert p.low_us < p.device_us < p.high_us < p.wall_low_us < p.wall_us < p.wall_high_us
    lo, hi = host.WALL_BAND["probe"]
    assert (p.wall_low_us, p.wall_high_us) == pytest.approx((p.wall_us * math.exp(lo), p.wall_us * math.exp(hi)))
    slow = predict_module(call.fn, call.args, call.kwargs, gpu="H200", host_probe_us=2 * probe)
    call.after()
    assert slow.device_us == pytest.approx(p.device_us)
    assert 1.8 < slow.wall_us / p.wall_us < 2.05  # host-bound: twice the host cost, about twice the span


def test_host_timeline_is_host_bound_for_tiny_kernels_and_device_bound_for_big_ones():
    tiny = [(10.0, [1.0])] * 20
    assert host.timeline(tiny) == pytest.approx(19 * 10.0 + 1.0)
    big = [(10.0, [100.0])] * 20
    assert host.timeline(big) == pytest.approx(20 * 100.0)
    assert host.timeline(tiny, cuda_graph=True) == pytest.approx(20 * 1.0 + 19 * host.GRAPH_GAP_US)


def test_predict_model_repeats_layers_and_adds_tp_collectives():
    one = predict_model("llama3_8b", gpu="H200", phase="decode", batch=4, context=512)
    two = predict_model("llama3_8b", gpu="H200", phase="decode", batch=4, context=512, tp=2)
    layer = one.parts[one.parts["part"].str.startswith("layer")].iloc[0]
    assert layer["count"] == 32 and one.device_us > 32 * layer["device_us"]
    assert one.low_us < one.device_us < one.high_us and one.wall_low_us < one.wall_us < one.wall_high_us
    assert two.parts["part"].str.startswith("all_reduce").any()
    assert two.parts.loc[two.parts["part"].str.startswith("all_reduce"), "count"].item() == 64
    head = {p: d for p, d in zip(one.parts["part"], one.parts["device_us"]) if "LM head" in p}
    head_tp = {p: d for p, d in zip(two.parts["part"], two.parts["device_us"]) if "LM head" in p}
    assert head_tp.popitem()[1] < head.popitem()[1]  # vocab-parallel: each rank computes half the logits
    assert two.parts["part"].str.startswith("logits all_gather").any()
    ds = predict_model("deepseek_v3", gpu="H200", phase="decode", batch=8, context=1024, tp=8)
    assert dict(zip(ds.parts["part"], ds.parts["count"]))["layer (dense)"] == 3
    with pytest.raises(ValueError, match="phase must be one of"):
        predict_model("llama3_8b", gpu="H200", phase="train")
    with pytest.raises(ValueError, match="model must be a config.json path or one of"):
        predict_model("llama9", gpu="H200")


def test_trace_of_a_real_h200_run_maps_its_kernels_and_sums_their_time():
    path = DATA / "trace_llama3_8b_prefill_b1_s512_c0.json"
    events = json.loads(path.read_text())["traceEvents"]
    kernel_us = sum(e["dur"] for e in events if e.get("cat") in trace.DEVICE_CATS)
    table = trace.analyze(path, "H200")
    assert table["measured_us"].sum() == pytest.approx(kernel_us)
    mapped = table["model"] != "unmapped"
    assert mapped.mean() >= 0.9, table.loc[~mapped, ["aten_op", "note"]]
    assert (table["efficiency"].dropna() <= 1.05).all()  # nothing beats its roofline floor
    assert list(table["left_us"]) == sorted(table["left_us"], reverse=True)
    by = trace.totals(table)
    assert {"gemm", "attention", "elementwise"} <= set(by.index)


def test_ncu_csv_rows_are_listed_with_their_time_not_dropped():
    table = trace.analyze(DATA / "ncu_llama3_8b_prefill_b1_s512.csv", "H200")
    assert len(table) >= 40 and (table["measured_us"] > 0).all()
    assert (table["model"] == "unmapped").all() and table["note"].str.contains("no shapes").all()


def test_trace_errors_name_the_file(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('{"nope": 1}')
    with pytest.raises(trace.TraceError, match="traceEvents"):
        trace.analyze(bad, "H200")
    with pytest.raises(trace.TraceError, match="does not exist"):
        trace.analyze(tmp_path / "missing.json", "H200")


def test_moe_routing_is_an_assumption_the_caller_can_change():
    m = layers.build_model(layers.load_config("mixtral_8x7b"))

    def run(routing):
        call = layers.layer_call(m, "prefill", 1, 128)
        return predict_module(call.fn, call.args, call.kwargs, gpu="H200", routing=routing)

    balanced, one_expert = run("balanced"), run([256] + [0] * 7)  # 128 tokens x top-2 = 256 rows
    assert any("balanced routing" in a for a in balanced.assumptions)
    assert one_expert.device_us < balanced.device_us  # one expert's weights streamed instead of eight
    wrong = run([3] * 8)
    assert (wrong.unmapped["aten_op"] == "aten._grouped_mm.default").all() and len(wrong.unmapped) == 2
    assert wrong.unmapped["note"].str.contains("summing to 256").all()
    with pytest.raises(ValueError, match="routing must be"):
        run("skewed")


@pytest.mark.parametrize(
    "rows, groups, active, per",
    [
        (256, 256, 162, 2),  # decode: 32 tokens x top-8 over 256 experts touch ~162 of them
        (32, 32, 20, 2),  # GPT-OSS-20B, 8 tokens x top-4 over 32
        (2, 8, 2, 1),  # one token's top-2: both active
        (6000, 8, 8, 750),  # a prefill reaches every expert
    ],
)
def test_balanced_routing_touches_the_expected_distinct_experts(rows, groups, active, per):
    from kernelcast.graphs.lower import group_rows

    got_active, got_per, what = group_rows(rows, groups, "balanced")
    assert (got_active, got_per) == (active, per) and "expected distinct experts" in what
