"""Layers of Hugging Face architectures the harness was not written for (features/layers.py found per architecture:
the decoder list, rotary tables, the cache keyword and layout, per-layer kinds), predicted on meta tensors against
the H200's measurements of the same calls (datasets/layers/…20261204_arch_layers.jsonl, no constant fitted on them)."""

import json
import statistics
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from kernelcast.features import layers  # noqa: E402
from kernelcast.graphs.capture import capture  # noqa: E402
from kernelcast.graphs.lower import lower  # noqa: E402
from kernelcast.graphs.model import predict_model  # noqa: E402
from kernelcast.graphs.predict import predict_module  # noqa: E402

ARCH = Path(__file__).resolve().parent.parent / "datasets" / "layers" / "kernelcast_h200_sxm_20261204_arch_layers.jsonl"


def _measured(model, phase, batch, seq, context) -> dict:
    for line in ARCH.read_text().splitlines():
        r = json.loads(line)
        if (r["model"], r["phase"], r["batch"], r["seq"], r["context"]) == (model, phase, batch, seq, context):
            return r
    raise KeyError(model)


@pytest.mark.parametrize(
    ("model", "phase", "batch", "seq", "context"),
    [
        ("gpt2", "prefill", 4, 1024, 0),  # n_embd/n_head aliases, transformer.h, no rotary, fused c_attn
        ("falcon_7b", "prefill", 1, 512, 0),  # layer_past, alibi, MQA through SDPA's math backend
        ("phi3_mini_4k", "decode", 64, 1, 4096),  # fused QKV: the KV cache cat of a strided slice
        ("gemma2_9b", "decode", 16, 1, 8191),  # sliding-window cache, head_dim 256
        ("qwen3_5_27b", "decode", 8, 1, 2048),  # a linear-attention layer: a recurrent state, no keys
    ],
)
def test_other_architectures_layers_are_near_the_h200_measurement(model, phase, batch, seq, context):
    m = layers.build_model(layers.load_config(model))
    record = _measured(model, phase, batch, seq, context)
    call = layers.layer_call(m, phase, batch, seq, context, layers.replay_inputs(record.get("layer_inputs")))
    p = predict_module(call.fn, call.args, call.kwargs, gpu="H200")
    call.after()
    measured = statistics.median(record["eager"]["device_us"])
    assert abs(p.device_us / measured - 1) < 0.25, (p.device_us, measured)


def test_layer_kinds_follow_the_configs_per_layer_lists():
    gemma = layers.load_config("gemma2_9b")  # layer_types made by transformers: sliding and full, alternating
    kinds = layers.layer_kinds(gemma)
    assert [(k.name, k.count) for k in kinds] == [("dense, sliding_attention", 21), ("dense, full_attention", 21)]
    hybrid = layers.layer_kinds(layers.load_config("qwen3_5_27b"))  # a multimodal config: its text_config decodes
    assert {k.name: k.count for k in hybrid} == {"dense, linear_attention": 48, "dense, full_attention": 16}
    ds = layers.layer_kinds(layers.load_config("deepseek_v3"))
    assert [(k.name, k.count, k.dense) for k in ds] == [("dense", 3, True), ("moe", 58, False)]
    # a decode step past the window: each kind built and predicted as its own layer. The sliding layers attend to
    # 4,096 cached tokens, not 8,191, but their cache is the window's slice of the prefill, a strided tensor whose
    # cat takes torch's element-at-a-time path (measured 2,023 µs for a layer on the H200): the slower kind here
    step = predict_model("gemma2_9b", gpu="H200", phase="decode", batch=16, context=8191)
    times = dict(zip(step.parts["part"], step.parts["device_us"]))
    sliding, full = times["layer (dense, sliding_attention)"], times["layer (dense, full_attention)"]
    assert sliding != full
    assert step.device_us == pytest.approx(21 * sliding + 21 * full + times["embedding + norm + LM head"])


def test_config_aliases_text_configs_and_unknown_architectures():
    gpt2 = layers.canonical({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 2})
    assert gpt2 == {"model_type": "gpt2", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 2}
    text = layers.canonical(
        {"model_type": "qwen3_vl", "text_config": {"model_type": "qwen3_vl_text", "hidden_size": 8}}
    )
    assert text == {"model_type": "qwen3_vl_text", "hidden_size": 8}
    with pytest.raises(ValueError, match="model_type must be an architecture transformers .* knows; got 'kimi_k9'"):
        layers.canonical({"model_type": "kimi_k9"})
    with pytest.raises(ValueError, match="tp must be 1 for model_type 'falcon'"):
        layers.shard(layers.load_config("falcon_7b"), 2)
    oss = layers.build_model(layers.load_config("gpt_oss_20b"))  # no SDPA path in transformers: eager attention
    assert "no SDPA path for GptOssForCausalLM" in layers.attention_path(oss)


