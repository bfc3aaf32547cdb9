"""From captured aten ops to kernel descriptions: which ops launch kernels on a GPU, and what each kernel is.

Views, reshapes, splits and allocations launch nothing. A GEMM op is one cuBLAS GEMM; SDPA is the backend torch
picks on that GPU; pointwise ops are ``elementwise`` kernels, reductions and norms ``reduction`` kernels, copies, cats,
gathers and scatters ``copy`` kernels. An op kernelcast cannot map is kept as a row with its aten name and the
reason, never dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kernelcast.features.fields import DTYPE_BYTES, canonical_dtype
from kernelcast.features.gpu import get_gpu
from kernelcast.features.ops.moe import DISTRIBUTION_RE
from kernelcast.graphs.capture import FUSED_MAX_HEAD_DIM, OpRecord, TensorMeta

#: aten ops that launch no kernel: views, metadata changes, allocations
NO_KERNEL = frozenset(
    "view _unsafe_view reshape _reshape_alias transpose permute t expand expand_as slice select split "
    "split_with_sizes unsqueeze squeeze as_strided alias detach unbind chunk narrow empty empty_like empty_strided "
    "new_empty new_empty_strided lift_fresh unflatten flatten view_as_real view_as_complex movedim diagonal "
    "unfold _local_scalar_dense sym_size sym_stride sym_numel set_ resize_ _to_dense "
    # a Python number torch wraps as a 0-dim tensor (where(c, x, 0.5)): made on the host, no kernel
    "scalar_tensor".split()
)
#: aten pointwise op -> elementwise fn
POINTWISE = {
    **dict.fromkeys(("add", "add_"), "add"),
    **dict.fromkeys(("sub", "sub_", "rsub"), "sub"),
    **dict.fromkeys(("mul", "mul_"), "mul"),
    **dict.fromkeys(("div", "div_", "reciprocal", "reciprocal_", "floor_divide", "remainder", "fmod"), "div"),
    **dict.fromkeys(("neg", "neg_"), "neg"),
    **dict.fromkeys(("abs", "abs_"), "abs"),
    # rounding: a cheap unary as abs is (one read, one write, one instruction; Llama 4's attention temperature)
    **dict.fromkeys("floor floor_ ceil ceil_ round round_ trunc trunc_".split(), "abs"),
    **dict.fromkeys("clamp clamp_ clamp_min clamp_max relu relu_ hardtanh maximum minimum fmax fmin".split(), "clamp"),
    **dict.fromkeys(("where", "masked_fill", "masked_fill_"), "where"),
    **dict.fromkeys(("exp", "exp_"), "exp"),
    **dict.fromkeys(("log", "log_", "log1p"), "log"),
    **dict.fromkeys(("sqrt", "sqrt_"), "sqrt"),
    **dict.fromkeys(("rsqrt", "rsqrt_"), "rsqrt"),
    **dict.fromkeys(("pow", "pow_"), "pow"),
    **dict.fromkeys(("sigmoid", "sigmoid_"), "sigmoid"),
    **dict.fromkeys(("silu", "silu_"), "silu"),
    **dict.fromkeys(("gelu", "gelu_", "erf"), "gelu"),
    **dict.fromkeys(("tanh", "tanh_"), "tanh"),
    "sin": "sin",
    "cos": "cos",
    **dict.fromkeys(
        "gt lt ge le eq ne logical_not logical_and logical_or bitwise_and bitwise_or bitwise_not isnan isinf isneginf "
        "isposinf".split(),
        "compare",
    ),
    # a triangle of a matrix kept, the rest zeroed: one read, one write and a compare per element, as where's
    **dict.fromkeys(("tril", "tril_", "triu", "triu_"), "where"),
    # log(1 + exp(x)): a transcendental unary, as log's
    "softplus": "log",
    **dict.fromkeys(
        "fill fill_ zero_ zeros zeros_like ones ones_like full full_like new_zeros new_ones new_full arange".split(),
        "fill",
    ),
}
REDUCTIONS = {
    "sum": "sum",
    "mean": "mean",
    "amax": "amax",
    # amin is amax's kernel (reduce_kernel over MinOps instead of MaxOps, same launch): the amax model predicts the
    # 319 measured amin rows at 1.8% median APE, and its training box is the wider one (amin was never measured over a
    # middle dim, nor past 63,470 rows or 27,727 wide)
    "amin": "amax",
    "argmax": "argmax",
    "argmin": "argmax",
    "max": "amax",
    "min": "amax",
    "var": "var",
    "std": "var",
    "linalg_vector_norm": "norm",
    "_softmax": "softmax",
    "_log_softmax": "log_softmax",
    "native_layer_norm": "layer_norm",
    "_fused_rms_norm": "rms_norm",
    "rms_norm": "rms_norm",
    "cumsum": "cumsum",
    "sort": "sort",
    "topk": "topk",
    "histc": "sum",
    "bincount": "sum",
    # logical and/or over a dim: reduce_kernel over bools, amax's launch
    "all": "amax",
    "any": "amax",
}
GEMMS = ("mm", "addmm", "bmm", "baddbmm", "_grouped_mm", "mv", "addmv", "_scaled_mm")
COPIES = (
    "clone",
    "copy_",
    "_to_copy",
    "cat",
    "index",
    "index_select",
    "embedding",
    "gather",
    "index_add",
    "index_add_",
    "index_put",
    "index_put_",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "repeat",
    "stack",
    "constant_pad_nd",
)


@dataclass(frozen=True)
class Lowered:
    """What one captured op becomes: kernel descriptions (none for a view), or the reason it is unmapped."""

    op: str
    descs: tuple[dict, ...] = ()
    unmapped: str = ""  # why no description could be made (the op still launches a kernel on a GPU)
    assumption: str = ""  # what the mapping assumed (balanced routing, unmasked attention, …)


def base_name(name: str) -> str:
    return name.split(".")[1] if name.startswith("aten.") else name


def tensor_args(x: Any) -> list[TensorMeta]:
    """Every tensor in an op's arguments, lists and dicts flattened, in order."""
    if isinstance(x, TensorMeta):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in tensor_args(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in tensor_args(v)]
    return []


