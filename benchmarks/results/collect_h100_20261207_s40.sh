#!/bin/bash
# Run by the fortieth session (2026-12-07) as the queued collect_h100_next_s39.sh (through collect_next_any.sh, a plain
# device call that drew an H100; git_rev bbf9ed9, 519 s): memory-efficient SDPA unmasked (1,261 rows, all of the plan),
# Triton attention seed 1392 (600 rows: compile-bound on a fresh machine) and the fifteenth Triton GEMM pool (3,400 rows).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261207_s40.sh
FINISH_LOGS=tar
NAME=kc_s39n source benchmarks/results/device_common.sh
measure efficient attention_efficient_wide 1393 170
measure tritonatt10 triton_attention_wide8 1392 110
measure tritongemm15 gemm_triton_wide15 1339 $(budget 30)
finish
