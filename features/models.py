"""Real models' layer shapes (``features/models.toml``): the kernels of one decoder layer, split by tensor parallelism.

The sweeps read these shapes to measure real-model GEMMs, attention and MoE experts; ``kernelcast layer``
reads them to predict a layer. Both go through ``split_layer`` so a shape means the same in both.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tomllib

MODELS_FILE = Path(__file__).with_name("models.toml")
#: the fused-MoE Triton config ``model_layer`` describes (vLLM's default shape class for bf16)
LAYER_MOE_CONFIG = {"block_m": 64, "block_n": 64, "block_k": 32, "group_m": 8, "num_warps": 4, "num_stages": 3}


@functools.cache
def models_data() -> dict:
    return tomllib.loads(MODELS_FILE.read_text())


def model_names() -> list[str]:
    return list(models_data())


def split_layer(model: str, layer: list, tp: int, info: dict) -> tuple[int, int] | str:
    """(n, k) of one linear layer under tensor parallelism ``tp``, or why ``tp`` does not divide it.

    ``layer`` is ``[name, n, k, how]``: ``how`` = ``n`` (column-parallel; ``qkv`` keeps at least one KV head
    per rank), ``k`` (row-parallel) or ``none`` (replicated).
    """
    if not (isinstance(layer, list) and len(layer) == 4 and layer[3] in ("n", "k", "none")):
        raise ValueError(
            f"{MODELS_FILE.name}: models.{model}.linear entries must be [name, n, k, 'n'|'k'|'none']; got {layer!r}"
        )
    name, n, k, how = layer
    if how == "n":
        if name == "qkv":
            kv = max(1, info["heads_kv"] // tp)
            return (info["heads_q"] // tp + 2 * kv) * info["head_dim"], k
        return (n // tp, k) if n % tp == 0 else f"{model}.{name}: n={n} not divisible by tp={tp}"
    if how == "k":
        return (n, k // tp) if k % tp == 0 else f"{model}.{name}: k={k} not divisible by tp={tp}"
    return n, k


def model_layer(
    model: str, tokens: int, gpu: str, context: int = 0, tp: int = 1, dtype: str = "bf16"
) -> list[tuple[str, dict]]:
    """Every kernel of one decoder layer of a ``models.toml`` model, as (layer name, description).

    ``tokens`` new tokens of one sequence attend causally to ``context + tokens`` keys; tensor
    parallelism ``tp`` splits layers as the sweeps do (column/row-parallel). Layers the sizes
    cannot express (MLA attention, a width tp does not divide) raise ``ValueError`` with the reason.
    """
    data = models_data()
    if model not in data:
        raise ValueError(f"model must be one of {', '.join(data)}; got {model!r}")
    info = data[model]
    common = {"gpu": gpu, "dtype": dtype}
    out = []
    for layer in info.get("linear", []):
        shape = split_layer(model, layer, tp, info)
        if isinstance(shape, str):
            raise ValueError(f"tp={tp} does not fit {shape}")
        out.append(
            (
                layer[0],
                {
                    "op": "gemm",
                    "backend": "cublas",
                    "layout": "nt",
                    "m": tokens,
                    "n": shape[0],
                    "k": shape[1],
                    **common,
                },
            )
        )
    if "heads_q" in info:
        out.insert(
            1,
            (
                "attention",
                {
                    "op": "attention",
                    "backend": "flash",
                    "batch": 1,
                    "heads_q": info["heads_q"] // tp,
                    "heads_kv": max(1, info["heads_kv"] // tp),
                    "head_dim": info["head_dim"],
                    "seq_q": tokens,
                    "seq_kv": context + tokens,
                    "causal": True,
                    **common,
                },
            ),
        )
    if "moe" in info:
        moe = info["moe"]
        out.append(
            (
                "experts",
                {
                    "op": "moe",
                    "backend": "triton",
                    "tokens": tokens,
                    "hidden": info["hidden"],
                    "ffn": moe["ffn"] // tp,
                    "experts": moe["experts"],
                    "top_k": moe["top_k"],
                    "config": LAYER_MOE_CONFIG,
                    **common,
                },
            )
        )
    return out


def _gemm_points(base, model, info, tp, tokens, kind, batches, seqs):
    tags = {"model": model, "tp": tp}
    for layer in info.get("linear", []):
        shape = split_layer(model, layer, tp, info)
        point = {**base, "m": tokens}
        yield (
            (point, shape)
            if isinstance(shape, str)
            else ({**point, "n": shape[0], "k": shape[1]}, {**tags, "layer": layer[0]})
        )


def _attention_points(base, model, info, tp, tokens, kind, batches, seqs):
    if "attention" in info:  # a layer the fields cannot express (MLA): its reason
        yield {**base, "model": model}, f"{model}: {info['attention']}"
        return
    heads_q, heads_kv = info["heads_q"] // tp, max(1, info["heads_kv"] // tp)
    for batch, seq in itertools.product(batches, seqs):
        point = {
            **base,
            "batch": batch,
            "heads_q": heads_q,
            "heads_kv": heads_kv,
            "head_dim": info["head_dim"],
            "seq_q": seq if kind == "prefill" else 1,
            "seq_kv": seq,
            "causal": kind == "prefill",
        }
        yield point, {"model": model, "tp": tp, "layer": f"attention_{kind}"}


def _moe_points(base, model, info, tp, tokens, kind, batches, seqs):
    if "moe" not in info:
        yield {**base, "model": model}, f"{model} has no MoE layers"
        return
    moe = info["moe"]
    if moe["ffn"] % tp:
        yield {**base, "model": model}, f"{model}: expert ffn={moe['ffn']} not divisible by tp={tp}"
        return
    point = {
        **base,
        "tokens": tokens,
        "hidden": info["hidden"],
        "ffn": moe["ffn"] // tp,
        "experts": moe["experts"],
        "top_k": moe["top_k"],
    }
    yield point, {"model": model, "tp": tp, "layer": "experts"}


#: the op families a decoder layer's shapes come in, and how a model's entry turns into their points
_POINTS = {"gemm": _gemm_points, "attention": _attention_points, "moe": _moe_points}
MODEL_OPS = tuple(_POINTS)


def model_points(
    base: dict, model: str, tp: int, tokens: int, kind: str = "prefill", batches=(1,), seqs=None
) -> Iterator[tuple[dict, Any]]:
    """The sweep points of one real model's layers of op ``base["op"]``: (point, tags), or (point, why not)."""
    info = models_data()[model]
    yield from _POINTS[base["op"]](base, model, info, tp, tokens, kind, batches, list(seqs or [tokens]))
