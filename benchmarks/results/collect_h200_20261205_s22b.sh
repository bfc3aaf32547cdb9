#!/bin/bash
# Second device call of the twenty-second session (2026-12-05). Issue 14: the fifth layer set's Llama 4 misses are
# its eager expert stacks (one cuBLAS bmm over all experts, 0.3-36 ms, 930 TFLOP/s measured, 740 predicted: every
# earlier batched pass stopped at 200 GFLOP). First the sealed measurements: the expert-stack bmm test set
# (gemm_cublas_bmm_experts_test) and a sixth eager layer set (layer_job --models arch6: the fifth set's 11
# architectures at four other points), both read once after this session's choices; then the expert-stack training
# pass (gemm_cublas_bmm_experts); then, while time is left, the sixth set compiled (fused_job --layer-models arch6).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_20261205_s22b.sh
FINISH_LOGS=tar
NAME=kc_s22b source benchmarks/results/device_common.sh
measure bmm_experts_test gemm_cublas_bmm_experts_test 1222 60
layerset arch6 arch6 150
measure bmm_experts gemm_cublas_bmm_experts 1221 120
[ "$(left)" -gt 150 ] && compiled arch6c arch6 30 8 120
finish
