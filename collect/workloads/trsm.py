"""Triangular-solve workload: ``torch.linalg.solve_triangular`` on the left over a batch of unit lower-triangular
systems, as the gated delta rule's torch reference path calls it (cuBLAS's batched trsm)."""

from __future__ import annotations

import dataclasses

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, randn
from kernelcast.features.ops.trsm import TrsmDesc


class CublasTrsm(BackendBase):
    name = "cublas"

    def supports(self, desc: TrsmDesc, device=None) -> str | None:
        return None

    def class_key(self, desc: TrsmDesc) -> tuple:
        return ("trsm", desc.dtype, desc.n <= 64)

    @staticmethod
    def small(desc: TrsmDesc) -> TrsmDesc:
        return dataclasses.replace(desc, n=min(desc.n, 64), nrhs=min(desc.nrhs, 16), batch=min(desc.batch, 3))

    def build(self, desc: TrsmDesc, device: str = "cuda"):
        import torch

        # unit lower triangular with small off-diagonal entries: well conditioned, as the delta rule's chunk matrices
        a = randn((desc.batch, desc.n, desc.n), desc.dtype, scale=0.1 / desc.n**0.5, seed=1, device=device)
        a = torch.tril(a, -1) + torch.eye(desc.n, device=a.device, dtype=a.dtype) if device != "meta" else a
        b = randn((desc.batch, desc.n, desc.nrhs), desc.dtype, seed=2, device=device)

        def call():
            return torch.linalg.solve_triangular(a, b, upper=False, unitriangular=True)

        def reference():
            return torch.linalg.solve_triangular(a.double(), b.double(), upper=False, unitriangular=True)

        return call, reference


register("trsm", CublasTrsm())
