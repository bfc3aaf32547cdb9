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


def test_the_fifth_layer_set_is_callable_on_meta_tensors():
    """Every ARCH5 model and point builds and calls the way the GPU will (model inputs): a set that fails here would
    spend device time on errors. GPT-J's points stay inside its 2,048-row position table."""
    models, prefill, decode = layer_job.MODEL_SETS["arch5"]
    assert max(s for _, s in prefill) + 1 <= 2048 and max(c for _, c in decode) + 1 <= 2048
    for name, tp in models:
        cfg = layers.shard(layers.load_config(name), tp)
        kind = layers.layer_kinds(cfg)[0]
        m = layers.build_model(cfg, dense=kind.dense, per_layer=kind.per_layer)
        call = layers.layer_call(m, "decode", 2, 1, 64)
        assert call.inputs == "model", (name, call.inputs)


def test_a_resumed_run_skips_the_rows_already_written(tmp_path):
    path = tmp_path / "sdpa_masks.jsonl"
    assert layer_job._done(path, ("shape", "mask")) == set()  # nothing written yet
    path.write_text('{"shape": [1, 16, 8, 2048, 2048, 128], "mask": "window_bool"}\n\n')
    assert layer_job._done(path, ("shape", "mask")) == {((1, 16, 8, 2048, 2048, 128), "window_bool")}
