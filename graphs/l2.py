"""Which of an eager kernel's reads are still in L2: the data followed from kernel to kernel of one call.

The collector flushes L2 before each call and times a family's kernel alone, all its reads cold. Inside a call a
kernel often reads what the kernel before it wrote (or read): those bytes come from L2 while the lines are still
there. ``L2Reads`` walks a call's kernels in launch order, keeping per storage the call's traffic when it was last
touched; a read is warm by ``min(bytes, L2 - traffic since)`` (an LRU view of L2: what was touched more than an L2's
worth of traffic ago is gone). The call's inputs start cold, as the collector's flush leaves them.
"""

from __future__ import annotations

import math

from kernelcast.features.fields import DTYPE_BYTES, canonical_dtype
from kernelcast.graphs.capture import TensorMeta


def tensor_bytes(t: TensorMeta) -> float:
    """Bytes of the distinct elements a tensor views (a broadcast dim, stride 0, adds none)."""
    elements = math.prod(s for s, st in zip(t.shape, t.stride) if st != 0)
    try:
        size = DTYPE_BYTES[canonical_dtype(t.dtype)]
    except (KeyError, ValueError):
        size = 4
    return float(elements * size)


class L2Reads:
    def __init__(self, l2_bytes: float) -> None:
        self.l2_bytes = float(l2_bytes)
        self.traffic = 0.0
        self.touched: dict[int, float] = {}  # storage id -> traffic when it was last read or written

    def kernel(self, reads: list[TensorMeta], writes: list[TensorMeta]) -> int:
        """Warm bytes of one kernel's ``reads``; then its reads and writes count as the latest traffic."""
        warm = 0.0
        for t in reads:
            if t.storage and t.storage in self.touched:
                warm += min(tensor_bytes(t), max(0.0, self.l2_bytes - (self.traffic - self.touched[t.storage])))
        for t in (*reads, *writes):
            self.traffic += tensor_bytes(t)
            if t.storage:
                self.touched[t.storage] = self.traffic
        return int(warm)
