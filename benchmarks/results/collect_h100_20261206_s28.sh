#!/bin/bash
# Prepared by the twenty-seventh session (2026-12-05) for the next H100 call: its call (collect_h100_20261205_s27.sh)
# measured the H100's first MoE rows, 2,200 more Triton attention rows and 300 Triton GEMM rows before its budget ran
# out. More of both Triton sweeps, each a fresh draw (a rerun of a seed would measure the same head of its shuffled
# plan again): Triton attention first (the H100's test set was still over the H200's there, RESULTS §43), then Triton
# GEMM with what is left. Merge each, list with role train, retrain attention and gemm.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261206_s28.sh
FINISH_LOGS=tar
NAME=kc_s28 source benchmarks/results/device_common.sh
measure tritonatt triton_attention_wide8 1267 250
measure tritongemm gemm_triton_wide8 1268 $(budget 50)
finish
