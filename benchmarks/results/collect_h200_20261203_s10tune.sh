#!/bin/bash
# Third device command of the tenth session (issue 16) on the lent nvidia-h200: a second Triton attention
# config-search set (triton_attention_tune2: 40 fresh shapes x the first set's 30 configs, every pair measured), after
# the session's attention retrain, to check its worse top-1 regret on the first set's 20 shapes. Same collector.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261203_s10tune.sh
NAME=kc1203s10t source benchmarks/results/device_common.sh
python3 -m kernelcast.collect.precompile --sweeps triton_attention_tune2 --seed 1024 --workers 15 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure attn_tune2 triton_attention_tune2 1024 $(budget 20)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
