"""NCCL's cost model: hand-computed cases per collective, NCCL's pick, vectorization, errors, speed."""

import numpy as np
import pytest

from kernelcast.features.gpu import get_gpu
from kernelcast.features.nccl_model import bus_bytes, busbw_factor, intra_graph, nccl_time_for_gpu, nccl_time_us

H200 = get_gpu("h200_sxm")


def one(collective, nbytes, ranks, rpn, gpu=H200):
    e = nccl_time_for_gpu(collective, nbytes, ranks, rpn, gpu)
    return float(e.time_us), str(e.algo), str(e.proto)


def test_intra_graph_matches_nccls_search_by_hand():
    # H200: 18 NVLink4 x 20.6 GB/s = 370.8 GB/s; sm90 speeds: 60 x 6 = 360 is the best; 60 >= 25 so
    # channels are duplicated: 12 x 30 GB/s (NCCL 2.19 logs on H100 show "nChannels 12, bw 30")
    assert intra_graph("hopper", "nvlink4", 900e9) == (12, 30.0)
    # L40S: PCIe Gen4 x16 = 24 GB/s in NCCL's units; Ampere speeds: 12 x 2 = 24 (no duplication)
    assert intra_graph("ada", "pcie4", 64e9) == (2, 12.0)
    # B200: 18 x 40.1 = 721.8; sm100 speeds: 90 x 8 = 720, duplicated to 16 x 45
    assert intra_graph("blackwell", "nvlink5", 1.8e12) == (16, 45.0)


def test_all_reduce_large_is_ring_simple():
    # 8 ranks, 1 GiB: Ring/Simple lat = 8.4 + 2*(8-1)*3.4 = 56.0 us; algBw = 360 * 8/14 = 205.714 GB/s
    # time = 56 + 2**30 / (1000 * 205.714) = 56 + 5219.578 = 5275.578 us
    # (Tree/Simple: 64.4 us + 2**30 / (1000 * 331.2 * 0.5) = 6548 us loses)
    t, algo, proto = one("all_reduce", 1 << 30, 8, 8)
    assert (algo, proto) == ("ring", "Simple")
    assert t == pytest.approx(56.0 + (1 << 30) / (1000 * 360 * 8 / 14), rel=1e-9)
    assert t == pytest.approx(5275.578, abs=1e-3)


def test_all_reduce_small_is_ring_ll():
    # 8 ranks, 1 KiB: Ring/LL lat = 6.6 + 14 * 0.6 = 15.0; algBw = min(141, 360 * 0.5) * 8/14 = 80.571
    # time = 15.0 + 1024 / 80571.4 = 15.01271 (Tree/LL lat 6.8 + 2 * 7 * 0.6 = 15.2 loses)
    t, algo, proto = one("all_reduce", 1024, 8, 8)
    assert (algo, proto) == ("ring", "LL")
    assert t == pytest.approx(15.0 + 1024 / (1000 * 141 * 8 / 14), rel=1e-9)


def test_all_gather_and_reduce_scatter_medium():
    # 8 ranks, 1 MiB: Ring/LL lat = 6.6 + 7 * 0.6 = 10.8; algBw = 141 * 8/7 = 161.143
    # time = 10.8 + 1048576 / 161142.9 = 17.30712
    for coll in ("all_gather", "reduce_scatter"):
        t, algo, proto = one(coll, 1 << 20, 8, 8)
        assert (algo, proto) == ("ring", "LL")
        assert t == pytest.approx(17.30712, abs=1e-5)


def test_broadcast_large():
    # 2 ranks, 1 GiB: Ring/Simple lat = 8.4 + 3.4 (sameChannels: one hop) = 11.8; algBw = 360 * 2/2
    # time = 11.8 + 2**30 / 360000 = 2994.4162
    t, algo, proto = one("broadcast", 1 << 30, 2, 2)
    assert (algo, proto) == ("ring", "Simple")
    assert t == pytest.approx(11.8 + (1 << 30) / 360000, rel=1e-9)


def test_p2p_collectives():
    # send_recv 2 ranks, 1 MiB: lat 6.6 + 0.6 = 7.2; bw 360 -> 7.2 + 1048576 / 360000 = 10.11271
    t, algo, _ = one("send_recv", 1 << 20, 2, 2)
    assert algo == "p2p" and t == pytest.approx(7.2 + (1 << 20) / 360000, rel=1e-9)
    # all_to_all 8 ranks, 1 GiB: lat 6.6 + 7 * 0.6 = 10.8; moves 7/8 of the buffer at 360 GB/s
    t, algo, _ = one("all_to_all", 1 << 30, 8, 8)
    assert algo == "p2p" and t == pytest.approx(10.8 + (1 << 30) * 7 / 8 / 360000, rel=1e-9)