def _dtype(meta: TensorMeta) -> str:
    return canonical_dtype(meta.dtype)


def _dense_order(t: TensorMeta) -> tuple[int, ...] | None:
    """The dims of ``t`` from outermost to innermost in memory when its elements are packed without gaps or overlap
    (contiguous, or a permutation of it: a transpose), None when they are not (a slice, a chunk, a stride step). Dims
    count from the last (-1 innermost), as broadcasting aligns operands: a weight [n] and an activation [1, 1, n] share
    one order."""
    dims = sorted((i for i, n in enumerate(t.shape) if n > 1), key=lambda i: (t.stride[i], i), reverse=True)
    expected = 1
    for i in reversed(dims):
        if t.stride[i] != expected:
            return None
        expected *= t.shape[i]
    return tuple(i - len(t.shape) for i in dims)


def _one_dense_order(tensors: list[TensorMeta]) -> bool:
    """Whether torch's vectorized pointwise kernel takes these operands: each dense, all in one memory order."""
    orders = {_dense_order(t) for t in tensors if t.numel > 1}
    return None not in orders and len(orders) <= 1


def contiguous_run(shape: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """Elements of the longest innermost run a tensor's strides keep contiguous (all of it when contiguous)."""
    run = 1
    for size, st in zip(reversed(shape), reversed(stride)):
        if size == 1:
            continue
        if st != run:
            break
        run *= size
    return max(run, 1)


def broadcast_expand(shape: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """How many times a copy reads each distinct element of a tensor that repeats along stride-0 dims (an expanded
    view: repeat_kv's ``expand`` before its ``reshape``): the product of those dims' sizes (1: none)."""
    return math.prod(size for size, st in zip(shape, stride) if st == 0 and size > 1)


def run_stride(shape: tuple[int, ...], stride: tuple[int, ...], run: int) -> int | None:
    """Source elements between the starts of consecutive runs of ``run`` elements when a view of ``shape`` and
    ``stride`` is copied into a contiguous tensor: the stride of the first dim past the run, innermost first (size-1
    dims skipped). 0 when that dim has stride 0 (repeat_kv: each run written again in a row; the caller describes it
    as rows of one run, ``stride`` = the distinct elements, the layout ``copy_repeat`` measures). None when the run
    does not end at a dim boundary."""
    covered = 1
    for size, st in zip(reversed(shape), reversed(stride)):
        if size == 1:
            continue
        if covered == run:
            return abs(st)
        covered *= size
        if covered > run:
            return None
    return None


def _norm_dims(dims: Any, ndim: int) -> list[int]:
    if dims is None or dims == [] or dims == ():
        return list(range(ndim))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({d % ndim for d in dims}) if ndim else []


def _split3(shape: tuple[int, ...], dims: list[int]) -> tuple[int, int, int, bool]:
    """[outer, reduce, inner] of reducing ``dims`` of ``shape``; False when the dims are not one contiguous range."""
    if not shape:
        return 1, 1, 1, True
    lo, hi = dims[0], dims[-1]
    together = dims == list(range(lo, hi + 1))
    reduce = math.prod(shape[d] for d in dims)
    outer = math.prod(shape[:lo])
    inner = (
        math.prod(shape[hi + 1 :])
        if together
        else math.prod(s for i, s in enumerate(shape) if i > lo and i not in dims)
    )
    return outer, reduce, inner, together


def attention_backend(gpu: str, dtype: str, head_dim: int = 128, mask: bool = False) -> str:
    """The SDPA backend torch 2.11 picks for bf16/fp16: cuDNN on Hopper and Blackwell (every shape of
    datasets/layers/*_sdpa.jsonl on the H200, masked calls too: *_sdpa_masks.jsonl), flash attention elsewhere; the
    memory-efficient kernel for other dtypes, past ``FUSED_MAX_HEAD_DIM`` and, where the fused backend is flash (which
    takes no mask), for a call with an explicit mask."""
    if dtype not in ("bf16", "fp16") or head_dim > FUSED_MAX_HEAD_DIM:
        return "efficient"
    fused = "cudnn" if get_gpu(gpu).architecture in ("hopper", "blackwell") else "flash"
    return "efficient" if mask and fused == "flash" else fused


def check_routing(routing: Any) -> Any:
    """``balanced``, ``power_law_<alpha>`` (0 ≤ alpha ≤ 10) or per-expert row counts (non-negative integers)."""
    if isinstance(routing, str) and DISTRIBUTION_RE.match(routing):
        if routing == "balanced" or float(routing.removeprefix("power_law_")) <= 10:
            return routing
    if (
        isinstance(routing, (list, tuple))
        and routing
        and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in routing)
    ):
        return tuple(routing)
    raise ValueError(
        f"routing must be 'balanced', 'power_law_<alpha>' (0 <= alpha <= 10) or a list of per-expert row counts; "
        f"got {routing!r}"
    )


def group_rows(rows: int, groups: int, routing: Any) -> tuple[int, int, str]:
    """(active groups, rows per group, what was assumed) of a grouped GEMM of ``rows`` over ``groups`` experts. Empty
    groups are skipped by the kernel; rows per group are chosen so that the 128-row tiles match the routed counts'."""
    if isinstance(routing, tuple):
        if len(routing) != groups or sum(routing) != rows:
            raise ValueError(
                f"routing counts must be {groups} per-expert row counts summing to {rows}; got {len(routing)} "
                f"summing to {sum(routing)}"
            )
        counts = np.asarray(routing, dtype=np.int64)
        what = "grouped GEMM: the given per-expert routing counts"
    elif routing == "balanced":
        # a load-balanced router: each of the rows goes to any expert alike, so the experts it touches are the
        # expected distinct ones, E·(1 − e^(−rows/E)): a decode step of 32 tokens × top-8 over 256 experts reads 162
        # experts' weights, not 256 (measured: MiniMax-M2.5 and GPT-OSS decode ran 1.3-1.4x under all-active)
        active = max(1, min(groups, rows, round(groups * -math.expm1(-rows / groups))))
        return (
            active,
            max(1, -(-rows // active)),
            "grouped GEMM: balanced routing (every expert alike for every row: the expected distinct experts "
            "active, rows spread evenly over them)",
        )
    else:
        weights = np.arange(1, groups + 1, dtype=np.float64) ** -float(routing.removeprefix("power_law_"))
        counts = np.floor(rows * weights / weights.sum()).astype(np.int64)
        counts[: rows - counts.sum()] += 1
        what = f"grouped GEMM: {routing} routing (expert i gets a share ~ (i+1)^-alpha)"
    active = max(1, int((counts > 0).sum()))
    tiles = int(np.ceil(counts / 128).sum())
    return active, max(1, -(-rows // active), 128 * tiles // active if tiles > active else 0), what


def lower(rec: OpRecord, gpu: str, routing: Any = "balanced") -> Lowered:
    """The kernels one captured op launches on ``gpu`` (``routing``: how MoE grouped GEMMs' rows spread)."""
    name = base_name(rec.name)
    try:
        if name in NO_KERNEL or (rec.outputs and all(o.numel == 0 for o in rec.outputs) and name != "sdpa"):
            return Lowered(rec.name)
        if name == "sdpa":
            return _attention(rec, gpu)
        if name in GEMMS:
            return _gemm(rec, name, routing)
        if name in REDUCTIONS:
            return _reduction(rec, name)
        if name in COPIES:
            return _copy(rec, name)
        if name == "where":
            return _where(rec)
        if name == "masked_fill":  # out of place: torch clones self (contiguous), then fills the clone in place
            src = rec.outputs[0]
            clone = _copy_desc(src.numel, _dtype(src), "copy", src.numel)
            return Lowered(rec.name, (clone, *_pointwise(rec, "where").descs))
        if name in POINTWISE:
            return _pointwise(rec, POINTWISE[name])
        if name == "convolution":
            return _depthwise_conv(rec)
        if name == "linalg_solve_triangular":
            return _triangular_solve(rec)
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        return Lowered(rec.name, unmapped=f"{type(exc).__name__}: {exc}")
    return Lowered(rec.name, unmapped=f"no kernel model for aten op {name!r}")


def _depthwise_conv(rec: OpRecord) -> Lowered:
    """``aten.convolution`` of a depthwise 1-D convolution (groups = channels, one filter row each, stride and dilation
    1): torch's generic depthwise kernel, a ``conv`` description. Any other convolution is unmapped, with why."""
    x, w = rec.args[0], rec.args[1]
    stride, padding, dilation, transposed, _, groups = rec.args[3:9]
    if len(x.shape) != 3:
        raise ValueError(f"only 1-D convolutions are modelled; got an input of shape {x.shape}")
    batch, channels, length = x.shape
    if groups != channels or w.shape[:2] != (channels, 1) or transposed or list(stride) != [1] or list(dilation) != [1]:
        raise ValueError(
            f"only depthwise convolutions (groups = channels, stride and dilation 1, not transposed) are modelled; got "
            f"groups={groups} for {channels} channels, weight {w.shape}, stride {stride}, dilation {dilation}"
        )
    desc = {**_common(_dtype(x), "conv"), "batch": batch, "channels": channels, "length": length,
            "kernel": w.shape[2], "padding": int(padding[0])}  # fmt: skip
    return Lowered(rec.name, (desc,))


def _triangular_solve(rec: OpRecord) -> Lowered:
    """``linalg_solve_triangular(A, B)`` on the left: cuBLAS's batched trsm over the broadcast batch, a ``trsm``
    description."""
    a, out = rec.args[0], rec.outputs[0]
    if rec.kwargs.get("left", True) is False:
        raise ValueError("only left-side triangular solves (A X = B) are modelled; got left=False")
    n, nrhs = a.shape[-1], out.shape[-1]
    batch = max(1, math.prod(out.shape[:-2]))
    desc = {**_common(_dtype(a), "trsm"), "backend": "cublas", "n": n, "nrhs": nrhs, "batch": batch}
    return Lowered(rec.name, (desc,))


def _common(dtype: str, op: str) -> dict:
    return {"op": op, "dtype": dtype, "backend": "torch"}


#: the largest element offset 32-bit indexing addresses (TensorIterator's ``can_use_32bit_indexing``)
INT32_MAX = 2**31 - 1
#: reductions that run through TensorIterator's ``gpu_reduce_kernel`` (split like pointwise ops past 32-bit offsets);
#: norms, softmax, scans, sort and topk have kernels of their own
ITERATOR_REDUCTIONS = frozenset(("sum", "mean", "amax", "argmax", "var", "norm"))


def _extent(t: TensorMeta) -> int:
    """The furthest byte a tensor's elements reach from its first (stride-0 dims add nothing)."""
    return sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride) if n > 1) * _itemsize(t)


#: bytes of the element types the feature tables (``fields.DTYPE_BYTES``) do not list
_OTHER_ITEMSIZE = {"float64": 8, "complex64": 8, "uint8": 1}


def _itemsize(t: TensorMeta) -> float:
    try:
        return DTYPE_BYTES[canonical_dtype(t.dtype)]
    except (KeyError, ValueError):
        return _OTHER_ITEMSIZE.get(t.dtype, 2)


def iterator_pieces(tensors: list[TensorMeta]) -> int:
    """How many kernels eager torch launches for one TensorIterator op: past 32-bit indexing (more than ``INT32_MAX``
    elements, or an operand reaching past ``INT32_MAX`` bytes) ``with_32bit_indexing`` halves its largest dimension
    until every piece fits. Measured on the H200: a 2**31-element fp32 broadcast multiply of Nemotron-H's Mamba
    reference path ran as 4 kernels, its 2**30-element ones as 2, and their sums alike."""
    numel = max((t.numel for t in tensors), default=0)
    reach = max((_extent(t) for t in tensors), default=0)
    pieces = 1
    while numel / pieces > INT32_MAX or reach / pieces > INT32_MAX:
        pieces *= 2
    return pieces


def _split(desc: dict, pieces: int, sizes: tuple[str, ...]) -> dict:
    """``pieces`` kernels of ``desc``, the first of ``sizes`` that ``pieces`` divides shared among them."""
    for size in sizes:
        if desc[size] % pieces == 0 and desc[size] >= pieces:
            return {**desc, size: desc[size] // pieces}
    return {**desc, sizes[0]: max(1, desc[sizes[0]] // pieces)}


def _as_real(t: TensorMeta) -> TensorMeta:
    """A complex64 tensor as the fp32 pairs it is in memory (``view_as_real``); any other tensor as it is."""
    if t.dtype != "complex64":
        return t
    return replace(t, shape=(*t.shape, 2), stride=(*(2 * s for s in t.stride), 1), dtype="float32")


_COMPLEX_NOTE = "complex64 predicted as its fp32 pairs (the same bytes; a complex multiply's extra flops not counted)"


def _pointwise(rec: OpRecord, fn: str) -> Lowered:
    out = rec.outputs[0]
    ins = [t for t in tensor_args(rec.args) + tensor_args(rec.kwargs) if t.numel > 1]
    if any(t.dtype == "complex64" for t in (out, *ins)):  # Llama 4's rotary: a complex multiply
        real = _pointwise(replace(rec, args=tuple(map(_as_real, ins)), kwargs={}, outputs=(_as_real(out),)), fn)
        return replace(real, assumption="; ".join(a for a in (real.assumption, _COMPLEX_NOTE) if a))
    if fn == "fill":
        ins = []
    full = [t for t in ins if t.numel == out.numel]
    bcast = [t for t in ins if t.numel < out.numel]
    in_dtype = _dtype(ins[0]) if ins else _dtype(out)
    dtype = _dtype(out)
    if fn not in ("compare", "fill") and in_dtype != dtype:
        fn = "cast" if len(ins) == 1 else fn
        in_dtype = dtype if fn != "cast" else in_dtype
    desc = {
        **_common(dtype, "elementwise"),
        "elements": out.numel,
        "fn": fn,
        "inputs": min(len(full), 4 - min(len(bcast), 4)),
        "broadcast_inputs": min(len(bcast), 4),
        "broadcast_elements": max((t.numel for t in bcast), default=1),
        "in_dtype": in_dtype,
        "contiguous": all(t.contiguous for t in full) and out.contiguous,
        "dense": _one_dense_order([*full, out]),
    }
    if desc["broadcast_elements"] > 1 and out.numel % desc["broadcast_elements"]:
        desc["broadcast_elements"] = 1
    pieces = iterator_pieces([out, *ins])
    if pieces == 1:
        return Lowered(rec.name, (desc,))
    piece = _split(desc, pieces, ("elements",))
    if piece["broadcast_elements"] > 1 and piece["elements"] % piece["broadcast_elements"]:
        piece["broadcast_elements"] = math.gcd(piece["elements"], piece["broadcast_elements"])
    return Lowered(rec.name, (piece,) * pieces, assumption=_SPLIT_NOTE.format(pieces))


_SPLIT_NOTE = "{} kernels: past 32-bit offsets torch's TensorIterator splits the op (its largest dimension halved)"


#: dtypes of the 0-dim tensors torch wraps Python numbers in (on the host: their cast launches no kernel)
WRAPPED_NUMBER_DTYPES = frozenset(("float64", "int64", "bool", "complex128"))


def _where(rec: OpRecord) -> Lowered:
    """``where(cond, self, other)``: on a GPU, eager torch first casts a value of another dtype than the result's
    (``self.to(result_type)``, a kernel of its own: TensorCompare's where_self_out), then runs the select."""
    out = rec.outputs[0]
    casts = []
    for t in rec.args[1:3]:
        if not isinstance(t, TensorMeta) or t.numel == 0 or _dtype(t) == _dtype(out):
            continue
        if not t.shape and t.dtype in WRAPPED_NUMBER_DTYPES:
            continue
        casts += _pointwise(
            OpRecord(rec.name, (t,), {}, (TensorMeta(t.shape, t.stride, out.dtype, t.contiguous),)), "cast"
        ).descs
    (select,) = _pointwise(rec, "where").descs
    return Lowered(rec.name, (*casts, select))


def _reduction(rec: OpRecord, name: str) -> Lowered:
    fn = REDUCTIONS[name]
    x = rec.args[0]
    args = list(rec.args[1:])
    kw = rec.kwargs
    out_dtype = _dtype(rec.outputs[0]) if fn not in ("argmax", "topk", "sort") else _dtype(x)
    k = 1
    assumption = ""
    if fn in ("layer_norm", "rms_norm"):
        norm = args[0] if args else kw.get("normalized_shape")
        dims = list(range(len(x.shape) - len(norm), len(x.shape)))
    elif fn in ("softmax", "log_softmax", "cumsum", "sort"):
        dims = _norm_dims(args[0] if args else kw.get("dim", -1), len(x.shape))
        if fn in ("softmax", "log_softmax") and len(args) > 1 and args[1]:
            out_dtype = "fp32"
    elif fn == "topk":
        k = int(args[0] if args else kw["k"])
        dims = _norm_dims(args[1] if len(args) > 1 else kw.get("dim", -1), len(x.shape))
    elif name in ("histc", "bincount"):
        dims, assumption = list(range(len(x.shape))), f"{name} as a sum over its input"
        out_dtype = _dtype(x) if _dtype(x) in ("fp32", "bf16", "fp16") else "fp32"
    elif name == "linalg_vector_norm":
        dims = _norm_dims(args[1] if len(args) > 1 else kw.get("dim"), len(x.shape))
    else:
        dims = _norm_dims(args[0] if args else kw.get("dim"), len(x.shape))
    outer, reduce, inner, together = _split3(x.shape, dims)
    if not together:
        assumption = "non-adjacent reduced dims taken as one range"
    dtype = _dtype(x)
    if dtype not in ("fp32", "bf16", "fp16"):
        dtype = out_dtype = "fp32"
        assumption = assumption or f"{x.dtype} input predicted as fp32 (same bytes class)"
    desc = {
        **_common(dtype, "reduction"),
        "outer": outer,
        "reduce": reduce,
        "inner": inner if fn not in ("layer_norm", "rms_norm") else 1,
        "fn": fn,
        "k": k,
        "out_dtype": out_dtype if out_dtype in ("fp32", "bf16", "fp16") else dtype,
    }
    pieces = iterator_pieces([x, *rec.outputs]) if fn in ITERATOR_REDUCTIONS else 1
    if pieces > 1:  # the outer rows are the largest dimension of every such reduction these layers run
        note = _SPLIT_NOTE.format(pieces)
        return Lowered(rec.name, (_split(desc, pieces, ("outer", "inner", "reduce")),) * pieces,
                       assumption="; ".join(n for n in (assumption, note) if n))  # fmt: skip
    return Lowered(rec.name, (desc,), assumption=assumption)


def _copy_desc(elements: int, dtype: str, fn: str, run: int, **extra) -> dict:
    run = max(1, min(run, elements))
    if elements % run:
        run = math.gcd(elements, run)
    return {**_common(dtype, "copy"), "elements": elements, "fn": fn, "run": run, **extra}


def _copy(rec: OpRecord, name: str) -> Lowered:
    out = rec.outputs[0] if rec.outputs else None
    if name in ("cat", "stack"):
        pieces = [t for t in rec.args[0] if t.numel]
        dim = (rec.args[1] if len(rec.args) > 1 else rec.kwargs.get("dim", 0)) % max(len(out.shape), 1)
        # an input that is not contiguous (a slice of a fused QKV projection) sends the whole cat down torch's strided
        # path, one element per thread: measured 0.67 TB/s on the H200 against 3.8 for its vectorized one
        strided = not all(t.contiguous for t in pieces)
        if len(pieces) == 1 and not strided:
            return Lowered(rec.name, (_copy_desc(out.numel, _dtype(out), "copy", out.numel),))
        inner = math.prod(out.shape[dim + 1 :])
        chunk = [t.shape[dim] * inner if name == "cat" else inner for t in pieces]
        if strided:  # element at a time over rank-`dims` offsets, in runs of the strided pieces' last dim (its rows
            # are the only contiguity the kernel's per-element offsets keep: a key sliced from a fused QKV projection
            # is contiguous over its heads too, which one element per thread does not use)
            run = min(t.shape[-1] if t.shape else 1 for t in pieces if not t.contiguous)
            extra = {
                "contiguous": False,
                "dims": min(max(len(out.shape), 1), 4),
                "largest": max(t.numel for t in pieces),
            }
        else:
            run, extra = math.gcd(*chunk) if chunk else out.numel, {}
        desc = _copy_desc(out.numel, _dtype(out), "cat", run, inputs=min(len(pieces), 4096), **extra)
        return Lowered(rec.name, (desc,))
    if name == "constant_pad_nd":  # the padded output written, its rows of input copied in runs
        src = rec.args[0]
        run = min(contiguous_run(src.shape, src.stride), src.shape[-1] if src.shape else 1)
        return Lowered(rec.name, (_copy_desc(out.numel, _dtype(out), "copy", run),))
    if name in ("clone", "_to_copy", "copy_", "repeat"):
        src = rec.args[1] if name == "copy_" else rec.args[0]
        dst = out
        if _dtype(src) != _dtype(dst):
            return _pointwise(OpRecord(rec.name, (src,), {}, (dst,)), "cast")
        run = min(contiguous_run(src.shape, src.stride), contiguous_run(dst.shape, dst.stride))
        if name == "repeat":
            run = math.prod(src.shape[-1:]) if src.shape else 1
        desc = _copy_desc(dst.numel, _dtype(dst), "copy", run)
        expand = dst.numel // max(src.numel, 1) if name == "repeat" else broadcast_expand(src.shape, src.stride)
        if expand > 1 and dst.numel % (expand * desc["run"]) == 0:
            desc["expand"] = expand
        step = run_stride(src.shape, src.stride, desc["run"]) if name != "repeat" and dst.contiguous else None
        if step == 0 and "expand" in desc:  # each run written `expand` times in a row: rows of one run
            step = dst.numel // desc["expand"]
        if step is not None and step >= desc["run"]:
            desc["stride"] = step
        return Lowered(rec.name, (desc,))
    if name in ("index", "index_select", "embedding", "gather"):
        if name == "embedding":
            table, rows = rec.args[0], rec.args[0].shape[0]
            run = math.prod(table.shape[1:])
        elif name == "index":
            table = rec.args[0]
            idx = rec.args[1]
            lead = next(i for i, t in enumerate(idx) if t is not None)
            rows = table.shape[lead]
            run = math.prod(table.shape[lead + 1 :])
        else:
            table = rec.args[0]
            dim = rec.args[1] % len(table.shape)
            rows, run = table.shape[dim], math.prod(table.shape[dim + 1 :])
        return Lowered(rec.name, (_copy_desc(out.numel, _dtype(out), "gather", run, table_rows=max(rows, 1)),))
    # scatters: index_add(self, dim, index, source), index_put(self, indices, values), scatter(self, dim, index, src)
    dst = rec.args[0]
    src = next((t for t in tensor_args(rec.args[1:]) if _dtype(t) == _dtype(dst)), None)
    moved = src.numel if src is not None else dst.numel
    dim = rec.args[1] if name.startswith(("index_add", "scatter")) and isinstance(rec.args[1], int) else 0
    dim %= max(len(dst.shape), 1)
    run = math.prod(dst.shape[dim + 1 :]) if dst.shape else 1
    moved = max(run, moved - moved % max(run, 1))
    return Lowered(
        rec.name,
        (_copy_desc(moved, _dtype(dst), "scatter_add", run, table_rows=max(dst.shape[dim] if dst.shape else 1, 1)),),
        assumption="" if "add" in name else f"{name} as a scatter-add",
    )


def _gemm(rec: OpRecord, name: str, routing: Any = "balanced") -> Lowered:
    a_i = 1 if name in ("addmm", "baddbmm", "addmv") else 0
    a, b = rec.args[a_i], rec.args[a_i + 1]
    out = rec.outputs[0]
    dtype = _dtype(a)
    desc = {"op": "gemm", "dtype": dtype, "backend": "cublas", "out_dtype": _dtype(out)}
    if dtype == "fp32":
        desc["out_dtype"] = "fp32"
    assumption = ""
    if name in ("mv", "addmv"):
        m, k = a.shape
        desc.update(m=m, n=1, k=k, layout="nn")
    elif name == "_grouped_mm":
        rows, k, n = a.shape[0], a.shape[-1], b.shape[-1]
        groups, m, assumption = group_rows(rows, b.shape[0], routing)
        desc.update(m=m, n=n, k=k, batch=groups, layout="nt", backend="grouped")
    elif name in ("bmm", "baddbmm"):
        batch, m, k = a.shape
        n = b.shape[2]
        nt = b.stride[1] == 1 and b.shape[1] > 1
        desc.update(m=m, n=n, k=k, batch=batch, layout="nt" if nt else "nn")
        assumption = _leading_dims(desc, a, b)
    else:
        m, k = a.shape
        n = b.shape[1]
        nt = b.stride[0] == 1 and k > 1
        desc.update(m=m, n=n, k=k, layout="nt" if nt else "nn")
        assumption = _leading_dims(desc, a, b)
    if name == "_scaled_mm":
        desc["layout"] = "nt"
    return Lowered(rec.name, (desc,), assumption=assumption)


def _pow2(v: int) -> int:
    """The largest power of two dividing ``v`` (``v`` itself for 0: no constraint)."""
    return v & -v if v else 0


def _leading_dims(desc: dict, a, b) -> str:
    """A GEMM operand whose rows sit further apart than the description's dims say (a slice of a wider tensor: GPT-OSS's
    attention drops its sink column off the scores, leaving A's rows 1,901 elements apart for k = 1,900) is aligned as
    its leading dimension is, and cuBLAS picks its kernel by that (an sm75 ``align1`` kernel there, 836 µs measured
    against 500 predicted as aligned). A description has no leading dimension; its alignment features read k (A's and
    an ``nt`` B's rows) and n (an ``nn`` B's rows): the dim is moved up to the next value with the leading dimension's
    power of two, and the answer says so. Row-major operands only (a unit last stride)."""
    moved = []
    rows_a = a.stride[-2] if a.stride[-1] == 1 and a.shape[-2] > 1 else 0
    nn = desc["layout"] == "nn"
    rows_b = b.stride[-2] if nn and b.stride[-1] == 1 and b.shape[-2] > 1 else 0
    rows_b = b.stride[-1] if not nn and b.shape[-1] > 1 else rows_b  # nt: W[n, k] stored as rows of k
    for dim, ld in (("k", rows_a), ("n" if nn else "k", rows_b)):
        want = _pow2(ld)
        if want and want < _pow2(desc[dim]):  # the dim is a multiple of 2·want: the next one with want is dim + want
            moved.append(f"{dim} {desc[dim]} → {desc[dim] + want}")
            desc[dim] += want
    if not moved:
        return ""
    return (
        "an operand's rows sit at a leading dimension less aligned than its dims (a slice of a wider tensor): cuBLAS "
        f"picks its kernel by that alignment, so the GEMM is described at {', '.join(moved)}, the dims with that power "
        "of two"
    )


def _attention(rec: OpRecord, gpu: str) -> Lowered:
    q, k, v = rec.args
    opts = rec.kwargs
    dtype = _dtype(q)
    b, hq, sq, d = q.shape[-4:] if len(q.shape) == 4 else (1, *q.shape[-3:])
    hkv, skv = k.shape[-3], k.shape[-2]
    causal = bool(opts.get("is_causal", False))
    mask = opts.get("attn_mask")
    dh = max(d, v.shape[-1])
    backend = attention_backend(gpu, dtype, dh, mask is not None)
    # torch refuses a mask beside is_causal; a mask sends flash GPUs to the memory-efficient kernel
    masked = mask is not None and not causal
    assumption = MASK_NOTE[backend] if masked else ""
    if backend == "efficient":
        grouped = GROUPED_EFFICIENT_NOTE if hq != hkv else ""
        assumption = "; ".join(a for a in (EFFICIENT_NOTE, assumption, grouped) if a)
    desc = {
        "op": "attention",
        "dtype": dtype,
        "backend": backend,
        "batch": b,
        "heads_q": hq,
        "heads_kv": hkv,
        "seq_q": sq,
        "seq_kv": skv,
        "head_dim": -(-dh // 8) * 8,
        "causal": causal and sq <= skv,
        "mask": masked,
    }
    return Lowered("sdpa", (desc, *_bool_mask_kernels(mask, q)), assumption=assumption)


#: what SDPA does with an explicit mask, by the backend that reads it: on the H200 (torch 2.11;
#: datasets/layers/…_sdpa_masks.jsonl, 279 shapes) cuDNN's kernel reads it over every key
MASK_NOTE = {
    "cudnn": (
        "an explicit attn_mask: cuDNN's kernel that reads it over every key (attention mask=true; trained on 203 H200 "
        "shapes, 21% median on 76 held out), after a bool mask's conversion to an additive one"
    ),
    "efficient": "an explicit attn_mask: the memory-efficient kernel reads it as a bias over every key",
}
#: said with every call lowered to the memory-efficient kernel
EFFICIENT_NOTE = (
    f"SDPA's memory-efficient kernel (head_dim past {FUSED_MAX_HEAD_DIM}, or a mask where flash is the fused backend): "
    "its measured rows are the H200's (1,241 shapes); other architectures answer from the roofline"
)
#: a grouped-query call sent to the memory-efficient kernel by a mask on a flash GPU: torch runs its math path there
#: (the kernel takes no grouped heads), which the capture, made for no GPU in particular, did not record
GROUPED_EFFICIENT_NOTE = "grouped-query heads: torch runs SDPA's math path here, predicted as the fused kernel"


def _bool_mask_kernels(mask: Any, q: TensorMeta) -> tuple[dict, ...]:
    """The kernels SDPA launches to turn a bool ``mask`` into an additive one in ``q``'s dtype before attention (on
    the H200: two one-element fills, 0 and -inf, then a select over the mask's shape, strided where it is
    broadcast); none for an additive mask or none."""
    if not isinstance(mask, TensorMeta) or mask.dtype != "bool":
        return ()
    scalar = TensorMeta((), (), q.dtype, True)
    fill = _pointwise(OpRecord("aten.full.default", (), {}, (scalar,)), "fill").descs
    strides = tuple(math.prod(mask.shape[i + 1 :]) for i in range(len(mask.shape)))
    out = TensorMeta(mask.shape, strides, q.dtype, True)
    select = _pointwise(OpRecord("aten.where.ScalarOther", (mask, scalar, scalar), {}, (out,)), "where").descs
    return (*fill, *fill, *select)
