#!/bin/bash
# Device command (fifteenth session of 2026-12-04), eighth call: the GPU tests (tests/test_gpu_workloads.py) on the
# session's final tree — the collector's strided cats, sliced pointwise operands and the rest, on the H200.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261204_s15h.sh
NAME=kc1204s15h source benchmarks/results/device_common.sh
gpu_tests
finish
