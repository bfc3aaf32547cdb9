#!/bin/bash
# Second eager-workload device call (issue 14), after collect_h200_20261201_eager.sh:
#   KERNELCAST_GIT_REV=<commit> LIMIT=400 bash benchmarks/results/collect_h200_20261201_eager2.sh
# (1) the 96 decoder layers again: the first call's decode points read a cropped (strided) KV cache after their
# first repeat, which made the cache cat 5x slower than real decode's; features/layers.py now restores the
# contiguous cache; (2) profiler traces (record_shapes) of two layer calls and an ncu CSV of one: fixtures for
# `kernelcast trace`; (3) reduction_wide2 (training, seed 5).
set -u
LIMIT=${LIMIT:-400}
export PYTHONUNBUFFERED=1
W=.device_out/kc1201eager2
mkdir -p "$W/layers"
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$W/call.log"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 2; }
log "eager2 git_rev=${KERNELCAST_GIT_REV:-?} $(python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name(0))')"
python3 -m kernelcast.collect.layer_job --out "$W/layers" --parts layers --budget-s 150 > "$W/layers.log" 2>&1; log "end layers rc=$?"
grep -c . "$W/layers/layers.jsonl"; tail -n 3 "$W/layers.log"
python3 -m kernelcast.collect.layer_job --out "$W/layers" --parts trace > "$W/trace.log" 2>&1; log "end trace rc=$?"
ncu --clock-control none --target-processes all --csv --page raw --print-units base \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    python3 -m kernelcast.collect.layer_job --out "$W/layers" --parts once > "$W/layers/ncu_llama3_8b_prefill_b1_s512.csv" 2> "$W/ncu.err"
log "end ncu rc=$? $(wc -l < $W/layers/ncu_llama3_8b_prefill_b1_s512.csv) lines"
tar czf "$OUT/layers2.tar.gz" -C "$W" layers layers.log trace.log ncu.err
b=$(( $(left) - 20 ))
python3 -m kernelcast.collect.gpu_job --sweeps reduction_wide2 --seed 5 --out "$W/red2" --gpus 0 --budget-s "$b" --chunk 200 > "$W/red2.log" 2>&1
log "end red2 rc=$?"; tail -n 12 "$W/red2.log"
tar czf "$OUT/red2.tar.gz" -C "$W" red2 red2.log
log "done, $(left)s left"; cp "$W/call.log" "$OUT/"
