#!/bin/bash
# The forty-second session's second warm follow-up (same H100, 302 s): another Triton attention draw over
# triton_attention_wide6's pool (seed 1396; 1,800 of its 2,558 rows here, the rest in _s42d.sh), bmm3 at four more
# seeds (1358-1361) and the memory-efficient kernel unmasked at seed 1396.
#   KERNELCAST_GIT_REV=<commit> LIMIT=420 bash benchmarks/results/collect_h100_20261207_s42c.sh
FINISH_LOGS=tar; NAME=kc_s42b; source benchmarks/results/device_common.sh
measure tritonatt13 triton_attention_wide6 1396 200
measure_many bmm3e 24 gemm_cublas_bmm3:1358 gemm_cublas_bmm3:1359 gemm_cublas_bmm3:1360 gemm_cublas_bmm3:1361
measure efficient4 attention_efficient_wide 1396 $(budget 10)
finish
