"""Memory movement of eager layers: copies (contiguous and strided, e.g. a transpose made contiguous), cat, gathers
(index_select, embedding) and scatter-adds (index_add_, as MoE loops combine experts). ``elements`` moved, in
contiguous runs of ``run`` elements.

A cat with a piece that is a strided view (a slice of a fused QKV projection, a transposed key) is
``contiguous=False``: torch's cat then runs one element per thread, computing each element's offsets by a division
per dimension of the ``dims``-rank tensors, one grid row per piece over a fixed number of blocks — so the
``largest`` piece bounds the kernel (a decode step's key append: the whole cache and one new token)."""

from __future__ import annotations

import functools
import math

import numpy as np

from kernelcast.features.common import (
    WARM_BYTES,
    lookup,
    stream_assumptions,
    stream_features,
    stream_latency,
    stream_learned_features,
    warm_features,
)
from kernelcast.features.fields import MAX_ELEMENTS, BoolField, ChoiceField, IntField, Rule
from kernelcast.features.ops import OpSpec, register

FNS = ("copy", "cat", "gather", "scatter_add")
INDEXED = ("gather", "scatter_add")


def _default_run(c) -> np.ndarray:
    return np.asarray(c["elements"], dtype=np.int64)


def _default_largest(c) -> np.ndarray:
    return np.asarray(c["elements"], dtype=np.int64) // np.asarray(c["inputs"], dtype=np.int64)


def _default_table(c) -> np.ndarray:
    return np.asarray(c["elements"], dtype=np.int64) // np.asarray(c["run"], dtype=np.int64)


def split_runs(runs: int) -> tuple[int, int]:
    """runs = a·b with a the largest divisor not above sqrt(runs): the row length and row count of the layout a strided
    copy's ``stride`` defaults to (every sweep before the field existed measured it)."""
    a = math.isqrt(runs)
    while runs % a:
        a -= 1
    return a, runs // a


@functools.lru_cache(maxsize=65536)
def default_stride(distinct: int, run: int) -> int:
    """The stride of ``distinct`` elements in runs of ``run`` read as ``split_runs`` lays them out."""
    runs = distinct // run
    return run * (split_runs(runs)[1] if runs > 1 else 1)


def _default_stride(c) -> np.ndarray:
    """A source [a, b, run] read transposed: consecutive runs ``b·run`` apart (``split_runs`` of the distinct runs)."""
    distinct = np.atleast_1d(np.asarray(c["elements"], dtype=np.int64)) // np.atleast_1d(_expand(c).astype(np.int64))
    run = np.broadcast_to(np.asarray(c["run"], dtype=np.int64), distinct.shape)
    return np.array([default_stride(int(d), int(r)) for d, r in zip(distinct, run)], dtype=np.int64)


def _stride_ok(c) -> np.ndarray:
    """A copy's stride is at least its run (runs do not overlap); any other fn has no such layout and keeps the
    default, which is computed for those rows alone (a copy row never needs it)."""
    fn = np.atleast_1d(np.asarray(c["fn"], dtype=object))
    keys = ("elements", "run", "expand", "stride")
    col = {k: np.broadcast_to(np.atleast_1d(np.asarray(c[k])), fn.shape) for k in keys}
    ok = (fn == "copy") & (col["stride"] >= col["run"])
    other = fn != "copy"
    if other.any():
        ok[other] = col["stride"][other] == _default_stride({**{k: v[other] for k, v in col.items()}, "fn": fn[other]})
    return ok


def row_runs(cols) -> np.ndarray:
    """Runs a copy writes before its source comes back next to where it started: distinct elements over ``stride``
    (at least 1). A transposed source's sectors are shared by neighbouring rows, so a row short enough for one block
    finds them in L1, and a long one (a multi-query model's expanded key: rows of a whole context) goes to L2 for
    every run."""
    distinct = np.asarray(cols["elements"], dtype=np.float64) / _expand(cols)
    return np.maximum(distinct / np.asarray(cols["stride"], dtype=np.float64), 1.0)


def _expand(cols) -> np.ndarray:
    return np.asarray(cols["expand"], dtype=np.float64) if "expand" in cols else np.ones(len(np.atleast_1d(cols["fn"])))


def copy_bytes(cols) -> np.ndarray:
    """Read and write every element (a source that repeats, ``expand``, is read as often: the repeats after the first
    find it in L2, what ``log_expand`` leaves the learned model to weigh); an indexed op also reads one int64 index per
    run, and a scatter-add reads the rows it adds into."""
    e = np.asarray(cols["elements"], dtype=np.float64)
    b = lookup(cols["dtype"], "bytes")
    fn = np.asarray(cols["fn"], dtype=object)
    runs = e / np.asarray(cols["run"], dtype=np.float64)
    return 2 * e * b + np.isin(fn, INDEXED) * runs * 8 + (fn == "scatter_add") * e * b


def copy_flops(cols) -> np.ndarray:
    fn = np.asarray(cols["fn"], dtype=object)
    return (fn == "scatter_add") * np.asarray(cols["elements"], dtype=np.float64)


