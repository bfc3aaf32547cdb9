#!/bin/bash
# The device command (issue 13, sixth session of 2026-12-01) that compiled the fused MoE's compile facts on the lent
# nvidia-h200's CPUs, run inline right after collect_h200_20261201_attnfacts.sh on the same warm host (git_rev 102f464;
# 3,272 classes in 45 s, 15 processes, none failed); the facts were tabled on the dev machine with
# `kernelcast.collect.compile_facts.facts_table` into datasets/compile_facts/triton_moe_h200.parquet.
W=.device_out/kc1201mf; mkdir -p $W; python3 -m pip install -q --no-deps --no-build-isolation -e . > $W/pip.log 2>&1; timeout 480 python3 -m kernelcast.collect.compile_facts --datasets datasets/moe --backend triton --gpu H200 --workers 15 --out $W/facts_moe.jsonl 2> $W/facts.err | tail -2; wc -l < $W/facts_moe.jsonl; gzip -c $W/facts_moe.jsonl > $OUT/facts_moe.jsonl.gz; tail -c 2000 $W/facts.err > $OUT/facts_moe.err
