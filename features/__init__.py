"""Pure functions from kernel descriptions and GPU specs to features."""
