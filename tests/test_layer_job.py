"""The layer collector's CPU-side pieces: the masks its masked-SDPA part passes, and its fifth layer set's points
(collect/layer_job.py; the measuring itself needs a GPU)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from kernelcast.collect import layer_job  # noqa: E402
from kernelcast.features import layers  # noqa: E402


def test_sdpa_masks_are_the_causal_and_sliding_patterns():
    masks = layer_job.sdpa_masks(3, 6, 2, torch.bfloat16)  # 3 queries at the end of 6 keys, a 2-key window
    assert masks["is_causal"] is None
    assert masks["causal_bool"].int().tolist() == [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]]
    assert masks["window_bool"].int().tolist() == [[0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1]]
    additive = masks["window_additive"]
    assert additive.dtype == torch.bfloat16 and (additive == 0).equal(masks["window_bool"])
    assert torch.isneginf(additive[~masks["window_bool"]]).all()
    decode = layer_job.sdpa_masks(1, 5, 2, torch.bfloat16)  # one query: the last key row
    assert decode["causal_bool"].all() and decode["window_bool"].int().tolist() == [[0, 0, 0, 1, 1]]


@pytest.mark.parametrize("name", ["arch5", "arch6"])
def test_the_fifth_and_sixth_layer_sets_are_callable_on_meta_tensors(name):
    """Every ARCH5 model and point builds and calls the way the GPU will (model inputs): a set that fails here would
    spend device time on errors. GPT-J's points stay inside its 2,048-row position table; the sixth set's points are
    none of the fifth's."""
    models, prefill, decode = layer_job.MODEL_SETS[name]
    assert max(s for _, s in prefill) + 1 <= 2048 and max(c for _, c in decode) + 1 <= 2048
    if name == "arch6":
        _, prefill5, decode5 = layer_job.MODEL_SETS["arch5"]
        assert not set(prefill) & set(prefill5) and not set(decode) & set(decode5)
    for name, tp in models:
        cfg = layers.shard(layers.load_config(name), tp)
        kind = layers.layer_kinds(cfg)[0]
        m = layers.build_model(cfg, dense=kind.dense, per_layer=kind.per_layer)
        call = layers.layer_call(m, "decode", 2, 1, 64)
        assert call.inputs == "model", (name, call.inputs)


def test_positions_past_a_learned_position_table_take_the_layer_inputs_on_every_device():
    """GPT-2 at 1,200 tokens (the fourth set's point) is past its 1,024-row ``wpe``: the model's own forward would index
    past it, a device-side assert that ended the H100's fourth-set pass and every point after it. The call takes the
    layer's inputs instead on meta and on the CPU alike, and says why; inside the table the model's forward runs."""
    cfg = layers.load_config("gpt2")
    for device in ("meta", "cpu"):
        m = layers.build_model(cfg, device=device)
        assert layers.layer_call(m, "prefill", 1, 1024).inputs == "model"
        call = layers.layer_call(m, "decode", 2, 1, 1200)
        assert call.inputs.startswith("layer") and "past the 1024 rows" in call.inputs, call.inputs


def test_random_mask_shapes_are_reproducible_and_bounded():
    shapes = layer_job.mask_shapes(200)
    assert shapes[: len(layer_job.MASK_SHAPES)] == list(layer_job.MASK_SHAPES)
    assert shapes == layer_job.mask_shapes(200) and shapes != layer_job.mask_shapes(200, seed=4)
    assert len(shapes) == len(layer_job.MASK_SHAPES) + 200
    for b, hq, hkv, sq, skv, d, window in shapes:
        assert hq % hkv == 0 and hq <= 128 and skv >= sq >= 1 and window >= 64 and d in (64, 80, 96, 128, 192, 256)
        assert b * sq * skv <= layer_job.MASK_MAX_ELEMENTS
    decode = [s for s in shapes if s[3] == 1]
    assert 0.2 < len(decode) / len(shapes) < 0.4  # about a third decode steps
    assert any(s[4] > s[3] > 1 for s in shapes)  # chunks at the end of a longer cache


def test_another_seed_is_a_fresh_draw_without_the_fixed_shapes():
    fresh = layer_job.mask_shapes(50, seed=1)
    assert len(fresh) == 50 and not set(fresh) & set(layer_job.MASK_SHAPES)
    assert not set(fresh) & set(layer_job.mask_shapes(300))


def test_the_backend_probe_calls_sdpa_past_head_dim_256_grouped_and_in_fp32():
    calls = layer_job.sdpa_backend_calls(device="cpu", scale=0.01)
    assert set(calls) == set(layer_job.BACKEND_CALLS) == {"d256", "d264", "d512", "d512_gqa", "d128_fp32"}
    for name, call in calls.items():
        b, hq, _, s, d, dtype = layer_job.BACKEND_CALLS[name]
        out = call()  # each runs (here on the CPU's math path)
        assert out.shape == (b, hq, max(1, int(s * 0.01)), d) and str(out.dtype) == f"torch.{dtype}"


