#!/bin/bash
# An H100 call of the twenty-second session (2026-12-05), taken while no H200 would start: issue 13's "every GPU
# answered by the best validated model" has so far been checked on other GPUs only against aiconfigurator's tables
# (CUDA-graph timed, warm L2). Here the same harness as every H200 row (CUPTI, cold L2) measures, on a GPU no
# kernelcast row was ever measured on, the shapes of four H200 test sets (the same sweeps and seeds: the fourth cuBLAS
# set, the fourth flash/cuDNN set, the eager elementwise/reduction/copy test sets) and the sealed fourth layer set's
# points. Every row is a test row: nothing trains on them.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=520 bash benchmarks/results/collect_h100_20261205_s22h.sh
FINISH_LOGS=tar
NAME=kc_s22h source benchmarks/results/device_common.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) ;; *) log "not an H100"; finish; exit 3;; esac
measure h100_cublas gemm_cublas_test4 1016 90
measure h100_attention attention_test4 1020 80
measure h100_eager elementwise_test,reduction_test,copy_test 99 70
layerset h100_arch4 arch4 140
finish
