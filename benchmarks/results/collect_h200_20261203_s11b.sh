#!/bin/bash
# Device command (issue 13, eleventh session of 2026-12-03) on the lent nvidia-h200: Triton attention's eighth training
# pass (wide8: the seventh pass's box on new shapes over 110 training configs), then the GPU tests on this tree (the
# compiled-resources features included). Same collector and method (gpu_job, CUPTI, cold L2, 10% re-measured).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_20261203_s11b.sh
NAME=kc1203s11b source benchmarks/results/device_common.sh
python3 -m kernelcast.collect.precompile --sweeps triton_attention_wide8 --seed 1032 --workers 15 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure s11b_train triton_attention_wide8 1032 $(budget 200)
gpu_tests
finish
