#!/bin/bash
# The forty-first session's first warm follow-up of collect_h100_20261207_s41.sh (same H100, same NAME): the rest of
# both Triton plans, from the first call's folders and Triton cache (4,630 attention rows in 86 s, 2,288 GEMM rows in
# 52 s). Its call log (…_s41b_call.log) holds the first call's lines too: the machine kept the folder.
#   KERNELCAST_GIT_REV=<commit> LIMIT=270 bash benchmarks/results/collect_h100_20261207_s41b.sh
FINISH_LOGS=tar; NAME=kc_s40n; source benchmarks/results/device_common.sh
measure tritonatt11 triton_attention_wide8 1394 $(budget 140)
measure tritongemm16 gemm_triton_wide16 1340 $(budget 12)
finish
