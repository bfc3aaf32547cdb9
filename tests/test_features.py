"""Features: hand-computed values for one case per op, and the pinned names and order."""

import numpy as np
import pandas as pd
import pytest

from kernelcast.features.ops.attention import attended_pairs
from kernelcast.features.ops.moe import expert_counts
from kernelcast.features.vector import build_features, categories, feature_names, feature_version

GPU_FEATURES = (
    "gpu_sm_count",
    "gpu_boost_clock_hz",
    "gpu_memory_bandwidth_bps",
    "gpu_l2_bytes",
    "gpu_infinity_cache_bytes",
    "gpu_shared_memory_per_sm_bytes",
    "gpu_registers_per_sm",
    "gpu_max_warps_per_sm",
    "gpu_warp_size",
    "gpu_link_bandwidth_bps",
)
#: what features.common.resident_ctas adds for every op family with a Triton config
OCCUPANCY = (
    "smem_per_cta",
    "smem_share",
    "ctas_per_sm",
    "occupancy",
    "waves_resident",
    "wave_efficiency_resident",
    "accumulators_per_thread",
    "accumulator_spill",
    "log_units_per_slot",
)
PINNED = {
    "gemm": GPU_FEATURES
    + (
        "flops",
        "bytes",
        "arithmetic_intensity",
        "compute_floor_us",
        "memory_floor_us",
        "log_m",
        "log_n",
        "log_k",
        "batch",
        "elem_bytes",
        "out_bytes",
        "peak_flops",
        "block_m",
        "block_n",
        "block_k",
        "split_k",
        "num_warps",
        "num_stages",
        "group_m",
        "tiles",
        "waves",
        "wave_efficiency",
        "k_iterations",
        "m_padding",
        "n_padding",
        "weights_fit_l2",
        "all_fit_l2",
        "ridge_ratio",
        "m_align",
        "m_mod128",
        "m_mod64",
        "n_align",
        "n_mod128",
        "n_mod64",
        "k_align",
        "k_mod128",
        "k_mod64",
        "lda_align_log2_bytes",
        "ldb_align_log2_bytes",
        "ldc_align_log2_bytes",
        "all_16b_aligned",
        "tiles_128x128",
        "waves_128x128",
        "tiles_64x64",
        "waves_128x256",
        "log_mn",
        "log_mk",
        "log_nk",
        "log2_floor_cycles",
        "bytes_per_cycle",
    )
    + OCCUPANCY
    + ("tile_intensity", "k_iterations_per_stage", "warp_tile", "buffers_a", "buffers_b")
    + (
        "registers_per_thread",
        "spilled_registers",
        "spill_us",
        "compiled_registers",
        "compiled_spilled_registers",
        "compiled_spill_us",
        "scalar_load_us",
        "scalar_load_share",
    ),
    "attention": GPU_FEATURES
    + (
        "flops",
        "bytes",
        "arithmetic_intensity",
        "compute_floor_us",
        "memory_floor_us",
        "log_batch",
        "heads_q",
        "heads_kv",
        "gqa_ratio",
        "log_seq_q",
        "log_seq_kv",
        "head_dim",
        "kernel_head_dim",
        "mask_row_align",
        "causal",
        "mask_bytes_share",
        "elem_bytes",
        "peak_flops",
        "causal_fraction",
        "kv_bytes_share",
        "block_m",
        "block_n",
        "num_warps",
        "num_stages",
        "kv_splits",
        "launch_seq_q",
        "launch_causal",
        "split_accum_bytes",
        "work_units",
        "waves",
        "wave_efficiency",
        "kv_fits_l2",
        "wgmma",
        "kv_buffers",
        "smsp_share",
        "step_mma_share",
        "step_cycles",
        "loop_us",
        "busy_us",
        "log2_floor_cycles",
        "bytes_per_cycle",
    )
    + OCCUPANCY
    + ("warp_tile", "kv_steps_longest", "kv_steps_per_cta", "padded_flops_ratio", "padded_compute_us", "longest_cta_us")
    + ("registers_per_thread", "spilled_registers", "spill_us"),
    "moe": GPU_FEATURES
    + (
        "flops",
        "bytes",
        "arithmetic_intensity",
        "compute_floor_us",
        "memory_floor_us",
        "log_tokens",
        "hidden",
        "ffn",
        "experts",
        "top_k",
        "gated",
        "elem_bytes",
        "peak_flops",
        "active_experts",
        "max_tokens_per_expert",
        "mean_tokens_per_expert",
        "load_imbalance",
        "padding_overhead",
        "weight_bytes_share",
        "tiles",
        "waves",
        "wave_efficiency",
        "block_m",
        "block_n",
        "block_k",
        "num_warps",
        "num_stages",
        "weights_fit_l2",
        "log2_floor_cycles",
        "bytes_per_cycle",
    )
    + OCCUPANCY
    + ("tile_intensity", "warp_tile", "config_tiles", "k_steps", "padded_compute_us")
    + ("registers_per_thread", "spilled_registers", "spill_us"),
}


