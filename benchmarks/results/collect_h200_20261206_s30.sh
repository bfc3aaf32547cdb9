#!/bin/bash
# Device command prepared by the twenty-third session (2026-12-05) after its first call (collect_h200_20261205_s23.sh):
# the next H200 call runs it first (rename it to collect_h200_<date>_s<n>.sh, keep its call log beside it). Issue 14:
# SDPA with an explicit mask — the H200's masked cuDNN kernel missed its held-out shapes by 17-19% median with 203
# training rows from layer_job; collect/workloads/attention.py now measures a `mask` description with the additive
# window models pass (MASK_WINDOW), so masked calls are swept like any other: the GPU tests first (the masked cuDNN and
# efficient cases against float64 among them), then the independent test set in its own pass (attention_masked_test,
# 361 shapes), then the training pass (attention_masked_wide, 1,440). Merge each with `kernelcast collect merge`, list
# the test file with role test, `kernelcast train --op attention`. Then copies of a source that repeats along a
# stride-0 dim (repeat_kv, an expanded K or V: the copy family's new `expand` field, which no training row holds yet —
# the 13 probe rows of datasets/layers/…_broadcast_copy.jsonl ran at 0.71-0.82x a plain copy, over-predicted
# 1.12-1.61x): its independent test set (copy_expand_test, 221 shapes of real layers' geometry) in its own pass, then
# the training pass (copy_expand, 537); merge, list, `kernelcast train --op copy`. First (added by the twenty-fourth
# session), benchmarks/gpu_operand_values.py: do a GEMM's operand values (Llama 4's zero-filled expert batches) change
# its time. Then (added by the twenty-sixth session) compute-bound cuBLAS GEMMs past m = 48k (gemm_cublas_bigm2, 275
# entries): merge, list as train, `kernelcast train --op gemm`, read bigmtest; and after the operand values the
# grouped-GEMM probe of RESULTS §42 (benchmarks/gpu_grouped_mm_probe.py, its table in logs.tar.gz). The expand-copy
# passes were dropped by the twenty-eighth session: RESULTS §43 found expand rows without the source's run spacing
# made Falcon worse, so they wait for that field. The twenty-eighth session added that field (the copy family's
# `stride`) and measured its sweeps on an H100 (collect_h100_20261206_s28b.sh); the H200's own run here, after the GPU
# tests: the test set (copy_stride_test, list it role test) and six training draws of copy_stride in one folder
# and one of copy_repeat (repeat_kv's own layout) in one folder (stride.tar.gz: merge its folders together, role
# train), then `kernelcast train --op copy`.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_next_s23b.sh
FINISH_LOGS=tar
NAME=kc_s23b source benchmarks/results/device_common.sh
operand_values
grouped_mm_probe
gpu_tests
measure stridetest copy_stride_test 1291 45
measure_many stride 40 copy_stride:1290 copy_stride:1292 copy_stride:1293 copy_stride:1294 copy_stride:1295 \
  copy_stride:1296 copy_repeat:1297
measure maskedtest attention_masked_test 1232 50
measure masked attention_masked_wide 1231 130
measure bigm2 gemm_cublas_bigm2 1271 90
finish
