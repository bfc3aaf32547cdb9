"""Real-model layers as kernel descriptions: the GEMMs, attention and MoE of one decoder layer."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelShape:
    """The shapes of one decoder layer (public model configs; tensor parallelism divides heads/ffn)."""

    hidden: int
    heads_q: int
    heads_kv: int
    head_dim: int
    ffn: int
    experts: int = 0          # 0 = dense MLP
    top_k: int = 0
    source: str = ""


#: config.json of each model on the Hugging Face hub (hidden_size, num_attention_heads,
#: num_key_value_heads, head_dim, intermediate_size / moe_intermediate_size, experts, top-k)
MODELS = {
    "llama3-8b": ModelShape(4096, 32, 8, 128, 14336, source="meta-llama/Meta-Llama-3-8B config.json"),
    "llama3-70b": ModelShape(8192, 64, 8, 128, 28672, source="meta-llama/Meta-Llama-3-70B config.json"),
    "qwen2.5-72b": ModelShape(8192, 64, 8, 128, 29568, source="Qwen/Qwen2.5-72B config.json"),
    "mixtral-8x7b": ModelShape(4096, 32, 8, 128, 14336, 8, 2, "mistralai/Mixtral-8x7B-v0.1 config.json"),
    "qwen3-235b-a22b": ModelShape(4096, 64, 4, 128, 1536, 128, 8, "Qwen/Qwen3-235B-A22B config.json"),
}


def _model(name: str) -> ModelShape:
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}; got {name!r}")
    return MODELS[name]


def layer_descs(model: str, tokens: int, gpu: str, context: int = 0, tp: int = 1,
                dtype: str = "bf16") -> list[tuple[str, dict]]:
    """(kernel name, description) for one decoder layer processing ``tokens`` new tokens.

    Attention: one sequence, ``tokens`` queries over ``context + tokens`` keys, causal.
    Tensor parallelism ``tp`` splits heads and the FFN width, as Megatron-style TP does.
    """
    s = _model(model)
    if tp < 1 or s.heads_kv % tp and tp % s.heads_kv or s.heads_q % tp or s.ffn % tp:
        raise ValueError(f"tp must divide heads_q={s.heads_q} and ffn={s.ffn}; got {tp!r}")
    hq, hkv, ffn = s.heads_q // tp, max(1, s.heads_kv // tp), s.ffn // tp
    common = {"gpu": gpu, "dtype": dtype}
    gemm = {"op": "gemm", "backend": "cublas", "layout": "nt", "m": tokens, **common}
    out = [
        ("qkv_proj", {**gemm, "n": (hq + 2 * hkv) * s.head_dim, "k": s.hidden}),
        ("attention", {"op": "attention", "backend": "flash", "batch": 1, "heads_q": hq, "heads_kv": hkv,
                       "seq_q": tokens, "seq_kv": context + tokens, "head_dim": s.head_dim, "causal": True,
                       **common}),
        ("o_proj", {**gemm, "n": s.hidden, "k": hq * s.head_dim}),
    ]
    if s.experts:
        out.append(("moe_experts", {"op": "moe", "backend": "torch", "tokens": tokens, "hidden": s.hidden,
                                    "ffn": ffn, "experts": s.experts, "top_k": s.top_k, **common}))
    else:
        out += [("gate_up_proj", {**gemm, "n": 2 * ffn, "k": s.hidden}),
                ("down_proj", {**gemm, "n": s.hidden, "k": ffn})]
    return out
