#!/bin/bash
# Device command prepared by the forty-first session (2026-12-07) for the next H100 call; the forty-second session ran it
# as a plain call (an H100, git_rev 97d7f3b, 493 s):
# 1. SDPA's memory-efficient kernel unmasked, another draw (attention_efficient_wide, seed 1395; ~1,250 rows in 20 s);
# 2. Triton attention over triton_attention_wide6's pool (96 configs, 19 of them no H100 pass has timed: every H100
#    Triton attention pass so far drew wide8's 110 configs), seed 1395; compile-bound on a fresh machine, so 110 s here
#    and a warm follow-up of the same NAME measures the rest;
# 3. cuBLAS bmm over gemm_cublas_bmm3's box at four more seeds (1354-1357, ~15 s each);
# 4. Triton GEMM over a seventeenth config pool no GPU has timed (gemm_triton_wide17, pool_seed 318).
# Merge each, list with role train, retrain attention and gemm, and point collect_next_any.sh at a new queue at once.
# A warm follow-up with the same NAME finishes what a pass left (the collector skips done rows; its workers' Triton
# cache makes it fast); a cut call resumes on another machine by carrying .device_out/kc_s41n/<name> (RESULTS §57).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s41.sh
FINISH_LOGS=tar
NAME=kc_s41n source benchmarks/results/device_common.sh
measure efficient3 attention_efficient_wide 1395 60
measure tritonatt12 triton_attention_wide6 1395 110
measure_many bmm3d 24 gemm_cublas_bmm3:1354 gemm_cublas_bmm3:1355 gemm_cublas_bmm3:1356 gemm_cublas_bmm3:1357
measure tritongemm17 gemm_triton_wide17 1341 $(budget 30)
finish
