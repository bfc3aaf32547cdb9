"""Collectives (NCCL/RCCL): fields, sizes, ring/tree structure, NCCL's own cost model, the link floor.

``floor_us`` is the physical floor: the bytes each rank must move (nccl-tests bus bytes) over one
direction of its links (the NIC's across nodes). NCCL's model time (``nccl_time_us``) is the
analytical answer and the learned target's scale: models learn ``log(measured / NCCL-model)``, the
part of the time NCCL's tuner does not explain.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from kernelcast.features.common import gpu_columns
from kernelcast.features.fields import DTYPE_BYTES, BoolField, ChoiceField, IntField, Rule
from kernelcast.features.gpu import get_gpu
from kernelcast.features.nccl_model import (
    ARCH_INDEX,
    NET_BW_GBS,
    bus_bytes,
    busbw_factor,
    intra_graph,
    nccl_time_us,
    rccl_proxy,
)
from kernelcast.features.ops import OpSpec, register

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")


@functools.cache
def _link(name: str) -> tuple:
    """(architecture, link kind, link B/s, nvswitch, links, NCCL intra GB/s) of one canonical GPU name."""
    spec = get_gpu(name)
    ic = spec.interconnect
    arch, kind, bw = spec.architecture, str(ic["kind"]), float(ic["bandwidth_bps"])
    channels, per_channel = intra_graph(arch, kind, bw)
    return (
        arch,
        kind,
        bw,
        bool(ic["nvswitch"]),
        int(ic.get("links", 0)),
        channels * per_channel,
        ARCH_INDEX[arch],
        float(kind.startswith(("nvlink", "xgmi"))),
    )


def _gpu_link_columns(names: np.ndarray) -> tuple[np.ndarray, ...]:
    uniq, inv = np.unique(np.asarray(names, dtype=str), return_inverse=True)
    rows = [_link(str(u)) for u in uniq]
    return tuple(np.asarray([r[i] for r in rows], dtype=object if i < 2 else None)[inv] for i in range(8))


def collective_features(
    cols: Mapping[str, object], gpu: Mapping[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """Features of collective rows from description columns (``collective, bytes, ranks,
    ranks_per_node, dtype, in_place, gpu``); ``gpu`` is ``features.common.gpu_columns`` of the rows
    (computed from ``cols['gpu']`` when not given). Every value is a float array of equal length."""
    gpu = gpu if gpu is not None else gpu_columns(cols["gpu"])
    names = np.atleast_1d(np.asarray(gpu["_names"], dtype=object))
    n_rows = len(names)
    coll = np.broadcast_to(np.asarray(cols["collective"], dtype=object), (n_rows,)).astype(str)
    nbytes = np.broadcast_to(np.asarray(cols["bytes"], dtype=np.float64), (n_rows,))
    ranks = np.broadcast_to(np.asarray(cols["ranks"], dtype=np.int64), (n_rows,))
    rpn_col = cols.get("ranks_per_node")
    rpn = np.broadcast_to(np.asarray(ranks if rpn_col is None else rpn_col, dtype=np.int64), (n_rows,))
    arch, kind, link_bw, nvswitch, links, intra, arch_index, gpu_link = _gpu_link_columns(names)
    est = nccl_time_us(coll, nbytes, ranks, rpn, arch, kind, link_bw, nvswitch, links)
    nodes = ranks // rpn
    is_ar = coll == "all_reduce"
    ring_steps = np.where(
        is_ar, 2 * (ranks - 1), np.where(np.isin(coll, ("all_gather", "reduce_scatter")), ranks - 1, ranks)
    )
    elem = np.asarray([DTYPE_BYTES[d] for d in np.broadcast_to(np.asarray(cols["dtype"], dtype=object), (n_rows,))])
    in_place = np.broadcast_to(np.asarray(cols.get("in_place", False), dtype=bool), (n_rows,))
    per_rank = np.where(coll == "all_gather", nbytes / ranks, nbytes)
    f = lambda x: np.asarray(x, dtype=np.float64)
    return {
        "bytes": f(nbytes),
        "log2_bytes": np.log2(nbytes),
        "ranks": f(ranks),
        "ranks_per_node": f(rpn),
        "nodes": f(nodes),
        "per_rank_bytes": f(per_rank),
        "chunk_bytes": nbytes / ranks,
        "log2_chunk_bytes": np.log2(nbytes / ranks),
        "bus_bytes": bus_bytes(coll, nbytes, ranks),
        "busbw_factor": busbw_factor(coll, ranks),
        "elem_bytes": f(elem),
        "elements": nbytes / elem,
        "in_place": f(in_place),
        "nccl_link_gbs": f(intra),
        "nccl_channels": f(est.channels),
        "nccl_arch_index": f(arch_index),
        "gpu_link_is_nvlink": f(gpu_link),
        "nvswitch": f(nvswitch),
        "links": f(links),
        "nccl_model_proxy": f(rccl_proxy(arch)),
        "ring_steps": f(ring_steps),
        "tree_depth": f((rpn - 1) + np.ceil(np.log2(nodes))),
        "nccl_algo": f(est.algo_code),
        "nccl_proto": f(est.proto_code),
        "nccl_latency_term_us": f(est.latency_us),
        "nccl_bandwidth_term_us": est.time_us - est.latency_us,
        "nccl_algbw_gbs": f(est.algbw_gbs),
        "nccl_bus_bw_gbs": f(est.bus_bw_gbs),
        "nccl_time_us": f(est.time_us),
        "floor_us": link_floor_us(bus_bytes(coll, nbytes, ranks), link_bw, nodes),
    }


def link_floor_us(bus: np.ndarray, link_bw_bps: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Bus bytes over one direction of the GPU's links (headline figures sum both), or over the NIC across nodes."""
    per_direction = np.asarray(link_bw_bps, dtype=np.float64) / 2
    bw = np.where(np.asarray(nodes) > 1, np.minimum(per_direction, NET_BW_GBS * 1e9), per_direction)
    return np.asarray(bus, dtype=np.float64) / bw * 1e6


