#!/bin/bash
# Prepared by the twenty-eighth session (2026-12-06) for the next H100 call: its call (collect_h100_20261206_s28.sh)
# measured 3,900 Triton attention and 3,100 Triton GEMM training rows, its second (collect_h100_20261206_s28b.sh)
# 7,226 and 5,400 more with seeds 1273 and 1272. The same two sweeps again, each a fresh draw (a
# rerun of a seed would measure the same head of its shuffled plan): Triton GEMM first this time, then Triton
# attention with what is left; first (added after that call) repeat_kv's own copy layout (copy_repeat), which the
# lowering waits for (graphs/lower.py run_stride), and the H100's first strided cats (copy_strided): with the H100's
# strided-copy rows and no strided cat of its own, the copy model put the H100's KV-cache cats 21% under the H200's
# (RESULTS §44; without those rows the two agree, as the H100's measured layers do). Merge each, list with role train,
# retrain copy, gemm and attention.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261206_s29.sh
# Ran by the twenty-ninth session on an H100 (tree of 75f5845), then two warm follow-ups on the same card (call log
# beside it, collect_h100_20261206_s29_call.log):
#   FINISH_LOGS=tar NAME=kc_s29b source benchmarks/results/device_common.sh; measure masked attention_masked_wide 1301 150
#     measure tritongemm gemm_triton_wide8 1302 $(budget 30); finish
#   (LIMIT=470) FINISH_LOGS=tar NAME=kc_s29c source ...; measure tritonatt triton_attention_wide8 1303 $(budget 30); finish
FINISH_LOGS=tar
NAME=kc_s29 source benchmarks/results/device_common.sh
measure repeat copy_repeat 1298 40
measure stridedcat copy_strided 1299 60
measure tritongemm gemm_triton_wide8 1274 250
measure tritonatt triton_attention_wide8 1275 $(budget 50)
finish
