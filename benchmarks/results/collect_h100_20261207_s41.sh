#!/bin/bash
# Ran by the forty-first session as its first device call (an H100, git_rev 60b35da), queued by the fortieth as
# collect_h100_next_s40.sh. Device command prepared by the fortieth session (2026-12-07) for the next H100 call (its predecessor,
# collect_h100_next_s39.sh, ran twice that session: a queue that has run must be moved on at once):
# 1. SDPA's memory-efficient kernel unmasked, another draw (attention_efficient_wide, seed 1394; 1,261 rows in 21 s);
# 2. a further draw of the H100 Triton attention box (seed 1394); on a fresh machine it is compile-bound (600 rows in
#    110 s), so it gets 110 s here and a warm follow-up of the same NAME measures the rest in ~90 s;
# 3. Triton GEMM over a sixteenth config pool no GPU has timed (gemm_triton_wide16, pool_seed 317).
# The forty-first session added, before 2: the H200's two cuBLAS bmm test sets (gemm_cublas_bmm_test seed 99,
# gemm_cublas_bmm_test2 seed 98: 561 rows, mostly batched GEMVs) on the H100, as the H100's own bmm test sets, to learn
# whether the H100, with 11,452 bmm training rows, predicts those shapes better than the H200 with 2,513.
# Merge each, list with role train, retrain attention and gemm, and point collect_next_any.sh at a new queue.
# A warm follow-up with the same NAME finishes what a pass left (the collector skips done rows; its workers' Triton
# cache makes it fast); a cut call resumes on another machine by carrying .device_out/kc_s40n/<name> (RESULTS §57).
#   KERNELCAST_GIT_REV=<commit> LIMIT=500 bash benchmarks/results/collect_h100_20261207_s41.sh
FINISH_LOGS=tar
NAME=kc_s40n source benchmarks/results/device_common.sh
measure efficient2 attention_efficient_wide 1394 60
measure_many bmmtests 40 gemm_cublas_bmm_test:99 gemm_cublas_bmm_test2:98
measure tritonatt11 triton_attention_wide8 1394 110
measure tritongemm16 gemm_triton_wide16 1340 $(budget 30)
finish