def test_a_cat_of_a_strided_input_is_the_element_at_a_time_path():
    def cat(cache, x):
        return torch.cat([cache, x], dim=-2)

    qkv = torch.empty(4, 32, 1, 3 * 96, device="meta", dtype=torch.bfloat16)
    cache = torch.empty(4, 32, 512, 96, device="meta", dtype=torch.bfloat16)
    (strided,) = [d for rec in capture(cat, (cache, qkv[..., 96:192])).ops for d in lower(rec, "H200").descs]
    (dense,) = [d for rec in capture(cat, (cache, qkv[..., 96:192].contiguous())).ops for d in lower(rec, "H200").descs]
    # the key append of a fused-QKV decode step: the whole cache (contiguous) and the new token (a slice, strided)
    assert strided["fn"] == "cat" and strided["contiguous"] is False and strided["run"] == 96
    assert strided["dims"] == 4 and strided["largest"] == 4 * 32 * 512 * 96 and strided["inputs"] == 2
    assert dense["fn"] == "cat" and dense["run"] == 96 and "contiguous" not in dense


@pytest.mark.parametrize(
    "fields",
    [
        {"inputs": 2, "dims": 4, "run": 64, "elements": 4 * 12 * 1025 * 64, "largest": 4 * 12 * 1024 * 64},
        {"inputs": 1, "dims": 4, "run": 128, "elements": 8 * 128 * 128, "largest": 8 * 128 * 128},
        {"inputs": 3, "dims": 3, "run": 80, "elements": 6 * (100 + 2 * 7) * 80, "largest": 6 * 100 * 80},
        {"inputs": 2, "dims": 4, "run": 32, "elements": 2 * 9 * 32 * 5 * 2, "largest": 9 * 32 * 5 * 2},
    ],
)
def test_a_measured_strided_cat_is_the_cat_a_layer_capture_describes(fields):
    """The collector's strided cat (collect/workloads/copy.py), built on meta tensors and captured as a layer is,
    lowers to the description it was built from: what is measured is what layers ask for."""
    from kernelcast.collect.workloads.copy import TorchCopy, strided_cat_inputs
    from kernelcast.features.desc import parse_desc

    desc = parse_desc(
        {
            "op": "copy",
            "fn": "cat",
            "contiguous": False,
            "dtype": "bf16",
            "backend": "torch",
            "gpu": "h200_sxm",
            **fields,
        }
    )
    assert TorchCopy().supports(desc) is None
    pieces = strided_cat_inputs(desc, lambda shape, seed: torch.empty(shape, device="meta", dtype=torch.bfloat16))
    assert sum(not p.is_contiguous() for p in pieces) == max(desc.inputs - 1, 1)
    (got,) = [
        d for rec in capture(lambda *ps: torch.cat(ps, dim=-2), tuple(pieces)).ops for d in lower(rec, "H200").descs
    ]
    assert parse_desc({**got, "gpu": "h200_sxm"}) == desc
    small = TorchCopy.small(desc)
    assert TorchCopy().supports(small) is None and parse_desc(small.to_row() | {"op": "copy"}) == small


@pytest.mark.parametrize(
    "fields",
    [
        {"fn": "silu", "inputs": 1, "elements": 6 * 14336},
        {"fn": "mul", "inputs": 2, "elements": 1000 * 64},
        {"fn": "add", "inputs": 1, "broadcast_inputs": 1, "broadcast_elements": 512, "elements": 512 * 40},
    ],
)
def test_a_measured_sliced_pointwise_input_is_what_a_layer_capture_describes(fields, monkeypatch):
    """The collector's ``dense=False`` operands (collect/workloads/elementwise.py: the first half of rows twice as
    wide), built on meta tensors, lower to the description they were built from; a transpose stays dense."""
    from kernelcast.collect.workloads import elementwise as ew
    from kernelcast.features.desc import parse_desc

    monkeypatch.setattr(ew, "values", lambda shape, dtype, seed=0: torch.empty(shape, device="meta"))
    desc = parse_desc(
        {
            "op": "elementwise",
            "dtype": "fp32",
            "backend": "torch",
            "gpu": "h200_sxm",
            "contiguous": False,
            "dense": False,
            **fields,
        }
    )
    assert ew.TorchElementwise().supports(desc) is None
    call, _ = ew.TorchElementwise().build(desc)
    (got,) = [d for rec in capture(call, ()).ops for d in lower(rec, "H200").descs]
    assert parse_desc({**got, "gpu": "h200_sxm"}) == desc
    x = torch.empty(64, 300, device="meta")
    (t,) = [d for rec in capture(torch.sigmoid, (x.t(),)).ops for d in lower(rec, "H200").descs]
    assert (t["contiguous"], t["dense"]) == (False, True)


