#!/bin/bash
# Device command (issue 15, sixteenth session of 2026-12-04), fifth call: the hybrid linear-attention and Mamba layers
# compiled by Inductor (fused_job --layer-models hybrid: Qwen3.5-27B, Qwen3.5-35B-A3B, Nemotron-3 Nano and Super at the
# ten first points), once features.layers.functional_layer took every cache state (conv and recurrent states too) as an
# input: before it their compile failed on the GPU's trace. A test set: nothing trains on it.
#   KERNELCAST_GIT_REV=<commit> LIMIT=420 bash benchmarks/results/collect_h200_20261204_s16e.sh
NAME=kc1204s16e source benchmarks/results/device_common.sh
export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
log "start compiled hybrid layers"
timeout $(( $(budget 60) + 45 )) python3 -m kernelcast.collect.fused_job --out "$W/hybrid" --layers 1000 \
    --layer-models hybrid --workers 6 --budget-s "$(budget 75)" --grace-s 30 --stall-s 60 2>&1 \
    | grep -v "Compiled module path" > "$W/hybrid.log"
log "end compiled hybrid: $(grep -c . "$W/hybrid/fused.jsonl") tasks, $(grep -c '"error"' "$W/hybrid/fused.jsonl") errors"
gzip -c "$W/hybrid/fused.jsonl" > "$OUT/hybrid_fused.jsonl.gz"
tail -c 60000 "$W/hybrid.log" > "$OUT/hybrid_fused_job.log"
finish
