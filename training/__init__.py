"""Training: datasets, splits, the XGBoost trainer, evaluation, MLflow logging, export."""
