#!/bin/bash
# An H100 call prepared by the twenty-fourth session (2026-12-05), for when a plain device call gets an H100 while the
# masked SDPA and expand-copy sweeps still wait for an H200 (collect_h200_next_s23b.sh, which runs the same check
# first): benchmarks/gpu_operand_values.py — do a GEMM's operand values (Llama 4's zero-filled expert batches, weights
# of std 0.02) change its time and clock.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=200 bash benchmarks/results/collect_h100_next_s24d.sh
NAME=kc_s24d source benchmarks/results/device_common.sh
operand_values
finish
