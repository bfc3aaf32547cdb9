#!/bin/bash
# Prepared by the twenty-eighth session (2026-12-06) for its second call, on whichever card comes. Issue 14: copies now
# say how far apart their runs sit in the source (the copy family's `stride`; RESULTS §43 found Falcon's expanded
# transposed key, rows of a whole context one head_dim apart, ran at 0.67 TB/s where the sweep's short rows ran at
# 1.2-1.7 with every other field the same). First the independent test set in its own pass (copy_stride_test, real
# layers' geometry), then the training pass (copy_stride: row length and stride drawn apart); then what the card's own
# next script would start with: on an H200 the masked SDPA test and training passes, on an H100 more Triton GEMM rows.
# Merge each, list copy_stride_test with role test and the rest train, `kernelcast train --op copy`.
# It ran on an H100 (LIMIT=520); its stride passes finished in 14 s each, so three warm follow-up calls on the same card
# measured another test seed and six more training seeds, then more Triton attention rows (their call logs are appended
# to this one's):
#   LIMIT=200 NAME=kc_s28c … measure stridetest2 copy_stride_test 1283 40   (KERNELCAST_GIT_REV unset)
#   LIMIT=200 NAME=kc_s28d … for s in 1282 1284 1285 1286 1287 1288; do measure stride_$s copy_stride $s 25; done
#   LIMIT=290 NAME=kc_s28e … measure tritonatt triton_attention_wide8 1272 $(budget 30)
#   KERNELCAST_GIT_REV=<commit> LIMIT=520 bash benchmarks/results/collect_h100_20261206_s28b.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) export GPU_NAME=H200 ;;
  *H100*) export GPU_NAME=H100 ;;
  *) echo "neither an H200 nor an H100: $(nvidia-smi -L)"; exit 3 ;;
esac
FINISH_LOGS=tar
NAME=kc_s28b source benchmarks/results/device_common.sh
measure stridetest copy_stride_test 1281 45
measure stride copy_stride 1280 140
if [ "$GPU_NAME" = H200 ]; then
  measure maskedtest attention_masked_test 1232 50
  measure masked attention_masked_wide 1231 $(budget 50)
else
  measure tritongemm gemm_triton_wide8 1273 $(budget 50)
fi
finish
