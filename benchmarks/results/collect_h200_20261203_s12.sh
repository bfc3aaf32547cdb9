#!/bin/bash
# Device command (issues 14 and 15, twelfth session of 2026-12-03) on the lent nvidia-h200: every kernel of random
# fusion graphs run eagerly, timed in place (collect/eager_job.py: L2 flushed before each call, CUPTI, 10 repeats) on
# the training box (seeds 0-15999) and the aligned box (seeds 0-3999) — never the test box — then the GPU tests.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_20261203_s12.sh
NAME=kc1203s12 source benchmarks/results/device_common.sh
eager() {
  log "start eager $1 $2 (budget $3 s)"
  python3 -m kernelcast.collect.eager_job --out "$W/eager" --box "$1" --graphs "$2" --budget-s "$3" \
    >> "$W/eager.log" 2>&1
  log "end eager $1 rc=$? $(tail -n 1 "$W/eager.log")"
}
eager train 0:16000 $(budget 260)
eager aligned 0:4000 $(budget 110)
gzip -c "$W/eager/eager.jsonl" > "$OUT/eager.jsonl.gz"; cp "$W/eager.log" "$OUT/"
gpu_tests
finish
