"""kernelcast's own Triton kernels (GEMM, flash attention, fused MoE, timer markers); import needs triton."""
