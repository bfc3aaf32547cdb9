#!/bin/bash
# Device command (issue 13, fifth session of 2026-12-01) on the lent nvidia-h200 (one GPU): the same collector and
# method as collect_h200_20261201_triton5.sh (gpu_job, CUPTI timer, cold L2, 10% re-measured share), training rows
# over the whole box (every earlier Triton training sweep stopped at 16384 per dimension):
#   1. gemm_cublas_wide2 (seed 17): cuBLAS, m to 64k, n/k to 128k, multiples of 8 and unaligned, measured while
#   2. gemm_triton_wide6 (seed 16) compiles in 14 processes: 300 more Triton configs, m/n/k to 65536; then measured.
#   KERNELCAST_GIT_REV=<commit> LIMIT=570 bash benchmarks/results/collect_h200_20261201_wide6.sh
set -u
LIMIT=${LIMIT:-570}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201w6
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "wide6 git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
( timeout $(( $(left) - 150 )) python3 -m kernelcast.collect.precompile --sweeps gemm_triton_wide6 --seed 16 --workers 14 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
log "start cublas2"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_cublas_wide2 --seed 17 --out "$W/cublas2" --gpus 0 \
    --budget-s 200 --chunk 200 > "$W/cublas2.log" 2>&1
log "end cublas2 rc=$?"
tail -n 5 "$W/cublas2.log"
tar czf "$OUT/cublas2.tar.gz" -C "$W" cublas2 cublas2.log
wait $PRE
log "precompile rc=$? $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
B=$(( $(left) - 30 ))
log "start wide6 (budget ${B}s)"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_wide6 --seed 16 --out "$W/wide6" --gpus 0 \
    --budget-s "$B" --chunk 100 --precompile-workers 4 > "$W/wide6.log" 2>&1
log "end wide6 rc=$?"
tail -n 5 "$W/wide6.log"
tar czf "$OUT/wide6.tar.gz" -C "$W" wide6 wide6.log
cp "$W/precompile.jsonl" "$OUT/precompile_wide6.jsonl" 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
