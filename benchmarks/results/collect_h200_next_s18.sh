#!/bin/bash
# Device command prepared by the seventeenth session (2026-12-04), which was lent no device: NOT RUN YET. The next
# session with an H200 runs it as its first call (rename it to collect_h200_<date>_s<n>.sh, keep its call log beside it).
# Issue 14: the trsm and conv families' independent test sets first, then their training passes (they have one fitted
# constant each, from kernels inside hybrid layers); issue 15: Qwen3.5's compiled hybrid layers at the training points
# (the sixteenth session's pass stalled at --stall-s 60 with 4 workers: 2 workers, 300 s here); then the GPU tests
# (they check the new trsm and conv workloads against float64).
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_next_s18.sh
NAME=kc_s18 source benchmarks/results/device_common.sh
measure trsm_test trsm_test 1101 40
measure conv_test conv_test 1102 40
measure trsm trsm 1103 90
measure conv conv 1104 90
compiled hybridtrain hybridtrain 120 2 300
gpu_tests
finish
