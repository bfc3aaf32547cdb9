#!/bin/bash
# Device command (issue 15, sixteenth session of 2026-12-04), fourth call: a third training pass of compiled decoder
# layers (fused_job --layer-models train3: the 24 non-hybrid architectures at seven more points no compiled test set
# uses), after the first two (…_s16.sh, …_s16b.sh).
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261204_s16d.sh
NAME=kc1204s16d source benchmarks/results/device_common.sh
export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
log "start compiled train3 layers"
timeout $(( $(budget 60) + 45 )) python3 -m kernelcast.collect.fused_job --out "$W/train3" --layers 1000 \
    --layer-models train3 --workers 8 --budget-s "$(budget 75)" --grace-s 30 --stall-s 60 2>&1 \
    | grep -v "Compiled module path" > "$W/train3.log"
log "end compiled train3: $(grep -c . "$W/train3/fused.jsonl") tasks, $(grep -c '"error"' "$W/train3/fused.jsonl") errors"
gzip -c "$W/train3/fused.jsonl" > "$OUT/train3_fused.jsonl.gz"
tail -c 60000 "$W/train3.log" > "$OUT/train3_fused_job.log"
finish
