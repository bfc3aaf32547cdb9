#!/bin/bash
# Device command (issue 13, sixth session of 2026-12-01) on the lent nvidia-h200 (one GPU): the same collector and
# method as collect_h200_20261201_test4.sh (gpu_job, CUPTI timer, cold L2, 10% re-measured share), after every choice
# of the session: three more independent test sets, each in its own pass, then the GPU tests on this tree (the first
# call whose tracked tree fits the device copy whole since the fifth session: the models ship as forests only).
#   1. gemm_triton_test5 (seed 1006): 40 fresh Triton configs (compiled in 15 processes first);
#   2. gemm_cublas_test2 + attention_test2 (seed 1006): cuBLAS, flash and cuDNN on other odd shapes;
#   3. tests/test_gpu_workloads.py -m gpu.
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261201_test5.sh
set -u
LIMIT=${LIMIT:-560}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201t5
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "test5 git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test5 --seed 1006 --workers 15 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
log "start libs"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_cublas_test2,attention_test2 --seed 1006 --out "$W/libs" --gpus 0 \
    --budget-s 150 --chunk 100 > "$W/libs.log" 2>&1
log "end libs rc=$?"
tail -n 8 "$W/libs.log"
tar czf "$OUT/libs.tar.gz" -C "$W" libs libs.log
wait $PRE
log "precompile rc=$? $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
log "start test5"
python3 -m kernelcast.collect.gpu_job --sweeps gemm_triton_test5 --seed 1006 --out "$W/test5" --gpus 0 \
    --budget-s 150 --chunk 100 --precompile-workers 4 > "$W/test5.log" 2>&1
log "end test5 rc=$?"
tail -n 5 "$W/test5.log"
tar czf "$OUT/test5.tar.gz" -C "$W" test5 test5.log
log "gpu tests"
timeout $(( $(left) - 15 )) python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_workloads.py > "$W/gpu_tests.log" 2>&1
log "gpu tests rc=$? $(tail -n 1 "$W/gpu_tests.log")"
cp "$W/gpu_tests.log" "$OUT/" 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call.log"
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
