#!/bin/bash
# Third eager-workload device call (issue 14): torch._grouped_mm, the MoE experts GEMM of transformers 5.x, which
# the layer measurements showed running 1.4x slower than a cuBLAS bmm of the same groups at decode sizes.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261201_grouped.sh
set -u
LIMIT=${LIMIT:-300}
export PYTHONUNBUFFERED=1
W=.device_out/kc1201grouped
mkdir -p "$W"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "grouped git_rev=${KERNELCAST_GIT_REV:-?}"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_grouped_wide --seed 0 --out "$W/train" --gpus 0 --budget-s $(( $(left) - 90 )) --chunk 100 > "$W/train.log" 2>&1
log "end train rc=$?"; tail -n 8 "$W/train.log"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_grouped_test --seed 99 --out "$W/test" --gpus 0 --budget-s $(( $(left) - 20 )) --chunk 100 > "$W/test.log" 2>&1
log "end test rc=$?"; tail -n 8 "$W/test.log"
tar czf "$OUT/grouped.tar.gz" -C "$W" train test train.log test.log
log "done, $(left)s left"; cp "$W/call.log" "$OUT/"
