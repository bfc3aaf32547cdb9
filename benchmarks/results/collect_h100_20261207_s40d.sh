#!/bin/bash
# The fortieth session's fourth device call: asked of an H200, it drew another H100, where collect_next_any.sh ran the
# H100 queue (collect_h100_next_s39.sh) a second time, because the queue had not been moved on after the first
# machine ran it (git_rev 8204aee, 478 s). Its 3,594 rows re-measure the first machine's descriptions; they are kept
# aside as a host-to-host record (RESULTS §58), not trained on. Do not re-run: it is this session's record.
# Its commands were collect_h100_20261207_s40.sh's, run with LIMIT=500; since then gpu_job refuses these passes (the
# card lists them) unless asked --again.
#   KERNELCAST_GIT_REV=<commit> LIMIT=500 bash benchmarks/results/collect_h100_20261207_s40d.sh
exec bash benchmarks/results/collect_h100_20261207_s40.sh
