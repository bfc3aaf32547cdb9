"""Elementwise workload: PyTorch's eager pointwise kernels (TensorIterator) on full, broadcast and strided inputs."""

from __future__ import annotations

import dataclasses

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, float_dtype, torch_dtype, values
from kernelcast.features.ops.elementwise import ElementwiseDesc

UNARY = ("neg", "abs", "clamp", "exp", "log", "sqrt", "rsqrt", "pow", "sigmoid", "silu", "gelu", "tanh", "sin", "cos")
BINARY = ("add", "sub", "mul", "div", "compare")  # one operand: with a Python scalar
FLOATS = ("fp32", "bf16", "fp16")
POSITIVE = ("log", "sqrt", "rsqrt")  # measured on |x| + 0.5: finite outputs for the output check


def _operands(fn: str) -> tuple[int, ...]:
    return {"fill": (0,), "cast": (1,), "where": (1, 2, 3), **dict.fromkeys(BINARY, (1, 2))}.get(fn, (1,))


def _call(fn: str, ops: list, out_dtype):
    import torch
    import torch.nn.functional as F

    if fn in UNARY:
        x = ops[0]
        return {
            "clamp": lambda: x.clamp(-1.0, 1.0),
            "pow": lambda: x.pow(2),
            "silu": lambda: F.silu(x),
            "gelu": lambda: F.gelu(x, approximate="tanh"),
        }.get(fn, lambda: getattr(torch, fn)(x))
    if fn == "cast":
        return lambda: ops[0].to(out_dtype)
    if fn == "fill":
        return lambda: ops[0].fill_(1.0)
    if fn == "where":
        cond = ops[0] > 0
        rest = ops[1:] + [0.5] * (3 - len(ops))
        return lambda: torch.where(cond, rest[0], rest[1])
    a, b = (ops + [0.5])[:2]
    op = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "compare": torch.gt}[fn]
    return lambda: op(a, b)


def _rows(desc: ElementwiseDesc) -> tuple[int, int]:
    """(rows, row length) the operands are laid out in: rows of the broadcast operand's length, or for a sliced
    input without one, rows of the largest divisor of elements up to 4096."""
    if desc.broadcast_elements > 1 or desc.dense:
        return desc.elements // desc.broadcast_elements, desc.broadcast_elements
    width = max(d for d in range(1, min(desc.elements, 4096) + 1) if desc.elements % d == 0)
    return desc.elements // width, width


class TorchElementwise(BackendBase):
    """``torch.<fn>`` on the description's operands; ``contiguous=False`` reads every full-size input transposed,
    ``dense=False`` reads each as the first half of rows twice as wide (a chunk, as SwiGLU's gate and up are)."""

    name = "torch"

    def supports(self, desc: ElementwiseDesc, device=None) -> str | None:
        n = desc.inputs + desc.broadcast_inputs
        if n not in _operands(desc.fn):
            return f"elementwise {desc.fn!r} takes {' or '.join(map(str, _operands(desc.fn)))} tensor operands; got {n}"
        if desc.fn == "cast" and desc.dtype == desc.in_dtype:
            return f"a cast to its own dtype {desc.dtype!r} launches no kernel"
        if desc.fn == "compare" and desc.dtype != "bool":
            return f"compare writes bool; got dtype {desc.dtype!r}"
        if desc.fn not in ("compare", "cast") and desc.dtype != desc.in_dtype:
            return (
                f"{desc.fn!r} writes its input dtype {desc.in_dtype!r}; got dtype {desc.dtype!r} (a cast is fn='cast')"
            )
        if desc.fn in UNARY + ("div", "where") and desc.in_dtype not in FLOATS:
            return f"{desc.fn!r} is measured on {', '.join(FLOATS)} inputs; got in_dtype {desc.in_dtype!r}"
        if desc.fn == "fill" and desc.contiguous is False:
            return "fill writes a fresh contiguous output; contiguous=False does not apply"
        if not desc.dense and desc.inputs:
            rows, width = _rows(desc)
            if width < 8 or rows < 2:
                return (
                    f"a sliced input needs 2+ rows of 8+ elements (one row's slice is contiguous); "
                    f"elements={desc.elements} gives {rows} of {width}"
                )
        return None

    def class_key(self, desc: ElementwiseDesc) -> tuple:
        return (
            "elementwise",
            desc.fn,
            desc.dtype,
            desc.in_dtype,
            desc.inputs,
            desc.broadcast_inputs,
            desc.contiguous,
            desc.dense,
        )

    @staticmethod
    def small(desc: ElementwiseDesc) -> ElementwiseDesc:
        be = desc.broadcast_elements if desc.broadcast_elements <= 4096 else 1
        return dataclasses.replace(desc, elements=be * max(1, 12288 // be), broadcast_elements=be)

    def build(self, desc: ElementwiseDesc):
        be = desc.broadcast_elements
        shape = _rows(desc)
        ops = []
        for i in range(desc.inputs):
            if not desc.dense:
                x = values((shape[0], 2 * shape[1]), desc.in_dtype, seed=1 + i)[:, : shape[1]]
            elif not desc.contiguous:
                x = values(shape[::-1], desc.in_dtype, seed=1 + i).t()
            else:
                x = values(shape, desc.in_dtype, seed=1 + i)
            ops.append(x)
        ops += [values((be,), desc.in_dtype, seed=10 + i) for i in range(desc.broadcast_inputs)]
        if desc.fn == "fill":
            ops = [values(shape, desc.dtype, seed=1)]
        if desc.fn in POSITIVE:  # in place: a fresh tensor would drop the layout the description measures
            ops = [ops[0].abs_().add_(0.5)]
        call = _call(desc.fn, ops, torch_dtype(desc.dtype))
        if desc.fn != "cast":
            ref = _call(desc.fn, [o.double() for o in ops], None)
        elif desc.dtype in FLOATS:
            ref = lambda: ops[0]  # noqa: E731 - a float cast is checked against the unrounded input
        else:
            ref = lambda: ops[0] != 0 if desc.dtype == "bool" else ops[0].to(torch_dtype(desc.dtype))  # noqa: E731
        return call, lambda: ref().double()

    def tolerance_dtype(self, small: ElementwiseDesc) -> str:
        return float_dtype(small.dtype, small.in_dtype)


register("elementwise", TorchElementwise())