def test_multi_node_tree_ll_with_correction():
    # 4 nodes x 1 GPU, all_reduce 1 KiB. Per-channel bw min(30, 50 / 12) -> busBw 50; Tree: min(46, 432)
    # -> LL: min(46 / 3.8, 20.4) = 12.105 -> x0.5 = 6.0526; treeCorrection[LL][log2(1024 >> 6) = 4] = 0.9
    # lat = 6.8 + 2 * (0 * 0.6 + log2(4) * 5.0) = 26.8; time = 26.8 + 1024 / (1000 * 5.4474) = 26.98798
    # (Ring/LL: 6.6 + 6 inter steps * 5.0 = 36.6 loses)
    e = nccl_time_us("all_reduce", 1024, 4, 1, "hopper", "nvlink4", 900e9, True, 18)
    assert (str(e.algo), str(e.proto)) == ("tree", "LL")
    assert float(e.time_us) == pytest.approx(26.98798, abs=1e-5)
    assert float(e.latency_us) == pytest.approx(26.8)


def test_ll128_only_over_nvlink():
    sizes = 2.0 ** np.arange(10, 31)
    l40s = nccl_time_for_gpu("all_reduce", sizes, 8, 8, get_gpu("l40s"))
    h200 = nccl_time_for_gpu("all_reduce", sizes, 8, 8, H200)
    assert "LL128" not in set(l40s.proto) and "LL128" in set(h200.proto)


def test_vectorized_equals_scalar_and_broadcasts():
    rng = np.random.default_rng(0)
    colls = rng.choice(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"], 60)
    sizes = np.round(2 ** rng.uniform(8, 32, 60))
    ranks = rng.choice([2, 4, 8], 60)
    vec = nccl_time_for_gpu(colls, sizes, ranks, ranks, H200)
    assert vec.time_us.shape == (60,)
    for i in range(60):
        assert one(colls[i], sizes[i], ranks[i], ranks[i]) == (vec.time_us[i], vec.algo[i], vec.proto[i])
    gpus = [get_gpu(g) for g in ("h200_sxm", "a100_sxm", "b200_sxm", "l40s")]
    mixed = nccl_time_us(
        "all_reduce",
        1 << 24,
        8,
        8,
        [g.architecture for g in gpus],
        [g.interconnect["kind"] for g in gpus],
        [g.link_bandwidth_bps for g in gpus],
        [g.interconnect["nvswitch"] for g in gpus],
        [g.interconnect["links"] for g in gpus],
    )
    assert [float(x) for x in mixed.time_us] == [one("all_reduce", 1 << 24, 8, 8, g)[0] for g in gpus]
    assert mixed.time_us[2] < mixed.time_us[0] < mixed.time_us[1] < mixed.time_us[3]  # B200 < H200 < A100 < L40S


def test_busbw_factor_and_bus_bytes():
    f = busbw_factor(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"], 8)
    assert f.tolist() == [1.75, 0.875, 0.875, 0.875, 1.0, 1.0]
    assert bus_bytes("all_reduce", 1024, 4).item() == 1536.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"collective": "allreduce"}, "collective.*all_reduce"),
        ({"ranks": 8, "ranks_per_node": 3}, "ranks_per_node"),
        ({"nbytes": 0}, "bytes"),
        ({"arch": "kepler"}, "architecture"),
        ({"link_kind": "ethernet"}, "interconnect kind"),
    ],
)
def test_bad_input_names_the_field(kwargs, match):
    args = dict(
        collective="all_reduce",
        nbytes=1024,
        ranks=8,
        ranks_per_node=8,
        arch="hopper",
        link_kind="nvlink4",
        link_bw_bps=900e9,
        nvswitch=True,
        links=18,
    )
    with pytest.raises(ValueError, match=match):
        nccl_time_us(**{**args, **kwargs})


def test_vectorized_equals_scalar():
    """The vectorized model is the scalar one row by row (its speed is benchmarks/bench_nccl_model.py's)."""
    rng = np.random.default_rng(1)
    n = 200
    colls = rng.choice(["all_reduce", "all_gather", "reduce_scatter", "all_to_all"], n)
    ranks = rng.choice([2, 4, 8, 16], n)
    sizes = np.round(2 ** rng.uniform(10, 32, n))
    many = nccl_time_for_gpu(colls, sizes, ranks, np.minimum(ranks, 8), H200)
    one = [nccl_time_for_gpu(c, s, r, min(r, 8), H200) for c, s, r in zip(colls, sizes, ranks)]
    assert np.allclose(np.asarray(many.time_us), [float(np.asarray(o.time_us)) for o in one])


