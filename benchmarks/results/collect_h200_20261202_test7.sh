#!/bin/bash
# Device command (issue 13, seventh session of 2026-12-02) on the lent nvidia-h200: after the session's last GEMM choice,
# the seventh Triton GEMM test set in its own pass (gemm_triton_test7, seed 1008: 40 fresh configs compiled in 15
# processes first; the GPU tests are left for a later call: this tree held another engineer's half-edited reduction features).
#   KERNELCAST_GIT_REV=<commit> LIMIT=400 bash benchmarks/results/collect_h200_20261202_test7.sh
NAME=kc1202t7 source benchmarks/results/device_common.sh
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test7 --seed 1008 --workers 15 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure test7 gemm_triton_test7 1008 $(budget 30)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
