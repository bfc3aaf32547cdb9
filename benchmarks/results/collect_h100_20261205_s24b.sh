#!/bin/bash
# An H100 call prepared by the twenty-fourth session (2026-12-05), for when a plain device call gets an H100 while the
# masked SDPA and expand-copy sweeps still wait for an H200 (collect_h200_next_s23b.sh): the rest of the masked test
# set on the H100 (its first call, collect_h100_20261205_s24.sh, measured 200 of 398 entries): carry
# .device_out/kc_s24h/h100_maskedtest (the first call's folder, unpacked there) and the pass resumes past what it holds.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=200 bash benchmarks/results/collect_h100_next_s24b.sh
FINISH_LOGS=tar
NAME=kc_s24h source benchmarks/results/device_common.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) ;; *) log "not an H100"; finish; exit 3;; esac
measure h100_maskedtest attention_masked_test 1232 120
finish
