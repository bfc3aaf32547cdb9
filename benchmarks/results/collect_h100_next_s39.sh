#!/bin/bash
# Device command prepared by the thirty-ninth session (2026-12-07) for the next H100 call:
# 1. SDPA's memory-efficient kernel without a mask (attention_efficient_wide, seed 1393): its sealed H200 set reads
#    6.5% against issue 13's 4-5%, and only the H200's 1,241 rows (seed 1202) train it; no H100 has timed it unmasked.
# 2. a further draw of the H100 Triton attention box (seed 1392: the thirty-ninth session's draw took the H100 Triton
#    attention test set 7.0 -> 6.6%, RESULTS §57);
# 3. Triton GEMM over a fifteenth config pool no GPU has timed (gemm_triton_wide15, pool_seed 316; at equal rows, the
#    number of configs trained on bounds fresh-config error, RESULTS §46).
# Merge each, list with role train, retrain attention and gemm. A call cut short resumes on another machine: carry
# its folder (.device_out/kc_s39n/<name>) into the next call (RESULTS §57).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s39.sh
FINISH_LOGS=tar
NAME=kc_s39n source benchmarks/results/device_common.sh
measure efficient attention_efficient_wide 1393 170
measure tritonatt10 triton_attention_wide8 1392 110
measure tritongemm15 gemm_triton_wide15 1339 $(budget 30)
finish