@pytest.mark.parametrize(
    ("model", "solves", "layer_within"), [("qwen3_5_27b", 2, 0.15), ("nemotron3_nano_30b", 0, None)]
)
def test_a_hybrid_prefill_maps_its_triangular_solves_and_depthwise_convolutions(model, solves, layer_within):
    """The torch reference paths of the gated delta rule (two batched trsm) and of the causal conv (torch's generic
    depthwise kernel): once unmapped, 12-15% of these layers' device time; now each is near the H200's own. A solve is
    the op's kernels, as its family's standalone rows are labelled: cuBLAS's trsm after torch's column-major copy of B
    and two index kernels. (Nemotron's layer stays under by a quarter: its Mamba scan's reference path.)"""
    m = layers.build_model(layers.load_config(model))
    rows = [json.loads(line) for line in ARCH.read_text().splitlines()]
    record = next(r for r in rows if (r["model"], r["phase"], r["seq"]) == (model, "prefill", 2048))
    call = layers.layer_call(m, "prefill", 1, 2048, 0, layers.replay_inputs(record.get("layer_inputs")))
    p = predict_module(call.fn, call.args, call.kwargs, gpu="H200")
    call.after()
    assert p.unmapped.empty, p.unmapped[["aten_op", "note"]]
    kernels = record["eager"]["kernel_list"]
    for family, mark, count, before in (
        ("trsm", "batch_trsm_left_kernel", solves, 3),
        ("conv", "conv_depthwise", 1, 0),
    ):
        measured = [
            sum(us for _, us in kernels[i - before : i + 1]) for i, (name, _) in enumerate(kernels) if mark in name
        ]
        predicted = p.kernels.loc[p.kernels["family"] == family, "latency_us"].tolist()
        assert len(predicted) == len(measured) == count
        for ours, theirs in zip(predicted, measured):
            assert abs(ours / theirs - 1) < 0.1, (family, ours, theirs)
    if layer_within is not None:
        assert abs(p.device_us / statistics.median(record["eager"]["device_us"]) - 1) < layer_within


def test_convolutions_and_solves_the_families_do_not_cover_are_listed_with_why():
    from kernelcast.graphs.capture import OpRecord, TensorMeta

    x = TensorMeta((2, 64, 100), (6400, 100, 1), "bfloat16", True)
    w = TensorMeta((64, 8, 4), (32, 4, 1), "bfloat16", True)  # groups=8: not depthwise
    conv = lower(OpRecord("aten.convolution.default", (x, w, None, [1], [0], [1], False, [0], 8), {}, (x,)), "H200")
    assert not conv.descs and "only depthwise convolutions" in conv.unmapped and "groups=8" in conv.unmapped
    a = TensorMeta((4, 64, 64), (4096, 64, 1), "float32", True)
    b = TensorMeta((4, 32, 64), (2048, 64, 1), "float32", True)
    right = lower(OpRecord("aten.linalg_solve_triangular.default", (a, b), {"upper": False, "left": False}, (b,)),
                  "H200")  # fmt: skip
    assert not right.descs and "left=False" in right.unmapped
    left = lower(OpRecord("aten.linalg_solve_triangular.default", (a, a), {"upper": False}, (a,)), "H200")
    assert left.descs == ({"op": "trsm", "dtype": "fp32", "backend": "cublas", "n": 64, "nrhs": 64, "batch": 4},)


def test_a_hybrid_models_prefill_step_is_answered_whole():
    """`kernelcast model` answers a step only when every kernel is predicted: hybrid prefills were refused (their
    depthwise convolution and triangular solves had no model) until the trsm and conv families."""
    step = predict_model("qwen3_5_27b", gpu="H200", phase="prefill", batch=1, seq=512)
    parts = dict(zip(step.parts["part"], step.parts["count"]))
    assert parts == {"layer (dense, linear_attention)": 48, "layer (dense, full_attention)": 16,
                     "embedding + norm + LM head": 1}  # fmt: skip
    assert step.device_us > 0 and all(p.unmapped.empty for p in step.layers.values())


