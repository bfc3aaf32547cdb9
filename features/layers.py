"""Real model layers from Hugging Face configs: the configs kernelcast ships (``hf_configs/``), one decoder layer built
from one (random weights on a GPU, none on ``meta``), and its call for a phase — prefill (batch × seq tokens into an
empty KV cache) or decode (batch × 1 token against a cache of ``context`` tokens).

The collector measures these calls on a GPU and ``graphs/`` predicts the same calls from meta tensors; both build
them here, so what is measured and what is predicted are one call. torch and transformers are imported lazily.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).with_name("hf_configs")
PHASES = ("prefill", "decode")
#: config keys that do not shape the bf16 layer (weights are random; quantization is not what is measured)
DROPPED_KEYS = ("quantization_config", "auto_map")


def config_names() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def load_config(name_or_path: str | Path) -> dict[str, Any]:
    """A shipped config by name (``llama3_8b``) or a local ``config.json`` path."""
    path = Path(name_or_path)
    if not path.is_file():
        path = CONFIG_DIR / f"{name_or_path}.json"
    if not path.is_file():
        raise ValueError(
            f"model must be a config.json path or one of {', '.join(config_names())}; got {str(name_or_path)!r}"
        )
    try:
        cfg = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"model config {path} is not valid JSON: {exc}") from None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("model_type"), str):
        raise ValueError(f"model config {path} must be a JSON object with a model_type; got {type(cfg).__name__}")
    return {k: v for k, v in cfg.items() if k not in DROPPED_KEYS}


def is_moe(cfg: dict[str, Any]) -> bool:
    return any(cfg.get(k) for k in ("num_local_experts", "num_experts", "n_routed_experts"))


def shard(cfg: dict[str, Any], tp: int) -> dict[str, Any]:
    """One tensor-parallel rank's layer (Megatron sharding): heads, KV heads (at least 1), FFN and expert widths / tp"""
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"tp must be a positive integer; got {tp!r}")
    heads = cfg["num_attention_heads"]
    if heads % tp:
        raise ValueError(f"tp must divide num_attention_heads={heads}; got {tp}")
    out = dict(cfg)
    if "kv_lora_rank" not in cfg:  # pin the head size before the head count changes (MLA sizes its heads itself)
        out["head_dim"] = cfg.get("head_dim") or cfg["hidden_size"] // heads
    out["num_attention_heads"] = heads // tp
    if "num_key_value_heads" in cfg:
        out["num_key_value_heads"] = max(1, cfg["num_key_value_heads"] // tp)
    for key in ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size"):
        if cfg.get(key):
            out[key] = cfg[key] // tp
    return out


def one_layer(cfg: dict[str, Any], dense: bool = False) -> dict[str, Any]:
    """The config of a 1-layer model whose layer 0 is the architecture's main layer (its MoE layer, if any), or with
    ``dense`` its dense layer (DeepSeek's first ``first_k_dense_replace`` layers)."""
    out = dict(cfg, num_hidden_layers=1)
    if "first_k_dense_replace" in cfg:
        out["first_k_dense_replace"] = 1 if dense else 0
    if "mlp_only_layers" in cfg:
        out["mlp_only_layers"] = [0] if dense else []
    if "decoder_sparse_step" in cfg:
        out["decoder_sparse_step"] = 1
    if "layer_types" in cfg:
        out["layer_types"] = cfg["layer_types"][:1]
    return out


def layer_kinds(cfg: dict[str, Any]) -> list[tuple[str, int, bool]]:
    """(kind, how many layers of it, dense flag for ``build_model``) of a whole model."""
    total = cfg["num_hidden_layers"]
    if not is_moe(cfg):
        return [("dense", total, False)]
    dense = min(int(cfg.get("first_k_dense_replace") or 0) + len(cfg.get("mlp_only_layers") or []), total)
    return [k for k in (("dense", dense, True), ("moe", total - dense, False)) if k[1]]


def build_model(cfg: dict[str, Any], device: str = "meta", dense: bool = False):
    """A 1-layer causal LM of ``cfg`` in bf16 with SDPA attention (grouped_mm experts for MoE), on ``device``."""
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(**one_layer(cfg, dense))
    extra = {"experts_implementation": "grouped_mm"} if is_moe(cfg) else {}
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(
            config, dtype=torch.bfloat16, attn_implementation="sdpa", **extra
        )
    return model.eval()


@dataclass(frozen=True)
class LayerCall:
    """One decoder-layer call: ``fn(*args, **kwargs)``; ``after()`` returns the KV cache to its starting length."""

    fn: Callable
    args: tuple
    kwargs: dict
    after: Callable[[], None]
    tokens: int  # tokens this call processes (batch × query length)


def _kv_dims(cfg: dict[str, Any]) -> tuple[int, int, int]:
    """(KV heads, key head dim, value head dim) the layer caches: MLA caches its compressed latent and the rotary key
    as one head each (transformers 5.x)."""
    if "kv_lora_rank" in cfg:
        return 1, cfg["kv_lora_rank"], cfg["qk_rope_head_dim"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return cfg.get("num_key_value_heads", cfg["num_attention_heads"]), hd, hd


def layer_call(model, phase: str, batch: int, seq: int, context: int = 0) -> LayerCall:
    """Layer 0 of ``model`` on ``batch`` × ``seq`` new tokens (decode: seq=1) after ``context`` cached ones."""
    import torch
    from transformers import DynamicCache

    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")
    for name, value, lo in (("batch", batch, 1), ("seq", seq, 1), ("context", context, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise ValueError(f"{name} must be an integer >= {lo}; got {value!r}")
    if phase == "prefill" and context:
        raise ValueError(f"context must be 0 for prefill (an empty cache); got {context}")
    if phase == "decode" and not context:
        raise ValueError("context must be >= 1 for decode (tokens already in the KV cache); got 0")
    cfg = model.config.to_dict()
    dev = next(model.parameters()).device
    dtype = torch.bfloat16
    mk = torch.empty if dev.type == "meta" else torch.randn
    hidden = mk(batch, seq, cfg["hidden_size"], device=dev, dtype=dtype)
    positions = torch.arange(context, context + seq, device=dev)
    position_ids = positions[None].expand(batch, -1)
    position_embeddings = model.model.rotary_emb(hidden, position_ids)
    cache = DynamicCache(config=model.config)
    if context:
        heads, dk, dv = _kv_dims(cfg)
        cache.update(
            mk(batch, heads, context, dk, device=dev, dtype=dtype),
            mk(batch, heads, context, dv, device=dev, dtype=dtype),
            0,
        )
    kwargs = {
        "attention_mask": None,
        "position_ids": position_ids,
        "past_key_values": cache,
        "use_cache": True,
        "cache_position": positions,
        "position_embeddings": position_embeddings,
    }
    return LayerCall(model.model.layers[0], (hidden,), kwargs, _restore(cache, seq), batch * seq)


def _restore(cache, seq: int) -> Callable[[], None]:
    """Return the cache to its state before the call without launching a kernel: the prefilled (contiguous) keys and
    values themselves, not a cropped view of the grown ones — a view is strided, and the next call's cat of a
    strided cache runs several times slower than decode's real cat of a contiguous one."""
    layer = cache.layers[0]
    if not getattr(layer, "is_initialized", False):
        return lambda: cache.crop(-seq)
    keys, values = layer.keys, layer.values

    def restore() -> None:
        layer.keys, layer.values = keys, values

    return restore


def functional_layer(call: LayerCall) -> tuple[Callable, list]:
    """``call`` as a pure function of tensors — parameters, buffers, its inputs and the cached keys/values — that
    returns the layer's output and the grown cache: the form ``make_fx`` traces and Inductor compiles (a KV-cache
    append is a side effect on a Python object, so the grown cache must be an output or it would be dropped as dead).
    Returns ``(fn, tensors)``; ``fn(*tensors)`` computes what ``call`` computes."""
    import torch
    from torch.utils import _pytree as pytree

    module = call.fn
    state = dict(module.named_parameters()) | dict(module.named_buffers())
    names = list(state)
    cache = call.kwargs["past_key_values"]
    layer = cache.layers[0]
    past = (layer.keys, layer.values) if getattr(layer, "is_initialized", False) else ()
    kwargs = {k: v for k, v in call.kwargs.items() if k != "past_key_values"}
    leaves, spec = pytree.tree_flatten((call.args, kwargs))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    tensors = [state[n] for n in names] + [leaves[i] for i in slots] + list(past)

    def fn(*flat):
        params = dict(zip(names, flat[: len(names)]))
        inputs = list(leaves)
        for i, t in zip(slots, flat[len(names) : len(names) + len(slots)]):
            inputs[i] = t
        before = dict(vars(layer))  # the cache as ``call`` left it: restored below, so eager calls still see it
        if past:
            layer.keys, layer.values = flat[-2], flat[-1]
        args, kw = pytree.tree_unflatten(inputs, spec)
        try:
            out = torch.func.functional_call(module, params, args, {**kw, "past_key_values": cache})
            return out, layer.keys, layer.values
        finally:
            vars(layer).clear()
            vars(layer).update(before)

    return fn, tensors
