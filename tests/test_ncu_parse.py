"""The ncu raw-CSV parser and per-config aggregation, on ncu CSV in the documented (and captured) layout."""

from pathlib import Path

import pytest

from kernelcast.collect import ncu

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"


def test_parse_reads_units_thousands_and_nvtx():
    kernels = ncu.parse_raw_csv((FIXTURES / "raw.csv").read_text())
    assert [k["index"] for k in kernels] == [0, 1, 1, None]
    first = kernels[0]
    assert first["name"].startswith("nvjet_sm90")
    assert first["gpu__time_duration.sum"] == 178976.0
    assert first["sm__cycles_elapsed.avg.per_second"] == pytest.approx(1574599895.57)
    assert first["launch__shared_mem_per_block"] == 213188.0
    assert kernels[2]["launch__grid_size"] == 1024.0


def test_aggregate_sums_weights_and_takes_longest_launch():
    groups = ncu.group_by_config(ncu.parse_raw_csv((FIXTURES / "raw.csv").read_text()))
    assert sorted(groups) == [0, 1]  # the set-up kernel outside any range is dropped
    agg = ncu.aggregate(groups[1])
    assert agg["ncu__kernel_count"] == 2
    assert agg["ncu__gpu__time_duration.sum"] == 40000.0
    assert agg["ncu__time_us"] == 40.0
    assert agg["ncu__dram__bytes_read.sum"] == 10485760 + 8388608
    # duration-weighted: (55.5*30000 + 10*10000) / 40000
    assert agg["ncu__sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(44.125)
    assert agg["ncu__launch__registers_per_thread"] == 232  # the longest kernel's
    half = ncu.aggregate(groups[1], calls=2)
    assert half["ncu__time_us"] == 20.0 and half["ncu__kernel_count"] == 1


def test_non_base_units_are_refused():
    text = (FIXTURES / "raw.csv").read_text().replace('"ns"', '"us"', 1)
    with pytest.raises(ValueError, match="print-units base"):
        ncu.parse_raw_csv(text)


def test_missing_header_is_an_error():
    with pytest.raises(ValueError, match="header"):
        ncu.parse_raw_csv("==PROF== nothing profiled\n")


@pytest.mark.skipif(not (FIXTURES / "h200_smoke_raw.csv").exists(), reason="no captured H200 CSV")
def test_real_h200_export_parses():
    kernels = ncu.parse_raw_csv((FIXTURES / "h200_smoke_raw.csv").read_text())
    groups = ncu.group_by_config(kernels)
    assert groups
    for ks in groups.values():
        agg = ncu.aggregate(ks)
        assert agg["ncu__time_us"] > 0
        assert 0 < agg["ncu__sm__cycles_elapsed.avg.per_second"] < 3e9


def test_ncu_command_never_touches_clocks(tmp_path):
    cmd = ncu.ncu_command(tmp_path / "p.json", tmp_path / "r", 1)
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert "regex:kc[0-9]+/" in cmd and "--set" not in cmd and "--section" not in cmd
