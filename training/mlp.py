"""Fit the multilayer perceptron a backend's own trees are blended with (``predictors.mlp``), on CPU with torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kernelcast.predictors.mlp import Mlp, fit_inputs

#: hidden widths, epochs, batch, peak learning rate (one cycle), weight decay and the Huber loss's beta in log units:
#: set once, not searched, then read on config-held-out folds of the Triton GEMM training rows (RESULTS.md §50);
#: members: how many networks (seeds seed, seed + 1, ...) are fitted and averaged (RESULTS.md §51)
DEFAULTS = {
    "hidden": (512, 256, 128),
    "epochs": 40,
    "batch": 512,
    "lr": 2e-3,
    "weight_decay": 1e-4,
    "beta": 0.1,
    "members": 1,
}


def fit_mlp(
    x: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None = None,
    params: Mapping[str, Any] | None = None,
    seed: int = 0,
    threads: int = 2,
) -> Mlp:
    """A network of ``target`` (log(latency / scale)) on feature-matrix rows ``x``: ``members`` networks, each AdamW
    over shuffled batches with a one-cycle learning rate and a smooth L1 loss (``weight``: per-row loss weights),
    served as their mean."""
    import torch

    p = {**DEFAULTS, **(params or {})}
    if len(x) < p["batch"]:
        raise ValueError(f"the network needs at least one batch of {p['batch']} rows; got {len(x)}")
    if len(p["hidden"]) < 1:
        raise ValueError(f"hidden must name at least one layer's width; got {p['hidden']!r}")
    if not (isinstance(p["members"], int) and p["members"] >= 1):
        raise ValueError(f"members must be an integer >= 1; got {p['members']!r}")
    torch.set_num_threads(threads)
    stats = fit_inputs(x)
    inputs = torch.from_numpy(stats.transform(x))
    y = torch.from_numpy(np.asarray(target, dtype=np.float32))
    w = None if weight is None else torch.from_numpy(np.asarray(weight, dtype=np.float32))
    members = tuple(_fit_member(inputs, y, w, p, seed + j) for j in range(p["members"]))
    return Mlp(stats, members)


def merged(nets: list[Mlp]) -> Mlp:
    """Networks fitted on the same rows as one network of all their members (its answer, the members' mean, is then
    the mean of theirs when each has as many members)."""
    first = nets[0].inputs
    for net in nets[1:]:
        if any(not np.array_equal(a, b) for a, b in zip(vars(first).values(), vars(net.inputs).values())):
            raise ValueError("only networks fitted on the same rows merge; their input statistics differ")
    return Mlp(first, tuple(member for net in nets for member in net.members))


def _fit_member(inputs, y, w, p: Mapping[str, Any], seed: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """One network's layers ([in, out] weights and biases, float64) fitted from ``seed``."""
    import torch

    torch.manual_seed(seed)
    widths = (inputs.shape[1], *p["hidden"], 1)
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(torch.nn.SiLU())
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(net.parameters(), lr=p["lr"], weight_decay=p["weight_decay"])
    per_epoch = len(inputs) // p["batch"]
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=p["lr"], total_steps=p["epochs"] * per_epoch)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(p["epochs"]):
        order = torch.randperm(len(inputs), generator=generator)
        for i in range(per_epoch):
            rows = order[i * p["batch"] : (i + 1) * p["batch"]]
            out = net(inputs[rows])[:, 0]
            loss = torch.nn.functional.smooth_l1_loss(out, y[rows], beta=p["beta"], reduction="none")
            loss = (loss * w[rows]).sum() / w[rows].sum() if w is not None else loss.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
    linear = [m for m in net if isinstance(m, torch.nn.Linear)]
    return tuple(
        (m.weight.detach().numpy().T.astype(np.float64), m.bias.detach().numpy().astype(np.float64)) for m in linear
    )
