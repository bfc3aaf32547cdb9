#!/bin/bash
# Device command (issue 14, fifteenth session of 2026-12-04): (1) torch's element-at-a-time cat as layers launch it —
# the strided-cat training sweep (collect/sweeps/copy_strided.toml, seed 0) and its independent test set
# (copy_strided_test.toml, seed 99, measured in its own pass); (2) a third sealed set of eager decoder layers
# (collect/layer_job.py --models arch3: every model of the earlier sets at five new points and six new architectures),
# read only after every choice of the session. Each job runs under `timeout`; nothing runs in the background.
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261204_s15.sh
NAME=kc1204s15 source benchmarks/results/device_common.sh
measure stridedcat copy_strided 0 200
measure stridedcat_test copy_strided_test 99 110
log "start arch3 layers"
timeout $(budget 30) python3 -m kernelcast.collect.layer_job --out "$W/arch3" --parts layers --models arch3 \
  --budget-s $(budget 45) > "$W/arch3.log" 2>&1
log "end arch3 layers rc=$? $(grep -c . "$W/arch3/layers.jsonl") points, $(grep -c '"error"' "$W/arch3/layers.jsonl") errors"
tar czf "$OUT/arch3_layers.tar.gz" -C "$W" arch3 arch3.log
finish
