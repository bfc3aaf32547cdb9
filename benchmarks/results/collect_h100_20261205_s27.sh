#!/bin/bash
# Prepared by the twenty-fifth session (2026-12-05) for the next H100 call: its last call (collect_h100_20261205_s25d.sh)
# ran out of device time with 1,200 Triton GEMM and 500 Triton attention rows and nothing of the MoE pass. 500 rows made
# the H100 in-distribution for Triton attention and its test set went 10.2 -> 11.8% median (RESULTS §41): more of the
# sweep first (triton_attention_wide8, seed 1263), then MoE (moe_wide7, 1262: no H100 MoE row yet), then Triton GEMM
# (gemm_triton_wide8, 1264). First, copies of a large repeated source read in short runs (copy_expand_big, 1265: the
# expand rows stop near 300 M elements, where the H100's test rows past it ran 3x slower per byte). Merge each, list
# with role train, retrain copy, attention, moe, gemm. Before all of them (added by the twenty-sixth session, ~60 s):
# benchmarks/gpu_grouped_mm_probe.py, why GPT-OSS's compiled `_grouped_mm` ran 7x its eager time (RESULTS §42; its
# table in logs.tar.gz).
# Run by the twenty-seventh session as collect_h100_20261205_s27.sh (its call log beside it; LIMIT=450).
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261205_s27.sh
FINISH_LOGS=tar
NAME=kc_s26 source benchmarks/results/device_common.sh
grouped_mm_probe
measure expandbig copy_expand_big 1265 45
measure tritonatt triton_attention_wide8 1263 190
measure moe moe_wide7 1262 130
measure tritongemm gemm_triton_wide8 1264 $(budget 50)
finish