def test_layers_take_the_inputs_their_model_passes():
    """GLM-5's (and DeepSeek-V3.2's) sparse indexer reads the causal mask its model makes, which a layer called without
    one has not: `inputs="layer"` fails on meta tensors where `inputs="model"` (the default) takes the bool mask, the
    rotary tables and the cache from the model's own forward and the whole step is answered."""
    cfg = layers.load_config("glm5")
    dense = layers.layer_kinds(cfg)[0]
    m = layers.build_model(cfg, dense=dense.dense, per_layer=dense.per_layer)
    call = layers.layer_call(m, "decode", 2, 1, 300)
    assert call.inputs == "model" and call.args[0].shape == (2, 1, m.config.hidden_size)
    mask = call.kwargs["attention_mask"]
    assert mask.dtype == torch.bool and tuple(mask.shape) == (2, 1, 1, 301)
    assert call.kwargs[call.cache_key].get_seq_length() == 300
    with pytest.raises(Exception, match="NoneType"):
        bare = layers.layer_call(m, "decode", 2, 1, 300, inputs="layer")
        predict_module(bare.fn, bare.args, bare.kwargs, gpu="H200")
    step = predict_model("glm5", gpu="H200", phase="prefill", batch=1, seq=256)
    assert step.device_us > 0 and all(p.unmapped.empty for p in step.layers.values())
    assert any("explicit attn_mask" in a for a in step.assumptions)
    with pytest.raises(ValueError, match="inputs must be one of model, layer; got 'meta'"):
        layers.layer_call(m, "prefill", 1, 8, inputs="meta")
    # a model whose forward cannot reach its layer on meta tensors (OPT's .item()) gets the inputs built here: said
    opt = layers.layer_call(layers.build_model(layers.load_config("opt_6_7b")), "prefill", 1, 16)
    assert opt.inputs.startswith("layer (the model's forward did not reach its first layer")


def test_measured_rows_replay_the_inputs_they_were_measured_with():
    assert layers.replay_inputs(None) == "layer"  # every row measured before the inputs were recorded
    assert layers.replay_inputs("model") == "model"
    assert layers.replay_inputs("layer (the model's forward did not reach its first layer: ...)") == "layer"
    with pytest.raises(ValueError, match="layer_inputs must start with one of model, layer; got 'eager'"):
        layers.replay_inputs("eager")


def test_llama4_and_gemma4_layer_kinds():
    """Llama 4 lists its MoE layers by index (`moe_layers`, every other one for Maverick), not one value per layer;
    Gemma 4's config forces a model's last layer to full attention, so its sliding kind is built as the first of two."""
    maverick = layers.layer_kinds(layers.load_config("llama4_maverick"))
    # every fourth layer full attention without RoPE (3, 7, ...), every other one MoE (1, 3, ...)
    assert {k.name: k.count for k in maverick} == {"dense, 1, chunked_attention": 24, "moe, 1, chunked_attention": 12,
                                                   "moe, 0, full_attention": 12}  # fmt: skip
    scout = layers.layer_kinds(layers.load_config("llama4_scout"))
    assert not any(k.dense for k in scout) and sum(k.count for k in scout) == 48
    kind = next(k for k in maverick if k.dense)
    m = layers.build_model(layers.load_config("llama4_maverick"), dense=kind.dense, per_layer=kind.per_layer)
    assert type(layers.decoder_layer(m).feed_forward).__name__ == "Llama4TextMLP"
    gemma = layers.load_config("gemma4_26b_a4b")
    sliding = next(k for k in layers.layer_kinds(gemma) if "sliding" in k.name)
    g = layers.build_model(gemma, dense=sliding.dense, per_layer=sliding.per_layer)
    assert g.config.layer_types[0] == "sliding_attention" and layers.decoder_layer(g).self_attn.is_sliding
    # Llama 4's rotary is a complex multiply: lowered as its fp32 pairs, not unmapped
    step = predict_model("llama4_scout", gpu="H200", phase="decode", batch=4, context=512)
    assert all(p.unmapped.empty for p in step.layers.values())
    assert any("complex64 predicted as its fp32 pairs" in a for a in step.assumptions)


