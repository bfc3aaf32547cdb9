"""The kernels PyTorch's eager reductions launch (features.ops.reduction): Reduce.cuh's config and the scan's
block shape on cases worked by hand, and the kernel-count rule and reduce_kernel config against the kernel names
CUPTI recorded on our H200 training rows."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomllib

from kernelcast.features.ops.reduction import REDUCE_KERNEL_FNS, scan_launch
from kernelcast.features.vector import build_features

DATASETS = Path(__file__).resolve().parents[1] / "datasets"


def _features(**row):
    return build_features(pd.DataFrame([{"gpu": "h200_sxm", "backend": "torch", "k": 1, **row}]), "reduction").iloc[0]


def test_reduce_config_worked_by_hand():
    # sum over 1M contiguous fp32 values into one output: input vectorized (4), one output so the block is
    # 512 × 1 (width min(2^18, 512 / 1)); 1M / 512 = 2048 values a thread ≥ 256, grid 1 ≤ 132 · 4 CTAs: split
    # across max(min(528, 128), 8) = 128 CTAs, so a semaphore memset runs before the kernel
    f = _features(outer=1, reduce=1 << 20, inner=1, fn="sum", dtype="fp32", out_dtype="fp32")
    assert (f["rk_vec_in"], f["rk_block_x"], f["log_block_threads"]) == (1.0, 512.0, 9.0)
    assert f["rk_ctas_per_output"] == 128 and f["log_ctas"] == 7
    assert f["log_values_per_thread"] == 4  # 2048 / 128 = 16 values a thread
    assert f["kernels"] == 2 and f["kernel_path"] == 1
    # an inner dim of 6: outputs vectorized by 2, no CTA split (4096 · 6 / 2 outputs fill the grid)
    f = _features(outer=4096, reduce=300, inner=6, fn="amax", dtype="bf16", out_dtype="bf16")
    assert f["rk_out_vec"] == 2 and f["rk_vec_in"] == 0 and f["rk_ctas_per_output"] == 1 and f["kernels"] == 1


def test_fns_without_a_launch_rule_get_nan():
    f = _features(outer=64, reduce=4096, inner=1, fn="sort", dtype="fp32", out_dtype="fp32")
    assert np.isnan(f["log_block_threads"]) and np.isnan(f["rk_block_x"])
    assert f["kernels"] == 5 and f["kernel_path"] == 1  # in-place radix sort of rows up to 4096


@pytest.mark.parametrize(
    ("outer", "red", "threads_x"),
    [
        (4096, 4096, 16),  # 9 + 12 − 12 = 9, halved: 4, so 16 threads a row, 32 rows a block
        (1, 1 << 20, 512),  # one long row: (9 + 20) / 2 = 14, capped at 9
        (1 << 20, 2, 512),  # 9 + 1 − 20 < 0 wraps in uint32: 9
    ],
)
def test_inner_scan_threads_per_row(outer, red, threads_x):
    threads, ctas, values = scan_launch(np.array([outer]), np.array([red]), np.array([1]))
    assert threads.tolist() == [512] and ctas.tolist() == [-(-outer // (512 // threads_x))]
    assert values.tolist() == [2 * -(-red // (2 * threads_x))]


@pytest.fixture(scope="module")
def training_rows() -> pd.DataFrame:
    files = tomllib.loads((DATASETS / "files.toml").read_text())["file"]
    paths = [DATASETS / f["path"] for f in files if f["role"] == "train" and f["path"].startswith("reduction/")]
    df = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    keep = (df["status"] == "ok") & df["kernel_names"].notna() & df["kernel_count"].notna()
    return df[keep].reset_index(drop=True)


def test_kernel_count_rule_matches_the_h200_rows(training_rows):
    f = build_features(training_rows, "reduction")
    match = f["kernels"].to_numpy() == training_rows["kernel_count"].to_numpy()
    by_fn = pd.Series(match).groupby(training_rows["fn"].to_numpy()).mean()
    assert len(training_rows) > 10_000 and match.mean() > 0.999, by_fn.to_dict()
    assert by_fn.min() > 0.99, by_fn.to_dict()


def test_reduce_config_matches_the_kernel_names(training_rows):
    rows = training_rows[training_rows["fn"].isin(REDUCE_KERNEL_FNS)].reset_index(drop=True)
    names = rows["kernel_names"]
    f = build_features(rows, "reduction")
    # reduce_kernel<max_threads / output_vec_size, output_vec_size, …>
    vec = names.str.extract(r"reduce_kernel<\d+, (\d+),")[0].astype(float).to_numpy()
    assert (vec == f["rk_out_vec"].to_numpy()).mean() > 0.98
    memset = names.str.contains("Memset").to_numpy()
    split = f["rk_ctas_per_output"].to_numpy() > 1
    assert memset.sum() > 100 and (memset == split).mean() > 0.999
