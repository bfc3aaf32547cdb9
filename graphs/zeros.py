"""Which GEMM operands a call fills mostly with zeros, followed from op to op, and what that does to the GEMM's time.

A tensor core's power follows the bits it multiplies. On the H200 and H100 a large bf16 GEMM of random operands holds
the chip at its power limit, the SM clock drops to 1.1-1.5 GHz, and that is the clock the collector's labels of such
GEMMs ran at (its operands are standard normal). Llama 4's eager experts multiply ``hidden.repeat(experts, 1)`` by
the router's scores, which are ``sigmoid`` of a ``-inf`` fill with each token's top-k logits scattered in: all but
top_k of every token's expert rows are zeros, and so are the rows of everything computed from them (silu(0)·0 = 0).
Measured on an H100 (``benchmarks/gpu_operand_values.py``, ``benchmarks/results/gpu_operand_values_h100.json``
and ``…_shares_h100.json``): Llama 4 Maverick's expert bmm at 1,500 tokens with 127 of 128 expert batches zero ran at
0.81× (gate_up) and 0.82× (down) the time of the same bmm on weight-like random operands, its clock 1.70 GHz against
1.14-1.43 GHz; half the batches zero already gave 0.90× and 0.86×. A 1.4 ms 8192³ matmul gained less (0.93-0.96× at
half to 15/16 zero rows): short kernels reach the power limit less.

On an H200 (``…/gpu_operand_values_h200.json``) the same bmm with 127/128 zero rows ran at 0.846× (gate_up) and
0.844× (down) of weight-like operands in that probe, its clock 1.77 GHz against 1.40-1.52; scaled so, Llama 4's H200
prefill layers went from 0.98-1.04× to 1.01-1.07× of their measurements (RESULTS §48): the ratio against the labels,
whose clocks their own pass set, is not the probe's ratio against its own back-to-back passes, so the H100's table,
which the layers of both GPUs bear out, serves both.

``ZeroRows`` walks a call's ops in order keeping, per storage, the share of its rows known to be a fill value (0 or
-inf; rows along the last dim). It knows fills, ``scatter`` into a fill, value-preserving casts and copies, unary ops
by what they make of the fill (sigmoid and exp of -inf are 0; silu, relu, gelu, neg, tanh of 0 are 0), a product with a
zero-row factor, and a matmul whose A has zero rows; a view (an output on an input's storage) keeps what its storage
holds. Every other write to a storage forgets it.
"""

from __future__ import annotations

import math

import numpy as np

from kernelcast.graphs.capture import OpRecord, TensorMeta
from kernelcast.graphs.lower import base_name

#: (share of A's rows that are zeros, a compute-bound GEMM's time over its time on random operands, the labels'): the
#: mean of the two expert bmms measured above at each share; between the points, linear
ZERO_ROW_TIMES = ((0.0, 1.0), (0.5, 0.879), (0.75, 0.867), (0.9375, 0.841), (127 / 128, 0.814), (1.0, 0.804))
#: what a unary op makes of a fill value (absent: the op's result is not tracked)
_UNARY = {
    "sigmoid": {-math.inf: 0.0, 0.0: 0.5},
    "exp": {-math.inf: 0.0, 0.0: 1.0},
    "silu": {0.0: 0.0},
    "relu": {0.0: 0.0},
    "gelu": {0.0: 0.0},
    "neg": {0.0: 0.0},
    "tanh": {0.0: 0.0},
    "_to_copy": {0.0: 0.0, -math.inf: -math.inf},
    "clone": {0.0: 0.0, -math.inf: -math.inf},
    "contiguous": {0.0: 0.0, -math.inf: -math.inf},
}
_FILLS = ("full", "full_like", "new_full", "fill", "fill_")
_ZEROS = ("zeros", "zeros_like", "new_zeros", "zero_")
_MATMULS = ("mm", "bmm", "matmul")
_SCATTERS = ("scatter", "scatter_")


def _scalar(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


class ZeroRows:
    def __init__(self) -> None:
        self.rows: dict[int, tuple[float, float]] = {}  # storage id -> (fill value, share of rows holding it)

    def _get(self, t) -> tuple[float, float] | None:
        return self.rows.get(t.storage) if isinstance(t, TensorMeta) and t.storage else None

    def zero_share(self, t) -> float:
        """Share of ``t``'s rows known to be zeros (0 where nothing is known)."""
        got = self._get(t)
        return got[1] if got and got[0] == 0.0 else 0.0

    def op(self, rec: OpRecord) -> float:
        """Follow one op; the zero share of its A operand when it is a matmul (else 0)."""
        name = base_name(rec.name)
        tensors = [a for a in rec.args if isinstance(a, TensorMeta)]
        out = rec.outputs[0] if rec.outputs else None
        new: tuple[float, float] | None = None
        a_zero = 0.0
        if name in _FILLS:
            value = next((v for v in map(_scalar, rec.args) if v is not None), None)
            new = (value, 1.0) if value in (0.0, -math.inf) else None
        elif name in _ZEROS:
            new = (0.0, 1.0)
        elif name in _SCATTERS and len(tensors) >= 2 and out is not None:
            got = self._get(tensors[0])
            if got and out.numel:
                new = (got[0], got[1] * max(0.0, 1.0 - tensors[1].numel / out.numel))
        elif name in _UNARY and tensors:
            got = self._get(tensors[0])
            if got and got[0] in _UNARY[name]:
                new = (_UNARY[name][got[0]], got[1])
        elif name == "mul" and len(tensors) == 2 and out is not None:
            shares = [self.zero_share(t) if self._rows_factor(t, out) else 0.0 for t in tensors]
            new = (0.0, max(shares)) if max(shares) > 0 else None
        elif name in _MATMULS and tensors:
            a_zero = self.zero_share(tensors[0])
            new = (0.0, a_zero) if a_zero > 0 else None
        viewed = {t.storage for t in tensors} if not name.endswith("_") else set()  # a view writes nothing
        for o in rec.outputs:
            if not o.storage or (new is None and o.storage in viewed):
                continue
            if new is not None and new[1] > 0:
                self.rows[o.storage] = new
            else:
                self.rows.pop(o.storage, None)
        return a_zero

    @staticmethod
    def _rows_factor(t: TensorMeta, out: TensorMeta) -> bool:
        """A factor whose zeros zero whole rows of the product: broadcast along the last dim, or the product's shape."""
        return tuple(t.shape) == tuple(out.shape) or (len(t.shape) >= 1 and t.shape[-1] == 1)


def zero_operand_factor(zero_share: float) -> float:
    """What a compute-bound GEMM's time is multiplied by when ``zero_share`` of A's rows are zeros."""
    shares, times = zip(*ZERO_ROW_TIMES)
    return float(np.interp(min(max(zero_share, 0.0), 1.0), shares, times))
