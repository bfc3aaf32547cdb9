#!/bin/bash
# Device command (issue 15, sixteenth session of 2026-12-04): compiled decoder layers as training data for the fused
# model, and a third sealed compiled set measured first, before anything trains on them (collect/fused_job.py
# LAYER_SETS): `arch3` = six architectures no compiled set held (GPT-J, StableLM, Command-R, OLMoE, Phi-1.5,
# StarCoder) and DeepSeek-V3 TP8 at the ten first points, and every trained architecture at two points of its own;
# `train` = the 24 non-hybrid architectures of the compiled sets at seven points no compiled test set uses.
# 8 compile workers (14 ran the largest MoE layers out of memory).
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261204_s16.sh
NAME=kc1204s16 source benchmarks/results/device_common.sh
export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
compiled() {  # compiled <layer set> <budget s>
  log "start compiled $1 layers (budget $2 s)"
  timeout $(( $2 + 45 )) python3 -m kernelcast.collect.fused_job --out "$W/$1" --layers 1000 --layer-models "$1" \
      --workers 8 --budget-s "$2" --grace-s 30 --stall-s 60 2>&1 | grep -v "Compiled module path" > "$W/$1.log"
  log "end compiled $1: $(grep -c . "$W/$1/fused.jsonl") tasks, $(grep -c '"error"' "$W/$1/fused.jsonl") errors"
  gzip -c "$W/$1/fused.jsonl" > "$OUT/$1_fused.jsonl.gz"
  tail -c 60000 "$W/$1.log" > "$OUT/$1_fused_job.log"
}
compiled arch3 170
compiled train $(budget 75)
finish
