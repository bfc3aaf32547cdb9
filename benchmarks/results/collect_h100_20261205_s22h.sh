#!/bin/bash
# Ran 2026-12-05 in the twenty-third session (178 s on an H100, git_rev baf2392; call log beside it): gpt2 at 1,200 tokens
# (past its 1,024 positions) raised a device-side assert that ended the layer pass after the eight models (40 points).
# An H100 call of the twenty-second session (2026-12-05), taken while no H200 would start. Issue 13's "every GPU
# answered by the best validated model" has so far been checked on other GPUs only against aiconfigurator's tables
# (CUDA-graph timed, warm L2). Here the harness of every H200 row (CUPTI, cold L2) measures, on a GPU no kernelcast
# row was ever measured on, the sealed fourth layer set's points (alone on the host first: their spans are
# host-bound), then the shapes of four H200 test sets (the same sweeps and seeds: the fourth cuBLAS set, the fourth
# flash/cuDNN set, the eager elementwise/reduction/copy test sets), while the host's CPUs compile the Triton GEMM key
# space for sm_90 (H100 and H200 alike; the keys in datasets/compile_facts/triton_gemm_space_h200.parquet, carried, are skipped). Every
# measured row is a test row: nothing trains on them.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h100_20261205_s22h.sh
FINISH_LOGS=tar
NAME=kc_s22h source benchmarks/results/device_common.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) ;; *) log "not an H100"; finish; exit 3;; esac
layerset h100_arch4 arch4 140
space_start 14 35
measure h100_cublas gemm_cublas_test4 1016 80
measure h100_attention attention_test4 1020 70
measure h100_eager elementwise_test,reduction_test,copy_test 99 60
space_finish
finish
