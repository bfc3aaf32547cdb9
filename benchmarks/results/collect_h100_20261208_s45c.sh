#!/bin/bash
# Second warm follow-up on the forty-fifth session's H100 (written on the spot): triton_attention_wide5's configs at four
# more shape seeds (their kernels compiled by s45b, so each draw takes about a minute), after a cuDNN SDPA draw (the
# H100 cuDNN set reads 4.2%).
FINISH_LOGS=tar
NAME=kc_s45c source benchmarks/results/device_common.sh
measure cudnnwide3 attention_cudnn_wide 1408 140
measure tritonatt19 triton_attention_wide5 1404 90
measure tritonatt20 triton_attention_wide5 1405 90
measure tritonatt21 triton_attention_wide5 1406 90
measure tritonatt22 triton_attention_wide5 1407 $(budget 30)
finish