def test_layers_that_need_an_earlier_layer_or_the_token_ids_are_answered():
    """GLM-5.2's "shared" sparse-attention layers reuse the top-k indices the last "full" indexer layer computed: built
    after one (layer 1 of two, its own cache entry), they launch no indexer kernels. DeepSeek-V4 routes some experts by
    token id, so layers are called through their model's forward on token ids. Qwen3-VL's text model has no causal-LM
    class in transformers: its base model, with the LM head added."""
    cfg = layers.load_config("glm5_2")
    shared = next(k for k in layers.layer_kinds(cfg) if "shared" in k.name)
    m = layers.build_model(cfg, dense=shared.dense, per_layer=shared.per_layer)
    assert layers.layer_index(m) == 1 and m.config.indexer_types == ["full", "shared"]
    call = layers.layer_call(m, "decode", 2, 1, 128)
    assert call.cache_index == 1 and call.kwargs["prev_topk_indices"] is not None
    assert call.kwargs[call.cache_key].layers[1].keys.shape[-2] == 128
    step = predict_model("glm5_2", gpu="H200", phase="decode", batch=2, context=256)
    kernels = {name: len(p.kernels) for name, p in step.layers.items()}
    assert kernels["moe, sparse, shared"] < kernels["moe, sparse, full"]
    for name in ("deepseek_v4_flash", "qwen3_vl_8b"):
        step = predict_model(name, gpu="H200", phase="decode", batch=2, context=256)
        assert step.device_us > 0 and all(p.unmapped.empty for p in step.layers.values()), name
    vl = layers.build_model(layers.load_config("qwen3_vl_8b"))
    assert type(vl).__name__ == "Qwen3VLTextModel" and vl.get_output_embeddings() is None


def test_a_config_is_handed_to_transformers_under_its_own_keys():
    """Nemotron-3 Ultra's config names its layers "mamba" and "attention" under `layers_block_type`, which its config
    class migrates only under that key, not under the standard `layer_types` kernelcast reads."""
    cfg = layers.load_config("nemotron3_ultra_550b")
    assert "layer_types" in cfg and "mamba" in cfg["layer_types"]  # canonical: the standard key, the Hub's values
    kinds = {k.name: k.count for k in layers.layer_kinds(cfg)}
    assert kinds == {"moe, linear_attention": 48, "moe, moe": 48, "moe, full_attention": 12}
    step = predict_model("nemotron3_ultra_550b", gpu="H200", phase="decode", batch=2, context=256)
    assert all(p.unmapped.empty for p in step.layers.values())


def test_an_unknown_model_type_is_read_as_the_class_its_config_names():
    kimi = layers.canonical({"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168})
    assert kimi["model_type"] == "deepseek_v3" and kimi["hidden_size"] == 7168
    with pytest.raises(ValueError, match="model_type must be an architecture transformers .* knows; got 'mimo'"):
        layers.canonical({"model_type": "mimo", "architectures": ["MiMoForCausalLM"]})  # custom code on the Hub only


def test_configs_transformers_cannot_build_are_errors_naming_the_config():
    with pytest.raises(ValueError, match=r"model config \(qwen3_vl\) must give num_hidden_layers"):
        layers.layer_kinds(layers.canonical({"model_type": "qwen3_vl"}))  # a multimodal config without its text model
    small = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128}
    with pytest.raises(ValueError, match=r"model config \(llama\) cannot be built by transformers .*KeyError: 'situ'"):
        layers.build_model(layers.canonical({"model_type": "llama", "hidden_act": "situ", **small}))  # Kimi-K3's


def test_tensor_parallel_shards_the_new_architectures_widths():
    maverick = layers.shard(layers.load_config("llama4_maverick"), 8)  # its dense layers' FFN is intermediate_size_mlp
    assert (maverick["intermediate_size"], maverick["intermediate_size_mlp"]) == (1024, 2048)
    gemma = layers.shard(layers.load_config("gemma4_31b"), 4)  # full-attention layers' own KV heads
    assert (gemma["num_key_value_heads"], gemma["num_global_key_value_heads"]) == (4, 1)


@pytest.mark.parametrize("model", ["glm5", "deepseek_v3_2"])
def test_a_sparse_attention_decode_scores_every_cached_token(model):
    """DSA's indexer keeps its own keys beside the KV cache: a decode step's cache holds ``context`` of them (once it
    held none, the indexer scored one key, and the next call failed on the H200 against the mask's length), and
    ``after()`` puts them back as they were."""
    m = layers.build_model(layers.load_config(model))
    call = layers.layer_call(m, "decode", 2, 1, 64)
    cached = call.kwargs["past_key_values"].layers[layers.layer_index(m)]
    for _ in range(2):  # the second call is the one that failed
        assert cached.indexer_keys.shape[-2] == cached.keys.shape[-2] == 64
        call.fn(*call.args, **call.kwargs)
        assert cached.indexer_keys.shape[-2] == 65
        call.after()
