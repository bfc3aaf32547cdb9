#!/bin/bash
# The exact device command of the 2026-12-01 top-up collection (issue 13) on the lent nvidia-h200 (one GPU),
# after collect_h200_20261201_run.sh: one call, same collector and method (gpu_job, CUPTI timer, cold L2,
# 10% re-measured share, Triton configs precompiled in 13 processes), new seed 12, training sweeps only:
#   KERNELCAST_GIT_REV=<commit> LIMIT=420 bash benchmarks/results/collect_h200_20261201_topup.sh
# Passes: topupA = gemm_cublas_wide + attention_wide2 (flash/cuDNN) while the Triton configs of
# gemm_triton_wide2 (fresh pool, pool_seed 302), triton_attention_wide2 and moe_wide2 compile on the CPUs;
# topupB = those three Triton sweeps. Each pass is packed into $OUT/<pass>.tar.gz as soon as it ends.
set -u
LIMIT=${LIMIT:-420}                      # seconds this call may take, packing included
SEED=${SEED:-12}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201topup
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "topup git_rev=${KERNELCAST_GIT_REV:-?} seed $SEED $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"

precompile() {  # seed sweeps...: fill the Triton cache in 13 processes
  local seed=$1; shift
  for s in "$@"; do
    python3 -m kernelcast.collect.precompile --sweeps "$s" --seed "$seed" --workers 13 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
  done
}

job() {  # name sweeps seed budget_s [gpu_job args]: one gpu_job pass (resumes when $W/name exists)
  local name=$1 sweeps=$2 seed=$3 budget=$4; shift 4
  local b=$(( $(left) - 25 ))
  [ "$b" -gt "$budget" ] && b=$budget
  if [ "$b" -lt 15 ]; then log "skip $name: ${b}s left"; return; fi
  log "start $name ($sweeps seed $seed, budget ${b}s)"
  python3 -m kernelcast.collect.gpu_job --sweeps "$sweeps" --seed "$seed" --out "$W/$name" --gpus 0 \
      --budget-s "$b" --chunk 100 "$@" > "$W/$name.log" 2>&1
  log "end $name rc=$?"
  tail -n 30 "$W/$name.log"
}

pack() { for p in "$@"; do [ -d "$W/$p" ] && tar czf "$OUT/$p.tar.gz" -C "$W" "$p" "$p.log"; done; }

( precompile "$SEED" gemm_triton_wide2 triton_attention_wide2 moe_wide2 ) &
job topupA gemm_cublas_wide,attention_wide2 "$SEED" 175
pack topupA
log "precompile so far: $(grep -c '"compile' "$W/precompile.jsonl" 2>/dev/null) lines; $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
job topupB gemm_triton_wide2,triton_attention_wide2,moe_wide2 "$SEED" 260 --precompile-workers 2
pack topupB
log "precompile: $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
cp "$W/precompile.jsonl" "$OUT/precompile_topup.jsonl" 2>/dev/null
tail -c 20000 "$W/precompile.err" > "$OUT/precompile_topup.err" 2>/dev/null
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