@pytest.mark.parametrize("op", PINNED)
def test_feature_names_and_order_are_pinned(op):
    # A shipped model pins both: a changed name list is refused by the manifest's name check (retrain that op);
    # a column whose meaning changes under the same names means bumping the op's FEATURE_VERSIONS entry.
    assert feature_version(op) == {
        "gemm": "7",
        "attention": "13",
        "moe": "6",
        "reduction": "7",
        "elementwise": "6",
        "copy": "8",
    }.get(op, "5")
    assert feature_names(op) == PINNED[op]


def _features(op, **row):
    return build_features(pd.DataFrame([{"gpu": "h200_sxm", **row}]), op).iloc[0]


def test_gemm_by_hand_on_h200():
    f = _features(
        "gemm", m=1, n=4096, k=4096, batch=1, dtype="bf16", out_dtype="bf16", backend="cublas", layout="nt", config=None
    )
    assert f["flops"] == 2 * 4096 * 4096
    assert f["bytes"] == (4096 + 4096 * 4096 + 4096) * 2  # A, B read once; C written once
    assert f["memory_floor_us"] == pytest.approx(33_570_816 / 4.8e12 * 1e6)
    assert f["compute_floor_us"] == pytest.approx(2 * 4096 * 4096 / 989.4e12 * 1e6)
    assert f["floor_us"] == f["memory_floor_us"]
    # 1×64 tiles of 64×64 fill half the SMs: split K in 2 (132 // 64), each split keeping ≥512 of K
    assert (f["block_m"], f["block_n"], f["split_k"], f["tiles"], f["waves"]) == (64, 64, 2, 128, 1)
    assert f["wave_efficiency"] == pytest.approx(128 / 132) and f["k_iterations"] == 32
    assert f["weights_fit_l2"] == 1.0 and f["gpu_sm_count"] == 132
    assert (f["m_align"], f["n_align"], f["k_mod128"]) == (0, 7, 0)  # m=1 is odd; 4096 is 128-aligned
    assert (f["tiles_128x128"], f["waves_128x128"], f["log_mn"]) == (32, 1, 12)
    assert (f["backend"], f["source"]) == ("cublas", "kernelcast")
    # the floor in H200 boost-clock cycles (1.98 GHz), HBM bytes per cycle (4.8 TB/s / 1.98 GHz)
    assert f["log2_floor_cycles"] == pytest.approx(np.log2(33_570_816 / 4.8e12 * 1.98e9))
    assert f["bytes_per_cycle"] == pytest.approx(4.8e12 / 1.98e9)
    # the learned target's scale: the floor plus one kernel's 4950 cycles (2.5 µs at 1.98 GHz)
    assert f["scale_us"] == pytest.approx(33_570_816 / 4.8e12 * 1e6 + 2.5)
    # rows of A and W (nt) are 4096 bf16 = 8 KiB (capped at 256 B); C's rows too
    assert (f["lda_align_log2_bytes"], f["ldb_align_log2_bytes"], f["ldc_align_log2_bytes"]) == (8, 8, 8)


