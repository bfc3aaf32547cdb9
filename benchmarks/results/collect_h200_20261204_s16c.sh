#!/bin/bash
# Device command (issue 14, sixteenth session of 2026-12-04), third call: grouped GEMMs as MoE layers launch them at
# small batch and under tensor parallelism — the independent test set first (gemm_grouped_moe_test: real MoE expert
# shapes split by TP, odd rows per group), then the training pass (gemm_grouped_moe); then the GPU tests on this tree.
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261204_s16c.sh
NAME=kc1204s16c source benchmarks/results/device_common.sh
measure groupedmoetest gemm_grouped_moe_test 1612 110
measure groupedmoe gemm_grouped_moe 1611 $(budget 200)
gpu_tests
finish
