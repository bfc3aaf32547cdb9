"""Collective workload: the sweep of NCCL collectives, one rank's call, CUDA-graph timing, NCCL log facts.

Runs inside one process per GPU (``collect/nccl_job.py`` spawns them): every rank builds the same
call on its own tensors, captures ``graph_calls`` back-to-back calls in a CUDA graph and times
graph replays with CUDA events; the label is the per-call time, max over ranks, median over
replays. torch is imported inside the functions that need it.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelcast.features.desc import parse_desc
from kernelcast.features.fields import DTYPE_BYTES
from kernelcast.features.ops.collective import CollectiveDesc

#: in-place modes each collective is measured in (torch's all_reduce and broadcast are in place only;
#: NCCL has no in-place all_to_all / send_recv)
IN_PLACE_MODES = {
    "all_reduce": (True,),
    "broadcast": (True,),
    "all_gather": (False, True),
    "reduce_scatter": (False, True),
    "all_to_all": (False,),
    "send_recv": (False,),
}
#: the NCCL settings every process runs with (NVLS / multicast off on our hosts)
REQUIRED_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
#: env var prefixes recorded with every row (anything set that can change NCCL's behaviour)
ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_SYMM_MEM_", "NVSHMEM_", "CUDA_DEVICE_MAX_CONNECTIONS")
#: NCCL's function names in its TUNING log lines
NCCL_FUNC = {
    "AllReduce": "all_reduce",
    "AllGather": "all_gather",
    "ReduceScatter": "reduce_scatter",
    "Broadcast": "broadcast",
}
TUNING_RE = re.compile(
    r"NCCL INFO (AllReduce|AllGather|ReduceScatter|Broadcast): (\d+) Bytes -> Algo (\w+) "
    r"proto (\w+)(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})?"
)


@dataclass(frozen=True)
class Timing:
    """One case's result: per-call device time of each graph replay (max over ranks), host-loop time."""

    samples_us: tuple[float, ...]
    graph_calls: int
    host_loop_us: float


def sizes(lo: int = 1 << 10, hi: int = 1 << 32, between: bool = True) -> list[int]:
    """Powers of two from ``lo`` to ``hi``, with the ×1.5 point between each pair when ``between``."""
    out, size = [], lo
    while size <= hi:
        out.append(size)
        if between and size * 3 // 2 < hi:
            out.append(size * 3 // 2)
        size *= 2
    return out


def sweep(
    collectives: tuple[str, ...],
    dtypes: tuple[str, ...],
    byte_sizes: list[int],
    ranks: int,
    gpu: str,
    ranks_per_node: int | None = None,
) -> list[CollectiveDesc]:
    """Validated descriptions of a grid, dtype-major (a cut-off run keeps whole dtypes)."""
    out = []
    for dtype in dtypes:
        for coll in collectives:
            for in_place in IN_PLACE_MODES[coll]:
                for nbytes in byte_sizes:
                    if nbytes % (DTYPE_BYTES[dtype] * ranks):
                        continue
                    out.append(
                        parse_desc(
                            {
                                "op": "collective",
                                "gpu": gpu,
                                "dtype": dtype,
                                "backend": "nccl",
                                "collective": coll,
                                "bytes": nbytes,
                                "ranks": ranks,
                                "ranks_per_node": ranks_per_node or ranks,
                                "in_place": in_place,
                            }
                        )
                    )
    return out


def check_env(environ: dict | None = None) -> dict[str, str]:
    """Set the required NVLS-off variables; refuse to run when someone set them otherwise."""
    environ = os.environ if environ is None else environ
    for name, value in REQUIRED_ENV.items():
        if environ.get(name, value) != value:
            raise ValueError(
                f"environment {name} must be {value!r} on kernelcast collective runs "
                f"(NVLS/multicast stay off); got {environ[name]!r}"
            )
        environ[name] = value
    return {k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES)}


@dataclass(frozen=True)
class RankCall:
    """One rank's call, the tensor it writes and the value every element must hold after one call."""

    fn: Callable[[], Any]
    out: Any
    expected: float


