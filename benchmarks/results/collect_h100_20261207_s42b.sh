#!/bin/bash
# The forty-second session's first warm follow-up (same H100): the rest of collect_h100_20261207_s42.sh's Triton
# attention plan (1,901 rows) and of its seventeenth GEMM pool (6,309 rows), as one 271 s call.
#   KERNELCAST_GIT_REV=<commit> LIMIT=520 bash benchmarks/results/collect_h100_20261207_s42b.sh
FINISH_LOGS=tar; NAME=kc_s41n; source benchmarks/results/device_common.sh
measure tritonatt12 triton_attention_wide6 1395 240
measure tritongemm17 gemm_triton_wide17 1341 $(budget 15)
finish
