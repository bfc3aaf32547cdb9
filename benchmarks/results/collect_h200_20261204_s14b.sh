#!/bin/bash
# Device command (issue 14, fourteenth session of 2026-12-04), second call: a sealed set of eager decoder layers
# measured after every choice the first call's layers informed (the strided cat, SDPA's math backend, the new
# lowerings): collect/layer_job.py --models arch2 — the first call's 15 architectures at six other points and five
# more architectures (Qwen3.5-MoE, MiniMax-M2.5, MiMo-V2-Flash, GPT-OSS-120B, Nemotron-3-Super). Read once.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261204_s14b.sh
NAME=kc1204s14b source benchmarks/results/device_common.sh
log "start arch2 layers"
python3 -m kernelcast.collect.layer_job --out "$W/arch2" --parts layers --models arch2 --budget-s 200 > "$W/arch2.log" 2>&1
log "end arch2 layers rc=$? $(grep -c . "$W/arch2/layers.jsonl") points, $(grep -c '"error"' "$W/arch2/layers.jsonl") errors"
tar czf "$OUT/arch2_layers.tar.gz" -C "$W" arch2 arch2.log
finish
