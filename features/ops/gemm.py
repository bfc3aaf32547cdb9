"""GEMM (C[m,n] = A[m,k]·B[k,n], × batch): fields, FLOPs, minimum bytes, floors, tiles and waves,
analytical efficiency."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kernelcast.features import num
from kernelcast.features.common import (
    MAX_REGISTERS,
    clock_features,
    config_values,
    latency_scale,
    lookup,
    peak_per_row,
    per_backend,
    pow2_dividing,
    resident_ctas,
    roofline_assumptions,
    roofline_floors,
    roofline_latency,
    shared_memory_rule,
    spill_us,
    tile_waves,
    triton_configs,
    triton_ring,
)
from kernelcast.features.compiled import compiled_resource, compiled_resources
from kernelcast.features.fields import (
    MAX_ELEMENTS,
    OUTSIDE_BACKENDS,
    ChoiceField,
    IntField,
    Rule,
    TritonConfig,
    canonical_dtype,
)
from kernelcast.features.ops import OpSpec, register

#: cuBLAS-like tile candidates (block_m, block_n, relative throughput of one tile): the heuristic
#: picks the one whose wave-quantized per-SM time (waves × block_m × block_n / throughput) is least;
#: smaller tiles re-read more operand bytes per FLOP, hence their lower throughput. It stands in
#: for the library's choice when no config says what ran.
TILE_CANDIDATES = ((128, 256, 1.0), (128, 128, 0.92), (64, 128, 0.8), (64, 64, 0.6))


#: split-K keeps at least this much of K per split (libraries split skinny GEMMs to fill the SMs)
MIN_K_PER_SPLIT = 512


def heuristic_tiles(m: np.ndarray, n: np.ndarray, k: np.ndarray, batch: np.ndarray, sm_count: np.ndarray):
    """(block_m, block_n, split_k) a cuBLAS-like library would pick; split-K only when tiles < SMs. The first of
    the least costly candidates wins: per SM, waves × block_m × block_n / throughput."""
    xp = num.of(m)
    best, bm, bn = num.INF, num.NAN, num.NAN
    for cm, cn, throughput in TILE_CANDIDATES:
        cost = xp.ceil(xp.ceil(m / cm) * xp.ceil(n / cn) * batch / sm_count) * (cm * cn / throughput)
        take = cost < best
        best, bm, bn = xp.where(take, cost, best), xp.where(take, float(cm), bm), xp.where(take, float(cn), bn)
    base = xp.ceil(m / bm) * xp.ceil(n / bn) * batch
    split = xp.maximum(xp.minimum(xp.floor(sm_count / base), xp.floor(k / MIN_K_PER_SPLIT)), 1)  # np.clip's value
    return bm, bn, split


def gemm_features(cols, gpu) -> dict[str, np.ndarray]:
    """Features of C[m,n] = A[m,k]·B[k,n] (× batch), one value per row (or one description's numbers)."""
    xp = num.of(cols["m"])
    m, n, k, batch = (xp.floats(cols[c]) for c in ("m", "n", "k", "batch"))
    in_b, out_b = lookup(cols["dtype"], "bytes"), lookup(cols["out_dtype"], "bytes")
    flops = gemm_flops(cols)
    a_bytes, b_bytes, c_bytes = batch * m * k * in_b, batch * k * n * in_b, batch * m * n * out_b
    nbytes = a_bytes + b_bytes + c_bytes
    peak = peak_per_row(gpu, cols["dtype"])
    hbm, hbn, hsplit = heuristic_tiles(m, n, k, batch, gpu["sm_count"])
    cfg = triton_configs(cols)
    bm, bn, bk, split_k, warps, stages, group_m = config_values(
        cfg,
        ("block_m", "block_n", "block_k", "split_k", "num_warps", "num_stages", "group_m"),
        (hbm, hbn, 64, hsplit, np.nan, np.nan, np.nan),
    )  # NaN: the library chose
    tiles = xp.ceil(m / bm) * xp.ceil(n / bn) * batch * split_k
    waves, wave_eff = tile_waves(tiles, gpu["sm_count"])
    l2 = gpu["l2_bytes"]
    return {
        **roofline_floors(flops, nbytes, peak, gpu),
        "log_m": xp.log2(m),
        "log_n": xp.log2(n),
        "log_k": xp.log2(k),
        "batch": batch,
        "elem_bytes": in_b,
        "out_bytes": out_b,
        "peak_flops": peak,
        "block_m": bm,
        "block_n": bn,
        "block_k": bk,
        "split_k": split_k,
        "num_warps": warps,
        "num_stages": stages,
        "group_m": group_m,
        "tiles": tiles,
        "waves": waves,
        "wave_efficiency": wave_eff,
        "k_iterations": xp.ceil(k / split_k / bk),
        "m_padding": xp.ceil(m / bm) * bm / m,
        "n_padding": xp.ceil(n / bn) * bn / n,
        "weights_fit_l2": xp.as_float(b_bytes <= l2),
        "all_fit_l2": xp.as_float(nbytes <= l2),
        "ridge_ratio": (flops / nbytes) / (peak / gpu["memory_bandwidth_bps"]),
    }


def gemm_shape_features(cols, gpu, base) -> dict[str, np.ndarray]:
    """What the learned model adds to ``gemm_features`` (``base``: its output; the analytical model needs none)."""
    xp = num.of(cols["m"])
    m, n, k = (xp.floats(cols[c]) for c in ("m", "n", "k"))
    return {
        **alignment_features(m, n, k),
        **leading_dim_alignment(cols.get("layout"), m, n, k, base["elem_bytes"], base["out_bytes"]),
        **candidate_waves(m, n, k, xp.floats(cols["batch"]), gpu["sm_count"]),
    }


def alignment_features(m: np.ndarray, n: np.ndarray, k: np.ndarray) -> dict[str, np.ndarray]:
    """How each size sits against vector and tile widths: libraries pick other kernels for ragged sizes."""
    xp = num.of(m)
    out = {}
    for name, v in (("m", m), ("n", n), ("k", k)):
        iv = xp.ints(v)
        out[f"{name}_align"] = xp.minimum(pow2_dividing(v), 7.0)  # 2^j dividing it, up to 128
        out[f"{name}_mod128"] = (iv % 128) / 128
        out[f"{name}_mod64"] = (iv % 64) / 64
    return out


def leading_dim_alignment(
    layout, m: np.ndarray, n: np.ndarray, k: np.ndarray, in_bytes: np.ndarray, out_bytes: np.ndarray
) -> dict[str, np.ndarray]:
    """log2 of the byte alignment (up to 256 B) of each operand's rows: A[m,k] rows are k elements,
    B's are n (``nn``) or k (``nt``: W[n,k]), C's are n. TMA and vectorised loads need 16 B; below it
    cuBLAS falls back to other kernels (SIMT, gemmSN), which is most of its fp32/tf32 ragged-size error.
    The power of two dividing a size alone leaves the element width to a deeper split; on our H200 rows
    the measured gain is in benchmarks/RESULTS.md."""
    xp = num.of(m)
    in_b, out_b = xp.log2(in_bytes), xp.log2(out_bytes)
    if layout is None:
        nt = xp.full(m, True)
    else:
        nt = layout == "nt" if isinstance(layout, str) else np.asarray(layout, dtype=object) == "nt"
    k_align, n_align = pow2_dividing(k), pow2_dividing(n)
    lda = xp.minimum(k_align + in_b, 8.0)
    ldb = xp.minimum(xp.where(nt, k_align, n_align) + in_b, 8.0)
    ldc = xp.minimum(n_align + out_b, 8.0)
    return {
        "lda_align_log2_bytes": lda,
        "ldb_align_log2_bytes": ldb,
        "ldc_align_log2_bytes": ldc,
        "all_16b_aligned": xp.as_float((lda >= 4) & (ldb >= 4) & (ldc >= 4)),
    }


def candidate_waves(
    m: np.ndarray, n: np.ndarray, k: np.ndarray, batch: np.ndarray, sm_count: np.ndarray
) -> dict[str, np.ndarray]:
    """Tile counts and waves of the common Hopper/Ampere tiles (whichever the library runs), operand sizes."""
    xp = num.of(m)
    t128 = xp.ceil(m / 128) * xp.ceil(n / 128) * batch
    t256 = xp.ceil(m / 128) * xp.ceil(n / 256) * batch
    return {
        "tiles_128x128": t128,
        "waves_128x128": xp.ceil(t128 / sm_count),
        "tiles_64x64": xp.ceil(m / 64) * xp.ceil(n / 64) * batch,
        "waves_128x256": xp.ceil(t256 / sm_count),
        "log_mn": xp.log2(m * n),
        "log_mk": xp.log2(m * k),
        "log_nk": xp.log2(n * k),
    }


def gemm_flops(cols) -> np.ndarray:
    """2·m·n·k·batch per row."""
    xp = num.of(cols["m"])
    m, n, k, batch = (xp.floats(cols[c]) for c in ("m", "n", "k", "batch"))
    return 2 * m * n * k * batch


def learned_features(cols, gpu, base) -> dict[str, np.ndarray]:
    return {**gemm_shape_features(cols, gpu, base), **clock_features(base), **occupancy_features(cols, gpu, base)}


class TritonGemmOperands(NamedTuple):
    """How kernelcast's Triton GEMM stages its operands (``triton_gemm_operands``); NaN rows: no config."""

    smem_bytes: np.ndarray  # shared memory per CTA
    buffers_a: np.ndarray  # A's shared-memory buffers
    buffers_b: np.ndarray
    vec_a: np.ndarray  # A's rows are a multiple of 16 elements: loaded asynchronously, vectorized
    vec_b: np.ndarray
    wgmma: np.ndarray  # the dot runs on wgmma (operands read from shared memory), else mma.sync


def triton_gemm_operands(cols, cfg, elem_bytes) -> TritonGemmOperands:
    """Shared memory per CTA (bytes) of kernelcast's Triton GEMM, the pipeline buffers of A and B, whether each
    operand is vectorized and whether the dot runs on wgmma.

    What Triton 3.6 allocates on sm_90 (compile facts of 2,135 compile classes, collect/compile_facts.py; with it
    the status of all 81,446 measured H200 Triton GEMM rows, ok or OutOfResources, is predicted exactly): an
    operand whose rows are a multiple of 16 elements (A: k; B: k in nt, n in nn; and the batch stride when
    batched) is copied asynchronously into the ring buffers of ``features.common.triton_ring``; a ragged operand
    goes through registers into one buffer.
    ``cfg`` maps block_m, block_n, block_k, num_warps, num_stages to arrays (NaN: no Triton config)."""
    xp = num.of(cols["m"])
    m, n, k, batch = (xp.floats1d(cols[c]) for c in ("m", "n", "k", "batch"))
    bm, bn, bk, warps, stages = (cfg[c] for c in ("block_m", "block_n", "block_k", "num_warps", "num_stages"))
    layout = cols.get("layout")
    if layout is None:
        nt = xp.full(m, True)
    else:
        nt = layout != "nn" if isinstance(layout, str) else np.atleast_1d(np.asarray(layout, dtype=object)) != "nn"
    single = batch <= 1
    k_aligned = k % 16 == 0
    vec_a = k_aligned & (single | (m * k % 16 == 0))
    vec_b = xp.where(nt, k_aligned, n % 16 == 0) & (single | (n * k % 16 == 0))
    ring, wgmma = triton_ring(cols["gpu"], bm, warps, stages)  # NaN without a config
    one = xp.where(xp.isnan(ring), np.nan, 1.0)
    buf_a, buf_b = xp.where(vec_a, ring, one), xp.where(vec_b, ring, one)
    return TritonGemmOperands((buf_a * bm * bk + buf_b * bk * bn) * elem_bytes, buf_a, buf_b, vec_a, vec_b, wgmma)


#: registers per thread of kernelcast's Triton GEMM besides what ``triton_gemm_registers`` counts (addresses, loop
#: state, masks), and per element: of an mma.sync dot's A and B operand fragments in one block_k step, of a ragged
#: operand's tile loaded through registers (its value and half its 64-bit address). Fitted on the compile facts of
#: 2,438 H200 compile classes (datasets/compile_facts/, tests/test_register_model.py): with them the estimate says
#: which classes spill (ptxas caps a thread at 255 registers) for 96% of the classes.
GEMM_BASE_REGISTERS = 71
MMA_FRAGMENT_REGISTERS = (0.25, 0.5)
RAGGED_LOAD_REGISTERS = 2.0


def triton_gemm_registers(cfg, operands: TritonGemmOperands) -> np.ndarray:
    """32-bit registers per thread kernelcast's Triton GEMM asks for before ptxas caps it at 255 and spills the rest
    to local memory: the block_m×block_n fp32 accumulators over the threads, an mma.sync dot's operand fragments
    (wgmma reads its operands from shared memory), a ragged operand's tile loaded through registers, and the base.
    NaN without a config."""
    xp = num.of(cfg["block_m"])
    threads = 32 * cfg["num_warps"]
    tile_a, tile_b = cfg["block_m"] * cfg["block_k"] / threads, cfg["block_k"] * cfg["block_n"] / threads
    frag_a, frag_b = MMA_FRAGMENT_REGISTERS
    fragments = xp.where(operands.wgmma, 0.0, frag_a * tile_a + frag_b * tile_b)
    ragged = RAGGED_LOAD_REGISTERS * (xp.where(operands.vec_a, 0.0, tile_a) + xp.where(operands.vec_b, 0.0, tile_b))
    return cfg["block_m"] * cfg["block_n"] / threads + fragments + ragged + GEMM_BASE_REGISTERS


def occupancy_features(cols, gpu, base) -> dict[str, np.ndarray]:
    """How a Triton config sits on an SM (``features.common.resident_ctas``): A and B tiles in their pipeline
    buffers (``triton_gemm_operands``), the registers a thread asks for (``triton_gemm_registers``) and what of
    them spills; plus the tile's arithmetic intensity, K steps per stage and whether the operands are pipelined.
    NaN where no config says what ran (the library's kernels)."""
    bm, bn, bk, warps = base["block_m"], base["block_n"], base["block_k"], base["num_warps"]
    cfg = {"block_m": bm, "block_n": bn, "block_k": bk, "num_warps": warps, "num_stages": base["num_stages"]}
    ops = triton_gemm_operands(cols, cfg, base["elem_bytes"])
    registers = triton_gemm_registers(cfg, ops)
    spilled = num.of(bm).fmax(registers - MAX_REGISTERS, 0.0)
    scalar = scalar_load_us(cols, base, ops.vec_a, ops.vec_b)
    steps = base["tiles"] * base["k_iterations"]
    compiled, stack = compiled_gemm_resources(cols, base)
    return {
        **resident_ctas(ops.smem_bytes, bm * bn / (32 * warps), warps, base["tiles"], base, registers=registers),
        "tile_intensity": 2 * bm * bn / ((bm + bn) * base["elem_bytes"]),
        "k_iterations_per_stage": base["k_iterations"] / base["num_stages"],
        "warp_tile": bm * bn / warps,
        "buffers_a": ops.buffers_a,
        "buffers_b": ops.buffers_b,
        "registers_per_thread": registers,
        "spilled_registers": spilled,
        "spill_us": spill_us(spilled, warps, steps, base),
        # beside the estimate, what ptxas gave the config (NaN off the compiled table: a model reading an estimate in
        # their place does worse than one reading both, RESULTS §38)
        "compiled_registers": compiled,
        "compiled_spilled_registers": stack / 4.0,
        "compiled_spill_us": spill_us(stack / 4.0, warps, steps, base),
        "scalar_load_us": scalar,
        "scalar_load_share": scalar / (scalar + base["floor_us"]),
    }


def compiled_gemm_resources(cols, base):
    """(registers, stack bytes) a thread of kernelcast's Triton GEMM got from ptxas for the row's config on its GPU's
    architecture (``features.compiled``'s ``triton_gemm`` table: single bf16/fp16 GEMMs, keyed on layout, tiles, warps,
    stages, split-K on or off and n, k multiples of 16); NaN for the library kernels (no num_warps), batched or other
    dtypes' rows and keys the table lacks."""
    xp = num.of(base["block_m"])
    single = (xp.floats(cols["batch"]) <= 1) & ((cols["dtype"] == "bf16") | (cols["dtype"] == "fp16"))
    n, k = xp.floats(cols["n"]), xp.floats(cols["k"])
    layout = cols.get("layout", "nt")
    keys = (base["block_n"], base["block_k"], base["num_warps"], base["num_stages"], base["split_k"] > 1)
    if xp is num.SCALARS:  # one description: a library kernel (no num_warps) or a batched row looks nothing up
        if not single or base["num_warps"] != base["num_warps"]:
            return num.NAN, num.NAN
        return compiled_resource("triton_gemm", cols["gpu"], layout, base["block_m"], *keys, n % 16 == 0, k % 16 == 0)
    bm = np.where(single, base["block_m"], np.nan)  # the table's keys are single GEMMs'
    return compiled_resources("triton_gemm", cols["gpu"], layout, bm, *keys, n % 16 == 0, k % 16 == 0)


#: elements one SM loads per clock when each thread loads one element per instruction: one warp-wide load
#: instruction per clock through the SM's load/store path
SCALAR_LOADS_PER_SM_CLOCK = 32


def scalar_load_us(cols, base, vec_a, vec_b) -> np.ndarray:
    """The floor of a Triton GEMM whose operand rows are ragged (``triton_gemm_operands``: one buffer, loaded
    through registers): every CTA loads its block_m×K strip of A and K×block_n strip of B one element per thread
    per instruction, so the operand loads, not the tensor cores, bound it (µs; 0 when both are vectorized, NaN
    without a config). The learned target is taken over it where it exceeds the roofline floor."""
    xp = num.of(cols["k"])
    k = xp.floats1d(cols["k"])
    ctas = base["tiles"]  # tiles × split-K slices: each slice loads its share of K
    ragged = xp.where(vec_a, 0.0, base["block_m"]) + xp.where(vec_b, 0.0, base["block_n"])
    ragged = xp.where(xp.isnan(base["num_stages"]), np.nan, ragged)  # no config: the library kernels
    per_clock = SCALAR_LOADS_PER_SM_CLOCK * base["gpu_sm_count"] * base["gpu_boost_clock_hz"]
    return ctas * ragged * k / base["split_k"] / per_clock * 1e6


def gemm_scale(f) -> np.ndarray:
    """The learned target's scale: the roofline floor, or the ragged operands' scalar-load floor where it is
    higher, plus one kernel's fixed time."""
    return latency_scale(num.of(f["floor_us"]).fmax(f["floor_us"], f["scalar_load_us"]), f["gpu_boost_clock_hz"])


#: fraction of dense peak a well-tuned GEMM sustains in its main loop: 785 of 989 TFLOP/s measured for a
#: 4096³ bf16 torch.matmul on our H200 (reference/measurement.md); kernelcast's own Triton kernel less
COMPUTE_EFFICIENCY = {"cublas": 0.80, "triton": 0.70, "grouped": 0.70, "trtllm": 0.80, "vllm": 0.80, "sglang": 0.80}
#: plain fp32 GEMM runs on the SIMT units, closer to their peak than tensor-core loops are to theirs
FP32_SIMT_EFFICIENCY = 0.85


def analytical(cols, f) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(cols["dtype"], str):  # one description's values (its features are Python numbers too)
        eff = FP32_SIMT_EFFICIENCY if cols["dtype"] == "fp32" else COMPUTE_EFFICIENCY[cols["backend"]]
    else:
        eff = np.where(
            np.asarray(cols["dtype"], dtype=object) == "fp32",
            FP32_SIMT_EFFICIENCY,
            per_backend(COMPUTE_EFFICIENCY, cols["backend"]),
        )
    return roofline_latency(f, eff, 1.0 + (f["split_k"] > 1))  # a split-K reduction is a second kernel


def default_out_dtype(dtype: str) -> str:
    """What a GEMM of ``dtype`` writes unless told: fp32 for fp32/tf32, fp16 for fp16, bf16 otherwise."""
    return {"fp32": "fp32", "tf32": "fp32", "fp16": "fp16"}.get(dtype, "bf16")


def _default_out_dtypes(c) -> np.ndarray:
    """fp32 for fp32/tf32, fp16 for fp16, bf16 otherwise"""
    return np.asarray([default_out_dtype(d) for d in c["dtype"]], dtype=object)


SPEC = register(
    OpSpec(
        name="gemm",
        doc="C[m,n] = A[m,k]·B[k,n] (layout nt: A[m,k]·W[n,k]ᵀ as in F.linear), times batch",
        fields={
            "m": IntField(1, 1 << 24),
            "n": IntField(1, 1 << 24),
            "k": IntField(1, 1 << 24),
            "batch": IntField(1, 1 << 16, default=1),
            "layout": ChoiceField(
                ("nn", "nt"),
                default="nt",
                note="row-major: nn = A[m,k]·B[k,n]; nt = A[m,k]·W[n,k]ᵀ as F.linear, which cuBLAS calls TN in its "
                "column-major terms; an A stored transposed (tn, tt) is not measured",
            ),
            "out_dtype": ChoiceField(("fp32", "bf16", "fp16"), default=_default_out_dtypes, canon=canonical_dtype),
        },
        dtypes=("fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "fp8_block", "nvfp4"),
        # grouped: torch._grouped_mm (CUTLASS on sm90), `batch` groups of m rows each — the MoE experts of Hugging Face
        # transformers 5.x (experts_implementation="grouped_mm", its default)
        backends=("cublas", "triton", "grouped") + OUTSIDE_BACKENDS,
        rules=(
            Rule(
                "m",
                lambda c: (
                    np.maximum(np.maximum(c["m"] * c["k"], c["k"] * c["n"]), c["m"] * c["n"]) * c["batch"]
                    <= MAX_ELEMENTS
                ),
                lambda c: (
                    "such that every operand of batch*(m,n,k)="
                    f"{(c['batch'], c['m'], c['n'], c['k'])} has at most 2**38 elements"
                ),
            ),
            shared_memory_rule(
                lambda c, t, e: triton_gemm_operands(c, t, e).smem_bytes,
                ("block_m", "block_n", "block_k", "num_warps", "num_stages"),
                "its A and B tiles (block_m·block_k, block_k·block_n × element bytes) in their pipeline buffers "
                "(num_stages − 1, + 1 on wgmma; 1 for an operand whose rows are not a multiple of 16 elements)",
            ),
        ),
        triton_config=TritonConfig(
            {
                "block_m": (16, 256, True),
                "block_n": (16, 256, True),
                "block_k": (16, 256, True),
                "group_m": (1, 64, False),
                "num_warps": (1, 16, True),
                "num_stages": (1, 8, False),
                "split_k": (1, 64, False),
            }
        ).field(),
        features=gemm_features,
        learned_features=learned_features,
        flops=gemm_flops,
        scale=gemm_scale,
        scalar_features=True,
        analytical=analytical,
        analytical_assumptions=roofline_assumptions(
            {**COMPUTE_EFFICIENCY, "fp32 (SIMT)": FP32_SIMT_EFFICIENCY}, "1 kernel (+1 split-K reduction)"
        ),
        example={"m": 256, "n": 256, "k": 256, "dtype": "bf16", "backend": "cublas"},
        categorical=("backend", "dtype", "source", "layout"),
        range_columns=("m", "n", "k", "batch"),
        # cuBLAS's kernel choice by shape and alignment needs deep trees (depth 8 was measurably worse); 600 rounds
        # at 0.06 beat 150 at 0.2 on every test set (cuBLAS 4.4 -> 3.9%, Triton 8.8 -> 7.9%) at 4x the serving
        # cost; 1,200 were hardly better (benchmarks/RESULTS.md §18). Fresh Triton configs want shallower trees of
        # their own, fitted on the Triton rows alone: 1,200 at depth 8 beat the shared trees by 1.3-2.0 points median
        # and 4-6 p90 on each of the Triton test sets 3-6 (RESULTS §21). The shared trees are fitted without the Triton
        # rows they never answer (``shared_skips_own``): on a shape-held-out fold of the training rows cuBLAS 3.76 ->
        # 3.39%, grouped 2.92 -> 2.36%, aiconfigurator's backends 0.2-0.4 points lower (RESULTS §25). cuBLAS has own
        # trees too, for the GPUs it was measured on (``measured_gpus_only``: on any other GPU the shared trees, which
        # keep its rows and learn the GPUs off aiconfigurator's tables, answer it): on that fold cuBLAS 3.55 -> 3.25%
        # at depth 12 x 600 (3.20% at 1,200 trees, twice the walk; 3.45% at depth 10) (RESULTS §37). The Triton rows'
        # trees are averaged (in log) with a network fitted on the same rows (``training.mlp``): on three
        # config-held-out folds of the Triton rows 6.0 -> 4.8% median, the network alone 5.0% (RESULTS §50); two
        # networks from two seeds, averaged, at 70%: 4.53% (three 4.51%, four 4.48%; RESULTS §51)
        train_params={
            "max_depth": 12,
            "n_estimators": 600,
            "learning_rate": 0.06,
            "own_trees": {
                "triton": {
                    "max_depth": 8,
                    "n_estimators": 1200,
                    "learning_rate": 0.04,
                    "mlp": {"weight": 0.7, "members": 2},
                },
                "cublas": {"max_depth": 14, "n_estimators": 600, "learning_rate": 0.08, "measured_gpus_only": True},
            },
            "shared_skips_own": True,
        },
    )
)
GemmDesc = SPEC.desc_type
