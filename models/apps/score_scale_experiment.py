"""The score-scale measurement of docs/walkthrough.md section 4: the gradient reaching the
queries with and without the 1/sqrt(d_k) of attention's scores (`score_scale_grads`,
`score_scale_summary`, and `plot_score_scale_grads`, which drew docs/img/score_scale_grad.png).
Functions only (no command); re-exported by experiments.py.
"""
from __future__ import annotations

import math

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F

from .figures import figure_class, save_figure, words

# the picture's words in Chinese (lang="zh"); formulas and names stay as written
ZH = {
    "||dL/dq|| of one query (log scale)": "一个 Query 的 ||dL/dq||（对数坐标）",
    "queries": "Query 个数",
    "Gradient reaching the queries, d_k = {d_k}, {n} queries":
        "到达 Query 的梯度，d_k = {d_k}，{n} 个 Query",
    "{label}: mean {mean:.3f}, median {median:.2g}":
        "{label}：均值 {mean:.3f}，中位数 {median:.2g}",
}


# ------------------------------------------------------------------------------------------
# score-scale: what dividing QK^T by sqrt(d_k) does to the gradient reaching the queries
# ------------------------------------------------------------------------------------------

def score_scale_grads(d_k=512, n_keys=10, n_queries=1000, seed=0):
    """||dL/dq|| for every query, with and without the 1/sqrt(d_k) of attention's scores.

    q (n_queries, d_k) and k (n_keys, d_k) are standard normal, A = softmax(q k^T [/ sqrt(d_k)])
    and L = sum(A * G) with G a fixed standard normal upstream gradient, so dL/dq is what
    softmax's backward lets through to the queries (and so to W^Q). Returns
    {"unscaled": array (n_queries,), "scaled": array (n_queries,)}; both runs draw the same
    q, k and G.
    """
    out = {}
    for name, scaled in (("unscaled", False), ("scaled", True)):
        tgx.manual_seed(seed)
        q = tgx.randn(n_queries, d_k, dtype="float64").requires_grad_()
        k = tgx.randn(n_keys, d_k, dtype="float64")
        s = q @ k.T                                               # (n_queries, n_keys)
        if scaled:
            s = s / math.sqrt(d_k)
        a = F.softmax(s, dim=-1)
        upstream = tgx.randn(n_queries, n_keys, dtype="float64")
        (a * upstream).sum().backward()
        out[name] = np.linalg.norm(q.grad.numpy(), axis=1)
    return out


def score_scale_summary(grads, small=1e-3):
    """{name: (mean, median, fraction of queries with ||dL/dq|| < small)}."""
    return {name: (float(g.mean()), float(np.median(g)), float((g < small).mean()))
            for name, g in grads.items()}


def plot_score_scale_grads(grads, path, d_k=512, lang="en"):
    """Histogram (log-spaced bins) of ||dL/dq|| per query, scaled vs unscaled; None without
    matplotlib. lang="zh" labels it in Chinese."""
    tr = words(ZH, lang)
    Figure = figure_class()
    if Figure is None:
        return None
    both = np.concatenate([grads["unscaled"], grads["scaled"]])
    # edges on whole decades, 2 bins each: the bins do not move with the last bits of the
    # smallest and largest norm (which depend on the path that computed softmax's derivative)
    lo = math.floor(np.log10(max(float(both[both > 0].min()), 1e-300)))
    hi = math.ceil(np.log10(float(both.max())))
    bins = np.logspace(lo, hi, 2 * (hi - lo) + 1)
    fig = Figure(figsize=(8, 4.2))
    ax = fig.subplots()
    for name, label, color in (("unscaled", "softmax(QK^T)", "tab:red"),
                               ("scaled", "softmax(QK^T / sqrt(d_k))", "tab:blue")):
        g = grads[name]
        ax.hist(g, bins=bins, alpha=0.6, color=color,
                label=tr("{label}: mean {mean:.3f}, median {median:.2g}").format(
                    label=label, mean=g.mean(), median=np.median(g)))
    ax.axvline(1e-3, color="k", ls=":", lw=1, label="1e-3")
    ax.set_xscale("log")
    ax.set_xlabel(tr("||dL/dq|| of one query (log scale)"))
    ax.set_ylabel(tr("queries"))
    ax.set_title(tr("Gradient reaching the queries, d_k = {d_k}, {n} queries").format(
        d_k=d_k, n=len(grads["scaled"])))
    ax.legend(fontsize=8, loc="upper left")
    return save_figure(fig, path, lang)
