#!/bin/bash
# Forty-fourth session's third H100 call (warm): Triton attention over wide5's pool at one more fresh seed.
#   KERNELCAST_GIT_REV=<commit> LIMIT=360 bash benchmarks/results/collect_h100_20261207_s44c.sh
FINISH_LOGS=tar
NAME=kc_s44c source benchmarks/results/device_common.sh
measure tritonatt16 triton_attention_wide5 1399 $(budget 25)
finish
