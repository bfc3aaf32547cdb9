#!/bin/bash
# Device command prepared by the nineteenth session (2026-12-05) as its fourth call, NOT RUN: no device could be
# started and the session's device budget ran short. The next session with an H200 runs it first (rename it to
# collect_h200_<date>_s<n>.sh, keep its call log beside it). Issue 14: which SDPA kernel Gemma 4's calls take
# (layer_job --parts sdpa_backend: scale 1.0 against the default, own values against the keys passed as values), then
# a fresh draw of masked-SDPA shapes (--mask-seed 1: a test set for the attention model's mask rows that no shape of the
# first draw is in; collect/masks_merge.py --test maskedtest2). Two files back: masks2_layers.tar.gz, logs.tar.gz.
#   KERNELCAST_GIT_REV=<commit> LIMIT=150 bash benchmarks/results/collect_h200_next_s20.sh
FINISH_LOGS=tar
NAME=kc_s19d source benchmarks/results/device_common.sh
log "start sdpa_backend and sdpa_masks seed 1"
timeout 130 python3 -m kernelcast.collect.layer_job --out "$W/masks2" --parts sdpa_backend,sdpa_masks --mask-seed 1 \
    --mask-shapes 300 --mask-budget-s 70 > "$W/masks2_layers.log" 2>&1
log "end rc=$? $(cat "$W"/masks2/*.jsonl | grep -c .) rows, $(cat "$W"/masks2/*.jsonl | grep -c '"error"') errors"
tar czf "$OUT/masks2_layers.tar.gz" -C "$W" masks2
finish
