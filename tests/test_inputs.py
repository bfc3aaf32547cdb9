"""Discoverable inputs: the field catalog read from the registry, typed-in text (units, booleans, loose choices),
--file with one description or a list, --version."""

import io
import json

import numpy as np
import pytest

from kernelcast.cli import main
from kernelcast.features.catalog import catalog, field_rows, loose_choice, parse_size, parse_text, usage_line
from kernelcast.features.common import roofline_latency
from kernelcast.features.fields import BoolField, ChoiceField, IntField
from kernelcast.features.ops import OpSpec, get_op, op_names, register, unregister

ATTN = "op=attention gpu=H200 dtype=bf16 backend=flash batch=1 heads_q=32 heads_kv=8 seq_q=1 seq_kv=8192 head_dim=128"


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _toy_features(cols, gpu):
    n = np.asarray(cols["elements"], dtype=np.float64) * 4
    floor = n / gpu["memory_bandwidth_bps"] * 1e6
    zero = np.zeros_like(n)
    return {"bytes": n, "compute_floor_us": zero, "memory_floor_us": floor, "floor_us": floor, "wave_efficiency": n}


@pytest.fixture
def toy():
    spec = register(
        OpSpec(
            name="toy_fill",
            doc="fill a buffer",
            fields={
                "elements": IntField(1, 1 << 40),
                "pattern": ChoiceField(("zeros", "ones_like")),
                "strided": BoolField(default=False),
            },
            dtypes=("bf16",),
            backends=("torch",),
            features=_toy_features,
            flops=lambda cols: np.zeros(len(np.atleast_1d(cols["elements"]))),
            analytical=lambda cols, f: roofline_latency(f, np.ones(len(f["floor_us"])), 1.0),
            analytical_assumptions="a memory-bound fill",
            example={"elements": 1 << 20, "pattern": "zeros", "dtype": "bf16", "backend": "torch"},
        )
    )
    yield spec
    unregister("toy_fill")


def test_the_catalog_lists_every_field_of_every_op_from_the_registry(toy):
    rows = catalog()
    assert {r["op"] for r in rows} == set(op_names()) and "toy_fill" in op_names()
    for op in op_names():
        listed = [r["field"] for r in rows if r["op"] == op]
        assert listed == list(get_op(op).all_fields())  # op, gpu, dtype, backend, the family's fields, config
    toy_rows = {r["field"]: r for r in field_rows("toy_fill")}
    assert toy_rows["elements"] == {
        "op": "toy_fill",
        "field": "elements",
        "type": "int",
        "required": True,
        "default": None,
        "allowed": "an integer in [1, 1099511627776]",
    }
    assert (toy_rows["strided"]["type"], toy_rows["strided"]["default"]) == ("bool", False)
    assert toy_rows["pattern"]["allowed"] == "one of zeros, ones_like"
    assert "[strided=false]" in usage_line("toy_fill") and " elements pattern " in usage_line("toy_fill")


def test_defaults_and_allowed_values_people_read():
    gemm = {r["field"]: r for r in field_rows("gemm")}
    assert gemm["batch"]["default"] == 1 and gemm["layout"]["default"] == "nt"
    assert gemm["out_dtype"]["default"] == "derived: fp32 for fp32/tf32, fp16 for fp16, bf16 otherwise"
    assert "block_m (a power of two in [16, 256])" in gemm["config"]["allowed"]
    assert get_op("collective").fields["ranks_per_node"].default.__doc__.strip() == "ranks (one node)"


@pytest.mark.parametrize(
    "text, value",
    [("64MiB", 64 << 20), ("64MB", 64_000_000), ("1.5KiB", 1536), ("4k", 4000), ("2Gi", 2 << 30), ("8", 8)],
)
def test_sizes_take_units(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["1.0001KB", "MiB", "-4k", "64 MiBs", "0.5"])
def test_not_a_whole_size_is_left_to_validation(text):
    assert parse_size(text) is None


