#!/bin/bash
# The device command of issue 15's fused-kernel data on the lent nvidia-h200 (one GPU, 16 cores): random fusion graphs
# (collect/fusion_graphs.py) and decoder layers compiled by Inductor in 14 worker processes, each task's GPU part
# (autotune, timed compiled and eager calls, CUPTI, cold L2) under one lock (collect/fused_job.py).
# The calls of 2026-12-01 (their logs beside this file):
#   NAME=fused1 GRAPHS=0:3400 BOX=train LAYERS=80 CHOICES=40 LIMIT=560
#   NAME=fused3 GRAPHS=0:1600 BOX=test LIMIT=190; NAME=fused2 GRAPHS=3400:8400 BOX=train LIMIT=370 (one call)
#   NAME=fused4 GRAPHS=0:4200 BOX=aligned LIMIT=380 (stalled after 570 graphs; its rows fetched by a second command)
#   NAME=fused5 GRAPHS=576:4200 BOX=aligned LIMIT=170
# each as: KERNELCAST_GIT_REV=<commit> NAME=... bash benchmarks/results/collect_h200_20261201_fused.sh
# Then, on the dev machine, every call's <NAME>.jsonl.gz together:
#   python -m kernelcast.collect.fused_merge fused1.jsonl.gz ... fused5.jsonl.gz --git-rev <commit>
#   (writes datasets/fused/*.parquet and datasets/compiled/*_tasks.parquet; see datasets/README.md)
set -u
LIMIT=${LIMIT:-300}
NAME=${NAME:-fused}
export PYTHONUNBUFFERED=1
W=.device_out/$NAME
export TRITON_CACHE_DIR=$PWD/$W/triton_cache TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
mkdir -p "$W" "$TRITON_CACHE_DIR" "$TORCHINDUCTOR_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "$NAME git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
B=$(( $(left) - 50 ))
( sleep $(( LIMIT - 25 )); gzip -c "$W/fused.jsonl" > "$OUT/${NAME}.jsonl.gz" ) &  # whatever happens, the rows come back
python3 -m kernelcast.collect.fused_job --out "$W" --graphs "${GRAPHS:-0:40}" --box "${BOX:-train}" \
    --layers "${LAYERS:-0}" --choices "${CHOICES:-0}" --workers "${WORKERS:-14}" --budget-s "$B" --grace-s 30 --stall-s 40 \
    2>&1 | grep -v "Compiled module path" | tee "$W/job.log" | tail -n 60
log "end job"
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
gzip -c "$W/fused.jsonl" > "$OUT/${NAME}.jsonl.gz"
tail -c 200000 "$W/job.log" > "$OUT/${NAME}_job.log"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/${NAME}_call.log"
