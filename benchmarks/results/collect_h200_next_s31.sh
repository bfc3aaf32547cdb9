#!/bin/bash
# Device command prepared by the thirtieth session (2026-12-06) for the next H200 call, re-weighted by the thirty-first:
# masked SDPA over the whole box (attention_masked_box: seq_q and seq_kv drawn apart, calls to 150 GFLOP; on the H100
# its three draws and a second head_dim draw took the H100 masked cuDNN test set 6.9 / 23.5 -> 4.7 / 15.0% and the
# memory-efficient one 8.3 -> 5.7%, RESULTS §49), then every head_dim 32-256 in steps of 8 (attention_masked_wide2),
# then cuBLAS bmm over the whole box eager attention launches it in (gemm_cublas_bmm3, added by the thirty-sixth
# session: the bmm test sets' 10-13% against 6.8% on held-out training shapes, RESULTS §54), then Triton GEMM over a
# pool no GPU has timed (gemm_triton_wide9, pool_seed 310). Merge each, list with role train, retrain attention and
# gemm. The thirty-seventh session ran the bmm pass on an H100 at seeds 1331-1336 (RESULTS §55); this H200 pass
# draws seed 1337: none of those shapes, none a test set's.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_next_s31.sh
FINISH_LOGS=tar
NAME=kc_s31 source benchmarks/results/device_common.sh
measure maskedbox attention_masked_box 1325 260
measure maskedhd attention_masked_wide2 1322 100
measure bmm3 gemm_cublas_bmm3 1337 90
measure tritongemm9 gemm_triton_wide9 1323 $(budget 30)
finish
