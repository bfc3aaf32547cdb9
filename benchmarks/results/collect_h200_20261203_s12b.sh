#!/bin/bash
# Device command (issues 14 and 15, twelfth session of 2026-12-03) on the lent nvidia-h200, after the in-call rows:
# (1) more fused kernels: random fusion graphs of the training box, seeds 8400-13999 (the first calls stopped at 8400),
# compiled by Inductor in 14 workers, each task's GPU part under one lock (collect/fused_job.py, CUPTI, cold L2);
# (2) a fourth reduction pass: the three training passes' boxes (reduction_wide, _wide2, _wide3) drawn again with a new
# seed (1040), as many as the budget allows (the plan is shuffled); (3) the GPU tests.
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261203_s12b.sh
NAME=kc1203s12b source benchmarks/results/device_common.sh
export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
mkdir -p "$TORCHINDUCTOR_CACHE_DIR"
log "start fused 8400:14000"
python3 -m kernelcast.collect.fused_job --out "$W/fused" --graphs 8400:14000 --box train --workers 14 \
  --budget-s $(budget 250) --grace-s 30 --stall-s 40 2>&1 | grep -v "Compiled module path" > "$W/fused_job.log"
log "end fused $(tail -n 1 "$W/fused_job.log")"
gzip -c "$W/fused/fused.jsonl" > "$OUT/fused_s12b.jsonl.gz"
measure s12b_red reduction_wide,reduction_wide2,reduction_wide3 1040 $(budget 60)
gpu_tests
finish
