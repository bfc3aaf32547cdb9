"""The workload registry: ``WORKLOADS[op][backend]`` -> a Backend (supports / prepare / check)."""

from __future__ import annotations

from typing import Any

from kernelcast.features.fields import field_error
from kernelcast.features.ops import get_op

#: op -> backend name -> backend object; filled by the workload modules below at import
WORKLOADS: dict[str, dict[str, Any]] = {}


def register(op: str, backend: Any) -> Any:
    """Add a backend for ``op``; registering the same (op, name) twice raises."""
    if backend.name not in get_op(op).all_backends():
        raise ValueError(
            f"backend {backend.name!r} is not a backend of op {op!r}; allowed: " + ", ".join(get_op(op).all_backends())
        )
    table = WORKLOADS.setdefault(op, {})
    if backend.name in table:
        raise ValueError(f"backend {backend.name!r} of op {op!r} is registered twice")
    table[backend.name] = backend
    return backend


def get_backend(op: str, name: str) -> Any:
    """The registered backend, or a ValueError listing the ones that exist."""
    table = WORKLOADS.get(op, {})
    if name not in table:
        raise field_error("backend", name, f"a measurable backend of op {op!r}: " + ", ".join(sorted(table)))
    return table[name]


from kernelcast.collect.workloads import attention, conv, copy, elementwise, gemm, moe, reduction, trsm  # noqa: E402,F401 - registration
