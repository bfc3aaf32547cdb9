#!/bin/bash
# Device command (issues 13, 14, seventh session of 2026-12-02) on the lent nvidia-h200, after the session's last
# choices: the fourth Triton attention test set in its own pass (triton_attention_test4, seed 1009: 12 fresh configs
# compiled in 15 processes while the GPU tests of this tree run), then nothing else.
#   KERNELCAST_GIT_REV=<commit> LIMIT=400 bash benchmarks/results/collect_h200_20261202_test8.sh
NAME=kc1202t8 source benchmarks/results/device_common.sh
( python3 -m kernelcast.collect.precompile --sweeps triton_attention_test4 --seed 1009 --workers 15 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
log "gpu tests"
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_workloads.py > "$W/gpu_tests.log" 2>&1
log "gpu tests rc=$? $(tail -n 1 "$W/gpu_tests.log")"
cp "$W/gpu_tests.log" "$OUT/"
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure attn_test4 triton_attention_test4 1009 $(budget 30)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