def collective_flops(cols) -> np.ndarray:
    return np.zeros(len(np.atleast_1d(cols["bytes"])))  # reductions are not what bounds a collective


def analytical(cols, f) -> tuple[np.ndarray, np.ndarray]:
    bound = np.where(f["nccl_latency_term_us"] >= f["nccl_bandwidth_term_us"], "latency", "link").astype(object)
    return f["nccl_time_us"], bound


def _all_ranks(c) -> np.ndarray:
    """ranks (one node)"""
    return c["ranks"]


def _elem_bytes(c) -> dict:
    return {"elem_bytes": np.asarray([DTYPE_BYTES[d] for d in c["dtype"]])}


SPEC = register(
    OpSpec(
        name="collective",
        doc="one NCCL/RCCL collective call; bytes as nccl-tests' size "
        "(all_gather: total output, reduce_scatter: total input)",
        fields={
            "collective": ChoiceField(COLLECTIVES),
            "bytes": IntField(1, 1 << 42),
            "ranks": IntField(1, 1 << 16),
            "ranks_per_node": IntField(1, 1 << 10, default=_all_ranks),
            "in_place": BoolField(default=False),
        },
        dtypes=("fp32", "bf16", "fp16", "int8", "fp8_e4m3"),
        backends=("nccl", "rccl"),
        rules=(
            Rule("ranks", lambda c: c["ranks"] >= 2, lambda c: "an integer >= 2 (a collective needs two ranks)"),
            Rule(
                "ranks_per_node",
                lambda c: c["ranks"] % c["ranks_per_node"] == 0,
                lambda c: f"a divisor of ranks={c['ranks']}",
            ),
            Rule(
                "bytes",
                lambda c: c["bytes"] % c["elem_bytes"] == 0,
                lambda c: f"a multiple of the {c['dtype']} element size ({c['elem_bytes']} B)",
            ),
        ),
        derived=_elem_bytes,
        checks_dtype_on_gpu=False,
        features=collective_features,
        flops=collective_flops,
        analytical=analytical,
        analytical_assumptions="NCCL 2.30.7 cost model (ring/tree x LL/LL128/Simple, per-architecture constants); "
        "NVLS off",
        scale=lambda f: f["nccl_time_us"],
        example={"collective": "all_reduce", "bytes": 1 << 20, "ranks": 8, "dtype": "bf16", "backend": "nccl"},
        categorical=("backend", "dtype", "source", "collective"),
        range_columns=("bytes", "ranks"),
        size_feature="bytes",
        extras={"nccl_model_us": "nccl_time_us"},  # NCCL's own estimate, beside the learned answer
        train_params={"max_depth": 6},  # ~5k rows: depth 6 as accurate as the default depth 8
    )
)
CollectiveDesc = SPEC.desc_type
