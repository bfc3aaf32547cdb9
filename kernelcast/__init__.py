"""kernelcast: how long will this GPU kernel take? Answers from measurements, with their source."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = [
    "predict_latency",
    "predict_many",
    "Prediction",
    "parse_desc",
    "get_gpu",
    "list_gpus",
    "op_names",
    "predict_module",
    "predict_model",
    "analyze_trace",
    "rank_configs",
    "triton_perf_model",
]


def __getattr__(name: str):
    # Lazy: `import kernelcast` stays cheap; the predictors load on first use.
    if name in ("predict_latency", "predict_many", "Prediction"):
        from kernelcast.predictors import dispatch

        return getattr(dispatch, name)
    if name == "rank_configs":
        from kernelcast.predictors.configs import rank_configs

        return rank_configs
    if name == "triton_perf_model":
        from kernelcast.predictors.autotune import triton_perf_model

        return triton_perf_model
    if name == "parse_desc":
        from kernelcast.features.desc import parse_desc

        return parse_desc
    if name == "op_names":
        from kernelcast.features.ops import op_names

        return op_names
    if name == "predict_module":
        from kernelcast.graphs.predict import predict_module

        return predict_module
    if name == "predict_model":
        from kernelcast.graphs.model import predict_model

        return predict_model
    if name == "analyze_trace":
        from kernelcast.graphs.trace import analyze

        return analyze
    if name in ("get_gpu", "list_gpus"):
        from kernelcast.features import gpu

        return getattr(gpu, name)
    raise AttributeError(f"module 'kernelcast' has no attribute {name!r}")