def test_text_is_parsed_by_each_fields_kind(toy):
    assert parse_text("collective", "bytes", "64MiB") == 64 << 20
    for text in ("true", "True", "1", "yes"):
        assert parse_text("attention", "causal", text) is True
    assert parse_text("attention", "causal", "0") is False and parse_text("attention", "causal", "maybe") == "maybe"
    assert parse_text("collective", "collective", "allreduce") == "all_reduce"
    assert parse_text("collective", "collective", "All-Gather") == "all_gather"
    assert parse_text("gemm", "backend", "cuBLAS") == "cublas"
    assert parse_text("gemm", "m", "4096") == 4096 and parse_text("no_such_op", "m", "4k") == "4k"
    assert parse_text("toy_fill", "pattern", "ONES-LIKE") == "ones_like"  # a family registered in this test
    assert parse_text("toy_fill", "elements", "1Ki") == 1024 and parse_text("toy_fill", "strided", "True") is True
    assert loose_choice("x", ("a_b", "ab")) is None  # ambiguous or unknown: validation names the choices


def test_units_booleans_and_aliases_answer_as_the_canonical_spelling(capsys):
    coll = "op=collective gpu=H200 dtype=bf16 backend=nccl ranks=8".split()
    _, spelled, _ = run(capsys, "predict", *coll, "collective=allreduce", "bytes=64MiB", "--json")
    _, canonical, _ = run(capsys, "predict", *coll, "collective=all_reduce", f"bytes={64 << 20}", "--json")
    assert json.loads(spelled) == json.loads(canonical)
    _, a, _ = run(capsys, "predict", *ATTN.split(), "causal=True", "dtype=fp8", "--json")
    _, b, _ = run(capsys, "predict", *ATTN.split(), "causal=true", "dtype=fp8_e4m3", "--json")
    assert json.loads(a) == json.loads(b) and json.loads(a)["desc"]["causal"] is True


def test_layout_tn_is_refused_with_what_the_layouts_mean(capsys):
    gemm = "op=gemm gpu=H200 dtype=bf16 backend=cublas m=8 n=8 k=8".split()
    code, _, err = run(capsys, "predict", *gemm, "layout=tn")
    assert code == 2 and "kernel_desc['layout'] must be one of nn, nt (row-major" in err and "not measured" in err
    code, _, err = run(capsys, "predict", *ATTN.split(), "causal=maybe")
    assert code == 2 and "kernel_desc['causal'] must be true or false; got 'maybe'" in err


def test_file_holds_one_description_or_a_list(capsys, monkeypatch):
    descs = [
        {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "m": m, "n": 4096, "k": 4096}
        for m in (1, 128, 4096)
    ] + [{"op": "collective", "gpu": "H200", "dtype": "bf16", "backend": "nccl", "collective": "all_reduce",
          "bytes": 1 << 20, "ranks": 8}]  # fmt: skip
    code, out, _ = run(capsys, "predict", "--file", "-", "--json", stdin=json.dumps(descs), monkeypatch=monkeypatch)
    answers = json.loads(out)
    assert code == 0 and [a["desc"]["m"] for a in answers[:3]] == [1, 128, 4096] and len(answers) == 4
    _, one, _ = run(capsys, "predict", "--file", "-", "--json", stdin=json.dumps(descs[2]), monkeypatch=monkeypatch)
    assert json.loads(one)["prediction"]["latency_us"] == pytest.approx(answers[2]["prediction"]["latency_us"])
    code, out, _ = run(capsys, "predict", "--file", "-", "gpu=B200", stdin=json.dumps(descs), monkeypatch=monkeypatch)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 5 and all(" B200 " in line for line in lines[1:])  # fields apply to each
    for stdin, message in (("[]", "empty list"), ("[1]", "item 0 of --file '-' must be a JSON object")):
        code, _, err = run(capsys, "predict", "--file", "-", stdin=stdin, monkeypatch=monkeypatch)
        assert code == 2 and message in err


def test_version_and_help_list_the_fields(capsys):
    from kernelcast import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"kernelcast {__version__}"
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    out = capsys.readouterr().out
    for op in op_names():
        assert usage_line(op) in out
    code, out, _ = run(capsys, "fields", "collective", "--json")
    assert code == 0 and [r["field"] for r in json.loads(out)] == list(get_op("collective").all_fields())
    code, out, _ = run(capsys, "fields", "moe")
    assert code == 0 and "distribution" in out and "(required)" in out
