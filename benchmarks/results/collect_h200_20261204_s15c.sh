#!/bin/bash
# Device command (issue 14, fifteenth session of 2026-12-04), third call: the contiguous cats of copy_cat_wide again
# (seed 0): the second call lost 571 of its 753 to the correctness check's small description, which kept the original
# `largest` (collect/workloads/copy.py's small() now derives it; tests/test_workloads_cpu.py checks every sweep's).
#   KERNELCAST_GIT_REV=<commit> LIMIT=150 bash benchmarks/results/collect_h200_20261204_s15c.sh
NAME=kc1204s15c source benchmarks/results/device_common.sh
measure copycat copy_cat_wide 0 90
finish
