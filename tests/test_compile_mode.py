"""predict_module(mode="compile") on this CPU-only host: Inductor's output code for an H200 read as the kernels it
launches (fused Triton kernels, extern GEMMs, attention), each predicted; the fusion table and the ``fusion`` CLI."""

import json

import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("transformers")

from kernelcast.cli import main  # noqa: E402
from kernelcast.features import layers  # noqa: E402
from kernelcast.graphs.capture import CaptureError  # noqa: E402
from kernelcast.graphs.compiled import launches, predict_codes  # noqa: E402
from kernelcast.graphs.fusion import fusion_table  # noqa: E402
from kernelcast.graphs.predict import predict_module  # noqa: E402

LAYERS = "datasets/compiled/kernelcast_h200_sxm_20261201_layers_tasks.parquet"
ARCH_LAYERS = "datasets/compiled/kernelcast_h200_sxm_20261204_archlayers_tasks.parquet"


def meta(*shape, dtype=torch.bfloat16):
    return torch.empty(*shape, device="meta", dtype=dtype)


def test_a_pointwise_chain_is_one_fused_row():
    p = predict_module(lambda x: torch.relu(x * 2 + 1).sigmoid(), (meta(4096, 512),), gpu="H200", mode="compile")
    assert p.mode == "compile" and len(p.kernels) == 1
    row = p.kernels.iloc[0]
    assert row["family"] == "fused" and row["kernel"].startswith("triton_poi_fused")
    assert {"aten.relu", "aten.sigmoid"} <= set(row["aten"]) and row["region"]
    assert p.device_us == pytest.approx(row["latency_us"]) and p.device_us > 0
    assert row["label_us"] == row["latency_us"]  # a fused kernel's label is already in sequence


class NormLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(1024, dtype=torch.bfloat16))
        self.proj = torch.nn.Linear(1024, 4096, bias=False, dtype=torch.bfloat16)

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.proj(self.weight * y.to(torch.bfloat16))


def test_rmsnorm_then_linear_is_a_fused_row_and_a_gemm_row():
    with torch.device("meta"):
        module = NormLinear()
    p = predict_module(module, (meta(256, 1024),), gpu="H200", mode="compile")
    assert p.kernels["family"].tolist() == ["fused", "gemm"]
    gemm = json.loads(p.kernels.iloc[1]["desc"])
    assert (gemm["m"], gemm["n"], gemm["k"], gemm["layout"], gemm["backend"]) == (256, 4096, 1024, "nt", "cublas")
    assert p.kernels.iloc[1]["latency_us"] <= p.kernels.iloc[1]["label_us"]  # the in-sequence L2 term
    assert any("extern kernels in sequence" in a for a in p.assumptions)
    assert p.wall_us > p.device_us  # the wrapper's launches


def test_a_llama3_8b_layer_compiles_to_fewer_kernels_every_row_mapped_or_flagged():
    call = layers.layer_call(layers.build_model(layers.load_config("llama3_8b")), "prefill", 1, 128)
    fn, tensors = layers.functional_layer(call)
    comp = predict_module(fn, tuple(tensors), gpu="H200", mode="compile")
    eager = predict_module(call.fn, call.args, call.kwargs, gpu="H200")
    assert 0 < comp.device_us < eager.device_us and len(comp.kernels) < len(eager.kernels)
    k = comp.kernels
    assert ((k["model"] != "unmapped") | (k["note"].astype(str) != "")).all()
    assert (k["family"] == "gemm").sum() == 7 and (k["family"] == "attention").sum() == 1
    att = json.loads(k.loc[k["family"] == "attention", "desc"].iloc[0])
    assert (att["backend"], att["heads_q"], att["heads_kv"], att["seq_q"], att["causal"]) == ("cudnn", 32, 8, 128, True)
    table = fusion_table(eager, comp)
    assert table["eager_kernels"].sum() == int((eager.kernels["model"] != "unmapped").sum())
    rms = table.iloc[0]
    assert rms["family"] == "fused" and rms["eager_kernels"] >= 5 and rms["saved_us"] > 0


