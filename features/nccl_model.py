"""NCCL's own cost model (``ncclTopoTuneModel`` + ``ncclTopoGetAlgoTime``, NCCL 2.30.7), vectorized.

NCCL predicts a collective's time as ``latency + nBytes / (1000 * algBw)`` (µs, GB/s) for every
(algorithm, protocol) it may run and picks the minimum. Constants are copied from
``src/graph/tuning.cc`` of NCCL 2.30.7 (see shared/reference/anchors.md §2.7). Structure mirrors
NCCL: ``tune_table`` is the per-communicator table (cached; plain Python, one call per distinct
(collective, ranks, nodes, GPU) combination) and ``nccl_time_us`` is the per-call step over numpy
arrays (100,000 sizes in a few ms).

What NCCL learns from its topology search, and what we assume instead (documented choices):

* Intra-node bandwidth (``bwIntra × nChannels``): NCCL sums its own per-link figure over the links
  (``topo.h``: NVLink SM80 20.0, SM90 20.6, SM100 40.1 GB/s per link per direction; PCIe
  ``width × GT/s / 80`` = 24 GB/s Gen4 x16, 48 GB/s Gen5 x16). The GPU spec gives the vendor's
  headline (both directions summed), so ``NCCL_LINK_RATIO`` converts: nvlink3 20/25, nvlink4
  20.6/25, nvlink5 40.1/50, pcie 24/32. The ring search then takes, for each speed in NCCL's
  speed array (``search.cc`` sm90/sm100/default intra arrays), ``min(16, floor(total/speed))``
  channels and keeps the best ``nChannels × speed``; channels at ≥ 25 GB/s are then duplicated
  (``nChannels × 2``, speed / 2) as ``ncclTopoCompute`` does. H200 (18 NVLink4): 6 × 60 GB/s
  → 12 channels × 30 GB/s = 360 GB/s bus bandwidth; the same for 2 GPUs joined by NV18.
* Tree graph: same channels/bandwidth as the ring graph, except two GPUs in one node, where the
  tree uses both directions of the link: NCCL 2.28.9 on 2×H200 (NV18) logged ``Pattern 1,
  nChannels 12, bw 60`` next to the ring's ``Pattern 4, nChannels 12, bw 30``; its whole logged
  tuning table is reproduced by this module (tests/test_nccl_model.py). Intra-node pattern is
  the balanced tree (no 0.85 ``NCCL_TOPO_PATTERN_TREE`` penalty). NVLS / CollNet are off (our hosts keep
  NVLS disabled); PAT is modelled (AllGather / ReduceScatter at one rank per node).
* Inter-node: one NIC per GPU at ``NET_BW_GBS`` (400 Gb/s = 50 GB/s) caps the graph's per-channel
  bandwidth at ``ranks_per_node × 50 / nChannels``; ``latencyInter`` 0, Intel host (net overhead
  1 µs, Intel ``llMaxBws`` row), ring ``sameChannels`` for Broadcast. Not validated on data.
* AllToAll and SendRecv are point-to-point in NCCL (outside the tuning model). Ours: time =
  p2p latency + bytes moved per rank / per-rank bandwidth, with the p2p latency = Ring/LL base +
  one NVLink/PCI hop per peer (``P2P_LAT_US``), the bandwidth the intra total (or the NIC for
  off-node bytes). all_to_all moves (n−1)/n of its buffer; send_recv moves its whole buffer.
* AMD (cdna3/cdna4, RCCL): RCCL replaces the tuner with table-driven ``rcclTuningModel``; we
  use NCCL's Hopper constants and xGMI headline × 0.75 instead — flagged by ``rccl_proxy(arch)``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from kernelcast.features.common import key_codes

ALGOS = ("tree", "ring", "pat", "p2p")
PROTOS = ("LL", "LL128", "Simple")
TREE, RING, PAT, P2P = range(4)
LL, LL128, SIMPLE = range(3)

#: collectives NCCL's tuner models (the rest are p2p)
TUNED = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
P2P_COLLECTIVES = ("all_to_all", "send_recv")

# --- NCCL 2.30.7 src/graph/tuning.cc (µs, GB/s); rows Tree, Ring, PAT; cols LL, LL128, Simple ---
BASE_LAT = {TREE: (6.8, 14.0, 8.4), RING: (6.6, 14.0, 8.4), PAT: (8.0, 8.0, 8.0)}
HW_NVLINK, HW_PCI, HW_NET = range(3)
HW_LAT = {
    HW_NVLINK: {TREE: (0.6, 1.25, 4.0), RING: (0.6, 1.9, 3.4), PAT: (0.0, 0.0, 4.0)},
    HW_PCI: {TREE: (1.0, 1.9, 4.0), RING: (1.0, 2.5, 5.7), PAT: (0.0, 0.0, 4.0)},
    HW_NET: {TREE: (5.0, 8.5, 14.0), RING: (2.7, 4.0, 14.0), PAT: (0.0, 0.0, 14.0)},
}
#: compute-capability index: Volta, Ampere (incl. Ada), Hopper, Blackwell; columns N1/N2/N4+ nodes
LL_MAX_BWS = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
PER_CH_MAX_RING_LL128 = ((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (40.0,) * 3)
PER_CH_MAX_TREE_LL128 = ((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_MAX_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
#: Tree bandwidth correction by log2(nBytes >> 6) (64 B ... 256 MiB), per protocol
TREE_CORRECTION = np.array(
    [
        [
            1.0,
            1.0,
            1.0,
            1.0,
            0.9,
            0.8,
            0.7,
            0.7,
            0.7,
            0.7,
            0.6,
            0.5,
            0.4,
            0.4,
            0.5,
            0.6,
            0.7,
            0.8,
            0.9,
            1.0,
            1.0,
            1.0,
            1.0,
            1.0,
        ],
        [
            1.0,
            1.0,
            1.0,
            1.0,
            1.0,
            0.9,
            0.8,
            0.8,
            0.8,
            0.7,
            0.6,
            0.6,
            0.6,
            0.6,
            0.6,
            0.6,
            0.8,
            0.9,
            0.9,
            0.9,
            0.9,
            1.0,
            1.0,
            1.0,
        ],
        [
            0.9,
            0.9,
            0.9,
            0.9,
            0.9,
            0.9,
            0.9,
            0.8,
            0.7,
            0.6,
            0.6,
            0.5,
            0.5,
            0.5,
            0.5,
            0.6,
            0.7,
            0.8,
            0.7,
            0.7,
            0.8,
            0.9,
            0.9,
            0.9,
        ],
    ]
)
#: Tree correction rows by log2i(nBytes >> 6) + 1: row 0 (< 64 B) and row 24 (>= 512 MiB) apply none
_TREE_ROWS = np.vstack([np.ones(3), TREE_CORRECTION.T[:23], np.ones(3)])
_ALGO_NAMES, _PROTO_NAMES = np.array(ALGOS), np.array(PROTOS)
# --- topology assumptions (see module docstring) ---
ARCH_INDEX = {"volta": 0, "ampere": 1, "ada": 1, "hopper": 2, "blackwell": 3, "cdna3": 2, "cdna4": 2}
AMD_ARCHS = ("cdna3", "cdna4")
#: NCCL's per-direction figure over the vendor's both-directions headline, per link kind
NCCL_LINK_RATIO = {
    "nvlink2": 20.0 / 25.0,
    "nvlink3": 20.0 / 25.0,
    "nvlink4": 20.6 / 25.0,
    "nvlink5": 40.1 / 50.0,
    "pcie3": 0.75,
    "pcie4": 0.75,
    "pcie5": 0.75,
    "xgmi": 0.75,
}
SPEEDS_INTRA = {  # search.cc speed arrays (GB/s per channel), by compute-capability index
    0: (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    1: (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    2: (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    3: (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
}
MAX_SEARCH_CHANNELS = 16  # ringGraph.maxChannels = MAXCHANNELS / 2
NET_BW_GBS = 50.0  # one 400 Gb/s NIC per GPU
NET_OVERHEAD_US = 1.0  # getNetOverhead on an Intel x86 host (×3 for Simple)
P2P_LAT_US = {HW_NVLINK: 0.6, HW_PCI: 1.0, HW_NET: 2.7}  # per-peer hop (NCCL's Ring/LL hwLat)


class NcclEstimate(NamedTuple):
    """Arrays, one entry per call: what NCCL's model predicts and picks."""

    time_us: np.ndarray
    algo: np.ndarray  # str: tree | ring | pat | p2p
    proto: np.ndarray  # str: LL | LL128 | Simple
    algo_code: np.ndarray  # index into ALGOS
    proto_code: np.ndarray  # index into PROTOS
    latency_us: np.ndarray  # latency term of the chosen (algo, proto)
    algbw_gbs: np.ndarray  # model bandwidth of the chosen (algo, proto), corrections applied
    bus_bw_gbs: np.ndarray  # the nccl-tests busbw this time implies
    channels: np.ndarray  # channels of NCCL's graph (search result after duplication)


