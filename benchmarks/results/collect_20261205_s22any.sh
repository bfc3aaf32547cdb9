#!/bin/bash
# Whichever card a plain device call gets (twenty-second session): an H200 runs collect_h200_20261205_s22b.sh, an
# H100 collect_h100_20261205_s22h.sh (both compile the Triton GEMM key space on the host's CPUs).
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_20261205_s22any.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) exec bash benchmarks/results/collect_h200_20261205_s22b.sh ;;
  *H100*) GPU_NAME=H100 exec bash benchmarks/results/collect_h100_20261205_s22h.sh ;;
  *) echo "neither an H200 nor an H100: $(nvidia-smi -L)"; exit 3 ;;
esac
