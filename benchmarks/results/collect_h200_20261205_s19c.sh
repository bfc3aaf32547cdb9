#!/bin/bash
# Device command (issues 14, 15, nineteenth session of 2026-12-05), third call: (1) GLM-5's and DeepSeek-V3.2's decode
# layers again — the first call's four failed on the second call of each: the decode cache held no indexer keys
# (features/layers.py EXTRA_CACHES), the rest of the fifth set's rows are seeded from that call and skipped; (2) more
# random sdpa_masks shapes (300, 90 s, the first call's 108 skipped); (3) the fifth set's architectures compiled
# (fused_job --layer-models arch5: a fourth sealed compiled set). Three files back: arch5_layers.tar.gz,
# arch5c_fused.jsonl.gz, logs.tar.gz.
#   KERNELCAST_GIT_REV=<commit> LIMIT=450 bash benchmarks/results/collect_h200_20261205_s19c.sh
FINISH_LOGS=tar
NAME=kc_s19c source benchmarks/results/device_common.sh
mkdir -p "$W/arch5" && cp benchmarks/results/s19c_seed/*.jsonl "$W/arch5/"
log "start layers arch5 again (seeded with $(grep -c . "$W/arch5/layers.jsonl") layer rows)"
timeout 300 python3 -m kernelcast.collect.layer_job --out "$W/arch5" --parts sdpa_masks,layers --models arch5 \
    --budget-s 100 --mask-shapes 300 --mask-budget-s 90 > "$W/arch5_layers.log" 2>&1
log "end layers arch5 rc=$? $(grep -c . "$W/arch5/layers.jsonl") layer rows, $(grep -c . "$W/arch5/sdpa_masks.jsonl") mask rows, $(cat "$W"/arch5/*.jsonl | grep -c '"error"') errors"
tar czf "$OUT/arch5_layers.tar.gz" -C "$W" arch5
compiled arch5c arch5 20 8 120
finish
