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
from typing import Any, NamedTuple

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
    return canonical({k: v for k, v in cfg.items() if k not in DROPPED_KEYS})


def _config_class(model_type: str):
    import transformers

    try:
        return transformers.CONFIG_MAPPING[model_type]
    except KeyError:
        raise ValueError(
            f"model_type must be an architecture transformers {transformers.__version__} knows; got {model_type!r}"
        ) from None


def _aliases(config_class: type) -> dict[str, str]:
    """A transformers config class's standard key -> its own key (GPT-2's ``hidden_size`` -> ``n_embd``)."""
    return getattr(config_class, "attribute_map", None) or {}


def canonical(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` under the standard names (hidden_size, num_attention_heads, num_hidden_layers, ...) where its
    architecture's config uses its own (GPT-2's n_embd, n_head, n_layer): the aliases of its transformers config class,
    renamed so that sharding and building read and write one key."""
    if not isinstance(cfg.get("model_type"), str):
        raise ValueError(f"model config must have a model_type string; got {cfg.get('model_type')!r}")
    text = cfg.get("text_config")
    if isinstance(text, dict) and isinstance(text.get("model_type"), str) and "num_hidden_layers" not in cfg:
        # a multimodal model (Qwen3-VL, Qwen3.5, Gemma 4, Llama 4): its language model is what decodes
        cfg = {k: v for k, v in text.items() if k not in DROPPED_KEYS}
    cfg = _by_architecture(cfg)
    text_class = (getattr(_config_class(cfg["model_type"]), "sub_configs", None) or {}).get("text_config")
    if text_class is not None and "text_config" not in cfg and "hidden_size" in cfg:
        # a multimodal model's config written flat, with its text model's fields (Step-3.7's): that text model's
        cfg = {**cfg, "model_type": text_class.model_type}
    aliases = _aliases(_config_class(cfg["model_type"]))
    out = dict(cfg)
    for standard, own in aliases.items():
        if own in out and standard not in out:
            out[standard] = out.pop(own)
    return out


def _by_architecture(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` with the model type of the transformers class its ``architectures`` names, where transformers does not
    know its own model type but has that class (Kimi-K2's ``kimi_k2`` is a ``DeepseekV3ForCausalLM``)."""
    import transformers

    if cfg["model_type"] in transformers.CONFIG_MAPPING:
        return cfg
    for name in cfg.get("architectures") or ():
        cls = getattr(transformers, name, None) if isinstance(name, str) and name.isidentifier() else None
        model_type = getattr(getattr(cls, "config_class", None), "model_type", None)
        if model_type in transformers.CONFIG_MAPPING:
            return {**cfg, "model_type": model_type}
    return cfg


def is_moe(cfg: dict[str, Any]) -> bool:
    return any(cfg.get(k) for k in ("num_local_experts", "num_experts", "n_routed_experts"))


def shard(cfg: dict[str, Any], tp: int) -> dict[str, Any]:
    """One tensor-parallel rank's layer (Megatron sharding): heads, KV heads (at least 1), FFN and expert widths / tp"""
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"tp must be a positive integer; got {tp!r}")
    if tp == 1:
        return dict(cfg)
    if isinstance(getattr(_config_class(cfg["model_type"]), "head_dim", None), property):
        raise ValueError(
            f"tp must be 1 for model_type {cfg['model_type']!r}: its config derives the head size from hidden_size / "
            f"heads, so its heads cannot be sharded; got {tp}"
        )
    heads = cfg["num_attention_heads"]
    if heads % tp:
        raise ValueError(f"tp must divide num_attention_heads={heads}; got {tp}")
    out = dict(cfg)
    if "kv_lora_rank" not in cfg:  # pin the head size before the head count changes (MLA sizes its heads itself)
        out["head_dim"] = cfg.get("head_dim") or cfg["hidden_size"] // heads
    out["num_attention_heads"] = heads // tp
    for key in ("num_key_value_heads", "num_global_key_value_heads"):  # Gemma 4's full-attention layers: the second
        if cfg.get(key):
            out[key] = max(1, cfg[key] // tp)
    for key in (
        "intermediate_size",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "moe_shared_expert_intermediate_size",  # Nemotron-H
        "intermediate_size_mlp",  # Llama 4's dense layers
    ):
        if cfg.get(key):
            out[key] = cfg[key] // tp
    return out


def one_layer(cfg: dict[str, Any], dense: bool = False, per_layer: tuple = ()) -> dict[str, Any]:
    """The config of a 1-layer model whose layer 0 is the architecture's main layer (its MoE layer, if any), or with
    ``dense`` its dense layer (DeepSeek's first ``first_k_dense_replace`` layers). ``per_layer``: (key, value) pairs
    of the config's per-layer lists for that layer (``LayerKind.per_layer``); any other per-layer list keeps its first
    entry."""
    total = cfg.get("num_hidden_layers") or hf_config(cfg).num_hidden_layers
    out = {k: v[:1] if isinstance(v, list) and len(v) == total and total > 1 else v for k, v in cfg.items()}
    out["num_hidden_layers"] = 1
    if "first_k_dense_replace" in cfg:
        out["first_k_dense_replace"] = 1 if dense else 0
    if "mlp_only_layers" in cfg:
        out["mlp_only_layers"] = [0] if dense else []
    if "decoder_sparse_step" in cfg:
        out["decoder_sparse_step"] = 1
    if "interleave_moe_layer_step" in cfg or "moe_layers" in cfg:  # Llama 4: the MoE layers' indices
        out["moe_layers"] = [] if dense else [0]
    out.update({key: [value] for key, value in per_layer})
    return out


def hf_config(cfg: dict[str, Any]):
    """``cfg`` as its transformers config object; a config transformers rejects is a ValueError saying why. Keys go
    back under the config class's own names (``canonical`` renamed them): the class migrates legacy values only
    there (Nemotron-3 Ultra's ``layers_block_type`` of "mamba" and "attention" layers)."""
    import transformers

    aliases = _aliases(_config_class(cfg["model_type"]))
    own = {aliases.get(k, k) if aliases.get(k) not in cfg else k: v for k, v in cfg.items()}
    try:
        return transformers.AutoConfig.for_model(**own)
    except (ValueError, TypeError, AttributeError) as exc:
        cause = exc.__cause__ or exc
        raise ValueError(f"model config ({cfg['model_type']}) rejected by transformers: {cause}") from None


def config_values(config) -> dict[str, Any]:
    """A transformers config's values (``to_dict``) under the standard names ``canonical`` uses."""
    standard = {own: std for std, own in _aliases(type(config)).items()}
    return {standard.get(k, k): v for k, v in config.to_dict().items()}


class LayerKind(NamedTuple):
    """Layers of a model that are built and predicted once: how many, dense or MoE, their per-layer settings."""

    name: str
    count: int
    dense: bool  # build_model's flag: the dense layer of a model whose main layer is MoE
    per_layer: tuple = ()  # (key, value) of the per-layer lists that differ between layers (layer_types, ...)


#: config lists of layer indices (not one value per layer), whatever their length: Llama 4's MoE layers
INDEX_LISTS = ("moe_layers",)


def layer_kinds(cfg: dict[str, Any]) -> list[LayerKind]:
    """The kinds of layer a whole model has, in order of first appearance: dense or MoE (DeepSeek's first
    ``first_k_dense_replace`` layers, Qwen's ``mlp_only_layers``) times the values of the config's per-layer lists
    (as transformers completes the config) that are not the same for every layer: Gemma's and GPT-OSS's sliding and
    full attention ``layer_types``, the linear-attention layers of hybrid models."""
    config = hf_config(cfg)
    full = config_values(config)
    total = getattr(config, "num_hidden_layers", None)  # a property on some (Nemotron-H: its layer list's length)
    if isinstance(total, bool) or not isinstance(total, int) or total < 1:
        raise ValueError(
            f"model config ({cfg['model_type']}) must give num_hidden_layers, its decoder's layer count (a multimodal "
            f"config: in a text_config with its own model_type); got {total!r}"
        )
    varying = [
        k
        for k, v in full.items()
        if isinstance(v, list) and len(v) == total and len({json.dumps(x) for x in v}) > 1 and k not in INDEX_LISTS
    ]
    moe = is_moe(cfg)
    first_dense = int(cfg.get("first_k_dense_replace") or 0)
    mlp_only = set(cfg.get("mlp_only_layers") or ())
    moe_only = set(full["moe_layers"]) if isinstance(full.get("moe_layers"), list) else None
    counts: dict[tuple, int] = {}
    for i in range(total):
        dense = i < first_dense or i in mlp_only or (moe_only is not None and i not in moe_only)
        key = (moe and dense, tuple((k, full[k][i]) for k in varying))
        counts[key] = counts.get(key, 0) + 1
    return [
        LayerKind(", ".join(["dense" if dense or not moe else "moe", *(str(v) for _, v in per)]), n, dense, per)
        for (dense, per), n in counts.items()
    ]


def build_model(cfg: dict[str, Any], device: str = "meta", dense: bool = False, per_layer: tuple = ()):
    """A 1-layer causal LM of ``cfg`` (a multimodal model's text model without a causal-LM class: its base model) in
    bf16 with SDPA attention (grouped_mm experts for MoE), on ``device``; an architecture transformers has no SDPA path
    for keeps its own attention (``attention_path`` says which). Where the config class fixes the last layer's kind,
    two layers, the first the kind asked for."""
    import torch
    import transformers

    small = one_layer(cfg, dense, per_layer)
    # grouped_mm experts for MoE where the architecture lets one choose (Llama 4 has its own); SDPA where it has it
    options = [{"experts_implementation": "grouped_mm"}, {}] if is_moe(cfg) else [{}]
    options = [dict(o, attn_implementation=a) for a in ("sdpa", "eager") for o in options]

    def make(config: dict[str, Any]):
        build = _model_class(_config_class(config["model_type"]))
        with torch.device(device):
            for i, extra in enumerate(options):
                try:
                    # a fresh config each try: a failed one leaves its choices on the config
                    return build(hf_config(config), dtype=torch.bfloat16, **extra)
                except ValueError as exc:
                    if i == len(options) - 1 or "does not support" not in str(exc):
                        raise
                except (KeyError, AttributeError, TypeError) as exc:  # transformers' own code on a config it lacks
                    raise ValueError(
                        f"model config ({config['model_type']}) cannot be built by transformers "
                        f"{transformers.__version__}: {type(exc).__name__}: {exc}"
                    ) from None

    two = {k: v * 2 if isinstance(v, list) and len(v) == 1 else v for k, v in small.items()}
    two["num_hidden_layers"] = 2
    lead = [(key, LEAD_KINDS[key, value]) for key, value in per_layer if (key, value) in LEAD_KINDS]
    if lead:  # a kind that reuses what an earlier layer computes: built after one, and layer 1 is the one asked for
        two.update({key: [value, value] for key, value in per_layer})
        two.update({key: [first, dict(per_layer)[key]] for key, first in lead})
        model = make(two)
        model.kernelcast_layer_index = 1
        return model.eval()
    model = make(small)
    built = config_values(model.config)
    if any(built.get(key, [value])[0] != value for key, value in per_layer):
        # the config class fixed its last (only) layer's kind (Gemma 4's last layer is full attention): two layers,
        # the first the kind asked for, the second what the class wants last
        two.update({key: [value, built[key][0]] for key, value in per_layer})
        model = make(two)
    return model.eval()


#: (per-layer key, value) of a layer kind that reuses what an earlier layer of another kind computed, and that kind:
#: GLM-5.2's "shared" sparse-attention layers take the top-k indices of the last "full" indexer layer
LEAD_KINDS = {("indexer_types", "shared"): "full"}


def layer_index(model) -> int:
    """Which decoder layer of a model ``build_model`` made is the one asked for (1 where a lead layer comes first)."""
    return getattr(model, "kernelcast_layer_index", 0)


def _model_class(kind: type) -> Callable:
    """What builds a model of config class ``kind``: its causal LM; for the text model of a multimodal one that
    transformers has no causal-LM class for (Qwen3-VL's, Step-3.7's text config), its base model — the same layers,
    rotary tables and final norm (graphs/model.py puts the LM head on it) —, through ``AutoModel`` or, where that does
    not list it either, the ``...TextModel`` class beside the ``...TextConfig``. Any other config stays with the causal
    LM's auto class, which names the config class it does not know."""
    import importlib

    import transformers

    if kind in transformers.AutoModelForCausalLM._model_mapping or not kind.__name__.endswith("TextConfig"):
        return transformers.AutoModelForCausalLM.from_config
    if kind in transformers.AutoModel._model_mapping:
        return transformers.AutoModel.from_config
    module = importlib.import_module(kind.__module__.replace(".configuration_", ".modeling_"))
    model = getattr(module, kind.__name__.removesuffix("Config") + "Model", None)
    return model._from_config if model is not None else transformers.AutoModelForCausalLM.from_config


def attention_path(model) -> str | None:
    """Why ``model``'s attention is not SDPA (None when it is): the assumption a prediction of it states."""
    impl = model.config._attn_implementation
    if impl == "sdpa":
        return None
    return (
        f"attention: transformers has no SDPA path for {type(model).__name__}; its {impl!r} attention as written "
        "(matmuls, softmax and elementwise kernels) is what runs and what is predicted"
    )


@dataclass(frozen=True)
class LayerCall:
    """One decoder-layer call: ``fn(*args, **kwargs)``; ``after()`` returns the KV cache to its starting length."""

    fn: Callable
    args: tuple
    kwargs: dict
    after: Callable[[], None]
    tokens: int  # tokens this call processes (batch × query length)
    cache_key: str = "past_key_values"  # the keyword the layer takes its KV cache by
    inputs: str = "layer"  # how its inputs were made (``INPUTS``; a fallback says why)
    cache_index: int = 0  # the layer's entry in the cache (``layer_index``)


def _decoder_layers(model) -> tuple[str, Any]:
    """(name, list) of a causal LM's decoder layers, wherever its architecture keeps them (``model.layers``, GPT-2's
    and Falcon's ``transformer.h``, OPT's ``decoder.layers``): the first non-empty ``ModuleList`` of the base model."""
    import torch

    for name, module in model.base_model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module):
            return name, module
    raise ValueError(f"model {type(model).__name__} has no list of decoder layers (no ModuleList under its base model)")


def decoder_layer(model):
    """The decoder layer asked for of a model ``build_model`` made (``layer_index``: layer 0 but after a lead)."""
    return _decoder_layers(model)[1][layer_index(model)]


def final_norm(model):
    """The norm a causal LM applies after its last layer (``model.norm``, GPT-2's ``ln_f``, OPT's
    ``final_layer_norm``): the last norm module of the base model outside its layers; None if it has none."""
    inside, _ = _decoder_layers(model)
    norms = [
        module
        for name, module in model.base_model.named_modules()
        if type(module).__name__.endswith("Norm") and not name.startswith(inside + ".")
    ]
    return norms[-1] if norms else None


#: how a layer call's inputs besides the hidden states are made: ``model``, as the model's own forward passes them to
#: its first layer (attention masks — sliding windows, chunks, a sparse indexer's causal mask —, rotary tables,
#: per-layer inputs); ``layer``, built here (no mask: SDPA's causal path; the rotary table the model computes), what
#: every layer set measured before the eighteenth session was called with
INPUTS = ("model", "layer")


def replay_inputs(recorded: Any) -> str:
    """The ``inputs`` that replay a measured layer row: what its ``layer_inputs`` says (a fallback's note dropped), or
    ``layer`` for rows without one (every layer measured before the eighteenth session)."""
    if not isinstance(recorded, str) or not recorded:
        return "layer"
    how = recorded.split()[0]
    if how not in INPUTS:
        raise ValueError(f"layer_inputs must start with one of {', '.join(INPUTS)}; got {recorded!r}")
    return how


class _Reached(Exception):
    """Raised by the hook on the layer asked for: its inputs are taken and the model's forward stops there."""


def _check_position_embeddings(model, end: int) -> None:
    """Raise where the base model's forward would look positions up to ``end`` (exclusive) in a learned position table
    (GPT-2's ``wpe``, OPT's offset one) past ``max_position_embeddings``: on a GPU that lookup is a device-side assert
    that ends the process, on the CPU an IndexError, on meta nothing — so every device refuses it alike, first."""
    import torch

    limit = getattr(model.config, "max_position_embeddings", None)
    if not isinstance(limit, int) or end <= limit:
        return
    tables = [
        m for m in model.base_model.modules()
        if isinstance(m, torch.nn.Embedding) and m is not model.get_input_embeddings() and m.num_embeddings >= limit
    ]  # fmt: skip
    if tables:
        raise ValueError(
            f"position {end - 1} is past the {limit} rows of {type(model).__name__}'s learned position "
            f"table ({type(tables[0]).__name__})"
        )


def _model_inputs(model, layer, hidden, positions, cache, cache_key: str) -> tuple[tuple, dict]:
    """(args, kwargs) the base model's forward on token ids (``hidden``'s batch and length) at ``positions`` passes to
    ``layer``: a forward pre-hook takes them and stops the forward before the layer runs. The hidden states come first
    and alone as an argument; everything else by keyword (the cache under ``cache_key``)."""
    import inspect

    import torch

    reached: dict = {}

    def take(module, args, kwargs):
        reached["bound"] = inspect.signature(module.forward).bind(*args, **kwargs)
        raise _Reached

    position_ids = positions[None].expand(hidden.shape[0], -1)
    # token ids, not embeddings: some layers route by them (DeepSeek-V4's hash-routed experts); random on a GPU
    if hidden.device.type == "meta":
        ids = torch.zeros(hidden.shape[:2], dtype=torch.long, device=hidden.device)
    else:
        ids = torch.randint(model.get_input_embeddings().num_embeddings, hidden.shape[:2], device=hidden.device)
    handle = layer.register_forward_pre_hook(take, with_kwargs=True)
    try:
        model.base_model(input_ids=ids, position_ids=position_ids, past_key_values=cache, use_cache=True)
    except _Reached:
        pass
    finally:
        handle.remove()
    if "bound" not in reached:
        raise ValueError(f"{type(model).__name__}'s forward never called the layer")
    params = inspect.signature(layer.forward).parameters
    kwargs = {}
    for name, value in reached["bound"].arguments.items():
        if params[name].kind is params[name].VAR_KEYWORD:
            kwargs.update(value)
        elif params[name].kind is not params[name].VAR_POSITIONAL:
            kwargs[name] = value
    if kwargs.get(cache_key) is not cache:
        raise ValueError(f"{type(model).__name__}'s forward did not pass the cache to the layer as {cache_key}")
    first = next(iter(params))
    return (kwargs.pop(first),), kwargs


def _layer_inputs(model, layer, hidden, positions, cache, cache_key: str) -> dict:
    """The keyword arguments of one layer call on ``hidden`` at ``positions``: the rotary embeddings where the
    architecture computes them once per model (Gemma 3 per attention type), the cache under the layer's keyword."""
    import inspect

    position_ids = positions[None].expand(hidden.shape[0], -1)
    required = [
        n
        for i, (n, p) in enumerate(inspect.signature(layer.forward).parameters.items())
        if i and p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    kwargs = {
        **dict.fromkeys(required),  # what the model computes and passes (Falcon's alibi bias): None when unused
        "attention_mask": None,
        "position_ids": position_ids,
        cache_key: cache,
        "use_cache": True,
        "cache_position": positions,
    }
    rotary = getattr(model.base_model, "rotary_emb", None)
    if rotary is not None:
        extra = {}
        wanted = inspect.signature(rotary.forward).parameters.get("layer_type")
        if wanted is not None and wanted.default is wanted.empty:  # Gemma 3: one rotary table per attention type
            extra["layer_type"] = getattr(layer, "attention_type", None) or model.config.layer_types[0]
        # multimodal RoPE (Qwen-VL, Qwen3.5) takes a row of positions per axis: a text token's are all the same
        axes = len(getattr(rotary, "mrope_section", ()))
        kwargs["position_embeddings"] = rotary(
            hidden, position_ids[None].expand(axes, -1, -1) if axes else position_ids, **extra
        )
    return kwargs


def _inputs(model, layer, hidden, positions, cache, cache_key: str, inputs: str, end: int) -> tuple[tuple, dict, str]:
    """(args, kwargs, how they were made) of one layer call (``INPUTS``). A model whose own forward cannot reach its
    first layer here (a one-layer hybrid whose only layer keeps a recurrent state has no attention layer to size its
    mask from; positions up to ``end`` past a learned position table) gets the ``layer`` inputs, and the third item
    says so."""
    if inputs == "model":
        try:
            _check_position_embeddings(model, end)
            return (*_model_inputs(model, layer, hidden, positions, cache, cache_key), "model")
        except Exception as exc:  # noqa: BLE001 - any failure of the model's own forward: the inputs built here
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            how = f"layer (the model's forward did not reach its first layer: {why[:200]})"
    else:
        how = "layer"
    return (hidden,), _layer_inputs(model, layer, hidden, positions, cache, cache_key), how


def layer_call(model, phase: str, batch: int, seq: int, context: int = 0, inputs: str = "model") -> LayerCall:
    """The decoder layer of ``model`` asked for (``layer_index``) on ``batch`` × ``seq`` new tokens (decode: seq=1)
    after ``context`` cached ones, with the other inputs made as ``inputs`` says (``INPUTS``)."""
    import inspect

    import torch
    from transformers import DynamicCache

    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {', '.join(INPUTS)}; got {inputs!r}")
    for name, value, lo in (("batch", batch, 1), ("seq", seq, 1), ("context", context, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise ValueError(f"{name} must be an integer >= {lo}; got {value!r}")
    if phase == "prefill" and context:
        raise ValueError(f"context must be 0 for prefill (an empty cache); got {context}")
    if phase == "decode" and not context:
        raise ValueError("context must be >= 1 for decode (tokens already in the KV cache); got 0")
    layer = decoder_layer(model)
    table = position_table_rows(model, layer)
    if table is not None and context + seq > table:
        raise ValueError(
            f"context + seq must be <= {table}, the rows of the position table {type(layer).__name__} indexes "
            f"(max_position_embeddings); got {context} + {seq}"
        )
    params = inspect.signature(layer.forward).parameters
    cache_key = "layer_past" if "layer_past" in params else "past_key_values"
    dev = next(model.parameters()).device
    dtype = torch.bfloat16
    mk = torch.empty if dev.type == "meta" else torch.randn
    hidden = mk(batch, seq, model.config.hidden_size, device=dev, dtype=dtype)
    cache = DynamicCache(config=model.config)
    index = layer_index(model)
    if context:
        shapes = _cached_shapes(model, layer, hidden, cache_key, inputs)
        if shapes is None:  # a recurrent layer (linear attention, SSM): fixed-size state, primed by one token
            _one_token(model, layer, hidden, cache, cache_key, inputs)
        else:
            full = {n: mk(*shape[:-2], context, shape[-1], device=dev, dtype=dtype) for n, shape in shapes.items()}
            for i in range(index + 1):  # a lead layer holds the same context (its keys are shaped alike)
                cache.update(full["keys"], full["values"], i)
                for name in shapes.keys() - {"keys", "values"}:
                    getattr(cache.layers[i], EXTRA_CACHES[name])(full[name])
    positions = torch.arange(context, context + seq, device=dev)
    args, kwargs, how = _inputs(model, layer, hidden, positions, cache, cache_key, inputs, context + seq)
    return LayerCall(layer, args, kwargs, _restore(cache, seq, index), batch * seq, cache_key, how, index)


def position_table_rows(model, layer) -> int | None:
    """Rows of a position table the layer itself indexes by position (GPT-J's sin/cos buffer of
    ``max_position_embeddings`` rows), None when it has none: positions past it are out of bounds on the GPU (a
    device-side assert that ends the process), where rotary tables computed per call have no such limit."""
    limit = getattr(model.config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    for t in (*layer.buffers(), *(v for m in layer.modules() for v in vars(m).values())):
        if hasattr(t, "shape") and getattr(t, "ndim", 0) == 2 and t.shape[0] == limit:
            return limit
    return None


def _one_token(model, layer, hidden, cache, cache_key: str, inputs: str) -> None:
    """One token through ``layer`` into ``cache`` (position 0), without gradients."""
    import torch

    one = hidden[:, :1]
    with torch.no_grad():
        args, kwargs, _ = _inputs(model, layer, one, torch.arange(1, device=one.device), cache, cache_key, inputs, 1)
        try:
            layer(*args, **kwargs)
        except (NotImplementedError, RuntimeError) as exc:  # a data-dependent op on meta tensors (an expert loop)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise ValueError(
                f"{type(layer).__name__} cannot run one token on {one.device.type} tensors to size its cache: "
                f"{type(exc).__name__}: {first[:200]} (data-dependent ops such as nonzero or .item() cannot be "
                "predicted without running them)"
            ) from None


#: what a cache layer holds per token besides its keys and values, and the method that appends to it: DSA's indexer
#: keys ((batch, tokens, index head dim): GLM-5's and DeepSeek-V3.2's sparse indexer scores every cached token)
EXTRA_CACHES = {"indexer_keys": "update_indexer"}


def _cached_shapes(model, layer, hidden, cache_key: str, inputs: str) -> dict[str, tuple[int, ...]] | None:
    """The shapes of what ``layer`` caches for one token — ``keys`` (batch, heads, 1, key dim), ``values`` alike, and
    any ``EXTRA_CACHES`` entry (its token axis second to last too): read from a one-token call into a scratch cache,
    so every architecture's own layout comes out (MQA's one head, MLA's compressed latent and rotary key). None for a
    layer that keeps a recurrent state instead of keys and values."""
    from transformers import DynamicCache

    scratch = DynamicCache(config=model.config)
    _one_token(model, layer, hidden, scratch, cache_key, inputs)
    cached = scratch.layers[layer_index(model)]
    if getattr(cached, "keys", None) is None:
        return None
    names = ("keys", "values", *(n for n in EXTRA_CACHES if getattr(cached, n, None) is not None))
    return {n: tuple(getattr(cached, n).shape) for n in names}


def _restore(cache, seq: int, index: int = 0) -> Callable[[], None]:
    """Return the cache to its state before the call without launching a kernel: the prefilled (contiguous) keys and
    values themselves, not a cropped view of the grown ones — a view is strided, and the next call's cat of a
    strided cache runs several times slower than decode's real cat of a contiguous one."""
    layer = cache.layers[index]
    if not hasattr(layer, "keys"):  # a recurrent state: its size, so the next call's cost, does not grow
        return lambda: None
    if not getattr(layer, "is_initialized", False):  # prefill: drop what the call appended, if it ran
        blank = dict(vars(layer))

        def empty() -> None:
            if getattr(layer, "keys", None) is None:
                return
            try:
                cache.crop(-seq)
            except RuntimeError:  # a sliding-window layer that filled its window cannot crop: back to blank
                vars(layer).clear()
                vars(layer).update(blank)

        return empty
    state = {n: getattr(layer, n) for n in ("keys", "values", *EXTRA_CACHES) if getattr(layer, n, None) is not None}

    def restore() -> None:
        for name, tensor in state.items():
            setattr(layer, name, tensor)

    return restore


def functional_layer(call: LayerCall) -> tuple[Callable, list]:
    """``call`` as a pure function of tensors — parameters, buffers, its inputs and the cache layer's state (an
    attention layer's keys/values, a linear-attention or Mamba layer's conv and recurrent states) — that returns the
    layer's output and the cache layer's state after the call: the form ``make_fx`` traces and Inductor compiles (a
    cache update is a side effect on a Python object, so the new state must be an output or it would be dropped as
    dead). Returns ``(fn, tensors)``; ``fn(*tensors)`` computes what ``call`` computes."""
    import torch
    from torch.utils import _pytree as pytree

    module = call.fn
    state = dict(module.named_parameters()) | dict(module.named_buffers())
    names = list(state)
    cache = call.kwargs[call.cache_key]
    layer = cache.layers[call.cache_index]
    held, held_spec = pytree.tree_flatten(dict(vars(layer)))  # the cache layer's attributes, tensors among them
    held_slots = [i for i, leaf in enumerate(held) if isinstance(leaf, torch.Tensor)]
    kwargs = {k: v for k, v in call.kwargs.items() if k != call.cache_key}
    leaves, spec = pytree.tree_flatten((call.args, kwargs))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    tensors = [state[n] for n in names] + [leaves[i] for i in slots] + [held[i] for i in held_slots]

    def fn(*flat):
        params = dict(zip(names, flat[: len(names)]))
        inputs = list(leaves)
        for i, t in zip(slots, flat[len(names) : len(names) + len(slots)]):
            inputs[i] = t
        before = dict(vars(layer))  # the cache as ``call`` left it: restored below, so eager calls still see it
        attrs = list(held)
        for i, t in zip(held_slots, flat[len(names) + len(slots) :]):
            attrs[i] = t
        vars(layer).update(pytree.tree_unflatten(attrs, held_spec))
        args, kw = pytree.tree_unflatten(inputs, spec)
        try:
            out = torch.func.functional_call(module, params, args, {**kw, call.cache_key: cache})
            # the layer's tensors only: some architectures (Falcon) also return the cache object itself
            after = [t for t in pytree.tree_leaves(dict(vars(layer))) if isinstance(t, torch.Tensor)]
            return (*(t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)), *after)
        finally:
            vars(layer).clear()
            vars(layer).update(before)

    return fn, tensors
