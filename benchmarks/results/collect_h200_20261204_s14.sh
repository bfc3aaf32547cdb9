#!/bin/bash
# Device command (issue 14/15, fourteenth session of 2026-12-04) on the lent nvidia-h200: decoder layers of 15
# architectures no constant or model was fitted on (collect/layer_job.py ARCH_MODELS: GPT-2, OPT, Pythia, Falcon,
# StarCoder2, Gemma 2/3, Phi-3, OLMo-2, Granite, GPT-OSS, Qwen1.5-MoE, Phi-3.5-MoE, Qwen3.5 hybrid, Nemotron-H hybrid),
# eager (layer_job: 12 points each, CUPTI device time and span, L2 flushed, host probe beside each repeat) and compiled
# by Inductor (fused_job --layer-models arch: 10 points each, compiled in 14 worker processes).
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261204_s14.sh
NAME=kc1204s14 source benchmarks/results/device_common.sh
export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
log "fast paths: $(python3 -m pip list 2>/dev/null | grep -i -E '^(flash-linear-attention|fla|causal.conv1d|mamba.ssm|kernels) ' | tr '\n' ' ')"
log "start arch layers"
python3 -m kernelcast.collect.layer_job --out "$W/arch" --parts layers --models arch --budget-s 170 > "$W/arch.log" 2>&1
log "end arch layers rc=$? $(grep -c . "$W/arch/layers.jsonl") points, $(grep -c '"error"' "$W/arch/layers.jsonl") errors"
tar czf "$OUT/arch_layers.tar.gz" -C "$W" arch arch.log
B=$(budget 60)
log "start compiled arch layers (budget $B s)"
( sleep $(( B + 40 )); gzip -c "$W/fused/fused.jsonl" > "$OUT/arch_fused.jsonl.gz" ) &
python3 -m kernelcast.collect.fused_job --out "$W/fused" --layers 150 --layer-models arch --workers 14 \
    --budget-s "$B" --grace-s 30 --stall-s 60 2>&1 | grep -v "Compiled module path" > "$W/fused.log"
log "end compiled rc=$? $(grep -c . "$W/fused/fused.jsonl") tasks, $(grep -c '"error"' "$W/fused/fused.jsonl") errors"
gzip -c "$W/fused/fused.jsonl" > "$OUT/arch_fused.jsonl.gz"
tail -c 100000 "$W/fused.log" > "$OUT/arch_fused_job.log"
finish