def rccl_proxy(arch: Any) -> np.ndarray:
    """True where the architecture is AMD's: the NCCL constants stand in for RCCL's own tuning tables."""
    return np.isin(np.asarray(arch, dtype=object).astype(str), AMD_ARCHS)


def busbw_factor(collective: Any, ranks: Any) -> np.ndarray:
    """nccl-tests bus-bandwidth factor: all_reduce 2(n−1)/n; gather/scatter/all_to_all (n−1)/n; else 1."""
    coll = np.asarray(collective)
    n = np.asarray(ranks, dtype=float)
    _check_collectives(coll)
    out = np.where(coll == "all_reduce", 2.0 * (n - 1) / n, 1.0)
    return np.where(np.isin(coll, ("all_gather", "reduce_scatter", "all_to_all")), (n - 1) / n, out)


def bus_bytes(collective: Any, nbytes: Any, ranks: Any) -> np.ndarray:
    """Bytes each rank must move over its links (nccl-tests busbw × time): bytes × busbw factor."""
    return np.asarray(nbytes, dtype=float) * busbw_factor(collective, ranks)


def _check_collectives(coll: np.ndarray) -> None:
    bad = np.setdiff1d(np.unique(coll), TUNED + P2P_COLLECTIVES)
    if bad.size:
        raise ValueError(
            f"kernel_desc['collective'] must be one of {', '.join(TUNED + P2P_COLLECTIVES)}; got {bad[0]!r}"
        )


