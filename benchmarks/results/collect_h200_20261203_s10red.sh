#!/bin/bash
# Second device command of the tenth session (issue 15) on the lent nvidia-h200: a third reduction test set
# (reduction_test3), sealed, then its training pass (reduction_wide3): the eager reductions past every earlier pass's
# box that the random fusion graphs launch (many short rows, a few huge rows, long middle-dim reductions). Then the
# GPU tests (tests/test_gpu_workloads.py: layer_job's host probe is new). Same collector and method.
#   KERNELCAST_GIT_REV=<commit> LIMIT=420 bash benchmarks/results/collect_h200_20261203_s10red.sh
NAME=kc1203s10r source benchmarks/results/device_common.sh
measure red_test3 reduction_test3 1022 90
measure red_wide3 reduction_wide3 1023 $(budget 150)
gpu_tests
finish
