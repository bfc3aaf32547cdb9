#!/bin/bash
# Device command (issue 13, sixth session of 2026-12-01) on the lent nvidia-h200's CPUs (nothing runs on the GPU):
# Triton 3.6's compile facts (shared memory, registers, stack per kernel) for every compile class of the measured
# Triton attention rows (collect/compile_facts.py; resumable), in 15 processes, for a fitted attention register model
# as the GEMM's was fitted.
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261201_attnfacts.sh
set -u
LIMIT=${LIMIT:-560}
W=.device_out/kc1201af
mkdir -p "$W"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "attnfacts git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import triton; print(triton.__version__)')"
timeout $(( $(left) - 20 )) python3 -m kernelcast.collect.compile_facts --datasets datasets/attention --backend triton \
    --gpu H200 --workers 15 --out "$W/facts_attention.jsonl" 2> "$W/facts.err"
log "facts rc=$? $(wc -l < "$W/facts_attention.jsonl") classes"
gzip -c "$W/facts_attention.jsonl" > "$OUT/facts_attention.jsonl.gz"
tail -c 3000 "$W/facts.err" > "$OUT/facts.err"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
