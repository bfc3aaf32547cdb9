#!/bin/bash
# Device command (issue 13, end of the fifth session of 2026-12-01) on the lent nvidia-h200 (one GPU): the same
# collector and method as collect_h200_20261201_triton5.sh (gpu_job, CUPTI timer, cold L2, 10% re-measured share):
# gemm_triton_test4 (seed 1004), the fourth independent Triton GEMM test set, 40 fresh configs, in its own pass,
# after every choice of the session. The tracked tree (86.5 MB) is over the device call's 64 MiB copy: this call ran
# with predictors/models/gemm.ubj.gz and gemm.forest.npz moved out of the working tree (the collector needs no
# learned model) and put back after it.
#   KERNELCAST_GIT_REV=<commit> LIMIT=200 bash benchmarks/results/collect_h200_20261201_test4.sh
set -u
LIMIT=${LIMIT:-200}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201t6
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "test4 git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
timeout $(( $(left) - 90 )) python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test4 --seed 1004 --workers 15 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
log "precompile rc=$? $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
B=$(( $(left) - 15 ))
log "start test4 (budget ${B}s)"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_test4 --seed 1004 --out "$W/test4" --gpus 0 \
    --budget-s "$B" --chunk 100 --precompile-workers 4 > "$W/test4.log" 2>&1
log "end test4 rc=$?"
tail -n 5 "$W/test4.log"
tar czf "$OUT/test4.tar.gz" -C "$W" test4 test4.log
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
