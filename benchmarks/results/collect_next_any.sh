#!/bin/bash
# Whichever card a plain device call gets (written by the twenty-second session, whose one call ran s22b on an H200):
# an H200 runs collect_h200_next_s23.sh, an H100 collect_h100_20261205_s22h.sh (both compile the rest of the Triton
# GEMM key space on the host's CPUs; carry datasets/compile_facts/triton_gemm_space_h200.parquet).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_next_any.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) exec bash benchmarks/results/collect_h200_next_s23.sh ;;
  *H100*) GPU_NAME=H100 exec bash benchmarks/results/collect_h100_20261205_s22h.sh ;;
  *) echo "neither an H200 nor an H100: $(nvidia-smi -L)"; exit 3 ;;
esac