def _logged_table(path):
    """{(collective, algo, proto): (latency, bw)} from NCCL's INFO tuning table lines."""
    names = {
        "Broadcast": "broadcast",
        "AllGather": "all_gather",
        "ReduceScatter": "reduce_scatter",
        "AllReduce": "all_reduce",
    }
    out = {}
    for line in path.read_text().splitlines():
        if "NCCL INFO" not in line:
            continue
        cells = [c.strip() for c in line.split("NCCL INFO", 1)[1].split("|")]
        if cells[0] in names:
            for k, cell in enumerate(cells[1:7]):  # Tree LL/LL128/Simple, Ring LL/LL128/Simple
                lat, bw = (float(x) for x in cell.split("/"))
                out[(names[cells[0]], ("tree", "ring")[k // 3], ("LL", "LL128", "Simple")[k % 3])] = (lat, bw)
    return out


def test_tune_table_reproduces_nccls_logged_table_on_2xh200():
    # measured: NCCL 2.28.9 printed this table (NCCL_DEBUG=INFO, SUBSYS TUNING) on our 2xH200 NV18 host
    from pathlib import Path

    from kernelcast.features.nccl_model import ALGOS, PROTOS, tune_table

    logged = _logged_table(Path(__file__).parent / "fixtures/nccl_tests/nccl_2.28.9_h200x2_tuning_table.txt")
    assert len(logged) == 24
    for (coll, algo, proto), (lat, bw) in logged.items():
        t = tune_table(coll, 2, 2, "hopper", "nvlink4", 900e9, True, 18)
        slot = ALGOS.index(algo) * 3 + PROTOS.index(proto)
        assert (round(t.lat[slot], 1) if t.bw[slot] else 0.0, round(t.bw[slot], 1)) == (lat, bw), (coll, algo, proto)


def test_collective_features_one_row_by_hand():
    import pandas as pd

    from kernelcast.features.ops.collective import collective_features
    from kernelcast.features.vector import build_features

    frame = pd.DataFrame(
        {
            "op": ["collective"],
            "collective": ["all_gather"],
            "bytes": [1 << 20],
            "ranks": [8],
            "ranks_per_node": [8],
            "dtype": ["bf16"],
            "in_place": [True],
            "gpu": ["H200"],
            "backend": ["nccl"],
        }
    )
    f = collective_features(frame)
    assert {k: len(v) for k, v in f.items()} == {k: 1 for k in f}
    # all_gather of 1 MiB on 8 ranks: chunk 128 KiB, bus bytes 7/8 MiB, 7 ring steps, NCCL Ring/LL 17.30712 us
    assert (f["chunk_bytes"][0], f["bus_bytes"][0], f["ring_steps"][0], f["per_rank_bytes"][0]) == (
        131072,
        917504,
        7,
        131072,
    )
    assert (f["nccl_link_gbs"][0], f["nccl_channels"][0], f["elem_bytes"][0], f["in_place"][0]) == (360, 12, 2, 1)
    assert f["nccl_time_us"][0] == pytest.approx(17.30712, abs=1e-5)
    assert f["floor_us"][0] == pytest.approx(917504 / 450e9 * 1e6)  # bus bytes over one direction of NVLink
    assert f["nccl_latency_term_us"][0] == pytest.approx(10.8)
    assert (f["nccl_algo"][0], f["nccl_proto"][0]) == (1, 0)  # ring, LL
    model_input = build_features(frame, "collective")
    assert model_input["floor_us"].iloc[0] == f["floor_us"][0]


def test_key_codes_same_for_few_and_many_rows():
    # the dict path (few rows) and the column-by-column path (many) give the same codes and keys
    from kernelcast.features import nccl_model as NM

    rng = np.random.default_rng(3)
    n = NM.SMALL_KEYS * 4
    arrays = [
        rng.choice(np.array(["nvlink4", "pcie5"], dtype=object), n),
        rng.integers(0, 3, n),
        rng.choice([True, False], n),
        np.float64(450e9) * np.ones(n),
    ]
    big_codes, big_keys = NM._codes(arrays)
    small = [NM._codes([a[i : i + 1] for a in arrays]) for i in range(40)]
    assert [big_keys[big_codes[i]] for i in range(40)] == [keys[codes[0]] for codes, keys in small]
    assert len(set(big_keys)) == len(big_keys) == len({tuple(r) for r in zip(*(a.tolist() for a in arrays))})
    assert [type(v) for v in big_keys[0]] == [str, int, bool, float]
