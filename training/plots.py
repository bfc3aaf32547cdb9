"""Evaluation figures (matplotlib, Agg): predicted vs measured per GPU, error CDF, feature importance, paired bars."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: points drawn per GPU panel (a seeded sample: scatter plots of 10^5 points say no more)
MAX_POINTS = 4000


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def predicted_vs_measured(rows: pd.DataFrame, title: str):
    """One log-log panel per GPU: learned and analytical predictions against the measurement."""
    plt = _pyplot()
    gpus = sorted(rows["gpu"].astype(str).unique())
    cols = min(3, len(gpus))
    fig, axes = plt.subplots(
        math.ceil(len(gpus) / cols), cols, figsize=(4.2 * cols, 4 * math.ceil(len(gpus) / cols)), squeeze=False
    )
    for ax, gpu in zip(axes.flat, gpus):
        part = rows[rows["gpu"].astype(str) == gpu]
        part = part.sample(min(len(part), MAX_POINTS), random_state=0)
        for model, color in (("analytical", "tab:gray"), ("learned", "tab:blue")):
            ax.scatter(part["measured"], part[model], s=3, alpha=0.4, color=color, label=model)
        lo, hi = part[["measured", "learned"]].min().min(), part[["measured", "learned"]].max().max()
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        ax.set(xscale="log", yscale="log", title=gpu, xlabel="measured (µs)", ylabel="predicted (µs)")
        ax.legend(loc="upper left", fontsize=7)
    for ax in list(axes.flat)[len(gpus) :]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def error_cdf(rows: pd.DataFrame, title: str):
    """Cumulative share of rows under each absolute percentage error, learned vs analytical."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for model, color in (("learned", "tab:blue"), ("analytical", "tab:gray")):
        ape = np.sort(np.abs(rows[model] / rows["measured"] - 1.0).to_numpy()) * 100
        ax.plot(ape, np.arange(1, len(ape) + 1) / len(ape), color=color, label=model)
    ax.set(xscale="log", xlabel="absolute percentage error (%)", ylabel="share of rows", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def feature_importance(importance: pd.Series, title: str, top: int = 25):
    """Horizontal bars of total gain for the ``top`` features."""
    plt = _pyplot()
    part = importance.head(top)[::-1]
    fig, ax = plt.subplots(figsize=(6, 0.25 * len(part) + 1))
    ax.barh(part.index, part.to_numpy())
    ax.set(xlabel="total gain", title=title)
    fig.tight_layout()
    return fig


def paired_bars(labels: list[str], series: dict[str, dict[str, list[float]]], title: str):
    """One panel per statistic (e.g. median, p90 APE), a bar per model and label, log scale."""
    plt = _pyplot()
    stats = list(next(iter(series.values())))
    fig, axes = plt.subplots(1, len(stats), figsize=(max(6.0, 0.9 * len(labels)) * len(stats), 4.5), squeeze=False)
    x, width = np.arange(len(labels)), 0.8 / len(series)
    colors = ("tab:gray", "tab:blue", "tab:orange", "tab:green")
    for ax, stat in zip(axes.flat, stats):
        for j, (model, values) in enumerate(series.items()):
            ax.bar(x + (j - (len(series) - 1) / 2) * width, values[stat], width, color=colors[j % 4], label=model)
        ax.set_xticks(x, labels, rotation=60, fontsize=7)
        ax.set(yscale="log", ylabel=stat, title=f"{title} — {stat}")
        ax.legend()
    fig.tight_layout()
    return fig
