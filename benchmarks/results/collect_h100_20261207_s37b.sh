#!/bin/bash
# The thirty-seventh session's warm follow-up of collect_h100_20261207_s37.sh (same H100, same plan): the rest of
# the thirteenth pool, resumed from the rows the first call left on the card.
#   KERNELCAST_GIT_REV=<commit> LIMIT=500 bash benchmarks/results/collect_h100_20261207_s37b.sh
FINISH_LOGS=tar
NAME=kc_s34c source benchmarks/results/device_common.sh
measure tritongemm13 gemm_triton_wide13 1335 $(budget 30)
finish
