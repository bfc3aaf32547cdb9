#!/bin/bash
# Second device call of the twenty-second session (2026-12-05). Issue 14: the fifth layer set's Llama 4 misses are
# its eager expert stacks (one cuBLAS bmm over all experts, 0.3-36 ms, 930 TFLOP/s measured, 740 predicted: every
# earlier batched pass stopped at 200 GFLOP). Issue 13: fresh Triton GEMM configs miss most where ptxas spills
# (some configs get 32 registers and a 2 KB stack: 4-6x slower), which the register estimate cannot see.
# First a sixth eager layer set, sealed (layer_job --models arch6: the fifth set's 11 architectures at four other
# points; alone on the host, its spans are host-bound), then, while the host's CPUs compile the whole Triton GEMM
# key space for sm_90 (compile_facts --space triton_gemm, 14 workers; the keys already compiled, in
# datasets/compile_facts/triton_gemm_space_h200.parquet: carry it, are skipped), the expert-stack bmm test set (sealed) and
# its training pass.
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261205_s22b.sh
FINISH_LOGS=tar
NAME=kc_s22b source benchmarks/results/device_common.sh
layerset arch6 arch6 150
log "start compile facts, triton_gemm space (skipping the keys of datasets/compile_facts/triton_gemm_space_h200.parquet)"
( timeout $(( $(left) - 35 )) python3 -m kernelcast.collect.compile_facts --space triton_gemm --gpu H200 --workers 14 \
    --skip-table datasets/compile_facts/triton_gemm_space_h200.parquet --out "$W/gemm_space_facts.jsonl" \
    > "$W/gemm_space.log" 2>&1 ) &
SPACE=$!
measure bmm_experts_test gemm_cublas_bmm_experts_test 1222 60
measure bmm_experts gemm_cublas_bmm_experts 1221 120
wait $SPACE
log "end compile facts: $(grep -c . "$W/gemm_space_facts.jsonl") classes, $(grep -c '"error"' "$W/gemm_space_facts.jsonl") failed"
gzip -c "$W/gemm_space_facts.jsonl" > "$OUT/gemm_space_facts.jsonl.gz"
finish
