#!/bin/bash
# Device command (issue 15, sixteenth session of 2026-12-04), second call: a second training pass of compiled decoder
# layers (fused_job --layer-models train2: the 24 non-hybrid architectures at seven more points no compiled test set
# uses), after the first pass (…_s16.sh) cut the compiled layers' kernel error on every test set.
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261204_s16b.sh
NAME=kc1204s16b source benchmarks/results/device_common.sh
export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
log "start compiled train2 layers"
timeout $(( $(budget 60) + 45 )) python3 -m kernelcast.collect.fused_job --out "$W/train2" --layers 1000 \
    --layer-models train2 --workers 8 --budget-s "$(budget 75)" --grace-s 30 --stall-s 60 2>&1 \
    | grep -v "Compiled module path" > "$W/train2.log"
log "end compiled train2: $(grep -c . "$W/train2/fused.jsonl") tasks, $(grep -c '"error"' "$W/train2/fused.jsonl") errors"
gzip -c "$W/train2/fused.jsonl" > "$OUT/train2_fused.jsonl.gz"
tail -c 60000 "$W/train2.log" > "$OUT/train2_fused_job.log"
finish
