#!/bin/bash
# Ran 2026-12-05 in the twenty-third session (500 s on an H200; call log beside it). Device command prepared by the nineteenth session (2026-12-05), rewritten by the twentieth and twenty-second (no
# device for it in any of them; the twenty-second's one call went to collect_h200_20261205_s22b.sh): the next session
# with an H200 runs it first (rename it to collect_h200_<date>_s<n>.sh, keep its call
# log beside it). Issue 14: SDPA's memory-efficient kernel (what torch runs past head_dim 256 — Gemma 4's
# full-attention layers — for fp32, and for a masked call on flash GPUs; answered analytically today): its independent
# test set first, then its training pass (collect/sweeps/attention_efficient_{test,wide}.toml; merge, list the test
# file with role test, `kernelcast train --op attention` — move "efficient" from unmeasured_backends into backends in
# features/ops/attention.py first, which changes the model's columns); then which kernel SDPA picks on its own past
# head_dim 256, grouped and in fp32 (layer_job --parts sdpa_backend: checks graphs.lower.attention_backend), and a
# fresh draw of masked-SDPA shapes (--mask-seed 1: a test set for the attention model's mask rows that no shape of the
# first draw is in; collect/masks_merge.py --test maskedtest2); the twenty-first session added copies of sources that
# repeat along a stride-0 dim (layer_job --parts broadcast_copy: repeat_kv and Falcon's expanded K and V beside plain
# copies of the same output, the data for a copy field of the repeats); then the GPU tests (the efficient kernel against
# float64 among them). Meanwhile 12 of the host's CPUs compile the rest of the Triton GEMM key space (1,894 keys;
# pass carry=["datasets/compile_facts/triton_gemm_space_h200.parquet"] so its 20,054 are skipped; RESULTS §38): with
# the whole space, the Triton GEMM features can read compiled registers and stack. Five files back.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_next_s23.sh
FINISH_LOGS=tar
NAME=kc_s23 source benchmarks/results/device_common.sh
space_start 12 40
measure efficient_test attention_efficient_test 1201 60
measure efficient attention_efficient_wide 1202 150
log "start sdpa_backend, broadcast_copy and sdpa_masks seed 1"
timeout 150 python3 -m kernelcast.collect.layer_job --out "$W/masks2" --parts sdpa_backend,broadcast_copy,sdpa_masks --mask-seed 1 \
    --mask-shapes 300 --mask-budget-s 70 > "$W/masks2_layers.log" 2>&1
log "end rc=$? $(cat "$W"/masks2/*.jsonl | grep -c .) rows, $(cat "$W"/masks2/*.jsonl | grep -c '"error"') errors"
tar czf "$OUT/masks2_layers.tar.gz" -C "$W" masks2
gpu_tests
space_finish
finish
