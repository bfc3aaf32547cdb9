#!/bin/bash
# Device command for the next H200 call: the thirtieth/thirty-first sessions' queue (collect_h200_next_s31.sh, never
# run: no H200 came since), re-weighted by the forty-second session toward cuBLAS bmm. The bmm test shapes run the same
# cuBLAS kernels on the H100 and the H200 (97.5%, RESULTS §60), yet the H200 reads 7.9 / 8.8% median on them against
# the H100's 4.9 / 5.5% with 7x the bmm training rows: what the H200 lacks is its own timing density over the box.
# 1. masked SDPA over the whole box (attention_masked_box: on the H100 its draws took the masked cuDNN test set
#    6.9 -> 4.7% and the memory-efficient one 8.3 -> 5.7%, RESULTS §49; the H200's masked cuDNN set reads 6.3%);
# 2. cuBLAS bmm over gemm_cublas_bmm3's box at six seeds (1370-1375; ~17 s each on the H100: none a test shape);
# 3. every head_dim 32-256 in steps of 8, masked (attention_masked_wide2);
# 4. Triton GEMM over the eighteenth pool (gemm_triton_wide18, pool_seed 319; the H100 queue draws it at seed 1343).
# Merge each, list with role train, retrain attention and gemm, and point collect_next_any.sh at a new queue at once.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_next_s42.sh
FINISH_LOGS=tar
NAME=kc_s42h source benchmarks/results/device_common.sh
measure maskedbox attention_masked_box 1325 200
measure_many bmm3 24 gemm_cublas_bmm3:1370 gemm_cublas_bmm3:1371 gemm_cublas_bmm3:1372 gemm_cublas_bmm3:1373 gemm_cublas_bmm3:1374 gemm_cublas_bmm3:1375
measure maskedhd attention_masked_wide2 1322 80
measure tritongemm18 gemm_triton_wide18 1344 $(budget 30)
finish
