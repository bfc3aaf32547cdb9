#!/bin/bash
# The forty-second session's third warm follow-up (same H100, 399 s, the session's last device-seconds): the rest of
# seed 1396's Triton attention plan (758 rows), then gemm_triton_wide17's pool at a second shape seed (1342): 4,700 of
# its 7,869 rows before the budget ran out (a later call with the same NAME would resume it).
#   KERNELCAST_GIT_REV=<commit> LIMIT=400 bash benchmarks/results/collect_h100_20261207_s42d.sh
FINISH_LOGS=tar; NAME=kc_s42b; source benchmarks/results/device_common.sh
measure tritonatt13 triton_attention_wide6 1396 80
measure tritongemm17b gemm_triton_wide17 1342 $(budget 10)
finish