def test_leading_dimension_alignment_in_bytes():
    # fp32 k=12: A's rows are 48 B (16 B-aligned); nn B's rows are n=100 fp32 = 400 B (16 B); C's 400 B
    f = _features(
        "gemm", m=37, n=100, k=12, batch=1, dtype="fp32", out_dtype="fp32", backend="cublas", layout="nn", config=None
    )
    assert (f["lda_align_log2_bytes"], f["ldb_align_log2_bytes"], f["ldc_align_log2_bytes"]) == (4, 4, 4)
    assert f["all_16b_aligned"] == 1.0
    # bf16 k=100 nt: A and W rows are 200 B (8 B-aligned), so no TMA; bf16 C rows n=6: 12 B (4 B)
    f = _features(
        "gemm", m=37, n=6, k=100, batch=1, dtype="bf16", out_dtype="bf16", backend="cublas", layout="nt", config=None
    )
    assert (f["lda_align_log2_bytes"], f["ldb_align_log2_bytes"], f["ldc_align_log2_bytes"]) == (3, 3, 2)
    assert f["all_16b_aligned"] == 0.0
    # nn reads B's rows along n: n=6 bf16 = 12 B
    g = _features(
        "gemm", m=37, n=6, k=100, batch=1, dtype="bf16", out_dtype="bf16", backend="cublas", layout="nn", config=None
    )
    assert g["ldb_align_log2_bytes"] == 2


def test_gemm_triton_config_sets_tiles():
    cfg = '{"block_k": 64, "block_m": 128, "block_n": 64, "group_m": 8, "num_stages": 3, "num_warps": 4, "split_k": 2}'
    f = _features(
        "gemm",
        m=1000,
        n=1000,
        k=512,
        batch=1,
        dtype="fp16",
        out_dtype="fp16",
        backend="triton",
        layout="nn",
        config=cfg,
    )
    assert f["tiles"] == 8 * 16 * 2  # ceil(1000/128)·ceil(1000/64)·split_k
    assert f["waves"] == 2 and f["wave_efficiency"] == pytest.approx(256 / 264)
    assert f["k_iterations"] == 4  # 512 / 2 / 64
    assert (f["num_warps"], f["num_stages"], f["group_m"]) == (4, 3, 8)
    assert f["m_padding"] == pytest.approx(1024 / 1000)


def test_attention_by_hand_causal_gqa():
    f = _features(
        "attention",
        batch=2,
        heads_q=8,
        heads_kv=2,
        seq_q=1024,
        seq_kv=1024,
        head_dim=128,
        causal=True,
        dtype="bf16",
        backend="flash",
        config=None,
    )
    pairs = 1024 * 1025 / 2
    assert f["flops"] == 4 * 2 * 8 * 128 * pairs
    assert f["bytes"] == 2 * (2 * 8 * 1024 * 128 * 2) + 2 * (2 * 2 * 1024 * 128 * 2)
    assert f["work_units"] == 8 * 8 * 2 and f["waves"] == 1  # 8 q-tiles × 8 heads × 2 batch
    assert f["gqa_ratio"] == 4 and f["causal_fraction"] == pytest.approx(pairs / 1024**2)


def test_attended_pairs_bottom_right_decode():
    # one query at the end of a 4096-key cache sees every key
    assert attended_pairs(np.array([1.0]), np.array([4096.0]), np.array([True]))[0] == 4096
    assert attended_pairs(np.array([2.0]), np.array([3.0]), np.array([True]))[0] == 2 + 3


def test_expert_counts_by_hand():
    assert expert_counts(10, 4, 2, "balanced").tolist() == [5, 5, 5, 5]
    # shares 16·(1, 1/2, 1/3, 1/4)/2.0833 = 7.68, 3.84, 2.56, 1.92 → largest remainders
    assert expert_counts(8, 4, 2, "power_law_1").tolist() == [8, 4, 2, 2]
    capped = expert_counts(2, 4, 3, "power_law_2")  # no expert may see a token twice
    assert capped.sum() == 6 and capped.max() <= 2 and list(capped) == sorted(capped, reverse=True)
    assert expert_counts(4, 4, 2, [3, 0, 4, 1]).tolist() == [3, 0, 4, 1]


