#!/bin/bash
# An H100 call prepared by the twenty-fifth session (2026-12-05): the training sweeps of the two kinds that hold only
# test rows so far, on the card that keeps coming while the H200 does not. SDPA with an explicit additive mask
# (attention_masked_wide, seed 1231: the masked cuDNN and efficient kernels) and copies of a stride-0 (expanded) source
# (copy_expand, seed 1241: repeat_kv, an expanded K or V). Same sweeps and seeds as the H200 plan
# (collect_h200_next_s23b.sh), so the two cards' rows cover the same shapes. Merge each, list it with role train,
# `kernelcast train --op attention` / `--op copy`. Two files back and the logs.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s25.sh
FINISH_LOGS=tar
NAME=kc_s25 source benchmarks/results/device_common.sh
measure masked attention_masked_wide 1231 280
measure expand copy_expand 1241 $(budget 40)
finish
