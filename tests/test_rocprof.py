"""rocprof: command lines, and every fixture (hand-written in the documented layouts) parsed to exact values."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelcast.collect.rocprof import (
    group_calls,
    measurement_from_dispatches,
    parse_counter_collection,
    parse_kernel_stats,
    parse_kernel_trace,
    parse_rocprof_results,
    rocprof_command,
    rocprof_input,
    rocprofv3_command,
    rocprofv3_outputs,
)

FIX = Path(__file__).parent / "fixtures" / "rocprof"
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, std::array<char*, 1ul> >"
GEMM = "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x1"
ADD = "void addition_kernel<float>(float*, float const*, float const*, int, int)"


def test_rocprofv3_command_line():
    cmd = rocprofv3_command(["python3", "w.py", "--n", "3"], "/tmp/rp", "run", counters=["SQ_WAVES", "GRBM_COUNT"])
    assert cmd == [
        "rocprofv3",
        "--kernel-trace",
        "--pmc",
        "SQ_WAVES",
        "GRBM_COUNT",
        "--output-format",
        "csv",
        "-d",
        "/tmp/rp",
        "-o",
        "run",
        "--",
        "python3",
        "w.py",
        "--n",
        "3",
    ]
    assert "--stats" in rocprofv3_command(["a"], "d", stats=True)
    assert rocprofv3_outputs("/tmp/rp", "run")["kernel_trace"] == Path("/tmp/rp/run_kernel_trace.csv")
    with pytest.raises(ValueError, match="counter must be a hardware counter name like SQ_WAVES; got 'SQ WAVES'"):
        rocprofv3_command(["a"], "d", counters=["SQ WAVES"])
    with pytest.raises(ValueError, match="app must be a non-empty list"):
        rocprofv3_command("python3 w.py", "d")


def test_legacy_rocprof_command_line():
    assert rocprof_command(["./app"], "out/results.csv", "pmc.txt", stats=True) == [
        "rocprof",
        "--timestamp",
        "on",
        "-i",
        "pmc.txt",
        "--stats",
        "-o",
        "out/results.csv",
        "./app",
    ]
    assert rocprof_input(["SQ_WAVES", "SQ_INSTS_VALU"]) == "pmc: SQ_WAVES SQ_INSTS_VALU\n"


def test_kernel_trace_current_header():
    ds = parse_kernel_trace(FIX / "v3_current_kernel_trace.csv")
    assert [d.kernel_name for d in ds] == [FILL, GEMM, "void rocblas_gemm_reduce_kernel<256>"] * 2
    g = ds[1]
    assert (g.dispatch_id, g.correlation_id, g.start_ns, g.end_ns, g.duration_ns) == (
        2,
        2,
        1551874061270000,
        1551874061280250,
        10250,
    )
    assert (g.grid, g.workgroup, g.grid_size, g.workgroup_size) == ((8192, 32, 1), (256, 1, 1), 262144, 256)
    assert (g.lds_bytes, g.scratch_bytes, g.vgpr, g.accum_vgpr, g.sgpr) == (65536, 0, 128, 128, 80)
    assert [d.duration_ns for d in ds] == [60000, 10250, 2000, 60000, 10500, 1900]


def test_kernel_trace_rocm62_header():
    ds = parse_kernel_trace(FIX / "v3_rocm62_kernel_trace.csv")
    assert [d.duration_ns for d in ds] == [48744, 48000, 49500]
    d = ds[0]
    assert (d.kernel_name, d.dispatch_id, d.correlation_id, d.start_ns) == (ADD, 1, 1451, 8819330200067564)
    assert (d.grid, d.grid_size, d.workgroup_size, d.lds_bytes, d.scratch_bytes, d.vgpr) == (
        (1024, 1024, 1),
        1048576,
        64,
        0,
        0,
        None,
    )


def test_counter_collection_both_headers():
    cur = parse_counter_collection(FIX / "v3_current_counter_collection.csv")
    assert [d.dispatch_id for d in cur] == [1, 2]
    assert cur[0].counters == {"SQ_WAVES": 16384.0, "GRBM_COUNT": 104288.0}
    assert cur[1].counters == {"SQ_WAVES": 16384.0, "GRBM_COUNT": 103072.0}
    assert (
        cur[0].kernel_name,
        cur[0].grid_size,
        cur[0].workgroup_size,
        cur[0].vgpr,
        cur[0].accum_vgpr,
        cur[0].sgpr,
        cur[0].duration_ns,
    ) == (ADD, 1048576, 64, 8, 0, 16, 52151)
    old = parse_counter_collection(FIX / "v3_rocm62_counter_collection.csv")
    assert len(old) == 1 and old[0].counters == {"SQ_WAVES": 16384.0, "SQ_INSTS_VALU": 1015808.0}
    assert (old[0].start_ns, old[0].accum_vgpr, old[0].vgpr, old[0].correlation_id) == (None, None, 8, 1)


def test_kernel_stats_both_tools():
    v3 = parse_kernel_stats(FIX / "v3_kernel_stats.csv")
    assert [(s.name, s.calls, s.total_ns) for s in v3] == [
        (FILL, 2, 120000.0),
        (GEMM, 2, 20750.0),
        ("void rocblas_gemm_reduce_kernel<256>", 2, 3900.0),
    ]
    assert (v3[1].average_ns, v3[1].percentage, v3[1].min_ns, v3[1].max_ns, v3[1].stddev_ns) == (
        10375.0,
        14.344971,
        10250.0,
        10500.0,
        176.776695,
    )
    legacy = parse_kernel_stats(FIX / "rocprof_results.stats.csv")
    assert (legacy[0].calls, legacy[0].total_ns, legacy[0].average_ns, legacy[0].min_ns) == (2, 38500.0, 19250.0, None)


def test_legacy_results_plain_dialect():
    ds = parse_rocprof_results(FIX / "rocprof_plain_results.csv")
    assert [d.duration_ns for d in ds] == [12400, 12100]
    d = ds[0]
    assert d.kernel_name == "Cijk_Ailk_Bljk_HHS_BH_MT64x64x32_MI16x16x4x1_SN_1LDSB0"
    assert (
        d.dispatch_id,
        d.grid_size,
        d.workgroup_size,
        d.lds_bytes,
        d.scratch_bytes,
        d.vgpr,
        d.accum_vgpr,
        d.sgpr,
    ) == (0, 262144, 256, 17408, 0, 84, 0, 64)
    assert d.counters == {"SQ_WAVES": 4096.0, "SQ_INSTS_VALU": 786432.0}


def test_legacy_results_stats_dialect():
    ds = parse_rocprof_results(FIX / "rocprof_stats_results.csv")
    assert [(d.dispatch_id, d.duration_ns, d.counters) for d in ds] == [(0, 19500, {}), (1, 19000, {})]
    assert ds[0].kernel_name.startswith(
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>"
    )
    assert (ds[0].grid_size, ds[0].workgroup_size, ds[0].vgpr, ds[0].sgpr) == (4194304, 256, 8, 16)


def test_wrong_file_names_the_missing_columns():
    with pytest.raises(ValueError, match="missing column\\(s\\) Kernel_Name, Dispatch_Id"):
        parse_kernel_trace(FIX / "v3_kernel_stats.csv")


def test_dispatches_to_measurement_by_separator_and_by_count():
    ds = parse_kernel_trace(FIX / "v3_current_kernel_trace.csv")
    m = measurement_from_dispatches(ds, "cold", separator="FillFunctor")
    assert m.samples_us == (12.25, 12.4) and m.kernels == (GEMM, "void rocblas_gemm_reduce_kernel<256>")
    row = m.to_row()
    assert (row["latency_us"], row["kernel_count"], row["timer"], row["cache"], row["repeats"]) == (
        pytest.approx(12.325),
        2,
        "rocprof",
        "cold",
        2,
    )
    warm = measurement_from_dispatches(
        parse_kernel_trace(FIX / "v3_rocm62_kernel_trace.csv"), "warm", kernels_per_call=1, skip_calls=1
    )
    assert warm.samples_us == (48.0, 49.5)
    assert len(group_calls(ds, kernels_per_call=3)) == 2
    with pytest.raises(ValueError, match="kernels_per_call=4 does not divide the 6 dispatches"):
        group_calls(ds, kernels_per_call=4)
    with pytest.raises(ValueError, match="calls launch different kernels"):
        measurement_from_dispatches(ds, "cold", kernels_per_call=2)
