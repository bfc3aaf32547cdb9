#!/bin/bash
# Prepared by the twenty-fifth session (2026-12-05) for the next H100 call: its last call (collect_h100_20261205_s25d.sh)
# ran out of device time with 1,200 Triton GEMM and 500 Triton attention rows and nothing of the MoE pass. 500 rows made
# the H100 in-distribution for Triton attention and its test set went 10.2 -> 11.8% median (RESULTS §41): more of the
# sweep first (triton_attention_wide8, seed 1263), then MoE (moe_wide7, 1262: no H100 MoE row yet), then Triton GEMM
# (gemm_triton_wide8, 1264). Merge each, list with role train, retrain attention, moe, gemm.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s26.sh
FINISH_LOGS=tar
NAME=kc_s26 source benchmarks/results/device_common.sh
measure tritonatt triton_attention_wide8 1263 200
measure moe moe_wide7 1262 150
measure tritongemm gemm_triton_wide8 1264 $(budget 50)
finish
