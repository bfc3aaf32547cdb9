#!/bin/bash
# The exact device command of the 2026-12-01 eager-workload collection (issue 14) on the lent nvidia-h200:
#   KERNELCAST_GIT_REV=<commit> LIMIT=580 bash benchmarks/results/collect_h200_20261201_eager.sh
# Parts: (1) layer_job sdpa + launch probes; (2) layer_job layers: 8 models x 12 prefill/decode points, eager and
# CUDA graph; (3) gpu_job training sweeps elementwise_wide, reduction_wide, copy_wide (seed 0); (4) gpu_job test
# sweeps *_test (seed 99, own pass). Same collector and method as the other passes (CUPTI, cold L2). Each part is
# packed into $OUT as soon as it ends.
set -u
LIMIT=${LIMIT:-580}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201eager
mkdir -p "$W"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "eager git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"

job() {  # name sweeps seed budget_s
  local name=$1 sweeps=$2 seed=$3 budget=$4
  local b=$(( $(left) - 20 ))
  [ "$b" -gt "$budget" ] && b=$budget
  if [ "$b" -lt 10 ]; then log "skip $name: ${b}s left"; return; fi
  log "start $name ($sweeps seed $seed, budget ${b}s)"
  python3 -m kernelcast.collect.gpu_job --sweeps "$sweeps" --seed "$seed" --out "$W/$name" --gpus 0 \
      --budget-s "$b" --chunk 200 > "$W/$name.log" 2>&1
  log "end $name rc=$?"
  tail -n 25 "$W/$name.log"
}
pack() { for p in "$@"; do [ -e "$W/$p" ] && tar czf "$OUT/$p.tar.gz" -C "$W" "$p" $(cd "$W" && ls -d "$p".log 2>/dev/null); done; }

log "start probes"
python3 -m kernelcast.collect.layer_job --out "$W/layers" --parts sdpa,launch > "$W/probes.log" 2>&1; log "end probes rc=$?"
tail -n 20 "$W/probes.log"
log "start layers"
python3 -m kernelcast.collect.layer_job --out "$W/layers" --parts layers --budget-s 170 > "$W/layers.log" 2>&1; log "end layers rc=$?"
grep -c . "$W/layers/layers.jsonl"; grep -o '"error": "[^"]*' "$W/layers/layers.jsonl" | sort | uniq -c | head
tail -n 5 "$W/layers.log"
pack layers
job eager_train elementwise_wide,reduction_wide,copy_wide 0 260
pack eager_train
job eager_test elementwise_test,reduction_test,copy_test 99 70
pack eager_test
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
