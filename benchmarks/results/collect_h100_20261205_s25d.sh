#!/bin/bash
# The twenty-fifth session's fourth H100 call (2026-12-05): after the library kernels' sweeps, the Triton families'
# on the H100, whose test rows (Triton GEMM at fresh configs 7.6%, Triton attention 10.2%, MoE 4.9% median) were
# answered by transfer alone: gemm_triton_wide8 (seed 1260), triton_attention_wide8 (1261), moe_wide7 (1262), each
# budget-cut (plans are shuffled: a cut sweep is a uniform subset); Triton configs compiled by 4 workers beside.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s25d.sh
FINISH_LOGS=tar
NAME=kc_s25d source benchmarks/results/device_common.sh
measure tritongemm gemm_triton_wide8 1260 230
measure tritonatt triton_attention_wide8 1261 130
measure moe moe_wide7 1262 $(budget 45)
finish
