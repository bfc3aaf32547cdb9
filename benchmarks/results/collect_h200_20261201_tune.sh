#!/bin/bash
# The device command of issue 16's regret measurement (config search) on the lent nvidia-h200 (one GPU): one call,
# the same collector and method as collect_h200_20261201_topup.sh (gpu_job, CUPTI timer, cold L2, 10% re-measured
# share), new seed 16, the three exhaustive config-search sweeps: every candidate config on every shape.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261201_tune.sh
# Sizes (python3 -m kernelcast.collect.plan / expand_report at seed 16): gemm_triton_tune 3,400 descriptions
# (50 shapes x 68 configs), triton_attention_tune 600 (20 x 30), moe_tune 390 (15 x 26): 4,390 (+10% repeats),
# 124 distinct configs, 360 Triton compile classes. Expected: precompile ~30-50 s in 13 processes (800 classes
# took 50.7 s on 2026-12-01), ~4,830 measurements at ~8,000 Triton configs per GPU-minute ~40-60 s; with pip,
# start and transfers ~3 min of device time. Then, on the dev machine:
#   tar xzf <files_at>/tune.tar.gz -C /tmp && kernelcast collect merge --in /tmp/tune --datasets datasets
#   (list the new files in datasets/files.toml, role "test", sweeps = the three *_tune sweeps)
#   python benchmarks/eval_regret.py
set -u
LIMIT=${LIMIT:-300}                      # seconds this call may take, packing included
SEED=${SEED:-16}
SWEEPS=gemm_triton_tune,triton_attention_tune,moe_tune
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201tune
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "tune git_rev=${KERNELCAST_GIT_REV:-?} seed $SEED $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"

for s in ${SWEEPS//,/ }; do             # fill the Triton cache in 13 processes before the GPU measures
  python3 -m kernelcast.collect.precompile --sweeps "$s" --seed "$SEED" --workers 13 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
done
log "precompile: $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"

B=$(( $(left) - 25 ))
log "start tune ($SWEEPS seed $SEED, budget ${B}s)"
python3 -m kernelcast.collect.gpu_job --sweeps "$SWEEPS" --seed "$SEED" --out "$W/tune" --gpus 0 \
    --budget-s "$B" --chunk 100 --precompile-workers 2 > "$W/tune.log" 2>&1
log "end tune rc=$?"
tail -n 30 "$W/tune.log"
[ -d "$W/tune" ] && tar czf "$OUT/tune.tar.gz" -C "$W" tune tune.log
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
cp "$W/precompile.jsonl" "$OUT/precompile_tune.jsonl" 2>/dev/null
tail -c 20000 "$W/precompile.err" > "$OUT/precompile_tune.err" 2>/dev/null
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
