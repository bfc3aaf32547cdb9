#!/bin/bash
# Whichever card a plain device call gets (written by the twenty-second session; the twenty-third's first call ran its
# H200 branch as collect_h200_20261205_s23.sh, its second the H100 branch as collect_h100_20261205_s22h.sh): an H200
# runs collect_h200_next_s23b.sh (GEMM time against operand values, then strided-copy, masked SDPA and m > 48k cuBLAS
# sweeps), an H100 collect_h100_next_s30.sh (Triton GEMM rows over three config pools the H100 has not timed;
# earlier H100 calls ran collect_h100_20261205_s24*.sh, …_s25*.sh, …_s27.sh, collect_h100_20261206_s28*.sh and
# …_s29.sh).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_next_any.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) exec bash benchmarks/results/collect_h200_next_s23b.sh ;;
  *H100*) GPU_NAME=H100 exec bash benchmarks/results/collect_h100_next_s30.sh ;;
  *) echo "neither an H200 nor an H100: $(nvidia-smi -L)"; exit 3 ;;
esac
