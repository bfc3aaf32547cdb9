#!/bin/bash
# Device command (issue 14, fifteenth session of 2026-12-04), second call: (1) contiguous cats over the whole size
# range (collect/sweeps/copy_cat_wide.toml, seed 0: the strided cats of the first call reach down to 64 elements, the
# earlier contiguous ones start at 196,608); (2) the third sealed layer set's points the first call lost: GPT-J's
# position table overran at 3,000 positions (a device-side assert that ended the job; layers.layer_call now refuses
# such points), so GPT-J and the five architectures after it are measured here, resuming from the first call's file
# (carried as .device_seed/arch3_layers.jsonl, GPT-J's failed rows left out).
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261204_s15b.sh
NAME=kc1204s15b source benchmarks/results/device_common.sh
measure copycat copy_cat_wide 0 90
mkdir -p "$W/arch3" && cp .device_seed/arch3_layers.jsonl "$W/arch3/layers.jsonl"
log "start arch3 layers (resuming $(grep -c . "$W/arch3/layers.jsonl") points)"
timeout $(budget 30) python3 -m kernelcast.collect.layer_job --out "$W/arch3" --parts layers --models arch3 \
  --budget-s $(budget 45) > "$W/arch3.log" 2>&1
log "end arch3 layers rc=$? $(grep -c . "$W/arch3/layers.jsonl") points, $(grep -c '"error"' "$W/arch3/layers.jsonl") errors"
tar czf "$OUT/arch3_layers.tar.gz" -C "$W" arch3 arch3.log
finish
