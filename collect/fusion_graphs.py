"""Random fusion graphs: small PyTorch functions whose ops Inductor fuses into one or a few Triton kernels.

A graph is Python source (``def f(x0, x1, ...): ... return (...)``) plus its inputs' shapes and dtypes, drawn from a
seed: 1-3 inputs (the others broadcast against the first: full, size-1 dims, or the last dim only), then a chain of
1-10 ops over the live values — unary math, binary ops with broadcasts, scalars, casts, reductions over the last or
another dim (kept or dropped), softmax, RMS/layer norms and RoPE-like half-rotations — and one to three outputs.
The source is what the collector compiles with torch.compile (Inductor) on the GPU and what ``predict_module(...,
mode="compile")`` captures on a CPU, so a graph measured once can be predicted again from its row alone.

``box="train"`` and ``box="test"`` are different distributions (the test box is wider in size and op count and uses
odd sizes more often) so the independent test set is not a resample of the training one.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

DTYPES = ("bf16", "fp16", "fp32")
TORCH_DTYPE = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}
ITEMSIZE = {"bf16": 2, "fp16": 2, "fp32": 4}
UNARY = {
    "exp": "torch.exp({a})",
    "sigmoid": "torch.sigmoid({a})",
    "tanh": "torch.tanh({a})",
    "relu": "torch.relu({a})",
    "gelu": "F.gelu({a})",
    "gelu_tanh": "F.gelu({a}, approximate='tanh')",
    "silu": "F.silu({a})",
    "rsqrt": "torch.rsqrt({a}.abs() + 1e-3)",
    "abs": "{a}.abs()",
    "neg": "-{a}",
    "sqrt": "torch.sqrt({a}.abs())",
    "log1p": "torch.log1p({a}.abs())",
    "sin": "torch.sin({a})",
    "cos": "torch.cos({a})",
    "erf": "torch.erf({a})",
    "square": "{a} * {a}",
    "reciprocal": "1.0 / (1.0 + {a}.abs())",
}
BINARY = {
    "add": "{a} + {b}",
    "sub": "{a} - {b}",
    "mul": "{a} * {b}",
    "div": "{a} / ({b}.abs() + 1.0)",
    "maximum": "torch.maximum({a}, {b})",
    "minimum": "torch.minimum({a}, {b})",
    "where": "torch.where({a} > 0, {a}, {b})",
}
SCALAR = {
    "mul_scalar": "{a} * {c}",
    "add_scalar": "{a} + {c}",
    "clamp": "{a}.clamp(-{c}, {c})",
    "pow2": "{a}.pow(2)",
}
REDUCE = ("sum", "mean", "amax", "amin")
#: op kinds and their weights
KINDS = {"unary": 35, "binary": 28, "scalar": 10, "cast": 7, "reduce": 10, "softmax": 4, "norm": 4, "rope": 2}
BOXES = {
    # log2 of the first input's element count, ops per graph, chance a dim is odd-sized
    "train": {"log2_numel": (10.0, 25.0), "ops": (1, 10), "odd": 0.3},
    "test": {"log2_numel": (8.0, 26.0), "ops": (1, 12), "odd": 0.6},
    # model-like sizes: every dim a multiple of 16 (mostly of 64), plus the copies layers make (cat, transpose)
    "aligned": {
        "log2_numel": (10.0, 26.0),
        "ops": (1, 10),
        "odd": 0.0,
        "align": True,
        "kinds": {**KINDS, "cat": 6, "transpose": 6},
    },
}
MAX_BYTES = 1 << 30  # no tensor of a graph is larger than this


@dataclass(frozen=True)
class FusionGraph:
    """One random graph: ``source`` defines ``f``; ``inputs`` are its arguments' (shape, dtype)."""

    seed: int
    box: str
    source: str
    inputs: tuple[tuple[tuple[int, ...], str], ...]
    ops: int


@dataclass
class _Value:
    name: str
    shape: tuple[int, ...]
    dtype: str


