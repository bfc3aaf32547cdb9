#!/bin/bash
# Device command (issues 14 and 15, twelfth session of 2026-12-03) on the lent nvidia-h200: an independent test set for
# eager kernels inside their call — random fusion graphs of the TEST box, seeds 1600-5599 (the compiled test set holds
# seeds 0-1599), run eagerly and every kernel timed in place (collect/eager_job.py, same method as s12). Never trained
# or tuned on: datasets/files.toml role "test".
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261203_s12c.sh
NAME=kc1203s12c source benchmarks/results/device_common.sh
log "start eager test 1600:5600"
python3 -m kernelcast.collect.eager_job --out "$W/eager" --box test --graphs 1600:5600 --batch 32 \
  --budget-s $(budget 60) > "$W/eager.log" 2>&1
log "end eager test rc=$? $(tail -n 1 "$W/eager.log")"
gzip -c "$W/eager/eager.jsonl" > "$OUT/eager_test.jsonl.gz"; cp "$W/eager.log" "$OUT/"
finish
