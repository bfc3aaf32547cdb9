#!/bin/bash
# An H100 call prepared by the twenty-third session (2026-12-05), for when a plain device call gets an H100 while the
# masked SDPA and expand-copy sweeps still wait for an H200 (collect_h200_next_s23b.sh): the GPU tests (six cases have
# never run on a GPU: masked cuDNN and memory-efficient attention, two expand copies), then the two sweeps' independent
# test sets on the H100 — test rows only, for the transfer's check (RESULTS §39) once the H200 rows are trained on.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=400 bash benchmarks/results/collect_h100_next_s24.sh
FINISH_LOGS=tar
NAME=kc_s24h source benchmarks/results/device_common.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) ;; *) log "not an H100"; finish; exit 3;; esac
gpu_tests
measure h100_maskedtest attention_masked_test 1232 60
measure h100_expandtest copy_expand_test 1242 60
finish