def _shape(rng: random.Random, box: dict) -> tuple[int, ...]:
    lo, hi = box["log2_numel"]
    total = rng.uniform(lo, hi)
    rank = rng.choice((1, 2, 2, 2, 3, 3, 4))
    cuts = sorted(rng.uniform(0, total) for _ in range(rank - 1))
    logs = [b - a for a, b in zip([0.0, *cuts], [*cuts, total])]
    dims = []
    for lg in logs:
        d = max(1, round(2**lg))
        if box.get("align") and d >= 16:
            step = 64 if d >= 256 and rng.random() < 0.8 else 16
            d = max(step, round(d / step) * step)
        if d > 2 and rng.random() < box["odd"]:
            d = max(1, d + rng.randint(-d // 4, d // 4) | 1)  # odd sizes: masked tails, unaligned rows
        dims.append(d)
    if dims[-1] < 2:
        dims[-1] = 2
    return tuple(dims)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    longer = a if len(a) > len(b) else b
    return tuple(longer[: abs(len(a) - len(b))]) + tuple(reversed(out))


def _promote(a: str, b: str) -> str:
    if a == b:
        return a
    return "fp32"  # bf16 with fp16 promotes to fp32 too


def _secondary(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    r = rng.random()
    if r < 0.45 or len(shape) == 1:
        return shape
    if r < 0.75:
        keep = [d if rng.random() < 0.5 else 1 for d in shape]
        if all(k == 1 for k in keep):
            keep[-1] = shape[-1]
        return tuple(keep)
    return (shape[-1],)


def random_graph(seed: int, box: str = "train") -> FusionGraph:
    """The graph of ``seed`` in ``box`` (deterministic)."""
    if box not in BOXES:
        raise ValueError(f"box must be one of {', '.join(BOXES)}; got {box!r}")
    rng = random.Random(f"{box}:{seed}")
    spec = BOXES[box]
    while True:
        shape = _shape(rng, spec)
        if math.prod(shape) * 4 <= MAX_BYTES // 4:
            break
    dtype = rng.choice(DTYPES)
    values = [_Value("x0", shape, dtype)]
    for i in range(1, rng.choice((1, 1, 2, 2, 3))):
        values.append(_Value(f"x{i}", _secondary(rng, shape), rng.choice((dtype, dtype, "fp32"))))
    inputs = tuple((v.shape, v.dtype) for v in values)
    lines: list[str] = []
    n_ops = rng.randint(*spec["ops"])
    for step in range(n_ops):
        lines += _op(rng, values, f"t{step}", spec)
    outs = [values[-1].name]
    extra = [v.name for v in values[len(inputs) : -1]]
    for name in rng.sample(extra, min(len(extra), rng.choice((0, 0, 0, 1, 2)))):
        outs.append(name)
    args = ", ".join(f"x{i}" for i in range(len(inputs)))
    body = "\n".join(f"    {line}" for line in lines)
    source = f"def f({args}):\n{body}\n    return ({', '.join(outs)},)\n"
    return FusionGraph(seed, box, source, inputs, n_ops)


def _op(rng: random.Random, values: list[_Value], name: str, box: dict) -> list[str]:
    """One op over the live values; appends its result to ``values`` and returns its source lines."""
    a = rng.choice(values[-3:]) if rng.random() < 0.8 else rng.choice(values)
    kinds = box.get("kinds", KINDS)
    kind = rng.choices(tuple(kinds), tuple(kinds.values()))[0]
    if kind == "binary":
        partners = [v for v in values if v is not a and _broadcast(a.shape, v.shape)]
        if partners:
            b = rng.choice(partners)
            op = rng.choice(tuple(BINARY))
            values.append(_Value(name, _broadcast(a.shape, b.shape), _promote(a.dtype, b.dtype)))
            return [f"{name} = {BINARY[op].format(a=a.name, b=b.name)}"]
        kind = "unary"
    if kind == "scalar":
        op = rng.choice(tuple(SCALAR))
        values.append(_Value(name, a.shape, a.dtype))
        return [f"{name} = {SCALAR[op].format(a=a.name, c=round(rng.uniform(0.1, 3.0), 3))}"]
    if kind == "cast":
        to = rng.choice([d for d in DTYPES if d != a.dtype])
        values.append(_Value(name, a.shape, to))
        return [f"{name} = {a.name}.to({TORCH_DTYPE[to]})"]
    if kind == "reduce" and math.prod(a.shape) > 1:
        dims = [d for d in range(len(a.shape)) if a.shape[d] > 1]
        dim = len(a.shape) - 1 if rng.random() < 0.6 or not dims else rng.choice(dims)
        keep = rng.random() < 0.7 or len(a.shape) == 1
        shape = (
            tuple(1 if i == dim else d for i, d in enumerate(a.shape)) if keep else a.shape[:dim] + a.shape[dim + 1 :]
        )
        op = rng.choice(REDUCE)
        values.append(_Value(name, shape, a.dtype))
        return [f"{name} = {a.name}.{op}(dim={dim}, keepdim={keep})"]
    if kind == "softmax":
        dim = -1 if rng.random() < 0.7 else rng.randrange(len(a.shape))
        values.append(_Value(name, a.shape, a.dtype))
        return [f"{name} = torch.softmax({a.name}, dim={dim})"]
    if kind == "norm":
        n = a.shape[-1]
        values.append(_Value(name, a.shape, a.dtype))
        if rng.random() < 0.6:
            return [
                f"{name}_f = {a.name}.float()",
                f"{name}_v = {name}_f * torch.rsqrt({name}_f.pow(2).mean(-1, keepdim=True) + 1e-6)",
                f"{name} = {name}_v.to({TORCH_DTYPE[a.dtype]})",
            ]
        return [f"{name} = F.layer_norm({a.name}, ({n},))"]
    if kind == "rope" and a.shape[-1] % 2 == 0 and a.shape[-1] >= 4:
        h = a.shape[-1] // 2
        values.append(_Value(name, a.shape, a.dtype))
        return [
            f"{name}_r = torch.cat((-{a.name}[..., {h}:], {a.name}[..., :{h}]), dim=-1)",
            f"{name} = {a.name} * 0.8 + {name}_r * 0.6",
        ]
    if kind == "cat" and math.prod(a.shape) * 2 * ITEMSIZE[a.dtype] <= MAX_BYTES // 4:
        dim = rng.randrange(len(a.shape))
        shape = tuple(d * 2 if i == dim else d for i, d in enumerate(a.shape))
        values.append(_Value(name, shape, a.dtype))
        return [f"{name} = torch.cat(({a.name}, {a.name} * 0.5), dim={dim})"]
    if kind == "transpose" and len(a.shape) >= 2:
        i, j = sorted(rng.sample(range(len(a.shape)), 2))
        shape = list(a.shape)
        shape[i], shape[j] = shape[j], shape[i]
        values.append(_Value(name, tuple(shape), a.dtype))
        return [f"{name} = {a.name}.transpose({i}, {j}).contiguous() + 0.0"]
    op = rng.choice(tuple(UNARY))
    values.append(_Value(name, a.shape, a.dtype))
    return [f"{name} = {UNARY[op].format(a=a.name)}"]


def compile_source(source: str):
    """The function ``f`` a graph's ``source`` defines (torch and F in scope)."""
    import torch
    import torch.nn.functional as F

    scope = {"torch": torch, "F": F}
    exec(compile(source, "<fusion-graph>", "exec"), scope)  # noqa: S102 - our own generated source
    return scope["f"]


def make_inputs(graph: FusionGraph, device: str, seed: int = 0) -> list:
    """Random inputs of ``graph`` on ``device`` (``meta`` for capture without memory)."""
    import torch

    gen = None if device == "meta" else torch.Generator(device=device).manual_seed(seed)
    out = []
    for shape, dtype in graph.inputs:
        dt = getattr(torch, TORCH_DTYPE[dtype].split(".")[1])
        if device == "meta":
            out.append(torch.empty(shape, dtype=dt, device="meta"))
        else:
            out.append(torch.randn(shape, dtype=dt, device=device, generator=gen))
    return out
