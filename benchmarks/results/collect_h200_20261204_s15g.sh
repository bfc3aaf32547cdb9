#!/bin/bash
# Device command (issue 14, fifteenth session of 2026-12-04), seventh call: batched decode GEMVs in the operand orders
# the sixth call did not draw (collect/sweeps/gemm_cublas_bmm2.toml, seed 0: Falcon's math-SDPA scores against a
# materialized Kᵀ ran 2x under the model trained without them) and a second independent bmm test set in that geometry
# (gemm_cublas_bmm_test2.toml, seed 98), in separate passes.
#   KERNELCAST_GIT_REV=<commit> LIMIT=240 bash benchmarks/results/collect_h200_20261204_s15g.sh
NAME=kc1204s15g source benchmarks/results/device_common.sh
measure bmm2 gemm_cublas_bmm2 0 100
measure bmm_test2 gemm_cublas_bmm_test2 98 60
finish
