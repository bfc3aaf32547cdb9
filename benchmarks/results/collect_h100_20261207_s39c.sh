#!/bin/bash
# The thirty-ninth session's warm follow-up of collect_h100_20261207_s39b.sh (same H100, the device time left): Triton
# attention over wide pass 8's box and its 110-config pool, a further draw (seed 1391); 4,800 of its 5,757 planned rows
# in 249 s.
#   LIMIT=280 bash benchmarks/results/collect_h100_20261207_s39c.sh
FINISH_LOGS=tar
NAME=kc_s39b source benchmarks/results/device_common.sh
measure tritonatt9 triton_attention_wide8 1391 $(budget 25)
finish
