#!/bin/bash
# Device command (issue 13, fifth session of 2026-12-01) on the lent nvidia-h200 (one GPU): the same collector and
# method as collect_h200_20261201_triton3.sh (gpu_job, CUPTI timer, cold L2, 10% re-measured share):
#   1. gemm_triton_test3 (seed 1003): the third independent Triton GEMM test set, 40 fresh configs, its own pass
#      first; measured after the register-pressure features were chosen, never trained or tuned on;
#   2. gemm_triton_wide5 (seed 15): training rows over 300 more configs, aligned and ragged shapes.
# Compile classes in 15 processes first (test3's, then wide5's while test3 measures), then the GPU measures.
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261201_triton5.sh
# Then, on the dev machine: tar xzf <files_at>/{test3,wide5}.tar.gz -C <dir> && kernelcast collect merge --in <dir>/test3 ...
set -u
LIMIT=${LIMIT:-570}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201t5
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "triton5 git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test3 --seed 1003 --workers 15 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
( timeout $(( $(left) - 140 )) python3 -m kernelcast.collect.precompile --sweeps gemm_triton_wide5 --seed 15 --workers 13 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
log "start test3"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_test3 --seed 1003 --out "$W/test3" --gpus 0 \
    --budget-s 150 --chunk 100 --precompile-workers 1 > "$W/test3.log" 2>&1
log "end test3 rc=$?"
tail -n 5 "$W/test3.log"
tar czf "$OUT/test3.tar.gz" -C "$W" test3 test3.log
wait $PRE
log "precompile rc=$? $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
B=$(( $(left) - 30 ))
log "start wide5 (budget ${B}s)"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_wide5 --seed 15 --out "$W/wide5" --gpus 0 \
    --budget-s "$B" --chunk 100 --precompile-workers 4 > "$W/wide5.log" 2>&1
log "end wide5 rc=$?"
tail -n 5 "$W/wide5.log"
tar czf "$OUT/wide5.tar.gz" -C "$W" wide5 wide5.log
cp "$W/precompile.jsonl" "$OUT/precompile_triton5.jsonl" 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
