#!/bin/bash
# The fortieth session's warm follow-up of collect_h100_20261207_s40.sh (same H100, same NAME, so the collector skips
# the rows already measured): the rest of the fifteenth Triton GEMM pool, 4,517 rows in 128 s (the Triton cache the
# first call's compile workers filled made them fast).
#   LIMIT=540 bash benchmarks/results/collect_h100_20261207_s40b.sh
FINISH_LOGS=tar; NAME=kc_s39n; source benchmarks/results/device_common.sh
measure tritongemm15 gemm_triton_wide15 1339 $(budget 25)
finish
