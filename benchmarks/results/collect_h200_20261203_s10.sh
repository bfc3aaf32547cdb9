#!/bin/bash
# Device command (issues 13 and 14, tenth session of 2026-12-03) on the lent nvidia-h200. Sealed first: a fourth
# flash/cuDNN test set (attention_test4), a sixth Triton attention set (triton_attention_test6: 12 configs no training
# pool holds) and a fifth MoE set (moe_test5: 12 fresh configs), in their own pass, read once after every choice of
# the session. Then the 96 eager decoder layers again, each repeat now beside a host-speed probe (layer_job's
# host_probe), and training passes: MoE wide7 (160 more configs), Triton attention wide6's box on new shapes (seed
# 1021), cuDNN's wide pass on new shapes. Test classes compile first (15 processes), training classes while the GPU
# measures. Same collector and method (gpu_job, CUPTI, cold L2, 10% re-measured).
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261203_s10.sh
NAME=kc1203s10 source benchmarks/results/device_common.sh
python3 -m kernelcast.collect.precompile --sweeps triton_attention_test6,moe_test5 --seed 1020 --workers 15 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
( python3 -m kernelcast.collect.precompile --sweeps moe_wide7,triton_attention_wide6 --seed 1021 --workers 14 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
measure s10_test attention_test4,triton_attention_test6,moe_test5 1020 150
log "start layers"
python3 -m kernelcast.collect.layer_job --out "$W/layers" --parts layers --budget-s 110 > "$W/layers.log" 2>&1
log "end layers rc=$? $(grep -c . "$W/layers/layers.jsonl") points"
tar czf "$OUT/layers3.tar.gz" -C "$W" layers layers.log
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure s10_train moe_wide7,triton_attention_wide6,attention_cudnn_wide 1021 $(budget 15)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
