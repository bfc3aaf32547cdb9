#!/bin/bash
# Device command (issue 13, fifth session of 2026-12-01): resumes gemm_triton_wide6 (seed 16) from the first call's
# output folder (.device_out/kc1201w6/wide6, carried back to the device: its plan and rows; gpu_job measures only what
# is left). The first call (collect_h200_20261201_wide6.sh) lost most of its budget to 6 configs whose split-K
# reduction addressed past 2**31 elements in int32 (cuda_fatal, 17 worker restarts); the reduction kernel now
# addresses the workspace in int64 (collect/kernels/triton_gemm.py).
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261201_wide6b.sh
set -u
LIMIT=${LIMIT:-560}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201w6
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call2.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "wide6b git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))') rows carried: $(ls $W/wide6/gemm | wc -l) files"
timeout $(( $(left) - 200 )) python3 -m kernelcast.collect.precompile --sweeps gemm_triton_wide6 --seed 16 --workers 15 \
    --log "$W/precompile2.jsonl" 2>> "$W/precompile2.err"
log "precompile rc=$? $(grep precompile_done "$W/precompile2.jsonl" | tr '\n' ' ')"
B=$(( $(left) - 25 ))
log "resume wide6 (budget ${B}s)"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_wide6 --seed 16 --out "$W/wide6" --gpus 0 \
    --budget-s "$B" --chunk 100 --precompile-workers 4 > "$W/wide6b.log" 2>&1
log "end wide6 rc=$?"
tail -n 5 "$W/wide6b.log"
tar czf "$OUT/wide6b.tar.gz" -C "$W" wide6 wide6b.log
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call2.log"
log "done, $(left)s left"
cp "$W/call2.log" "$OUT/" 2>/dev/null
