#!/bin/bash
# Forty-fourth session's second H100 call (warm after collect_h100_20261207_s44.sh, the queued collect_h100_next_s42.sh, ran): Triton attention over wide5's pool
# at a fresh seed (the H100's Triton attention set reads 6.5% against <=5%), then the eighteenth Triton GEMM pool's box
# at a fresh seed.
#   KERNELCAST_GIT_REV=<commit> LIMIT=440 bash benchmarks/results/collect_h100_20261207_s44b.sh
FINISH_LOGS=tar
NAME=kc_s44b source benchmarks/results/device_common.sh
measure tritonatt15 triton_attention_wide5 1398 230
measure tritongemm19 gemm_triton_wide18 1345 $(budget 25)
finish