def test_a_sliding_window_prefill_compiles_here_as_on_the_gpu():
    """Gemma 2 builds its sliding window as a host tensor inside the call and moves it to the device: the fake mode the
    trace runs in allows that, as a GPU host does; the Triton kernels are the ones the H200's compile launched."""
    row = pd.read_parquet(ARCH_LAYERS).query("model == 'gemma2_9b' and phase == 'prefill' and seq == 128").iloc[0]
    call = layers.layer_call(layers.build_model(layers.load_config("gemma2_9b")), "prefill", 1, 128)
    fn, tensors = layers.functional_layer(call)
    p = predict_module(fn, tuple(tensors), gpu="H200", mode="compile")
    gpu_triton = [k[0] for k in json.loads(row["kernels"]) if k[0].startswith("triton_")]
    assert [n for n in p.kernels["kernel"] if n.startswith("triton_")] == gpu_triton
    assert p.device_us == pytest.approx(row["device_us"], rel=0.15)


def test_code_the_gpu_generated_reads_the_same_way():
    """torch 2.11's code from the H200 (a compiled llama3_8b decode layer) maps every launch, in the GPU's order."""
    row = pd.read_parquet(LAYERS).query("model == 'llama3_8b' and phase == 'decode'").iloc[0]
    p = predict_codes([row["code"]], "H200")
    assert len(p.unmapped) == 0 and p.device_us > 0
    gpu_triton = [k[0] for k in json.loads(row["kernels"]) if k[0].startswith("triton_")]
    assert [n for n in p.kernels["kernel"] if n.startswith("triton_")] == gpu_triton
    gemms = [la.desc for la in launches(row["code"], "H200") if la.family == "gemm"]
    assert len(gemms) == 7 and {g["m"] for g in gemms} == {int(row["batch"])}


def test_errors_name_the_op_and_the_mode():
    with pytest.raises(CaptureError, match=r"aten\.nonzero"):
        predict_module(lambda x: x[x > 0], (meta(64, 8),), gpu="H200", mode="compile")
    with pytest.raises(ValueError, match=r"mode must be one of eager, compile; got 'jit'"):
        predict_module(lambda x: x, (meta(8),), gpu="H200", mode="jit")
    with pytest.raises(ValueError, match=r"options must be a mapping.*mode='compile'"):
        predict_module(lambda x: x, (meta(8),), gpu="H200", options={"max_fusion_size": 1})


def test_the_fusion_cli_prints_a_table_and_json(capsys, tmp_path):
    argv = ["fusion", "--model", "llama3_8b", "--phase", "decode", "--batch", "2", "--context", "64"]
    assert main([*argv, "--plot", str(tmp_path / "f.png")]) == 0
    out = capsys.readouterr().out
    assert "predicted speedup: device" in out and "eager_ops" in out and "extern_kernels.mm" in out
    assert (tmp_path / "f.png").stat().st_size > 0
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["speedup"] > 1 and got["compile_kernels"] < got["eager_kernels"] and got["regions"]
    assert main([*argv, "--options", "[1]"]) == 2
    assert "--options must be a JSON object" in capsys.readouterr().err


def test_a_whole_model_step_compiled(capsys):
    """predict_model(mode="compile"): each layer kind as Inductor compiles it (fewer kernels, less device time than
    eager: the norms, RoPE and activations fused), the head eager; the CLI says which mode answered."""
    from kernelcast.graphs.model import predict_model

    eager = predict_model("llama3_8b", gpu="H200", phase="prefill", batch=1, seq=256)
    compiled = predict_model("llama3_8b", gpu="H200", phase="prefill", batch=1, seq=256, mode="compile")
    (e_layer, c_layer) = (p.parts.iloc[0] for p in (eager, compiled))
    assert compiled.mode == "compile" and c_layer["count"] == e_layer["count"] == 32
    assert c_layer["kernels"] < e_layer["kernels"] and c_layer["device_us"] < e_layer["device_us"]
    assert compiled.parts.iloc[-1]["device_us"] == eager.parts.iloc[-1]["device_us"]  # the head: eager in both
    assert any("LM head predicted eager" in a for a in compiled.assumptions)
    assert (
        main(["model", "--model", "llama3_8b", "--phase", "prefill", "--seq", "256", "--mode", "compile", "--json"])
        == 0
    )
    (answer,) = json.loads(capsys.readouterr().out)
    assert answer["mode"] == "compile" and answer["device_us"] == pytest.approx(compiled.device_us)
    with pytest.raises(ValueError, match="mode must be one of eager, compile; got 'jit'"):
        predict_model("llama3_8b", gpu="H200", phase="decode", context=16, mode="jit")
    with pytest.raises(ValueError, match="routing must be 'balanced' with mode='compile'"):
        predict_model("mixtral_8x7b", gpu="H200", phase="decode", context=16, mode="compile", routing="power_law_1")
