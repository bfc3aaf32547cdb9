#!/bin/bash
# Device command (issues 13/14, fifteenth session of 2026-12-04), ninth call: cuBLAS GEMMs past m = 65,536
# (collect/sweeps/gemm_cublas_bigm.toml, seed 0) and their independent test set (gemm_cublas_bigm_test.toml, seed 97:
# real models' linear layers at 70k-300k tokens) in separate passes.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261204_s15i.sh
NAME=kc1204s15i source benchmarks/results/device_common.sh
measure bigm gemm_cublas_bigm 0 120
measure bigm_test gemm_cublas_bigm_test 97 80
finish
