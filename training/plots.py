"""Evaluation figures (matplotlib, Agg): predicted vs measured and error bars per GPU, error vs size, error CDF,
feature importance, paired bars."""

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


def _ape_pct(measured: pd.Series, predicted: pd.Series) -> np.ndarray:
    return np.abs(predicted.to_numpy() / measured.to_numpy() - 1.0) * 100


def predicted_vs_measured(rows: pd.DataFrame, title: str):
    """One panel per GPU on linear axes (to the 99th percentile of the measured latency, where the points are:
    a log-log plot over five decades hides 5% errors), learned and analytical against the measurement, with each
    model's median / p90 APE in the panel's title."""
    plt = _pyplot()
    gpus = sorted(rows["gpu"].astype(str).unique())
    cols = min(3, len(gpus))
    fig, axes = plt.subplots(
        math.ceil(len(gpus) / cols), cols, figsize=(4.6 * cols, 4.3 * math.ceil(len(gpus) / cols)), squeeze=False
    )
    for ax, gpu in zip(axes.flat, gpus):
        part = rows[rows["gpu"].astype(str) == gpu]
        errors = {m: _ape_pct(part["measured"], part[m]) for m in ("learned", "analytical")}
        part = part.sample(min(len(part), MAX_POINTS), random_state=0)
        for model, color in (("analytical", "tab:gray"), ("learned", "tab:blue")):
            ax.scatter(part["measured"], part[model], s=3, alpha=0.4, color=color, label=model)
        hi = float(np.quantile(part["measured"], 0.99)) * 1.05
        ax.plot([0, hi], [0, hi], color="black", lw=0.8)
        ax.set(xlim=(0, hi), ylim=(0, hi), xlabel="measured (µs), axes to its 99th percentile", ylabel="predicted (µs)")
        ax.set_title(
            f"{gpu}: learned {np.median(errors['learned']):.1f} / {np.quantile(errors['learned'], 0.9):.1f}%\n"
            f"analytical {np.median(errors['analytical']):.1f} / {np.quantile(errors['analytical'], 0.9):.1f}% "
            "(median / p90 APE)",
            fontsize=9,
        )
        ax.legend(loc="upper left", fontsize=7)
    for ax in list(axes.flat)[len(gpus) :]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def error_by_gpu(table: pd.DataFrame, title: str):
    """Median and p90 APE (%) per GPU, learned beside analytical: accuracy per architecture at a glance."""
    part = table[table["group_by"] == "gpu"]
    labels = sorted(part["group"].unique())
    series = {}
    for model in ("analytical", "learned"):
        mine = part[part["model"] == model].set_index("group").reindex(labels)
        series[model] = {
            "median APE (%)": (100 * mine["median_ape"]).tolist(),
            "p90 APE (%)": (100 * mine["p90_ape"]).tolist(),
        }
    return paired_bars(labels, series, title)


def error_vs_size(rows: pd.DataFrame, size_name: str, title: str):
    """Learned and analytical APE (%) against the op's size measure (log), with the median per size decile."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    sample = rows.sample(min(len(rows), 3 * MAX_POINTS), random_state=0)
    size = sample["size"].to_numpy(dtype=np.float64)
    edges = np.unique(np.quantile(size, np.linspace(0, 1, 11)))
    for model, color in (("analytical", "tab:gray"), ("learned", "tab:blue")):
        ape = _ape_pct(sample["measured"], sample[model])
        ax.scatter(size, ape, s=2, alpha=0.25, color=color)
        which = np.clip(np.searchsorted(edges, size, side="right") - 1, 0, len(edges) - 2)
        centers = [np.median(size[which == b]) for b in range(len(edges) - 1) if (which == b).any()]
        medians = [np.median(ape[which == b]) for b in range(len(edges) - 1) if (which == b).any()]
        ax.plot(centers, medians, color=color, lw=2, label=f"{model} (median per decile)")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set(xscale="log", ylim=(0, None), xlabel=size_name, ylabel="absolute percentage error (%)", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
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
            bars = ax.bar(
                x + (j - (len(series) - 1) / 2) * width, values[stat], width, color=colors[j % 4], label=model
            )
            ax.bar_label(bars, fmt="%.1f", fontsize=6)
        ax.set_xticks(x, labels, rotation=60, fontsize=7)
        ax.set(yscale="log", ylabel=stat, title=f"{title} — {stat}")
        ax.legend()
    fig.tight_layout()
    return fig
