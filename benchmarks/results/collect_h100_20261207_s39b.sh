#!/bin/bash
# The thirty-ninth session's second call (asked of an H200, run on an H100; 457 s): the rest of the fourteenth
# Triton GEMM config pool (gemm_triton_wide14, seed 1337), resumed from the 4,000 rows collect_h100_20261207_s39.sh
# measured. Its folder travels with the call (carry .device_out/kc_s37n/tritongemm14), so the collector skips them.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261207_s39b.sh
FINISH_LOGS=tar
NAME=kc_s37n source benchmarks/results/device_common.sh
measure tritongemm14 gemm_triton_wide14 1337 $(budget 30)
finish
