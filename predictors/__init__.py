"""Predictors: analytical models, learned-model loading, dispatch."""
