"""The kernelcast command: predict, gpus, layer, model — human and --json forms, and clear errors."""

import io
import json

import pytest

from kernelcast import cli
from kernelcast.cli import main


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_predict_from_fields_and_from_stdin(capsys, monkeypatch):
    code, out, _ = run(
        capsys, "predict", "op=gemm", "gpu=H200", "dtype=bf16", "backend=cublas", "m=8192", "n=8192", "k=8192", "--json"
    )
    first = json.loads(out)
    assert code == 0 and first["desc"]["gpu"] == "h200_sxm" and first["prediction"]["bound"] == "compute"
    desc = json.dumps({"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "m": 8192, "n": 8192, "k": 1})
    code, out, _ = run(capsys, "predict", "--file", "-", "k=8192", "--json", stdin=desc, monkeypatch=monkeypatch)
    assert json.loads(out)["prediction"] == first["prediction"]  # fields override the file
    code, out, _ = run(
        capsys, "predict", "op=gemm", "gpu=H200", "dtype=bf16", "backend=cublas", "m=1", "n=4096", "k=4096"
    )
    assert out.splitlines()[0].split() == list(cli.PRED_COLUMNS)
    assert "memory" in out.splitlines()[1]


def test_predict_bad_input_exits_2_naming_the_field(capsys):
    code, _, err = run(capsys, "predict", "op=gemm", "gpu=H200", "dtype=bf16", "backend=cublas", "m=0", "n=1", "k=1")
    assert code == 2 and "kernel_desc['m'] must be an integer in [1, 16777216]; got 0" in err
    code, _, err = run(capsys, "predict", "m")
    assert code == 2 and "key=value" in err


def test_gpus_list_and_show(capsys):
    code, out, _ = run(capsys, "gpus", "--json")
    names = {g["name"] for g in json.loads(out)}
    assert code == 0 and {"h200_sxm", "b200_sxm", "mi300x"} <= names
    code, out, _ = run(capsys, "gpus", "NVIDIA H200", "--json")
    assert json.loads(out)["sm_count"] == 132


def test_layer_is_a_view_of_model_and_its_totals_are_the_sum_of_the_kernels(capsys):
    pytest.importorskip("transformers")
    code, out, _ = run(
        capsys, "layer", "--model", "qwen3_30b_a3b", "--tokens", "16", "--gpus", "H100", "--tp", "4", "--json"
    )
    (row,) = json.loads(out)
    assert code == 0 and row["layer"] == "moe" and row["tokens"] == 16
    code, out, _ = run(
        capsys,
        "model",
        "--model",
        "qwen3_30b_a3b",
        "--phase",
        "prefill",
        "--seq",
        "16",
        "--gpus",
        "H100",
        "--tp",
        "4",
        "--json",
    )
    (step,) = json.loads(out)
    layer = next(p for p in step["parts"] if p["part"] == "layer (moe)")
    assert layer["device_us"] == pytest.approx(row["device_us"]) and layer["count"] == 48
    assert step["device_us"] == pytest.approx(sum(p["device_us"] * p["count"] for p in step["parts"]))
    code, _, err = run(capsys, "layer", "--model", "llama3_8b", "--tp", "3")
    assert code == 2 and "tp must divide num_attention_heads=32; got 3" in err
