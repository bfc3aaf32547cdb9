"""The registered MLflow model of an op family: an ``mlflow.pyfunc`` whose ``predict`` takes a frame of kernel
descriptions and returns kernelcast's predictions, served by the same dispatch as ``predict_latency`` from its own
copy of the shipped files; with a signature read from the op registry, an input example, a description and tags."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd

from kernelcast.features.fields import BoolField, CustomField, IntField
from kernelcast.features.ops import get_op
from kernelcast.features.validate import op_field_kinds
from kernelcast.predictors.dispatch import ACHIEVED_COLUMNS, RESULT_COLUMNS, predict_many


class KernelcastModel(mlflow.pyfunc.PythonModel):
    """Latency predictions of one op family's kernels: learned where the model covers them, analytical elsewhere."""

    def __init__(self, op: str):
        self.op = op  # the op family this model answers

    def load_context(self, context) -> None:
        self.model_dir_ = context.artifacts["shipped"]

    def predict(self, context, model_input: pd.DataFrame, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
        frame = pd.DataFrame(model_input)
        if "op" in frame:
            other = frame.loc[frame["op"] != self.op, "op"]
            if len(other):
                raise ValueError(
                    f"kernel_desc['op'] must be {self.op!r} for the model kernelcast-{self.op}; got {other.iloc[0]!r}"
                )
        frame = frame.assign(op=self.op)
        return predict_many(frame, (params or {}).get("predictor", "auto"), self.model_dir_)


def _col_type(fld) -> str:
    if isinstance(fld, IntField):
        return "long"
    if isinstance(fld, BoolField):
        return "boolean"
    return "string"  # choices, GPU names, distributions, Triton configs as JSON text


def signature(op: str):
    """Input: one column per description field (required unless it has a default); output: the prediction."""
    from mlflow.models.signature import ModelSignature
    from mlflow.types.schema import ColSpec, ParamSchema, ParamSpec, Schema

    cols = [ColSpec("string", "op", required=False)]
    for name, fld in op_field_kinds(op).items():
        optional = fld.default is not None or (isinstance(fld, CustomField) and fld.optional)
        cols.append(ColSpec(_col_type(fld), name, required=not optional))
    kinds = {"bound": "string", "model": "string", "in_distribution": "boolean"}  # the rest are numbers
    out = [ColSpec(kinds.get(c, "double"), c) for c in (*RESULT_COLUMNS, *ACHIEVED_COLUMNS, *get_op(op).extras)]
    params = ParamSchema([ParamSpec("predictor", "string", "auto")])
    return ModelSignature(Schema(cols), Schema(out), params)


def input_example(op: str, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """The op's registry example on a (GPU, backend, dtype) the model covers."""
    spec = get_op(op)
    gpu, backend, dtype = manifest["covered"][0].split("|")
    example = {**spec.example, "gpu": gpu, "backend": backend, "dtype": dtype, "op": op}
    example["config"] = json.dumps(example["config"]) if "config" in example and backend == "triton" else None
    if example["config"] is None:
        del example["config"]
    return pd.DataFrame([example])


def describe(op: str, manifest: Mapping[str, Any]) -> str:
    metrics = manifest.get("metrics", {})
    mape = metrics.get("random.learned.median_ape")
    figure = f"; frozen-split median APE {100 * mape:.1f}%" if mape is not None else ""
    return (
        f"kernelcast {op}: predicts the GPU device time of {get_op(op).doc}. Input: a frame of kernel descriptions "
        f"(`kernelcast fields {op}`); output: latency_us with its 80% interval low_us/high_us, the roofline floor_us, "
        "bound, the model that answered (learned where it covers the GPU, backend and dtype, analytical "
        f"elsewhere), in_distribution and achieved rates. Trained on {manifest['n_train']:,} rows from "
        f"{', '.join(manifest['sources'])}{figure}."
    )


def tags(manifest: Mapping[str, Any]) -> dict[str, str]:
    return {
        "feature_version": str(manifest["feature_version"]),
        "data_fingerprint": manifest["data_fingerprint"],
        "gpus": ",".join(manifest["gpus"]),
        "backends": ",".join(manifest["backends"]),
        "sources": ",".join(manifest["sources"]),
    }


def log_model(
    op: str, shipped: Path, manifest: Mapping[str, Any], registered_name: str, requirements: tuple[str, ...] = ()
) -> str:
    """Log the pyfunc (its artifact: the shipped files) in the active run and register it; returns the version.
    ``requirements``: pip requirements beyond kernelcast and xgboost (the GNN's torch and torch-geometric)."""
    from importlib.metadata import version

    info = mlflow.pyfunc.log_model(
        name="model",
        python_model=KernelcastModel(op),
        artifacts={"shipped": str(shipped)},
        signature=signature(op),
        input_example=input_example(op, manifest),
        registered_model_name=registered_name,
        # what the environment needs; given, so MLflow does not load the model in a subprocess to guess it
        pip_requirements=[
            f"kernelcast=={version('kernelcast')}",
            f"xgboost-cpu=={version('xgboost-cpu')}",
            *requirements,
        ],
        metadata=tags(manifest),
    )
    number = str(info.registered_model_version)
    client = mlflow.MlflowClient()
    client.update_registered_model(registered_name, description=describe(op, manifest))
    client.update_model_version(registered_name, number, description=describe(op, manifest))
    for key, value in tags(manifest).items():
        client.set_model_version_tag(registered_name, number, key, value)
    return number


__all__ = ["KernelcastModel", "describe", "input_example", "log_model", "signature", "tags"]
