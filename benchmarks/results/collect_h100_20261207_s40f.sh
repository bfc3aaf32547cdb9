#!/bin/bash
# The fortieth session's last warm follow-up (same H100 as _s40d.sh and _s40e.sh): cuBLAS bmm seeds 1346-1349 (79 s).
#   KERNELCAST_GIT_REV=<commit> LIMIT=100 bash benchmarks/results/collect_h100_20261207_s40f.sh
FINISH_LOGS=tar; NAME=kc_s40d; source benchmarks/results/device_common.sh
for s in 1346 1347 1348 1349; do measure bmm3s$s gemm_cublas_bmm3 $s 20; done
finish