def copy_features(cols, gpu) -> dict[str, np.ndarray]:
    e = np.asarray(cols["elements"], dtype=np.float64)
    run = np.asarray(cols["run"], dtype=np.float64)
    b = lookup(cols["dtype"], "bytes")
    table = np.asarray(cols["table_rows"], dtype=np.float64)
    nbytes = copy_bytes(cols)
    largest = np.asarray(cols["largest"], dtype=np.float64)
    is_copy = np.asarray(cols["fn"], dtype=object) == "copy"
    return {
        **stream_features(nbytes, e, copy_flops(cols), gpu),
        **warm_features(cols, nbytes, gpu),
        "log_run": np.log2(run),
        "log_expand": np.log2(_expand(cols)),
        # a plain copy's layout; a cat, gather or scatter-add has none (their own fields say it): held at one row of
        # contiguous runs, so what strided copies teach does not leak into them
        "log_row_runs": np.where(is_copy, np.log2(row_runs(cols)), 0.0),
        "log_stride_bytes": np.log2(np.where(is_copy, np.asarray(cols["stride"], dtype=np.float64), run) * b),
        "log_run_bytes": np.log2(run * b),
        "log_runs": np.log2(e / run),
        "run_16b_aligned": ((run * b) % 16 == 0).astype(np.float64),
        "elem_bytes": b,
        "pieces": np.asarray(cols["inputs"], dtype=np.float64),
        "log_table_rows": np.log2(table),
        "table_fits_l2": (table * run * b <= gpu["l2_bytes"]).astype(np.float64),
        "contiguous": np.asarray(cols["contiguous"], dtype=np.float64),
        "dims": np.asarray(cols["dims"], dtype=np.float64),
        "log_largest": np.log2(largest),
        "largest_share": largest / e,
        # the strided path's threads are fixed per piece: the largest piece's elements per SM bound it
        "log_largest_per_sm": np.log2(largest / gpu["sm_count"]),
    }


SPEC = register(
    OpSpec(
        name="copy",
        doc="memory movement: copy (contiguous or strided), cat of `inputs` pieces, gather (index_select/embedding) "
        "and scatter_add (index_add_) of rows; `elements` moved in contiguous runs of `run` elements; a cat with a "
        "strided piece is contiguous=false, its tensors of rank `dims`, its `largest` piece's elements; a copy of a "
        "source broadcast along a dim writes each distinct element `expand` times; a strided copy's consecutive runs "
        "sit `stride` elements apart in its source",
        fields={
            "elements": IntField(1, MAX_ELEMENTS),
            "fn": ChoiceField(FNS),
            "run": IntField(1, MAX_ELEMENTS, default=_default_run),
            "inputs": IntField(1, 4096, default=1),
            "table_rows": IntField(1, MAX_ELEMENTS, default=_default_table),
            "contiguous": BoolField(default=True),
            "dims": IntField(1, 4, default=2),
            "largest": IntField(1, MAX_ELEMENTS, default=_default_largest),
            # a copy of a source that repeats along a stride-0 dim (transformers' repeat_kv, an expanded K or V made
            # contiguous): each distinct element written `expand` times in a row, in blocks of its source's runs
            "expand": IntField(1, 1 << 16, default=1),
            # a strided copy: source elements between the starts of consecutive runs of its output (a transpose of
            # [s, h, d] to [h, s, d]: h·d); unset, the layout every sweep before it measured (``_default_stride``)
            "stride": IntField(1, MAX_ELEMENTS, default=_default_stride),
            "warm_bytes": WARM_BYTES,
        },
        dtypes=("fp32", "bf16", "fp16", "fp8_e4m3", "int64", "int32", "bool"),
        backends=("torch",),
        rules=(
            Rule(
                "run",
                lambda c: (c["run"] <= c["elements"]) & (c["elements"] % c["run"] == 0),
                lambda c: f"a divisor of elements={c['elements']} (elements move in runs of `run`)",
            ),
            Rule(
                "inputs",
                lambda c: (c["fn"] == "cat") | (c["inputs"] == 1),
                lambda c: f"1 unless fn is 'cat' (fn={c['fn']!r})",
            ),
            Rule(
                "contiguous",
                lambda c: (c["fn"] == "cat") | np.asarray(c["contiguous"], dtype=bool),
                lambda c: f"true unless fn is 'cat' (a strided copy is its `run`; fn={c['fn']!r})",
            ),
            Rule(
                "expand",
                lambda c: (c["expand"] == 1) | ((c["fn"] == "copy") & (c["elements"] % (c["expand"] * c["run"]) == 0)),
                lambda c: (
                    f"1 unless fn is 'copy' (fn={c['fn']!r}); then a divisor of elements/run="
                    f"{c['elements'] // c['run']} (the source's distinct elements move in whole runs)"
                ),
            ),
            Rule(
                "stride",
                _stride_ok,
                lambda c: (
                    f"at least run={c['run']} for a copy (runs do not overlap in the source), and unset unless fn is "
                    f"'copy' (fn={c['fn']!r})"
                ),
            ),
            Rule(
                "largest",
                lambda c: (c["largest"] <= c["elements"]) & (c["largest"] * c["inputs"] >= c["elements"]),
                lambda c: (
                    f"the largest piece's elements, between elements/inputs={c['elements'] // c['inputs']} "
                    f"and elements={c['elements']}"
                ),
            ),
        ),
        checks_dtype_on_gpu=False,
        features=copy_features,
        learned_features=stream_learned_features,
        flops=copy_flops,
        analytical=stream_latency,
        analytical_assumptions=stream_assumptions("read + write"),
        example={"elements": 1 << 20, "fn": "copy", "run": 128, "dtype": "bf16", "backend": "torch"},
        categorical=("backend", "dtype", "source", "fn"),
        range_columns=("elements",),
        size_feature="bytes",
        # its kernels were measured on the H200 only: another Hopper GPU's test rows (the H100's) say the learned answer
        # from the GPU's spec beats the roofline there (``predictors/models/<op>.unseen.json``); other architectures
        # keep the analytical answer
        unseen_same_arch=True,
    )
)
CopyDesc = SPEC.desc_type
