#!/bin/bash
# Device command (issue 13, fourth session of 2026-12-01) on the lent nvidia-h200 (one GPU): the same collector and
# method as collect_h200_20261201_topup.sh (gpu_job, CUPTI timer, cold L2, 10% re-measured share):
#   1. gemm_triton_test2 (seed 1002): the second independent Triton GEMM test set, 40 fresh configs, its own pass
#      first; measured after the compile-facts features were chosen on the earlier sets;
#   2. gemm_triton_wide3 (seed 13): training rows over 300 more configs (config variety);
#   3. the GPU-marked tests (tests/test_gpu_workloads.py: outputs vs float64, CUPTI, `tune --verify` on the GPU).
# xgboost is not on the device image: the CPU wheel travels in .whl/ (carry) so the learned models serve there.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_20261201_triton3.sh
# Then, on the dev machine: tar xzf <files_at>/{test2,wide3}.tar.gz -C <dir> && kernelcast collect merge --in <dir>/test2 ...
set -u
LIMIT=${LIMIT:-540}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201t3
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
python3 -m pip install -q --no-deps .whl/xgboost_cpu-*.whl >> "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "triton3 git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton, xgboost; print(torch.__version__, triton.__version__, xgboost.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"

python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test2 --seed 1002 --workers 13 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_wide3 --seed 13 --workers 12 --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
log "start test2"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_test2 --seed 1002 --out "$W/test2" --gpus 0 \
    --budget-s 100 --chunk 100 --precompile-workers 1 > "$W/test2.log" 2>&1
log "end test2 rc=$?"
tail -n 5 "$W/test2.log"
tar czf "$OUT/test2.tar.gz" -C "$W" test2 test2.log
wait $PRE
log "precompile: $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
B=$(( $(left) - 150 ))
log "start wide3 (budget ${B}s)"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_wide3 --seed 13 --out "$W/wide3" --gpus 0 \
    --budget-s "$B" --chunk 100 --precompile-workers 2 > "$W/wide3.log" 2>&1
log "end wide3 rc=$?"
tail -n 5 "$W/wide3.log"
tar czf "$OUT/wide3.tar.gz" -C "$W" wide3 wide3.log
log "gpu tests"
timeout $(( $(left) - 15 )) python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_workloads.py > "$W/gpu_tests.log" 2>&1
log "gpu tests rc=$? $(tail -n 1 "$W/gpu_tests.log")"
cp "$W/gpu_tests.log" "$OUT/" 2>/dev/null
cp "$W/precompile.jsonl" "$OUT/precompile_triton3.jsonl" 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
