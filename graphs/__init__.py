"""Workloads made of kernels: a PyTorch call captured on meta tensors, lowered to kernel descriptions, predicted and
composed (device time, wall time with the host launch cost, CUDA graphs); whole model steps; profiler traces."""
