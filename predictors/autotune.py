"""Triton's autotuner, pruned by kernelcast: a ``perf_model`` for ``triton.autotune(prune_configs_by=...)``.

Triton 3.6's ``Autotuner.prune_configs`` calls ``perf_model(**named_args, **kwargs, **config.all_kwargs())``
once per config (python/triton/runtime/autotuner.py) and benchmarks the ``top_k`` lowest; ``all_kwargs()`` is
the config's meta-parameters plus ``num_warps``, ``num_ctas``, ``num_stages`` (and ``maxnreg``,
``ir_override`` when set). The callable here maps those keyword arguments onto a kernelcast description.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernelcast.features.fields import canonical_dtype, short
from kernelcast.features.ops import get_op

#: op -> description field -> the kernel argument it is read from (Triton's matmul tutorial names for GEMM)
SHAPE_ARGS = {
    "gemm": {"m": "M", "n": "N", "k": "K"},
    "attention": {  # the fused-attention tutorial's _attn_fwd; give causal in ``fixed``
        "batch": "Z",
        "heads_q": "H",
        "heads_kv": "H",
        "seq_q": "N_CTX",
        "seq_kv": "N_CTX",
        "head_dim": "HEAD_DIM",
    },
    "moe": {},  # the fused_moe kernel's arguments are per-launch buffers: give the MoE fields in ``fixed``
}
#: op -> config key -> the kernel meta-parameter it is read from (num_warps/num_stages are Triton's own)
CONFIG_ARGS = {
    "gemm": {
        "block_m": "BLOCK_SIZE_M",
        "block_n": "BLOCK_SIZE_N",
        "block_k": "BLOCK_SIZE_K",
        "group_m": "GROUP_SIZE_M",
        "split_k": "SPLIT_K",
        "num_warps": "num_warps",
        "num_stages": "num_stages",
    },
    "attention": {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "num_warps": "num_warps", "num_stages": "num_stages"},
    "moe": {
        "block_m": "BLOCK_SIZE_M",
        "block_n": "BLOCK_SIZE_N",
        "block_k": "BLOCK_SIZE_K",
        "group_m": "GROUP_SIZE_M",
        "num_warps": "num_warps",
        "num_stages": "num_stages",
    },
}
#: config keys a kernel may leave out, and the value that means
CONFIG_DEFAULTS = {"split_k": 1}


def _dtype_of(kwargs: Mapping[str, Any]) -> str:
    """The dtype of the first tensor-like argument (anything with a ``dtype``), as kernelcast names it."""
    for value in kwargs.values():
        if hasattr(value, "dtype"):
            return canonical_dtype(value.dtype)
    raise ValueError("perf_model: no argument has a dtype; pass dtype= to triton_perf_model")


def _pick(kwargs: Mapping[str, Any], names: Mapping[str, str], what: str, defaults: Mapping[str, Any]) -> dict:
    out = {}
    for key, arg in names.items():
        if arg in kwargs:
            out[key] = kwargs[arg]
        elif key in defaults:
            out[key] = defaults[key]
        else:
            raise ValueError(
                f"perf_model: {what} {key!r} is read from kernel argument {arg!r}, which the call lacks; "
                f"arguments given: {', '.join(sorted(kwargs)) or 'none'} (map it with {what}_args=)"
            )
    return out


def triton_perf_model(
    op: str,
    gpu: str,
    *,
    dtype: str | None = None,
    fixed: Mapping[str, Any] | None = None,
    shape_args: Mapping[str, str] | None = None,
    config_args: Mapping[str, str] | None = None,
    predictor: str = "auto",
) -> Callable[..., float]:
    """A ``perf_model`` for ``triton.autotune(..., prune_configs_by={"perf_model": f, "top_k": k})``: called
    with the kernel's arguments and one config's ``all_kwargs()``, it returns kernelcast's predicted latency (µs).

    ``shape_args``/``config_args`` map description fields and config keys to kernel argument names (defaults:
    ``SHAPE_ARGS``, ``CONFIG_ARGS``); ``fixed`` gives fields directly (MoE's tokens, hidden, …); ``dtype``
    defaults to the first tensor argument's."""
    from kernelcast.predictors.dispatch import check_predictor, predict_latency

    spec = get_op(op)
    if spec.name not in CONFIG_ARGS:
        raise ValueError(f"op must be one of {', '.join(CONFIG_ARGS)} (a Triton config to predict); got {short(op)}")
    check_predictor(predictor)
    shape = dict(SHAPE_ARGS[spec.name] if shape_args is None else shape_args)
    names = dict(CONFIG_ARGS[spec.name] if config_args is None else config_args)
    base = {"op": spec.name, "gpu": gpu, "backend": "triton", **(fixed or {})}
    # a default config key the mapping leaves out (a kernel with no SPLIT_K argument runs unsplit)
    defaults = {k: v for k, v in CONFIG_DEFAULTS.items() if k in CONFIG_ARGS[spec.name]}

    def perf_model(**kwargs: Any) -> float:
        desc = {**base, **_pick(kwargs, shape, "shape", {})}
        desc["dtype"] = dtype if dtype is not None else desc.get("dtype") or _dtype_of(kwargs)
        desc["config"] = {**defaults, **_pick(kwargs, names, "config", CONFIG_DEFAULTS)}
        return predict_latency(desc, predictor).latency_us

    return perf_model


__all__ = ["CONFIG_ARGS", "SHAPE_ARGS", "triton_perf_model"]
