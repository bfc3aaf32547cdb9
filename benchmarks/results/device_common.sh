# Shared setup of a device call (sourced by collect_h200_2026120[2-9]_*.sh; the earlier scripts repeat it inline):
# env for one lent host, a work folder W, a time budget LIMIT, log() to W/call.log, left() seconds to go, and the
# editable install of this tree. Usage: NAME=<short> source benchmarks/results/device_common.sh
# gpu_job refuses a pass (sweep, seed, this card) that datasets/files.toml already lists, so a queued script run twice
# costs seconds, not its whole call (since the fortieth session, whose second machine re-ran the first one's queue for
# 478 s); --again in gpu_job measures such a pass anyway. Let files.toml travel when the parquet files stay behind:
#   printf '/datasets/\n/predictors/models/\n' > .git/info/exclude
#   git rm -r -q --cached datasets predictors/models && git add -f datasets/files.toml   # then the device call
#   git reset -q && rm .git/info/exclude                                                  # after it
# Without the card, gpu_job says so on stderr and measures.
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
# one measuring pass: measure <name> <sweeps> <seed> <budget_s>; its folder and log go back as <name>.tar.gz; the
# descriptions name GPU_NAME (default: the card nvidia-smi names; the collector refuses a plan for another card)
measure() {
  log "start $1 (budget $4 s, ${GPU_NAME:-this card})"
  gpu_job "$2" "$3" "$W/$1" "$4" > "$W/$1.log" 2>&1
  log "end $1 rc=$? $(tail -n 2 "$W/$1.log" | tr '\n' ' ')"
  tar czf "$OUT/$1.tar.gz" -C "$W" "$1" "$1.log"
}
# several short passes into one folder, back as one <name>.tar.gz (a call brings back at most eight files):
# measure_many <name> <budget_s each> <sweeps>:<seed> …; each pass in <name>/<sweeps>_<seed>, all logs in <name>.log
measure_many() {
  local name=$1 each=$2 pass
  shift 2
  for pass in "$@"; do
    gpu_job "${pass%%:*}" "${pass##*:}" "$W/$name/${pass%%:*}_${pass##*:}" "$each" >> "$W/$name.log" 2>&1
    log "$name: $pass rc=$? $(tail -n 1 "$W/$name.log")"
  done
  tar czf "$OUT/$name.tar.gz" -C "$W" "$name" "$name.log"
}
# the collector on GPU 0: gpu_job <sweeps> <seed> <out> <budget_s>
gpu_job() {
  python3 -m kernelcast.collect.gpu_job --sweeps "$1" --seed "$2" --out "$3" --gpus 0 --budget-s "$4" --chunk 100 \
    --precompile-workers 4 ${GPU_NAME:+--gpu-name "$GPU_NAME"}
}
# the GPU tests on this tree; their log goes back as gpu_tests.log (in logs.tar.gz with FINISH_LOGS=tar)
gpu_tests() {
  log "start gpu tests"
  python3 -m pytest -q -x tests/test_gpu_workloads.py > "$W/gpu_tests.log" 2>&1
  log "end gpu tests rc=$? $(tail -n 1 "$W/gpu_tests.log")"
  [ "${FINISH_LOGS:-}" = tar ] || cp "$W/gpu_tests.log" "$OUT/"
}
# benchmarks/gpu_operand_values.py (GEMM time against operand values), its JSON straight back
operand_values() {
  log "start operand values"
  python3 benchmarks/gpu_operand_values.py --out "$OUT" > "$W/operand_values.log" 2>&1
  log "end operand values rc=$? $(grep -c . "$W/operand_values.log") lines"
  cat "$W/operand_values.log"
}
# benchmarks/gpu_grouped_mm_probe.py (GPT-OSS's compiled `_grouped_mm` against its eager one, RESULTS §42): its table
# and JSON into grouped_mm_probe.log (logs.tar.gz with FINISH_LOGS=tar)
grouped_mm_probe() {
  log "start grouped_mm probe"
  timeout 240 python3 benchmarks/gpu_grouped_mm_probe.py --out "$W" > "$W/grouped_mm_probe.log" 2>&1
  log "end grouped_mm probe rc=$? $(tail -n 1 "$W/grouped_mm_probe.log")"
  cat "$W/gpu_grouped_mm_probe.json" >> "$W/grouped_mm_probe.log" 2>/dev/null
}
# parts of collect/layer_job.py, eager layers of one model set among them: layerset <name> <set> <budget_s> [parts,
# default layers]; its folder (layers.jsonl, and what the other parts write) goes back as <name>_layers.tar.gz, its
# log into logs.tar.gz
layerset() {
  log "start layers $1 ($2, ${4:-layers}, budget $3 s)"
  timeout $(( $3 + 180 )) python3 -m kernelcast.collect.layer_job --out "$W/$1" --parts "${4:-layers}" \
      --models "$2" --budget-s "$3" > "$W/$1_layers.log" 2>&1
  log "end layers $1 rc=$? $(cat "$W/$1"/*.jsonl | grep -c .) rows, $(cat "$W/$1"/*.jsonl | grep -c '"error"') errors"
  tar czf "$OUT/$1_layers.tar.gz" -C "$W" "$1"
}
# the GPU's state, the time left, and the call log back (with every other log of the call in logs.tar.gz when
# FINISH_LOGS=tar, for calls that return more than eight files otherwise)
finish() {
  gpu_state
  log "done, $(left)s left"
  if [ "${FINISH_LOGS:-}" = tar ]; then
    (cd "$W" && tar czf "$OUT/logs.tar.gz" call.log ./*.log)
  else
    cp "$W/call.log" "$OUT/"
  fi
}
# one pass of collect/fused_job.py into W/<name> (Inductor's cache in W, the budget less <reserve_s>, the call cut 45 s
# after it): fused_pass <name> <reserve_s> <fused_job arguments…>; its rows go back as <name>_fused.jsonl.gz
fused_pass() {
  local name=$1 reserve=$2
  shift 2
  export TORCHINDUCTOR_CACHE_DIR=$PWD/$W/inductor_cache
  timeout $(( $(budget "$reserve") + 45 )) python3 -m kernelcast.collect.fused_job --out "$W/$name" "$@" \
      --budget-s "$(budget $(( reserve + 15 )))" --grace-s 30 2>&1 | grep -v "Compiled module path" > "$W/$name.log"
  log "end $name: $(grep -c . "$W/$name/fused.jsonl") tasks, $(grep -c '"error"' "$W/$name/fused.jsonl") errors"
  gzip -c "$W/$name/fused.jsonl" > "$OUT/${name}_fused.jsonl.gz"
}
# one compiled-layers pass: compiled <name> <layer set> <reserve_s> <workers> <stall_s>; the tail of its log comes back
# as <name>_fused_job.log (its whole log in logs.tar.gz with FINISH_LOGS=tar)
compiled() {
  log "start compiled $1 ($2, $4 workers, stall $5 s)"
  fused_pass "$1" "$3" --layers 1000 --layer-models "$2" --workers "$4" --stall-s "$5"
  [ "${FINISH_LOGS:-}" = tar ] || tail -c 60000 "$W/$1.log" > "$OUT/$1_fused_job.log"
}
# random fusion graphs of one box, the first <choices> of them also under every other fusion choice
# (fused_job.FUSION_CHOICES; seeds from 40 on merge as training rows): fusedgraphs <name> <lo:hi> <box> <choices>
# <reserve_s>; its log goes into logs.tar.gz with FINISH_LOGS=tar
fusedgraphs() {
  log "start fused graphs $1 ($2, box $3, $4 under every choice, reserve $5 s)"
  fused_pass "$1" "$5" --graphs "$2" --box "$3" --choices "$4" --workers 14 --stall-s 40
}
# the Triton GEMM key space compiled on the host's CPUs beside the measurements (collect/compile_facts.py --space
# triton_gemm, the committed table's keys skipped: carry datasets/compile_facts/triton_gemm_space_h200.parquet):
# space_start <workers> <reserve_s> starts it in the background; space_finish waits for it (bounded by the reserve)
# and sends its facts back as gemm_space_facts.jsonl.gz
SPACE_TABLE=datasets/compile_facts/triton_gemm_space_h200.parquet
space_start() {
  log "start compile facts, triton_gemm space ($1 workers, skipping the keys of $SPACE_TABLE)"
  ( timeout $(( $(left) - $2 )) python3 -m kernelcast.collect.compile_facts --space triton_gemm --gpu H200 \
      --workers "$1" --skip-table "$SPACE_TABLE" --out "$W/gemm_space_facts.jsonl" > "$W/gemm_space.log" 2>&1 ) &
  SPACE_PID=$!
}
space_finish() {
  wait "$SPACE_PID"
  log "end compile facts: $(grep -c . "$W/gemm_space_facts.jsonl") classes, $(grep -c '"error"' "$W/gemm_space_facts.jsonl") failed"
  gzip -c "$W/gemm_space_facts.jsonl" > "$OUT/gemm_space_facts.jsonl.gz"
}
