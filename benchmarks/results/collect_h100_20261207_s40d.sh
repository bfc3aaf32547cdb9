#!/bin/bash
# The fortieth session's fourth device call: asked of an H200, it drew another H100, where collect_next_any.sh ran the
# H100 queue (collect_h100_next_s39.sh) a second time, because the queue had not been moved on after the first
# machine ran it (git_rev 8204aee, 478 s). Its 3,594 rows re-measure the first machine's descriptions; they are kept
# aside as a host-to-host record (RESULTS §58), not trained on. Do not re-run: it is this session's record.
#   KERNELCAST_GIT_REV=<commit> LIMIT=500 bash benchmarks/results/collect_next_any.sh
FINISH_LOGS=tar
NAME=kc_s39n source benchmarks/results/device_common.sh
measure efficient attention_efficient_wide 1393 170
measure tritonatt10 triton_attention_wide8 1392 110
measure tritongemm15 gemm_triton_wide15 1339 $(budget 30)
finish
