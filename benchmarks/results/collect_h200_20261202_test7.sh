#!/bin/bash
# Device command (issue 13, seventh session of 2026-12-02) on the lent nvidia-h200: after the session's last GEMM choice,
# the seventh Triton GEMM test set in its own pass (gemm_triton_test7, seed 1008: 40 fresh configs compiled in 15
# processes while the GPU tests of this tree run), then nothing else.
#   KERNELCAST_GIT_REV=<commit> LIMIT=400 bash benchmarks/results/collect_h200_20261202_test7.sh
NAME=kc1202t7 source benchmarks/results/device_common.sh
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test7 --seed 1008 --workers 15 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
log "gpu tests"
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_workloads.py > "$W/gpu_tests.log" 2>&1
log "gpu tests rc=$? $(tail -n 1 "$W/gpu_tests.log")"
cp "$W/gpu_tests.log" "$OUT/"
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure test7 gemm_triton_test7 1008 $(budget 30)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
