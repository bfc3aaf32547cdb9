"""Measured-data collection: workloads, timers, plans, shards, dataset writing, importers."""
