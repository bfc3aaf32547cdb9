#!/bin/bash
# Device command (issue 14, fifteenth session of 2026-12-04), fifth call: a fourth sealed set of eager decoder layers
# (collect/layer_job.py --models arch4: the 33 architectures of arch3 at five new points), measured after every choice
# the third set informed, read once.
#   KERNELCAST_GIT_REV=<commit> LIMIT=240 bash benchmarks/results/collect_h200_20261204_s15e.sh
NAME=kc1204s15e source benchmarks/results/device_common.sh
log "start arch4 layers"
timeout $(budget 30) python3 -m kernelcast.collect.layer_job --out "$W/arch4" --parts layers --models arch4 \
  --budget-s $(budget 45) > "$W/arch4.log" 2>&1
log "end arch4 layers rc=$? $(grep -c . "$W/arch4/layers.jsonl") points, $(grep -c '"error"' "$W/arch4/layers.jsonl") errors"
tar czf "$OUT/arch4_layers.tar.gz" -C "$W" arch4 arch4.log
finish
