# Shared setup of a device call (sourced by collect_h200_2026120[2-9]_*.sh; the earlier scripts repeat it inline):
# env for one lent host, a work folder W, a time budget LIMIT, log() to W/call.log, left() seconds to go, and the
# editable install of this tree. Usage: NAME=<short> source benchmarks/results/device_common.sh
set -u
LIMIT=${LIMIT:-560}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/$NAME
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
# the seconds left less a reserve, at least 20: budget 200
budget() { local x=$(( $(left) - $1 )); echo $(( x > 20 ? x : 20 )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }
gpu_state() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "$NAME git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
gpu_state
# one measuring pass: measure <name> <sweeps> <seed> <budget_s>; its folder and log go back as <name>.tar.gz
measure() {
  log "start $1 (budget $4 s)"
  python3 -m kernelcast.collect.gpu_job --sweeps "$2" --seed "$3" --out "$W/$1" --gpus 0 --budget-s "$4" --chunk 100 \
    --precompile-workers 4 > "$W/$1.log" 2>&1
  log "end $1 rc=$? $(tail -n 2 "$W/$1.log" | tr '\n' ' ')"
  tar czf "$OUT/$1.tar.gz" -C "$W" "$1" "$1.log"
}
# the GPU tests on this tree; their log goes back as gpu_tests.log
gpu_tests() {
  log "start gpu tests"
  python3 -m pytest -q -x tests/test_gpu_workloads.py > "$W/gpu_tests.log" 2>&1
  log "end gpu tests rc=$? $(tail -n 1 "$W/gpu_tests.log")"
  cp "$W/gpu_tests.log" "$OUT/"
}
# the GPU's state, the time left, and the call log back
finish() {
  gpu_state
  log "done, $(left)s left"
  cp "$W/call.log" "$OUT/"
}
