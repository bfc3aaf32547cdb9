#!/bin/bash
# Whichever card a plain device call gets (rewritten by the thirty-fourth session, whose two calls ran the H100 branch
# as collect_h100_20261206_s34.sh and _s34b.sh): an H200 runs collect_h200_next_s43.sh (masked SDPA over the whole box,
# cuBLAS bmm at six seeds, fusion graphs under every fusion choice, every head_dim masked), an H100
# collect_h100_next_s45.sh (cuDNN SDPA at a new seed, then Triton attention over wide6's pool).
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_next_any.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) exec bash benchmarks/results/collect_h200_next_s43.sh ;;
  *H100*) exec bash benchmarks/results/collect_h100_next_s45.sh ;;
  *) echo "neither an H200 nor an H100: $(nvidia-smi -L)"; exit 3 ;;
esac
