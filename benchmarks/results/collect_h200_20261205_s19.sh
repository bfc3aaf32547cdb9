#!/bin/bash
# Device command prepared by the seventeenth session (2026-12-04) and extended by the eighteenth (2026-12-05), neither
# lent a device; run by the nineteenth session (2026-12-05) as its first call (its log: collect_h200_20261205_s19_call.log).
# Issue 14: the trsm and conv families' independent test sets first, then their training passes (they have one fitted
# constant each, from kernels inside hybrid layers); then the fifth layer set (collect/layer_job.py ARCH5_MODELS: the
# first measured with the inputs each model's own forward passes its layers — Llama 4, Gemma 4, GLM-5, DeepSeek-V3.2,
# and the architectures whose inputs changed with that; commit it as
# datasets/layers/kernelcast_h200_sxm_<date>_arch5_layers.jsonl and read it once: eval_layers.py --set arch5), with
# the kernels SDPA launches for an explicit bool or additive mask (sdpa_masks.jsonl: what those models pass it;
# predicted today as the unmasked kernel over the whole key range);
# issue 15: Qwen3.5's compiled hybrid layers at the training points (the sixteenth session's pass stalled at --stall-s
# 60 with 4 workers: 2 workers, 300 s here); then the GPU tests (they check the new trsm and conv workloads against
# float64). The nineteenth session split it in two calls: this one (six files back: four pass tarballs,
# arch5_layers.tar.gz, logs.tar.gz; the fifth layer set before the training passes, and sdpa_masks now 150 random
# shapes beside its fixed four, 60 s) and collect_h200_20261205_s19b.sh (the compiled hybrid layers).
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261205_s19.sh
FINISH_LOGS=tar
NAME=kc_s19 source benchmarks/results/device_common.sh
measure trsm_test trsm_test 1101 40
measure conv_test conv_test 1102 40
layerset arch5 arch5 100 sdpa_masks,layers
measure trsm trsm 1103 70
measure conv conv 1104 70
gpu_tests
finish
