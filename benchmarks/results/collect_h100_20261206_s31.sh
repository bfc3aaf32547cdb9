#!/bin/bash
# Device command prepared by the thirtieth session (2026-12-06) for the next H100 call: more Triton GEMM rows over the
# three config pools collect_h100_20261206_s30.sh opened on the H100 (gemm_triton_wide7/6/5, new seeds; each row there
# compiles a config the H100 has not run, about 3.6 rows/s), after masked SDPA over the whole box (attention_masked_box)
# and the masked head_dim sweep's second draw. Merge, list with role train, retrain gemm and attention.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261206_s31.sh
FINISH_LOGS=tar
NAME=kc_s31 source benchmarks/results/device_common.sh
measure maskedbox attention_masked_box 1326 150
measure maskedhd attention_masked_wide2 1324 120
measure tritongemm7 gemm_triton_wide7 1313 150
measure tritongemm6 gemm_triton_wide6 1314 $(budget 30)
finish
