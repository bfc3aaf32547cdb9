#!/bin/bash
# The fortieth session's second warm follow-up (same H100, same NAME): the rest of Triton attention seed 1392, 5,093
# rows in 88 s, compiled already by the first call's workers.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261207_s40c.sh
FINISH_LOGS=tar; NAME=kc_s39n; source benchmarks/results/device_common.sh
measure tritonatt10 triton_attention_wide8 1392 $(budget 25)
finish
