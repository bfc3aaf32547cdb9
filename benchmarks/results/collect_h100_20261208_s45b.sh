#!/bin/bash
# Warm follow-up on the forty-fifth session's H100 (written on the spot): Triton attention over triton_attention_wide5's
# configs at two new shape seeds (the H100 Triton attention set reads 6.4%, target <=5%), then memory-efficient SDPA.
FINISH_LOGS=tar
NAME=kc_s45b source benchmarks/results/device_common.sh
measure tritonatt17 triton_attention_wide5 1402 220
measure tritonatt18 triton_attention_wide5 1403 $(budget 30)
finish
