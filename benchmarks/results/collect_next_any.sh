#!/bin/bash
# Whichever card a plain device call gets (rewritten by the thirtieth session, whose first call ran the H200 branch as
# collect_h200_20261206_s30.sh and whose others ran on H100s as collect_h100_20261206_s30b.sh and …_s30.sh): an H200
# runs collect_h200_next_s31.sh (masked SDPA over every head_dim, then a ninth Triton GEMM config pool), an H100
# collect_h100_next_s31.sh (the masked head_dim sweep's second draw, then the Triton GEMM pools s30 opened).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_next_any.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) exec bash benchmarks/results/collect_h200_next_s31.sh ;;
  *H100*) exec bash benchmarks/results/collect_h100_next_s31.sh ;;
  *) echo "neither an H200 nor an H100: $(nvidia-smi -L)"; exit 3 ;;
esac