def _arch_index(arch: str) -> int:
    if arch not in ARCH_INDEX:
        raise ValueError(f"gpu architecture must be one of {', '.join(ARCH_INDEX)} for the NCCL model; got {arch!r}")
    return ARCH_INDEX[arch]


@functools.cache
def intra_graph(arch: str, link_kind: str, link_bw_bps: float) -> tuple[int, float]:
    """(nChannels, per-channel GB/s) of NCCL's ring graph for one node of this GPU."""
    if link_kind not in NCCL_LINK_RATIO:
        raise ValueError(f"gpu interconnect kind must be one of {', '.join(NCCL_LINK_RATIO)}; got {link_kind!r}")
    if not link_bw_bps > 0:
        raise ValueError(f"gpu interconnect bandwidth_bps must be > 0; got {link_bw_bps!r}")
    total = link_bw_bps / 2e9 * NCCL_LINK_RATIO[link_kind]
    best = (1, min(total, SPEEDS_INTRA[_arch_index(arch)][-1]))
    for speed in SPEEDS_INTRA[_arch_index(arch)]:
        n = min(MAX_SEARCH_CHANNELS, int(total // speed))
        if n and n * speed > best[0] * best[1]:
            best = (n, speed)
    n, speed = best
    if speed >= 25.0:  # ncclTopoCompute duplicates fast channels
        dup = min(2 * n, MAX_SEARCH_CHANNELS)
        speed, n = speed / math.ceil(dup / n), dup
    return n, speed


def _log2i(x: int) -> int:
    return x.bit_length() - 1 if x > 0 else -1


def _usable_bw_bps(link_bw_bps: float, nvswitch: bool, links: int | None, ranks_per_node: int) -> float:
    """Without a switch, a fully connected mesh gives a ring of n GPUs n−1 of its links (one per peer)."""
    if nvswitch or not links or links <= 1:
        return link_bw_bps
    return link_bw_bps * min(1.0, (ranks_per_node - 1) / links)


def _ring_tree_lat(coll: str, a: int, p: int, n: int, nodes: int, intra_hw: int) -> float:
    """Latency of one (algo, proto), as ncclTopoTuneModel sets ``comm->latencies``."""
    ppn = n / nodes
    nsteps = 2 * (n - 1) if coll == "all_reduce" else n - 1 if coll in ("all_gather", "reduce_scatter") else n
    intra = HW_LAT[intra_hw][a][p]
    inter = HW_LAT[HW_NET][TREE if ppn == 1 else a][p]
    lat = BASE_LAT[a][p]
    if a == RING and coll == "broadcast":  # sameChannels: one hop's latency
        return lat + HW_LAT[intra_hw if nodes == 1 else HW_NET][RING][p]
    if a == RING:
        overhead = 0.0 if nodes == 1 else NET_OVERHEAD_US * (3 if p == SIMPLE else 1)
        intra = max(intra, overhead)
        n_inter = 0 if nodes == 1 else 2 * (nodes - 1) if coll == "all_reduce" else nodes - 1
        return lat + (nsteps - n_inter) * intra + n_inter * inter
    if a == TREE:
        return lat + 2 * ((n // nodes - 1) * intra + _log2i(nodes) * inter)
    return lat + _log2i(nodes) * (inter / 3.5) + n * 2.8  # PAT


def _ring_tree_bw(coll: str, a: int, p: int, n: int, nodes: int, cc: int, nch: int, bw: float) -> float:
    """Algorithm bandwidth of one (algo, proto), as ncclTopoTuneModel sets ``comm->bandwidths``."""
    idx2 = min(nodes, 3) - 1
    ll_max = LL_MAX_BWS[cc if nodes == 1 else 0][idx2]
    bus = nch * bw
    if a == RING and p == LL:
        bus = min(ll_max, bus * 0.5)
    elif a == RING and p == LL128:
        bus = min(bus * 0.92, nch * PER_CH_MAX_RING_LL128[cc][idx2])
    elif a == TREE:
        bus = min(bus * 0.92, nch * PER_CH_MAX_TREE[cc][idx2])
        if p == LL:
            bus = min(bus / 3.8, ll_max)
        elif p == LL128:
            bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), nch * PER_CH_MAX_TREE_LL128[cc][idx2])
    elif a == PAT:
        return bus * 0.75  # AllGather/ReduceScatter: no busBw→algBw ratio
    nsteps = 2 * (n - 1) if coll == "all_reduce" else n - 1 if coll in ("all_gather", "reduce_scatter") else n
    return bus * (n / nsteps if a == RING else 0.5)


def _p2p_row(coll: str, n: int, nodes: int, intra_hw: int, intra_gbs: float) -> tuple[float, float]:
    """(latency µs, effective GB/s) of our point-to-point model for all_to_all / send_recv."""
    rpn = n // nodes
    if coll == "send_recv":
        hop = P2P_LAT_US[intra_hw if nodes == 1 else HW_NET]
        return BASE_LAT[RING][LL] + hop, intra_gbs if nodes == 1 else min(intra_gbs, NET_BW_GBS)
    f_in, f_out = (rpn - 1) / (n - 1), (n - rpn) / (n - 1)
    lat = BASE_LAT[RING][LL] + (rpn - 1) * P2P_LAT_US[intra_hw] + (n - rpn) * P2P_LAT_US[HW_NET]
    per_byte = (n - 1) / n * max(f_in / intra_gbs, f_out / NET_BW_GBS)
    return lat, 1.0 / per_byte


class Table(NamedTuple):
    """NCCL's per-communicator numbers for one collective (``comm->latencies/bandwidths``)."""

    lat: np.ndarray  # [12] µs per slot ``algo * 3 + proto``
    bw: np.ndarray  # [12] GB/s algorithm bandwidth; 0 = not run
    channels: int  # nChannels of the graph
    busbw_factor: float  # nccl-tests factor for this collective and rank count
    tree_corrected: bool  # AllReduce: Tree bandwidth gets treeCorrectionFactor
    plateau_bytes: float  # Ring/Simple latency × plateau_mult from this size on (multi-node AllReduce)
    plateau_mult: float


def _factor(coll: str, n: int) -> float:
    if coll == "all_reduce":
        return 2.0 * (n - 1) / n
    return (n - 1) / n if coll in ("all_gather", "reduce_scatter", "all_to_all") else 1.0


@functools.lru_cache(maxsize=4096)
def tune_table(
    coll: str, n: int, rpn: int, arch: str, link_kind: str, link_bw_bps: float, nvswitch: bool, links: int
) -> Table:
    """ncclTopoTuneModel for one (collective, ranks, ranks per node, GPU); p2p collectives get our p2p slot."""
    if coll not in TUNED + P2P_COLLECTIVES:
        raise ValueError(f"kernel_desc['collective'] must be one of {', '.join(TUNED + P2P_COLLECTIVES)}; got {coll!r}")
    if not 2 <= n == int(n) or not 1 <= rpn == int(rpn) or n % rpn:
        raise ValueError(
            f"kernel_desc['ranks_per_node'] must divide ranks (>= 2); got ranks={n!r}, ranks_per_node={rpn!r}"
        )
    n, nodes = int(n), int(n // rpn)
    cc = _arch_index(arch)
    nch, speed = intra_graph(arch, link_kind, _usable_bw_bps(link_bw_bps, nvswitch, links, n // nodes))
    intra_hw = HW_NVLINK if link_kind.startswith(("nvlink", "xgmi")) else HW_PCI
    lat, bw = np.zeros(len(ALGOS) * 3), np.zeros(len(ALGOS) * 3)
    if coll in P2P_COLLECTIVES:
        lat[P2P * 3 + SIMPLE], bw[P2P * 3 + SIMPLE] = _p2p_row(coll, n, nodes, intra_hw, nch * speed)
    else:
        per_ch = speed if nodes == 1 else min(speed, (n // nodes) * NET_BW_GBS / nch)
        for a in {"all_reduce": (TREE, RING), "broadcast": (RING,)}.get(coll, (RING, PAT)):
            for p in (LL, LL128, SIMPLE):
                if (p == LL128 and intra_hw != HW_NVLINK) or (a == PAT and (p != SIMPLE or nodes != n)):
                    continue
                lat[a * 3 + p] = _ring_tree_lat(coll, a, p, n, nodes, intra_hw)
                pair_tree = 2.0 if a == TREE and n == 2 and nodes == 1 else 1.0  # see module docstring
                bw[a * 3 + p] = _ring_tree_bw(coll, a, p, n, nodes, cc, nch, per_ch * pair_tree)
    multi_ar = coll == "all_reduce" and nodes > 1
    return Table(
        lat,
        bw,
        nch,
        _factor(coll, n),
        coll == "all_reduce",
        64.0 * nch * n if multi_ar else math.inf,
        1.9 if cc == 0 else 1.4,
    )


@functools.lru_cache(maxsize=256)
def _stacked(keys: tuple[tuple, ...]) -> tuple[np.ndarray, ...]:
    """The tables of ``keys`` as arrays: lat [K,12], 1/bw [K,12], channels, factor, tree flag, plateau."""
    tables = [tune_table(*k) for k in keys]
    cols = list(zip(*tables))
    bw = np.stack(cols[1])
    with np.errstate(divide="ignore"):
        inv_bw = np.where(bw > 0, 1.0 / bw, 0.0)
    lat = np.where(bw > 0, np.stack(cols[0]), np.inf)  # a slot NCCL will not run never wins
    return (lat, inv_bw, *(np.asarray(c, dtype=np.float64) for c in cols[2:]))


#: up to this many rows, key tuples are coded with a dict; beyond, column by column with pandas (hashed)
SMALL_KEYS = 256


def _codes(arrays: list[np.ndarray]) -> tuple[np.ndarray, tuple[tuple, ...]]:
    """Codes per row and the distinct key tuples (rows of the broadcast key arrays)."""
    if all(a.ndim == 0 for a in arrays):
        return np.zeros((), dtype=np.int64), (tuple(a.item() for a in arrays),)
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    flat = [np.broadcast_to(a, shape).ravel() for a in arrays]
    if len(flat[0]) <= SMALL_KEYS:  # a few rows: a dict beats nine factorize calls
        index: dict[tuple, int] = {}
        codes = [index.setdefault(k, len(index)) for k in zip(*(a.tolist() for a in flat))]
        return np.asarray(codes, dtype=np.int64).reshape(shape), tuple(index)
    codes, first = key_codes(*flat)
    keys = tuple(tuple(a[i].item() if hasattr(a[i], "item") else a[i] for a in flat) for i in first)
    return codes.reshape(shape), keys


def nccl_time_us(
    collective: Any,
    nbytes: Any,
    ranks: Any,
    ranks_per_node: Any,
    arch: Any,
    link_kind: Any,
    link_bw_bps: Any,
    nvswitch: Any,
    links: Any = 0,
) -> NcclEstimate:
    """NCCL's predicted time (µs) and its (algo, proto) choice; every argument a scalar or an array.

    ``nbytes`` follows nccl-tests' "size" (all_gather: total output; reduce_scatter: total input),
    which is the ``nBytes`` NCCL's tuner sees. GPU arguments come from ``features.gpu.GpuSpec``
    (``architecture``, ``interconnect`` kind / bandwidth_bps / nvswitch / links; links 0 = unknown).
    """
    nb = np.asarray(nbytes, dtype=np.float64)
    if not (nb > 0).all():
        raise ValueError(f"kernel_desc['bytes'] must be > 0; got {nb[~(nb > 0)].ravel()[:1]!r}")
    codes, keys = _codes(
        [
            np.asarray(collective),
            np.asarray(ranks),
            np.asarray(ranks_per_node),
            np.asarray(arch),
            np.asarray(link_kind),
            np.asarray(link_bw_bps, dtype=np.float64),
            np.asarray(nvswitch),
            np.asarray(links),
        ]
    )
    if codes.shape != nb.shape:
        shape = np.broadcast_shapes(codes.shape, nb.shape)
        codes, nb = np.broadcast_to(codes, shape), np.broadcast_to(nb, shape)
    return _get_algo_time(nb, *(c[codes] for c in _stacked(keys)))


def _get_algo_time(nb, lat, inv_bw, nch, factor, tree, plateau, mult) -> NcclEstimate:
    """ncclTopoGetAlgoTime over every slot (Tree correction, ring plateau), then NCCL's pick: the minimum."""
    log_size = np.floor(np.log2(np.maximum(nb, 32.0) / 64.0)).astype(np.int64)  # log2i(nBytes >> 6)
    corr = np.where(tree[..., None] > 0, _TREE_ROWS[np.minimum(log_size + 1, 24)], 1.0)
    inv_bw, lat = inv_bw.copy(), lat.copy()
    inv_bw[..., :3] /= corr
    lat[..., RING * 3 + SIMPLE] *= np.where(nb >= plateau, mult, 1.0)
    time = lat + nb[..., None] * 1e-3 * inv_bw
    slot = time.argmin(axis=-1)
    flat = np.arange(slot.size) * time.shape[-1] + slot.ravel()
    pick = lambda m: m.reshape(-1)[flat].reshape(slot.shape)
    t = pick(time)
    algo_code, proto_code = slot // 3, slot % 3
    return NcclEstimate(
        t,
        _ALGO_NAMES[algo_code],
        _PROTO_NAMES[proto_code],
        algo_code,
        proto_code,
        pick(lat),
        1.0 / pick(inv_bw),
        nb / (t * 1e3) * factor,
        nch.astype(np.int64),
    )


def nccl_time_for_gpu(collective: Any, nbytes: Any, ranks: Any, ranks_per_node: Any, spec: Any) -> NcclEstimate:
    """``nccl_time_us`` with the GPU numbers taken from one ``GpuSpec``."""
    ic = spec.interconnect
    return nccl_time_us(
        collective,
        nbytes,
        ranks,
        ranks_per_node,
        spec.architecture,
        ic["kind"],
        float(ic["bandwidth_bps"]),
        bool(ic["nvswitch"]),
        int(ic.get("links", 0)),
    )
