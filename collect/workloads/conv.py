"""Depthwise 1-D convolution workload: ``F.conv1d`` with ``groups = channels``, the short causal convolution of
linear-attention and Mamba layers' torch reference paths (torch's generic depthwise kernel)."""

from __future__ import annotations

import dataclasses

from kernelcast.collect.workloads import register
from kernelcast.collect.workloads.common import BackendBase, randn
from kernelcast.features.ops.conv import ConvDesc


class TorchConv(BackendBase):
    name = "torch"

    def supports(self, desc: ConvDesc, device=None) -> str | None:
        return None

    def class_key(self, desc: ConvDesc) -> tuple:
        return ("conv", desc.dtype, desc.kernel)

    @staticmethod
    def small(desc: ConvDesc) -> ConvDesc:
        length = max(min(desc.length, 64), desc.kernel)
        return dataclasses.replace(desc, batch=min(desc.batch, 2), channels=min(desc.channels, 32), length=length)

    def build(self, desc: ConvDesc, device: str = "cuda"):
        import torch.nn.functional as F

        x = randn((desc.batch, desc.channels, desc.length), desc.dtype, seed=1, device=device)
        w = randn((desc.channels, 1, desc.kernel), desc.dtype, scale=0.5, seed=2, device=device)

        def call():
            return F.conv1d(x, w, padding=desc.padding, groups=desc.channels)

        def reference():
            return F.conv1d(x.double(), w.double(), padding=desc.padding, groups=desc.channels)

        return call, reference


register("conv", TorchConv())
