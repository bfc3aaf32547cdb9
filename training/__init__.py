"""Training: datasets, splits, XGBoost/GNN trainers, evaluation, MLflow logging, export."""
