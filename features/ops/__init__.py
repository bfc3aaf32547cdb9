"""The op-family registry: one ``OpSpec`` per family, each defined in its own module of this package.

Everything op-specific lives in the family's module: fields and validation rules, FLOPs, minimum
bytes and floors, feature columns, the analytical model's efficiency assumptions, the learned
model's categories, range columns and training parameters. Shared code (the description parser,
the frame validator, the predictors, training, the sweeps) asks the registry and never branches
on an op's name. Adding a family is adding a module that calls ``register``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernelcast.features.fields import ABSENT, CustomField, Field, Rule

Columns = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class OpSpec:
    """One op family: what a description of it holds and everything the predictors need to know about it."""

    name: str
    doc: str  # one line: what the op computes
    fields: Mapping[str, Field]  # op-specific fields, validated in this order after gpu/dtype/backend
    dtypes: tuple[str, ...]
    backends: tuple[str, ...]  # the backends learned models may have rows of (one one-hot column each)
    features: Callable[[Columns, Columns], dict]  # (description columns, gpu columns) -> named numbers incl. floor_us
    analytical: Callable[[Columns, Mapping[str, np.ndarray]], tuple[np.ndarray, np.ndarray]]  # -> (latency_us, bound)
    analytical_assumptions: str  # what the analytical answer assumes, said with every answer
    flops: Callable[[Columns], np.ndarray]  # FLOPs of each row, from description fields only
    example: Mapping[str, Any]  # one valid description (gpu excluded): feature names are read off it
    rules: tuple[Rule, ...] = ()  # cross-field checks, after the fields
    triton_config: Field | None = None  # the config field (a Triton config spec) — None: config is free-form
    learned_features: Callable[[Columns, Columns, Mapping], dict] | None = None  # what only the learned model reads
    scale: Callable[[Mapping[str, np.ndarray]], np.ndarray] | None = (
        None  # learned target's scale (default: floor + one kernel)
    )
    categorical: tuple[str, ...] = (
        "backend",
        "dtype",
        "source",
    )  # description columns one-hot encoded for the learned model
    range_columns: tuple[str, ...] = ()  # fields whose trained range bounds a learned model's coverage
    size_feature: str = "flops"  # the size the extrapolation split holds the top of
    train_params: Mapping[str, Any] = field(
        default_factory=dict
    )  # LatencyRegressor overrides, with their reason in the module
    checks_dtype_on_gpu: bool = True  # compute ops need the GPU to have units for the dtype
    derived: Callable[[Columns], dict] | None = None  # extra columns the rules read (e.g. element bytes)
    extras: Mapping[str, str] = field(default_factory=dict)  # numbers every answer carries: name -> feature
    #: features, learned_features and scale are written in ``features.num``: one description's Python numbers in, its
    #: Python numbers out (``predict_latency``'s fast path), as well as columns
    scalar_features: bool = False
    #: the learned model answers a GPU no row of a (backend, dtype) was measured on only where one of the same compute
    #: capability was (``predictors/unseen.py``): for families whose library kernels differ per architecture in ways the
    #: leave-one-GPU-out study over the outside tables' native kernels does not see, and for families measured on one
    #: GPU, validated on another of its architecture only
    unseen_same_arch: bool = False
    #: backends a description may name that no training row holds yet: answered analytically, no one-hot column (a
    #: model's columns stay as trained); measured and trained, one moves into ``backends``
    unmeasured_backends: tuple[str, ...] = ()
    desc_type: type = None  # the frozen description class (made by ``register``)

    def all_backends(self) -> tuple[str, ...]:
        """Every backend a description of this op may name: the learned ones, then the unmeasured ones."""
        return self.backends + self.unmeasured_backends

    def all_fields(self) -> tuple[str, ...]:
        """Every key a description of this op may carry (``op`` included), in order."""
        return ("op", "gpu", "dtype", "backend", *self.fields, "config")


_REGISTRY: dict[str, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    """Add an op family (its description class is made here); registering a name twice raises."""
    from kernelcast.features.desc import make_desc_type

    if spec.name in _REGISTRY:
        raise ValueError(f"op family {spec.name!r} is already registered")
    reserved = {"op", "gpu", "dtype", "backend", "config"} & set(spec.fields)
    if reserved:
        raise ValueError(f"op family {spec.name!r}: fields {sorted(reserved)} are common to every op")
    spec = dataclasses.replace(spec, desc_type=make_desc_type(spec))
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove an op family (tests that register a toy family clean up with this)."""
    _REGISTRY.pop(name, None)


#: the built-in families, in the order users read them; families registered later follow in registration order
BUILTIN = ("gemm", "attention", "moe", "collective", "elementwise", "reduction", "copy", "fused", "trsm", "conv")


def op_names() -> tuple[str, ...]:
    _load_builtin()
    order = {name: i for i, name in enumerate(_REGISTRY)}
    return tuple(sorted(_REGISTRY, key=lambda n: (BUILTIN.index(n) if n in BUILTIN else len(BUILTIN), order[n])))


def get_op(name: Any) -> OpSpec:
    """The spec of an op family; an unknown name is a ValueError listing the registered ones."""
    _load_builtin()
    spec = _REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        from kernelcast.features.fields import field_error

        raise field_error("op", name, "one of " + ", ".join(op_names()))
    return spec


_LOADED = False


def _load_builtin() -> None:
    """Import the built-in families once (each module registers itself)."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        import importlib

        for name in BUILTIN:
            importlib.import_module(f"kernelcast.features.ops.{name}")


__all__ = ["ABSENT", "Columns", "CustomField", "OpSpec", "get_op", "op_names", "register", "unregister"]
