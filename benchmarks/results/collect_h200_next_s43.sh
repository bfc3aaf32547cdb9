#!/bin/bash
# Device command for the next H200 call (forty-third session; replaces collect_h200_next_s42.sh, never run: no H200
# came). No H200 call has run since the thirtieth session; what the H200's own test sets miss most:
# 1. masked SDPA over the whole box (attention_masked_box: on the H100 its draws took the masked cuDNN test set
#    6.9 -> 4.7% and the memory-efficient one 8.3 -> 5.7%, RESULTS §49; the H200's masked cuDNN set reads 6.3%);
# 2. cuBLAS bmm over gemm_cublas_bmm3's box at six seeds (1370-1375): the bmm test shapes run the same cuBLAS kernels
#    on the H100 and the H200 (97.5%, RESULTS §60), yet the H200 reads 7.9 / 8.8% median on them against the H100's
#    4.9 / 5.5% with 7x the bmm training rows: the H200 lacks its own timing density over the box;
# 3. random fusion graphs of the training box (seeds 14000-14399; the training files hold 40-13999), each also compiled
#    under the five other fusion choices (fused_job.FUSION_CHOICES): the fused model has trained on default choices
#    only, and the fusion-choice ranking's misses are its errors on the kernels other choices make (seed 13's
#    realize_early, seed 29's max_fusion_1: RESULTS §54, §59);
# 4. every head_dim 32-256 in steps of 8, masked (attention_masked_wide2), what is left.
# The eighteenth Triton GEMM pool (gemm_triton_wide18 at 1344) waits for a warm follow-up: the H200's Triton GEMM sets
# are within their targets.
# Merge each, list with role train, retrain attention, gemm and fused, and point collect_next_any.sh at a new queue.
#   KERNELCAST_GIT_REV=<commit> LIMIT=520 bash benchmarks/results/collect_h200_next_s43.sh
FINISH_LOGS=tar
NAME=kc_s43h source benchmarks/results/device_common.sh
measure maskedbox attention_masked_box 1325 170
measure_many bmm3 22 gemm_cublas_bmm3:1370 gemm_cublas_bmm3:1371 gemm_cublas_bmm3:1372 gemm_cublas_bmm3:1373 gemm_cublas_bmm3:1374 gemm_cublas_bmm3:1375
fusedgraphs fusedchoices 14000:14400 train 400 75
measure maskedhd attention_masked_wide2 1322 $(budget 25)
finish
