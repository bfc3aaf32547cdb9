"""graphs/inductor.py on this CPU-only host: the Triton code Inductor writes for an H200 from meta tensors (a pointwise
chain, an RMSNorm, a Llama-3-8B decoder layer), clear errors, and every patch undone afterwards."""

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("transformers")

from kernelcast.features.gpu import get_gpu  # noqa: E402
from kernelcast.features.layers import build_model, layer_call, load_config  # noqa: E402
from kernelcast.graphs.capture import CaptureError  # noqa: E402
from kernelcast.graphs.fake_cuda import device_props, fake_cuda  # noqa: E402
from kernelcast.graphs.inductor import inductor_code  # noqa: E402

KERNEL = re.compile(r"^@triton_heuristics\.(\w+)\(", re.M)


def meta(*shape, dtype=torch.bfloat16):
    return torch.empty(*shape, device="meta", dtype=dtype)


def kinds(codes):
    return [k for code in codes for k in KERNEL.findall(code)]


def test_a_pointwise_chain_is_one_triton_pointwise_kernel():
    codes = inductor_code(lambda x: torch.relu(x * 2 + 1).sigmoid(), (meta(4096, 512),), gpu="H200")
    assert kinds(codes) == ["pointwise"]
    assert "cc=90" in codes[0] and "multi_processor_count=132" in codes[0]


def test_rmsnorm_is_one_reduction_kernel():
    def rmsnorm(x, w):
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6) * w).to(torch.bfloat16)

    codes = inductor_code(rmsnorm, (meta(4096, 512), meta(512, dtype=torch.float32)), gpu="h200_sxm")
    assert kinds(codes) in (["reduction"], ["persistent_reduction"])


def test_a_llama3_8b_decoder_layer_is_gemms_attention_and_fused_kernels():
    call = layer_call(build_model(load_config("llama3_8b"), "meta"), "prefill", 1, 128)
    (code,) = inductor_code(call.fn, call.args, call.kwargs, gpu="H200")
    body = code[code.index("def call(") :]
    assert body.count("extern_kernels.mm(") == 7  # q, k, v, o, gate, up, down
    assert "aten._scaled_dot_product_cudnn_attention" in body  # torch 2.11's pick on Hopper for bf16
    names = re.findall(r"(triton_\w+)\.run\(", body)
    assert any("rsqrt" in n for n in names), names  # the RMSNorms
    assert any("neg" in n and "cat" in n for n in names), names  # RoPE's rotate_half
    assert any("silu" in n for n in names), names  # SiLU(gate) * up
    assert not torch.cuda.is_available()


def test_another_gpu_changes_the_device_the_code_is_written_for():
    (code,) = inductor_code(lambda x: x.exp(), (meta(1024),), gpu="B200")
    spec = get_gpu("B200")
    assert f"multi_processor_count={spec.sm_count}" in code and "cc=100" in code


def test_patches_are_undone_even_on_error():
    from triton.runtime.driver import driver

    active = driver._active
    with pytest.raises(RuntimeError, match="boom"), fake_cuda(get_gpu("H200")):
        assert torch.cuda.get_device_capability() == (9, 0)
        raise RuntimeError("boom")
    assert not torch.cuda.is_available()
    assert driver._active is active
    from torch._dynamo.device_interface import CudaInterface
    from torch.utils._triton import has_triton

    assert not CudaInterface.is_available() and not has_triton()
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        torch.cuda.get_device_capability()
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(), pytest.raises(RuntimeError, match="not linked with support for cuda"):
        torch.empty(2, 2, device="cuda")[0]  # the cuda device-guard slot is empty again


def test_data_dependent_ops_raise_a_capture_error_naming_the_op():
    with pytest.raises(CaptureError, match=r"at aten\.nonzero\.default"):
        inductor_code(lambda x: x[x > 0], (meta(64, 8),), gpu="H200")


def test_amd_gpus_are_refused_with_the_vendor():
    with pytest.raises(ValueError, match=r"NVIDIA GPU.*mi300x.*amd"):
        device_props(get_gpu("MI300X"))
