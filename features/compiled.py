"""What Triton's compiler gave a kernelcast Triton kernel, per config, for a GPU architecture: registers per thread
and the stack frame a thread spills to (``features/compiled/<kernel>_sm<NN>.csv``).

A finite config space can be compiled once, for every config, on any host (``collect/compile_facts.py --space``):
then a description's resources are read, not estimated. The estimate (``ops.attention.triton_attention_registers``)
says *whether* a config spills for 92.6% of the measured attention classes, but not *how much*: the compiled
stack frames of spilling configs range from 8 B to 23,888 B a thread (benchmarks/RESULTS.md §26). A table
is one Triton version's answer (its ``triton`` column); a key outside it (another architecture, a config outside
the space) gets NaN and the caller falls back to its estimate."""

from __future__ import annotations

import csv
import functools
import math
from importlib import resources

import numpy as np

from kernelcast.features.common import key_codes
from kernelcast.features.gpu import get_gpu

#: the columns a table is keyed on, per kernel, in the order of the ``compiled_resources`` arguments
KEYS = {
    "triton_attention": ("dtype", "head_dim", "causal", "block_m", "block_n", "num_warps", "num_stages"),
    # (split: split_k > 1; n16, k16: n and k multiples of 16 — what Triton specializes the pointers on)
    "triton_gemm": ("layout", "block_m", "block_n", "block_k", "num_warps", "num_stages", "split", "n16", "k16"),
}
#: key columns stored as 0/1
FLAGS = {"causal", "split", "n16", "k16"}
#: what a table gives per key
VALUES = ("registers", "stack_bytes")
#: the whole key space a kernel's table is compiled over (``collect/compile_facts.py --space``): the Triton
#: attention sweeps' config values (collect/sweeps/triton_attention_*.toml), dtypes and head sizes
SPACE = {
    "triton_attention": {
        "dtype": ("bf16", "fp16"),
        "head_dim": (64, 128, 256),
        "causal": (False, True),
        "block_m": (16, 32, 64, 128),
        "block_n": (16, 32, 64, 128),
        "num_warps": (2, 4, 8),
        "num_stages": (1, 2, 3, 4),
    },
    # the Triton GEMM sweeps' config values (collect/sweeps/gemm_triton_*.toml) for single (unbatched) GEMMs; Triton
    # allocates the same registers for bf16 and fp16, any group_m and any split_k > 1 (the same stack on 2,171 of the
    # 2,173 measured classes the keys hold, 1% apart on the other two), so those are not keys. Its serving table was
    # written once every key was compiled (datasets/compile_facts/triton_gemm_space_h200.parquet): a model trained on
    # compiled figures reads an estimate in their place badly (RESULTS §38)
    "triton_gemm": {
        "layout": ("nn", "nt"),
        "block_m": (16, 32, 64, 128, 256),
        "block_n": (16, 32, 64, 128, 256),
        "block_k": (16, 32, 64, 128),
        "num_warps": (2, 4, 8),
        "num_stages": (2, 3, 4, 5, 6),
        "split": (False, True),
        "n16": (False, True),
        "k16": (False, True),
    },
}
#: the call each key of a kernel's space is compiled on (its shape does not change what Triton allocates: one
#: figure per key over every measured shape, datasets/compile_facts/)
SPACE_CALL = {
    "triton_attention": {
        "op": "attention",
        "backend": "triton",
        "batch": 1,
        "heads_q": 8,
        "heads_kv": 8,
        "seq_q": 1024,
        "seq_kv": 1024,
    },
    "triton_gemm": {"op": "gemm", "backend": "triton", "dtype": "bf16", "m": 4096, "batch": 1},
}


def table_name(kernel: str, capability: int) -> str:
    return f"{kernel}_sm{capability}.csv"


@functools.cache
def _table(kernel: str, capability: int) -> dict[tuple, tuple[float, float]] | None:
    path = resources.files("kernelcast.features").joinpath("compiled", table_name(kernel, capability))
    if not path.is_file():
        return None
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    return {_key(kernel, [r[k] for k in KEYS[kernel]]): tuple(float(r[v]) for v in VALUES) for r in rows}


def _key(kernel: str, values) -> tuple:
    """A key as the table stores it: text columns as text, booleans as 0/1, numbers as integers."""
    out = []
    for name, value in zip(KEYS[kernel], values):
        if name in ("dtype", "layout"):
            out.append(str(value))
        elif name in FLAGS:
            out.append(int(value in (True, 1, "True", "true", "1")))
        else:
            number = float(value)
            out.append(int(number) if math.isfinite(number) else -1)
    return tuple(out)


@functools.cache
def _capability(gpu: str) -> int:
    cap = get_gpu(gpu).cuda_capability
    return -1 if cap is None else cap[0] * 10 + cap[1]


def compiled_resources(kernel: str, gpu, *columns) -> tuple[np.ndarray, np.ndarray]:
    """(registers, stack bytes) per row as compiled for the row's GPU architecture; NaN where no table holds the
    row's key. ``columns``: the kernel's ``KEYS`` in order, one array (or scalar) each."""
    gpu = np.atleast_1d(np.asarray(gpu, dtype=object))
    if len(gpu) == 1:  # one row: no array of keys to build
        hit = _lookup(kernel, str(gpu[0]), [np.ravel(c)[0] for c in columns])
        return np.asarray([hit[0]]), np.asarray([hit[1]])
    n = len(gpu)
    cols = [np.broadcast_to(np.atleast_1d(np.asarray(c, dtype=object)), (n,)) for c in columns]
    codes, first = key_codes(gpu, *cols)
    found = np.asarray([_lookup(kernel, str(gpu[i]), [c[i] for c in cols]) for i in first])  # once per distinct key
    out = found[codes]
    return out[:, 0], out[:, 1]


def compiled_resource(kernel: str, gpu: str, *values) -> tuple[float, float]:
    """(registers, stack bytes) of one description (``predict_latency``'s scalar path): ``values`` the kernel's
    ``KEYS`` in order, Python values; NaN where no table holds the key."""
    return _lookup(kernel, gpu, values)


def _lookup(kernel: str, gpu: str, values) -> tuple[float, float]:
    table = _table(kernel, _capability(gpu))
    hit = None if table is None else table.get(_key(kernel, values))
    return (np.nan, np.nan) if hit is None else hit
