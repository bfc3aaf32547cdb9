#!/bin/bash
# Ran 2026-12-05 in the twenty-third session (320 s on an H100, git_rev d7248ea; call log beside it; the Triton
# attention pass ended its budget 233 rows short).
# An H100 call prepared by the twenty-third session (2026-12-05): what a plain device call runs when it gets an H100
# (collect_next_any.sh). The first H100 call (collect_h100_20261205_s22h.sh) measured the H200's cuBLAS, flash/cuDNN and
# eager test sets there, and serving now answers a Hopper GPU with the H200's answer moved to it (RESULTS §39); this
# one measures the H200 test sets of the backends that call left — fresh Triton GEMM configs, Triton attention, the
# Triton fused MoE, torch._grouped_mm (plain and MoE experts) — by the same sweeps and seeds, so that their moved
# answers have H100 figures too (`kernelcast evaluate --op <op> --split independent --export-unseen`). Every row is a
# test row: nothing trains on them.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s23c.sh
FINISH_LOGS=tar
NAME=kc_s23c source benchmarks/results/device_common.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) ;; *) log "not an H100"; finish; exit 3;; esac
measure h100_triton_gemm gemm_triton_test4 1004 150
measure h100_triton_attention triton_attention_test4 1009 90
measure h100_moe moe_test4 1010 90
measure h100_grouped gemm_grouped_test 99 50
measure h100_groupedmoe gemm_grouped_moe_test 1612 50
finish