def build_call(desc: CollectiveDesc, rank: int, world: int) -> RankCall:
    """The zero-argument call of one rank on ones: tensors allocated here, outside any timer."""
    import torch
    import torch.distributed as dist

    from kernelcast.collect.workloads.common import torch_dtype

    dtype = torch.int8 if desc.dtype == "int8" else torch_dtype(desc.dtype)
    count = desc.bytes // DTYPE_BYTES[desc.dtype]
    buf = torch.ones(count, dtype=dtype, device="cuda")
    chunk = count // world
    if desc.collective == "all_reduce":
        return RankCall(lambda: dist.all_reduce(buf), buf, world)
    if desc.collective == "broadcast":
        return RankCall(lambda: dist.broadcast(buf, src=0), buf, 1)
    if desc.collective == "all_gather":
        part = buf.narrow(0, rank * chunk, chunk) if desc.in_place else torch.ones(chunk, dtype=dtype, device="cuda")
        return RankCall(lambda: dist.all_gather_into_tensor(buf, part), buf, 1)
    if desc.collective == "reduce_scatter":
        part = buf.narrow(0, rank * chunk, chunk) if desc.in_place else torch.empty(chunk, dtype=dtype, device="cuda")
        return RankCall(lambda: dist.reduce_scatter_tensor(part, buf), part, world)
    out = torch.empty_like(buf)
    if desc.collective == "all_to_all":
        return RankCall(lambda: dist.all_to_all_single(out, buf), out, 1)
    peer_to, peer_from = (rank + 1) % world, (rank - 1) % world  # send_recv: ring, as nccl-tests

    def exchange():
        ops = [dist.P2POp(dist.isend, buf, peer_to), dist.P2POp(dist.irecv, out, peer_from)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    return RankCall(exchange, out, 1)


def check_result(call: RankCall) -> str | None:
    """Run once on the fresh ones and check every output element; None when right."""
    import torch

    call.fn()
    torch.cuda.synchronize()
    ok = bool((call.out == call.expected).all().item())
    return None if ok else f"output is not all {call.expected} after one call (first {call.out.flatten()[:4].tolist()})"


def plan_calls(model_us: float, target_us: float = 2000.0, max_calls: int = 20) -> tuple[int, int]:
    """(calls captured per graph, graph replays) from NCCL's model estimate: ~2 ms graphs, ≤ ~60 ms a case."""
    calls = max(1, min(max_calls, math.ceil(target_us / max(model_us, 1.0))))
    replays = max(3, min(15, int(60_000 / (calls * max(model_us, 1.0)))))
    return calls, replays


def time_case(call: Callable[[], Any], calls: int, replays: int, host_calls: int = 10) -> Timing:
    """Eager host-loop time, then ``replays`` timed replays of a graph of ``calls`` calls; max over ranks.

    Warm-up runs on a side stream before capture, as torch's CUDA-graph notes require.
    """
    import torch
    import torch.distributed as dist

    for _ in range(2):  # warm up (NCCL connects lazily)
        call()
    torch.cuda.synchronize()
    host = _elapsed_us(call, host_calls) / host_calls
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            call()
    graph.replay()
    samples = [_elapsed_us(graph.replay, 1, align=True) / calls for _ in range(replays)]
    del graph
    times = torch.tensor(samples + [host], dtype=torch.float64, device="cuda")
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    values = times.tolist()
    return Timing(tuple(values[:-1]), calls, values[-1])


def _elapsed_us(fn: Callable[[], Any], n: int, align: bool = False) -> float:
    """Device time of ``n`` calls of ``fn`` between two CUDA events (after a tiny all_reduce when ``align``)."""
    import torch
    import torch.distributed as dist

    if align:  # both ranks start within a few µs
        dist.all_reduce(torch.zeros(1, device="cuda"))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def summarize(samples: tuple[float, ...]) -> dict[str, float]:
    xs = sorted(samples)
    q = lambda p: xs[0] if len(xs) == 1 else statistics.quantiles(xs, n=10, method="inclusive")[p]
    return {"latency_us": statistics.median(xs), "p10_us": q(0), "p90_us": q(8), "repeats": len(xs)}


def parse_tuning_log(text: str, ranks: int) -> dict[tuple[str, int], tuple[str, str, int | None]]:
    """(collective, bytes in our convention) -> (algo, proto, channels) from NCCL TUNING lines (last wins).

    NCCL logs ``count × typesize`` per rank: all_gather / reduce_scatter sizes are × ranks in ours.
    """
    out = {}
    for m in TUNING_RE.finditer(text):
        coll = NCCL_FUNC[m.group(1)]
        nbytes = int(m.group(2)) * (ranks if coll in ("all_gather", "reduce_scatter") else 1)
        channels = int(m.group(6)) - int(m.group(5)) + 1 if m.group(5) else None
        out[(coll, nbytes)] = (m.group(3).lower(), m.group(4), channels)
    return out


def topology_summary(text: str) -> str:
    """``GPU0-GPU1:NV18;...`` from ``nvidia-smi topo -m`` (the GPU×GPU block of the matrix)."""
    rows = [line.split() for line in text.splitlines() if re.match(r"^GPU\d+\s", line)]
    links = []
    for row in rows:
        for j, cell in enumerate(row[1 : len(rows) + 1]):
            if f"GPU{j}" > row[0] and cell != "X":
                links.append(f"{row[0]}-GPU{j}:{cell}")
    return ";".join(links)


def env_json(env: dict[str, str]) -> str:
    return json.dumps(env, sort_keys=True)
