#!/bin/bash
# Device command (issue 14, fifteenth session of 2026-12-04), fourth call: pointwise kernels on sliced inputs
# (elementwise dense=false: SwiGLU's gate/up halves, fused-QKV slices), the training draw
# (collect/sweeps/elementwise_strided.toml, seed 0) and its independent test set (elementwise_strided_test.toml,
# seed 99) in separate passes. Mixtral's prefill expert activations on those halves ran 2x the model's answer.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261204_s15d.sh
NAME=kc1204s15d source benchmarks/results/device_common.sh
measure ewstrided elementwise_strided 0 150
measure ewstrided_test elementwise_strided_test 99 80
finish
