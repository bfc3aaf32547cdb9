#!/bin/bash
# Device command (issue 13, sixth session of 2026-12-01) on the lent nvidia-h200 (one GPU): the same collector and
# method as collect_h200_20261201_wide6.sh (gpu_job, CUPTI timer, cold L2, 10% re-measured share):
#   1. test2: triton_attention_test2 + moe_test2 (seed 1005), the second independent test sets (12 fresh configs
#      each, drawn clear of every training pool), in their own pass, measured while
#   2. triton_attention_wide3 + moe_wide3 (seed 21) compile in 14 processes: 96 and 120 more configs; then measured.
# The tracked tree (86.5 MB) is over the device call's 64 MiB copy: this call ran with predictors/models/gemm.ubj.gz
# and gemm.forest.npz moved out of the working tree (the collector needs no learned model) and put back after it.
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261201_attnmoe3.sh
set -u
LIMIT=${LIMIT:-570}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201am3
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "attnmoe3 git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
python3 -m kernelcast.collect.precompile --sweeps triton_attention_test2,moe_test2 --seed 1005 --workers 15 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
log "precompile test2 rc=$?"
( timeout $(( $(left) - 120 )) python3 -m kernelcast.collect.precompile --sweeps moe_wide3,triton_attention_wide3 --seed 21 \
    --workers 14 --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
log "start test2"
python3 -m kernelcast.collect.gpu_job --sweeps triton_attention_test2,moe_test2 --seed 1005 --out "$W/test2" --gpus 0 \
    --budget-s 120 --chunk 100 > "$W/test2.log" 2>&1
log "end test2 rc=$?"
tail -n 5 "$W/test2.log"
tar czf "$OUT/test2.tar.gz" -C "$W" test2 test2.log
wait $PRE
log "precompile rc=$? $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
B=$(( $(left) - 30 ))
log "start wide3 (budget ${B}s)"
python3 -m kernelcast.collect.gpu_job --sweeps moe_wide3,triton_attention_wide3 --seed 21 --out "$W/wide3" --gpus 0 \
    --budget-s "$B" --chunk 100 --precompile-workers 4 > "$W/wide3.log" 2>&1
log "end wide3 rc=$?"
tail -n 5 "$W/wide3.log"
tar czf "$OUT/wide3.tar.gz" -C "$W" wide3 wide3.log
cp "$W/precompile.jsonl" "$OUT/precompile_attnmoe3.jsonl" 2>/dev/null
tail -c 20000 "$W/precompile.err" > "$OUT/precompile_attnmoe3.err" 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
