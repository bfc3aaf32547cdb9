#!/bin/bash
# An H100 call prepared by the twenty-fourth session (2026-12-05), for when a plain device call gets an H100 while the
# masked SDPA and expand-copy sweeps still wait for an H200 (collect_h200_next_s23b.sh): whole decoder layers on the
# H100, a GPU no model was trained on — the fourth layer set again (its first H100 pass ended at GPT-2's 1,200 tokens,
# a device-side assert that layer_call now avoids, with 40 of 170 points), then the fifth and sixth sets; read with
# `python benchmarks/eval_layers.py --set h100_arch4|h100_arch5|h100_arch6` (the H200's learned answers transferred).
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=420 bash benchmarks/results/collect_h100_next_s24c.sh
FINISH_LOGS=tar
NAME=kc_s24c source benchmarks/results/device_common.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) ;; *) log "not an H100"; finish; exit 3;; esac
layerset h100_arch4 arch4 150
layerset h100_arch5 arch5 90
layerset h100_arch6 arch6 90
finish
