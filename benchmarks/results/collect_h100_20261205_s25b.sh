#!/bin/bash
# The twenty-fifth session's second H100 call (2026-12-05). Its first (collect_h100_20261205_s25.sh) gave the H100 the
# masked SDPA and expand-copy training rows, and the models then took "H100" for "masked" or "expanded": the H100's
# unmasked cuDNN test rows (h100test4) went from 5.4% to 7-11% median, over-predicted 1.08-1.17x, and the plain-copy
# test rows' p90 from 11.2 to 18.7%, because those were the H100's only training rows. So the H100 gets the plain
# sweeps beside them: cuDNN SDPA (attention_cudnn_wide, seed 1253), flash and cuDNN (attention_wide2, 1254), plain
# copies (copy_wide, 1255); each budget-cut (plans are shuffled: a cut sweep is a uniform subset).
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s25b.sh
FINISH_LOGS=tar
NAME=kc_s25b source benchmarks/results/device_common.sh
measure cudnnwide attention_cudnn_wide 1253 210
measure wide2 attention_wide2 1254 160
measure copywide copy_wide 1255 $(budget 40)
finish
