#!/bin/bash
# Device command (issue 15, nineteenth session of 2026-12-05), second call: Qwen3.5's compiled hybrid layers at the
# training points (fused_job --layer-models hybridtrain; the sixteenth session's pass stalled at --stall-s 60 with 4
# workers: 2 workers and 300 s here), the rest of collect_h200_20261205_s19.sh. Two files back:
# hybridtrain_fused.jsonl.gz, logs.tar.gz.
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261205_s19b.sh
FINISH_LOGS=tar
NAME=kc_s19b source benchmarks/results/device_common.sh
compiled hybridtrain hybridtrain 30 2 300
finish