def test_the_kernels_kept_are_the_median_calls():
    from kernelcast.collect.timers import KernelEvent

    def call(*durations_us):
        return [KernelEvent(f"k{i}", 1000 * i, int(us * 1000)) for i, us in enumerate(durations_us)]

    segs = [call(5.0, 1.0), call(1.0, 1.0), call(3.0, 1.0)]  # device times 6, 2 and 4 µs: the median is the third
    assert layer_job.median_kernels(segs) == [["k0", 3.0], ["k1", 1.0]]


def test_a_resumed_run_skips_the_rows_already_written(tmp_path):
    path = tmp_path / "sdpa_masks.jsonl"
    assert layer_job._done(path, ("shape", "mask", "window")) == set()  # nothing written yet
    path.write_text('{"shape": [1, 16, 8, 2048, 2048, 128], "mask": "window_bool", "window": 1024}\n\n')
    assert layer_job._done(path, ("shape", "mask", "window")) == {((1, 16, 8, 2048, 2048, 128), "window_bool", 1024)}


def test_the_broadcast_copy_probe_materializes_repeated_sources_and_their_plain_twins():
    """Each ``BROADCAST_COPIES`` call returns its source repeated along the head dim, contiguous (run here on the CPU
    at a hundredth of the batch); the plain twins copy a full-size permuted source to the same output shape."""
    import torch

    calls = layer_job.broadcast_copy_calls(device="cpu", scale=0.01)
    assert set(calls) == set(layer_job.BROADCAST_COPIES)
    for name, call in calls.items():
        kind, b, kv, n, s, d, dtype = layer_job.BROADCAST_COPIES[name]
        out = call()
        src = call.args[0]
        rows = (s, d) if kind in ("repeat_kv", "expand_v", "plain") else (d, s)
        assert out.shape == (max(1, int(b * 0.01)), kv * n, *rows) and out.is_contiguous(), name
        assert str(out.dtype) == f"torch.{dtype}"
        if kind == "repeat_kv":  # head h is kv head h // n
            torch.testing.assert_close(out, src.repeat_interleave(n, dim=1), rtol=0, atol=0)
        elif kind in ("expand_v", "expand_kt"):
            want = src if kind == "expand_v" else src.transpose(-1, -2)
            torch.testing.assert_close(out, want.expand(-1, n, -1, -1), rtol=0, atol=0)
        else:
            assert n == 1 and not src.is_contiguous() and torch.equal(out, src)


def test_the_lowering_describes_each_probe_copy_with_how_often_its_source_repeats():
    """graphs.lower gives a copy of a stride-0 source ``expand`` (the probe's repeats: 2-71), its plain twins none;
    the measured broadcast_copy rows (datasets/layers/…_broadcast_copy.jsonl) are the shapes it describes."""
    import json
    from pathlib import Path

    from kernelcast import predict_module
    from kernelcast.graphs.lower import broadcast_expand

    measured = Path(__file__).resolve().parents[1] / "datasets/layers/kernelcast_h200_sxm_20261205_broadcast_copy.jsonl"
    assert {json.loads(line)["call"] for line in measured.read_text().splitlines()} == set(layer_job.BROADCAST_COPIES)
    for name, call in layer_job.broadcast_copy_calls(device="meta").items():
        kind, b, kv, n, s, d, _ = layer_job.BROADCAST_COPIES[name]
        (row,) = predict_module(call.func, call.args, call.keywords, gpu="H200").kernels.to_dict(orient="records")
        desc = json.loads(row["desc"])
        assert desc["fn"] == "copy" and desc["elements"] == b * kv * n * s * d, name
        assert desc.get("expand", 1) == (1 if kind.startswith("plain") else n), name
    assert broadcast_expand((2, 4, 3, 5), (15, 0, 5, 1)) == 4 and broadcast_expand((2, 1, 3), (3, 0, 1)) == 1


def test_an_expand_on_anything_but_a_copy_or_off_its_runs_is_refused():
    from kernelcast import predict_latency

    base = dict(op="copy", gpu="H200", dtype="bf16", backend="torch", elements=4096, run=64)
    assert predict_latency({**base, "fn": "copy", "expand": 4}).latency_us > 0
    with pytest.raises(ValueError, match="expand.*1 unless fn is 'copy'"):
        predict_latency({**base, "fn": "cat", "inputs": 2, "expand": 4})
    with pytest.raises(ValueError, match="expand.*a divisor of elements/run=64"):
        predict_latency({**base, "fn": "copy", "expand": 3})
