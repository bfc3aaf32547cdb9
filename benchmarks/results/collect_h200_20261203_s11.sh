#!/bin/bash
# Device command (issue 13, eleventh session of 2026-12-03) on the lent nvidia-h200. Sealed first: a seventh Triton
# attention test set (triton_attention_test7: 12 configs no training pool holds, fresh shapes), in its own pass, read
# once after every choice of the session. Beside it on the host's CPUs: Triton 3.6's compile facts (registers, stack
# frame) for every key of the Triton attention table space (features.compiled.SPACE: 192 configs x dtype x head_dim
# x causal), the serving table features/compiled/triton_attention_sm90.csv. Then a training pass (wide7: new shapes,
# larger prefill kernels, 96 training configs). Same collector and method (gpu_job, CUPTI, cold L2, 10% re-measured).
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261203_s11.sh
NAME=kc1203s11 source benchmarks/results/device_common.sh
python3 -m kernelcast.collect.precompile --sweeps triton_attention_test7 --seed 1030 --workers 15 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
mkdir -p "$W/facts"
timeout 470 python3 -m kernelcast.collect.compile_facts --space triton_attention --gpu H200 --workers 8 \
  --out "$W/facts/attention_space.jsonl" --table "$W/facts/triton_attention_space_h200.parquet" \
  --serving "$W/facts" --json > "$W/facts.log" 2> "$W/facts.err" &
FACTS=$!
python3 -m kernelcast.collect.precompile --sweeps triton_attention_wide7 --seed 1031 --workers 6 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err" &
PRE=$!
measure s11_test triton_attention_test7 1030 120
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure s11_train triton_attention_wide7 1031 $(budget 90)
wait $FACTS
log "facts $(cat "$W/facts.log") $(tail -c 300 "$W/facts.err" | tr '\r\n' '  ')"
tar czf "$OUT/facts.tar.gz" -C "$W" facts facts.log facts.err
finish
