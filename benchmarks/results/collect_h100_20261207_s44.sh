#!/bin/bash
# Device command prepared by the forty-second session (2026-12-07) for the next H100 call:
# 1. SDPA's memory-efficient kernel unmasked, another draw (attention_efficient_wide, seed 1397; ~1,250 rows in 20 s);
# 2. Triton attention over triton_attention_wide5's pool (96 configs, 6 of them no H100 pass has timed; the H100's
#    passes so far drew wide8's 110 and wide6's 96, 129 distinct), seed 1397; compile-bound on a fresh machine, so 110 s
#    here and a warm follow-up of the same NAME measures the rest;
# 3. Triton attention over the five stage-1 large-tile configs no test set holds (triton_attention_stage1, seed 1397;
#    905 rows): the H100's test set under-predicts that corner by 8.9% (RESULTS §60), and no pool adds configs to it;
# 4. Triton GEMM over an eighteenth config pool no GPU has timed (gemm_triton_wide18, pool_seed 319).
# No more H100 bmm: its last 5,074 rows moved the H100's plain cuBLAS GEMMs 2.86 -> 3.13% (RESULTS §60); the H200's
# own bmm rows are the next ones (collect_h200_next_s43.sh).
# Merge each, list with role train, retrain attention and gemm, and point collect_next_any.sh at a new queue at once.
# A warm follow-up with the same NAME finishes what a pass left (the collector skips done rows; its workers' Triton
# cache makes it fast); a cut call resumes on another machine by carrying .device_out/kc_s42n/<name> (RESULTS §57).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261207_s44.sh
FINISH_LOGS=tar
NAME=kc_s42n source benchmarks/results/device_common.sh
measure efficient5 attention_efficient_wide 1397 60
measure tritonatt14 triton_attention_wide5 1397 110
measure stage1 triton_attention_stage1 1397 70
measure tritongemm18 gemm_triton_wide18 1343 $(budget 30)
finish
