"""nccl-tests parser: hand-written fixtures in the exact printf / JSON layout (values synthetic)."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernelcast.collect.dataset import append_rows
from kernelcast.collect.nccl_tests import main, parse_file, parse_text

FIX = Path(__file__).parent / "fixtures" / "nccl_tests"


def test_all_reduce_text_both_blocks():
    rows = parse_file(FIX / "all_reduce_2gpu_text.txt")
    got = [(r["bytes"], r["in_place"], r["latency_us"]) for r in rows]
    assert got == [
        (8, False, 10.21),
        (8, True, 9.87),
        (1048576, False, 25.40),
        (1048576, True, 24.90),
        (134217728, False, 412.30),
        (134217728, True, 410.80),
    ]
    r = rows[0]
    assert (r["op"], r["collective"], r["dtype"], r["backend"], r["gpu"]) == (
        "collective",
        "all_reduce",
        "fp32",
        "nccl",
        "h200_sxm",
    )
    assert (r["ranks"], r["ranks_per_node"], r["repeats"], r["nccl"]) == (2, 2, 20, "2.28.9")
    assert (r["source"], r["timer"], r["status"], r["host"]) == ("nccl-tests", "nccl-tests", "ok", "h200-a")


def test_all_gather_per_iteration_columns_two_hosts_and_wrong_elements():
    rows = parse_file(FIX / "all_gather_2node_per_iter.txt")
    assert [(r["bytes"], r["in_place"], r["latency_us"]) for r in rows] == [
        (1024, False, 18.75),
        (1024, True, 18.10),
        (2097152, False, 61.50),
        (2097152, True, 60.25),
    ]
    assert {(r["gpu"], r["dtype"], r["ranks"], r["ranks_per_node"], r["repeats"]) for r in rows} == {
        ("h100_sxm", "bf16", 2, 1, 100)
    }
    assert [r["status"] for r in rows] == ["ok", "ok", "ok", "error"]
    assert rows[3]["error"] == "3 wrong elements"


def test_json_output():
    rows = parse_file(FIX / "reduce_scatter_2node.json")
    assert [(r["bytes"], r["in_place"], r["latency_us"]) for r in rows] == [
        (1048576, False, 31.25),
        (1048576, True, 30.5),
        (67108864, False, 905.0),
        (67108864, True, 899.75),
    ]
    r = rows[0]
    assert (r["collective"], r["dtype"], r["ranks"], r["ranks_per_node"], r["gpu"]) == (
        "reduce_scatter",
        "fp16",
        4,
        2,
        "h200_sxm",
    )
    assert (r["nccl"], r["repeats"], r["time"], r["host"]) == ("2.28.9", 20, "2026-11-29 12:00:00", "node-a,node-b")


def test_cputime_header_sets_the_timer():
    text = (FIX / "all_reduce_2gpu_text.txt").read_text().replace("     time   algbw", "  cputime   algbw")
    assert {r["timer"] for r in parse_text(text)} == {"nccl-tests-cputime"}


@pytest.mark.parametrize(
    "old, new, match",
    [
        ("all_reduce_perf", "hypercube_perf", "program must be one of"),
        ("  float  ", " double  ", "type must be one of"),
    ],
)
def test_bad_input_names_what_is_allowed(old, new, match):
    text = (FIX / "all_reduce_2gpu_text.txt").read_text().replace(old, new)
    with pytest.raises(ValueError, match=match):
        parse_text(text)


def test_rows_fit_the_dataset_schema_and_cli(tmp_path, capsys):
    out = tmp_path / "nccl-tests_h200_sxm_20261129_s000of001.parquet"
    assert append_rows(out, "collective", parse_file(FIX / "all_reduce_2gpu_text.txt")) == 6
    assert main([str(FIX / "reduce_scatter_2node.json"), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"files": 1, "rows": 4, "rows_in_file": 10, "out": str(out)}
    table = pq.read_table(out)
    assert table.column("source").to_pylist() == ["nccl-tests"] * 10
