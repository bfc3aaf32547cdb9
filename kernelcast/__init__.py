"""kernelcast: how long will this GPU kernel take? Answers from measurements, with their source."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["predict_latency", "predict_many", "Prediction", "parse_desc", "get_gpu", "list_gpus", "op_names"]


def __getattr__(name: str):
    # Lazy: `import kernelcast` stays cheap; the predictors load on first use.
    if name in ("predict_latency", "predict_many", "Prediction"):
        from kernelcast.predictors import dispatch

        return getattr(dispatch, name)
    if name == "parse_desc":
        from kernelcast.features.desc import parse_desc

        return parse_desc
    if name == "op_names":
        from kernelcast.features.ops import op_names

        return op_names
    if name in ("get_gpu", "list_gpus"):
        from kernelcast.features import gpu

        return getattr(gpu, name)
    raise AttributeError(f"module 'kernelcast' has no attribute {name!r}")
