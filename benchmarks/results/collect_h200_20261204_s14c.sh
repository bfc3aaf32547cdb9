#!/bin/bash
# Device command (issue 15, fourteenth session of 2026-12-04), third call: the sealed second set's layers compiled by
# Inductor (fused_job --layer-models arch2: layer_job.ARCH2_MODELS at its six points), measured after the compile-mode
# fixes the first set's compiled layers informed; 8 compile workers (14 ran the largest MoE layers out of memory).
# The job runs under `timeout` (the first call's background guard held the machine to its limit).
#   KERNELCAST_GIT_REV=<commit> LIMIT=420 bash benchmarks/results/collect_h200_20261204_s14c.sh
NAME=kc1204s14c source benchmarks/results/device_common.sh
export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
B=$(budget 70)
log "start compiled arch2 layers (budget $B s)"
timeout $(( B + 50 )) python3 -m kernelcast.collect.fused_job --out "$W/fused" --layers 120 --layer-models arch2 \
    --workers 8 --budget-s "$B" --grace-s 30 --stall-s 60 2>&1 | grep -v "Compiled module path" > "$W/fused.log"
log "end compiled $(grep -c . "$W/fused/fused.jsonl") tasks, $(grep -c '"error"' "$W/fused/fused.jsonl") errors"
gzip -c "$W/fused/fused.jsonl" > "$OUT/arch2_fused.jsonl.gz"
tail -c 100000 "$W/fused.log" > "$OUT/arch2_fused_job.log"
finish
