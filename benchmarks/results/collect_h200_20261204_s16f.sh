#!/bin/bash
# Device command (issue 15, sixteenth session of 2026-12-04), sixth call: Qwen3.5's hybrid layers at the training points
# compiled by Inductor (fused_job --layer-models hybridtrain: Qwen3.5-27B and 35B-A3B at the fourteen
# training points of the other architectures), after the fifth call showed the GNN 2-4x over on their decode
# (a recurrent-state update no training kernel resembled). Trained on.
#   KERNELCAST_GIT_REV=<commit> LIMIT=290 bash benchmarks/results/collect_h200_20261204_s16f.sh
NAME=kc1204s16f source benchmarks/results/device_common.sh
export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
log "start compiled hybridtrain layers"
timeout $(( $(budget 60) + 45 )) python3 -m kernelcast.collect.fused_job --out "$W/hybridtrain" --layers 1000 \
    --layer-models hybridtrain --workers 4 --budget-s "$(budget 75)" --grace-s 30 --stall-s 60 2>&1 \
    | grep -v "Compiled module path" > "$W/hybridtrain.log"
log "end compiled hybridtrain: $(grep -c . "$W/hybridtrain/fused.jsonl") tasks, $(grep -c '"error"' "$W/hybridtrain/fused.jsonl") errors"
gzip -c "$W/hybridtrain/fused.jsonl" > "$OUT/hybridtrain_fused.jsonl.gz"
tail -c 60000 "$W/hybridtrain.log" > "$OUT/hybridtrain_fused_job.log"
finish