def test_moe_by_hand_with_an_idle_expert():
    f = _features(
        "moe",
        tokens=4,
        hidden=64,
        ffn=64,
        experts=4,
        top_k=2,
        gated=True,
        distribution="[3, 0, 4, 1]",
        dtype="bf16",
        backend="torch",
        config=None,
    )
    assert f["flops"] == 2 * 8 * 64 * (128 + 64)  # up+gate (2·ffn) then down (ffn)
    assert f["active_experts"] == 3 and f["load_imbalance"] == 2.0  # max 4 over mean 2
    assert f["bytes"] == 3 * 64 * 192 * 2 + 2 * 4 * 64 * 2 + 8 * 192 * 2


def test_categorical_columns_use_fixed_categories():
    f = build_features(
        pd.DataFrame(
            [
                {
                    "gpu": "h100_sxm",
                    "m": 64,
                    "n": 64,
                    "k": 64,
                    "batch": 1,
                    "dtype": "bf16",
                    "out_dtype": "bf16",
                    "backend": "trtllm",
                    "layout": "nt",
                    "config": None,
                }
            ]
        ),
        "gemm",
    )
    assert list(f["backend"].cat.categories) == list(categories("gemm")["backend"])
    assert f["source"].iloc[0] == "aiconfigurator"  # outside backends default to their source


def test_key_codes_count_distinct_rows_in_first_appearance_order():
    from kernelcast.features.common import key_codes

    codes, first = key_codes(
        np.array(["h200", "b200", "h200", "h200", "b200"], dtype=object),
        np.array([1.0, np.nan, 1.0, np.nan, np.nan]),
        np.array(["a", "a", "a", "a", "a"]),
    )
    assert codes.tolist() == [0, 1, 0, 2, 1] and first.tolist() == [0, 1, 3]


def test_triton_occupancy_by_hand_on_h200():
    cfg = '{"block_k": 64, "block_m": 128, "block_n": 128, "group_m": 8, "num_stages": 4, "num_warps": 8, "split_k": 1}'
    gemm = dict(m=4096, n=4096, k=4096, batch=1, dtype="bf16", out_dtype="bf16", layout="nt")
    f = _features("gemm", **gemm, backend="triton", config=cfg)
    assert f["smem_per_cta"] == 4 * (128 * 64 + 64 * 128) * 2  # 4 stages of A and B tiles, bf16
    assert f["accumulators_per_thread"] == 128 * 128 / 256  # fp32 accumulators over 8 warps
    # 233,472 B of shared memory fit one 131,072 B CTA; registers (64 + 40 per thread) would allow two
    assert f["ctas_per_sm"] == 1 and f["occupancy"] == 8 / 64
    assert f["waves_resident"] == np.ceil(32 * 32 / 132) and f["accumulator_spill"] == 0
    cublas = _features("gemm", **gemm, backend="cublas", config=None)
    assert np.isnan(cublas["smem_per_cta"]) and np.isnan(cublas["accumulator_spill"])  # the library chose: unknown


def test_attention_kv_loop_counts_the_steps_the_kernel_takes():
    """features.ops.attention.kv_loop against the loop of collect/kernels/triton_attention.py, counted here: exact
    without a mask, within half a step per query block with the causal limit (the rounding it averages)."""
    from kernelcast.features.ops.attention import kv_loop

    def counted(sq, skv, bm, bn, causal):
        steps = []
        for i in range(-(-sq // bm)):
            hi = min(skv, (i + 1) * bm + skv - sq) if causal else skv
            steps.append(-(-hi // bn))
        return sum(steps), max(steps)

    for sq, skv, bm, bn, causal in [
        (100, 1000, 64, 64, False),
        (1, 4097, 128, 32, False),
        (128, 128, 64, 64, True),
        (333, 2048, 32, 16, True),
        (4096, 4096, 128, 64, True),
        (7, 300, 16, 128, True),
    ]:
        loop = kv_loop({"seq_q": np.array([sq]), "seq_kv": np.array([skv]), "causal": np.array([causal])}, bm, bn)
        total, longest = counted(sq, skv, bm, bn, causal)
        assert loop.longest[0] == longest
        assert loop.blocks[0] == -(-sq // bm)
        assert abs(loop.steps[0] - total) <= (0.5 * loop.blocks[0] if causal else 0), (sq, skv, bm, bn, causal)
