#!/bin/bash
# Device command (issue 13, fourth session of 2026-12-01) on the lent nvidia-h200 (one GPU): the same collector and
# method as collect_h200_20261201_triton3.sh: gemm_triton_wide4 (seed 14), training rows with ragged k over 300 more
# configs. Compile classes first in 15 processes (3,512 classes), then the GPU measures.
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261201_triton4.sh
set -u
LIMIT=${LIMIT:-560}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201t4
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "triton4 git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
timeout $(( $(left) - 200 )) python3 -m kernelcast.collect.precompile --sweeps gemm_triton_wide4 --seed 14 --workers 15 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
log "precompile rc=$? $(grep -c '"compile"' "$W/precompile.jsonl") classes: $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
B=$(( $(left) - 40 ))
log "start wide4 (budget ${B}s)"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_wide4 --seed 14 --out "$W/wide4" --gpus 0 \
    --budget-s "$B" --chunk 100 --precompile-workers 4 > "$W/wide4.log" 2>&1
log "end wide4 rc=$?"
tail -n 5 "$W/wide4.log"
tar czf "$OUT/wide4.tar.gz" -C "$W" wide4 wide4.log
cp "$W/precompile.jsonl" "$OUT/precompile_triton4.jsonl" 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
