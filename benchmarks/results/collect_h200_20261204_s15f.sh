#!/bin/bash
# Device command (issues 13/14, fifteenth session of 2026-12-04), sixth call: eager attention's batched GEMMs past
# batch 128 (collect/sweeps/gemm_cublas_bmm.toml, seed 0; its independent test set gemm_cublas_bmm_test.toml, seed 99,
# in its own pass) and strided copies of few long runs (copy_runs.toml, seed 0: a clone of repeat_kv's expanded keys).
#   KERNELCAST_GIT_REV=<commit> LIMIT=400 bash benchmarks/results/collect_h200_20261204_s15f.sh
NAME=kc1204s15f source benchmarks/results/device_common.sh
measure bmm gemm_cublas_bmm 0 150
measure bmm_test gemm_cublas_bmm_test 99 80
measure copyruns copy_runs 0 90
finish
