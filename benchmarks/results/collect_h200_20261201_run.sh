#!/bin/bash
# The exact device commands of the 2026-12-01 wide collection (issue 13) on the lent nvidia-h200 (one GPU).
#   KERNELCAST_GIT_REV=<commit> bash benchmarks/results/collect_h200_20261201_run.sh 1    # first call
#   KERNELCAST_GIT_REV=<commit> bash benchmarks/results/collect_h200_20261201_run.sh 2    # second call (warm machine: resumes)
# Outputs live in .device_out/ (gitignored: kept on a warm machine between calls); each pass is packed
# into $OUT/<pass>.tar.gz. Training passes use seed 1, the independent test pass seed 1001 and its own
# sweeps (*_test.toml: other distributions, fresh Triton configs), in a separate gpu_job process.
set -u
CALL=${1:-1}
LIMIT=${LIMIT:-570}                      # seconds this call may take, packing included
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=.device_out/kc1201
export TRITON_CACHE_DIR=$PWD/$W/triton_cache
mkdir -p "$W" "$TRITON_CACHE_DIR"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call$CALL.log"; }

python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "call $CALL git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call$CALL.log"

precompile() {  # seed sweeps...: fill the Triton cache in 13 processes (background callers add &)
  local seed=$1; shift
  for s in "$@"; do
    python3 -m kernelcast.collect.precompile --sweeps "$s" --seed "$seed" --workers 13 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
  done
}

job() {  # name sweeps seed budget_s [gpu_job args]: one gpu_job pass (resumes when $W/name exists)
  local name=$1 sweeps=$2 seed=$3 budget=$4; shift 4
  local b=$(( $(left) - 45 ))
  [ "$b" -gt "$budget" ] && b=$budget
  if [ "$b" -lt 15 ]; then log "skip $name: ${b}s left"; return; fi
  log "start $name ($sweeps seed $seed, budget ${b}s)"
  python3 -m kernelcast.collect.gpu_job --sweeps "$sweeps" --seed "$seed" --out "$W/$name" --gpus 0 \
      --budget-s "$b" --chunk 100 "$@" > "$W/$name.log" 2>&1
  log "end $name rc=$?"
  tail -n 30 "$W/$name.log"
}

pack() { for p in "$@"; do [ -d "$W/$p" ] && tar czf "$OUT/$p.tar.gz" -C "$W" "$p" "$p.log"; done; }

if [ "$CALL" = 1 ]; then
  # smoke: precompile the smoke sweep in the foreground, measure it, stop on any error / cuda_fatal row
  precompile 1 smoke_wide
  ( precompile 1001 gemm_triton_test triton_attention_test moe_test
    precompile 1 gemm_triton_wide triton_attention_wide moe_wide ) &
  job smoke smoke_wide 1 90
  python3 - "$W/smoke" <<'EOF' || { log "SMOKE FAILED"; pack smoke; cp "$W"/precompile.* "$W/call1.log" "$OUT"/ 2>/dev/null; exit 1; }
import sys, pyarrow.dataset as ds
import glob; t = ds.dataset(glob.glob(sys.argv[1] + "/*/*.parquet"), format="parquet").to_table(columns=["op", "backend", "status", "error", "latency_us"]).to_pandas()
print(t.groupby(["op", "backend", "status"]).size().to_string())
bad = t[t.status.isin(["error", "cuda_fatal", "oom"])]
for _, r in bad.head(8).iterrows():
    print("BAD", r.op, r.backend, r.status, str(r.error)[:300])
share = t.status.isin(["error", "cuda_fatal", "oom"]).groupby([t.op, t.backend]).mean()
ok = t[t.status == "ok"].groupby(["op", "backend"]).size()
sys.exit(1 if (t.status == "cuda_fatal").any() or (share > 0.3).any() or len(ok) < 5 else 0)
EOF
  log "smoke passed; precompile so far: $(grep -c compile "$W/precompile.jsonl" 2>/dev/null) compiles"
  job trainA gemm_cublas_wide,attention_wide 1 200
  job test gemm_cublas_test,attention_test,gemm_triton_test,triton_attention_test,moe_test 1001 130
  job trainB gemm_triton_wide 1 400 --precompile-workers 2
  log "precompile: $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
  pack smoke trainA test trainB
else
  ( precompile 1 triton_attention_wide moe_wide gemm_triton_wide ) &
  job trainC triton_attention_wide,moe_wide 1 170
  job trainD gemm_triton_wide 2 100
  job trainE attention_wide 2 150
  log "precompile: $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
  pack trainC trainD trainE
fi
nvidia-smi --query-gpu=clocks.sm,memory.used,temperature.gpu,power.draw --format=csv,noheader | tee -a "$W/call$CALL.log"
cp "$W/precompile.jsonl" "$OUT/precompile_call$CALL.jsonl" 2>/dev/null
cp "$W/call$CALL.log" "$OUT/" 2>/dev/null
tail -c 20000 "$W/precompile.err" > "$OUT/precompile_call$CALL.err" 2>/dev/null
log "done, $(left)s left"
