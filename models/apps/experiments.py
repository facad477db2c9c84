"""The LN-placement experiments of Xiong et al. 2020, "On Layer Normalization in the Transformer
Architecture", on tinygradx models (`tinygradx experiment ln-grad|warmup`).

ln-grad: at initialisation, Post-LN's gradients are large near the output and the last layer's
    gradient does not shrink with depth; Pre-LN's are of one size across layers and shrink as
    the model gets deeper (their Theorem 1 and Figure 3). We build Post-LN and Pre-LN
    encoder-decoders (make_model, its own Xavier init), run one forward/backward on a fixed
    random batch and record ||dL/dW||_F of W^Q, W^K, W^V, W^O (self-attention), W_1, W_2 in
    every decoder layer, averaged over a few seeds. The encoder alone and a GPT are options.
warmup: the consequence. At a large learning rate, Post-LN without warm-up trains badly (or not
    at all), with warm-up it trains; Pre-LN trains without warm-up.
score-scale (functions only, for docs/walkthrough.md section 4): the gradient reaching the
    queries with and without the 1/sqrt(d_k) of attention's scores (`score_scale_grads`,
    `score_scale_summary`, `plot_score_scale_grads`, which drew docs/img/score_scale_grad.png).

Both are functions returning numbers (`ln_grad_norms`, `ln_grad_experiment`, `warmup_curves`)
so tests can call them on small sizes; `main` writes the CSV files, the plots (with matplotlib)
and prints the summary. Set OPENBLAS_NUM_THREADS=1 on a busy machine: numpy's threaded BLAS is
several times slower than one thread on these small matrices when the cores are shared.
"""
from __future__ import annotations

import csv
import math
import os
import time

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F

from tinygradx.models.nets.transformer import make_model

MATRICES = ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")
PLACEMENTS = ("post", "pre")
_LABEL = {"post": "Post-LN", "pre": "Pre-LN"}
# the pictures' words in Chinese (lang="zh"); formulas and names stay as written
ZH = {
    "layer (1 = bottom, L = next to the output)": "层（1 = 最底层，L = 紧挨输出）",
    "{label}: {m} at initialisation": "{label}：初始化时的 {m}",
    "number of layers L": "层数 L", "last layer ||dL/dW_2||_F": "最后一层的 ||dL/dW_2||_F",
    "last layer vs depth": "最后一层与深度",
    "l (input of layer l; {L} = output of the stack)": "l（第 l 层的输入；{L} = 整个堆叠的输出）",
    "residual stream scale, L={L}": "残差流的尺度，L={L}",
    "decoder layers of the encoder-decoder": "编码器—解码器的解码器层", "encoder": "编码器",
    "Xiong et al. 2020, {what}, d_model={d}: mean over {n} initialisations":
        "Xiong et al. 2020，{what}，d_model={d}：{n} 次初始化的平均值",
    "||dL/dq|| of one query (log scale)": "一个 Query 的 ||dL/dq||（对数坐标）",
    "queries": "Query 个数",
    "Gradient reaching the queries, d_k = {d_k}, {n} queries":
        "到达 Query 的梯度，d_k = {d_k}，{n} 个 Query",
    "{label}: mean {mean:.3f}, median {median:.2g}":
        "{label}：均值 {mean:.3f}，中位数 {median:.2g}",
    "step": "步数", "training loss (moving mean)": "训练损失（滑动平均）",
    "Adam at lr={lr:g}: Post-LN needs warm-up": "Adam，lr={lr:g}：Post-LN 需要 warm-up",
    "warm-up {wu} steps": "warm-up {wu} 步", "no warm-up": "无 warm-up",
}


# ------------------------------------------------------------------------------------------
# ln-grad: gradient norms at initialisation
# ------------------------------------------------------------------------------------------

def _placement(norm):
    if norm not in PLACEMENTS:
        raise ValueError(f"norm must be 'post' or 'pre', got {norm!r}")
    return norm == "pre"


def _encoder_grads(norm_first, n_layers, d_model, n_head, batch, seq_len, vocab, data_seed):
    """One forward/backward of make_model's encoder alone on a fixed random batch.

    The loss is the cross-entropy of the generator's prediction of the next token of a random
    sequence at every position: at initialisation any loss of this kind gives a gradient of the
    same size at the output, and random tokens make the batch a fixed function of data_seed.
    """
    model = make_model(vocab, vocab, N=n_layers, d_model=d_model, d_ff=4 * d_model, h=n_head,
                       dropout=0.0, norm_first=norm_first, max_len=seq_len)
    rng = np.random.default_rng(data_seed)
    ids = rng.integers(0, vocab, size=(batch, seq_len + 1))         # (B, S + 1)
    src = ids[:, :-1]                                               # (B, S)
    targets = ids[:, 1:].reshape(-1)                                # (B*S,) the next tokens
    x = model.pos_encoding(model.src_embed(tgx.tensor(src)))        # X = sqrt(d) Emb + PE
    hidden = []
    for layer in model.encoder.layers:
        hidden.append(x)
        x = layer(x)                                                # (B, S, d)
    hidden.append(x)
    logp = model.generator(model.encoder.norm(x))                   # (B, S, V)
    loss = F.cross_entropy(logp.reshape(batch * seq_len, vocab),   # (B*S, V)
                           tgx.tensor(targets))
    loss.backward()
    return loss.item(), _layer_grad_norms(model.encoder.layers), hidden


def _layer_grad_norms(layers):
    """{matrix name: [||dL/dW||_F per layer]} for W^Q, W^K, W^V, W^O (self-attention), W_1, W_2."""
    grads = {name: [] for name in MATRICES}
    for layer in layers:
        sa, ff = layer.self_attn, layer.ff
        for name, p in zip(MATRICES, (sa.w_q.weight, sa.w_k.weight, sa.w_v.weight,
                                      sa.w_o.weight, ff.w_1.weight, ff.w_2.weight), strict=True):
            grads[name].append(float(np.linalg.norm(p.grad._data)))
    return grads


def _decoder_grads(norm_first, n_layers, d_model, n_head, batch, seq_len, vocab, data_seed):
    """The full encoder-decoder (N = n_layers each) on a random source and target, measured in
    the decoder: W^Q..W^O are its self-attention's. The cross-attention adds the encoder's
    output H to the decoder stream at every layer, a term whose size does not depend on the
    stream, which is what makes Post-LN's profile steep here."""
    model = make_model(vocab, vocab, N=n_layers, d_model=d_model, d_ff=4 * d_model, h=n_head,
                       dropout=0.0, norm_first=norm_first, max_len=seq_len)
    rng = np.random.default_rng(data_seed)
    src = rng.integers(0, vocab, size=(batch, seq_len))             # (B, S)
    tgt = rng.integers(0, vocab, size=(batch, seq_len + 1))         # (B, T + 1)
    memory = model.encode(tgx.tensor(src))                          # H: (B, S, d)
    y = model.pos_encoding(model.tgt_embed(tgx.tensor(tgt[:, :-1])))  # (B, T, d)
    hidden = []
    for layer in model.decoder.layers:
        hidden.append(y)
        y = layer(y, memory)                                        # (B, T, d)
    hidden.append(y)
    logp = model.generator(model.decoder.norm(y))                   # (B, T, V)
    loss = F.cross_entropy(logp.reshape(batch * seq_len, vocab),    # (B*T, V)
                           tgx.tensor(tgt[:, 1:].reshape(-1)))      # (B*T,)
    loss.backward()
    return loss.item(), _layer_grad_norms(model.decoder.layers), hidden


def _gpt_grads(norm_first, n_layers, d_model, n_head, batch, seq_len, vocab, data_seed):
    """The same for a GPT (LM loss: the next token of a random sequence), re-initialised
    Xavier-uniform like the encoder-decoder (GPT-2's N(0, 0.02) with scaled residual
    projections is a different experiment): each of W^Q, W^K, W^V, a (C, C) slice of c_attn,
    gets its own fan-in/fan-out."""
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    model = GPT(GPTConfig(block_size=seq_len, vocab_size=vocab, n_layer=n_layers,
                          n_head=n_head, n_embd=d_model, dropout=0.0, norm_first=norm_first))
    C = d_model
    a = math.sqrt(6.0 / (2 * C))
    for name, p in model.named_parameters():
        if name.endswith("c_attn.weight"):
            tgx.nn.init.uniform_(p, -a, a)
        elif p.ndim == 2:
            tgx.nn.init.xavier_uniform_(p)
    rng = np.random.default_rng(data_seed)
    ids = rng.integers(0, vocab, size=(batch, seq_len + 1))         # (B, T + 1)
    idx = tgx.tensor(ids[:, :-1])                                   # (B, T)
    tr = model.transformer
    x = tr.wte(idx) + tr.wpe(np.arange(seq_len))                    # (B, T, C)
    hidden = []
    for block in tr.h:
        hidden.append(x)
        x = block(x)
    hidden.append(x)
    logits = model.lm_head(tr.ln_f(x))                              # (B, T, V)
    loss = F.cross_entropy(logits.reshape(batch * seq_len, vocab),  # (B*T, V)
                           tgx.tensor(ids[:, 1:].reshape(-1)))      # (B*T,)
    loss.backward()
    grads = {name: [] for name in MATRICES}
    for block in tr.h:
        g_qkv = block.attn.c_attn.weight.grad._data                  # (3C, C): Q, K, V rows
        mats = (g_qkv[:C], g_qkv[C:2 * C], g_qkv[2 * C:], block.attn.c_proj.weight.grad._data,
                block.mlp.c_fc.weight.grad._data, block.mlp.c_proj.weight.grad._data)
        for name, g in zip(MATRICES, mats, strict=True):
            grads[name].append(float(np.linalg.norm(g)))
    return loss.item(), grads, hidden


def ln_grad_norms(norm, n_layers, d_model=64, seed=0, model="decoder", n_head=4, batch=8,
                  seq_len=16, vocab=256, data_seed=1234):
    """||dL/dW||_F of every W^Q, W^K, W^V, W^O, W_1, W_2 at initialisation.

    norm: 'post' or 'pre'. model: 'decoder' (the default: make_model's encoder-decoder with N =
    n_layers, Xavier init, sqrt(d) Emb + PE; the decoder's layers are measured), 'encoder'
    (make_model's encoder alone, the loss read from its output) or 'gpt' (GPT re-initialised
    Xavier). The loss is the cross-entropy of the next token of a random sequence. `seed` draws
    the weights, `data_seed` the batch (batch random sequences of seq_len tokens from a
    vocabulary of `vocab`; 256 makes most tokens of a batch distinct), so varying seed alone
    re-draws the model on the same batch.

    Returns {"norm", "n_layers", "seed", "loss", "grad": {matrix: array (n_layers,) bottom to
    top}, "x_norm2": array (n_layers + 1,)}, where x_norm2[l] is E||x_l||^2 / d_model of the
    residual stream entering layer l (the last entry is the stack's output before any final
    LayerNorm): Xiong et al.'s Lemma says it grows linearly in l for Pre-LN.
    """
    norm_first = _placement(norm)
    tgx.manual_seed(seed)
    run = {"encoder": _encoder_grads, "decoder": _decoder_grads, "gpt": _gpt_grads}.get(model)
    if run is None:
        raise ValueError(f"model must be 'encoder', 'decoder' or 'gpt', got {model!r}")
    loss, grads, hidden = run(norm_first, n_layers, d_model, n_head, batch, seq_len, vocab,
                              data_seed)
    x_norm2 = np.array([float((h._data.astype(np.float64) ** 2).sum(-1).mean()) / d_model
                        for h in hidden])
    return {"norm": norm, "n_layers": n_layers, "seed": seed, "loss": loss,
            "grad": {k: np.array(v) for k, v in grads.items()}, "x_norm2": x_norm2}


def ln_grad_experiment(layers=(2, 6, 12), d_model=64, seeds=(0, 1, 2, 3, 4), model="decoder",
                       **kw):
    """ln_grad_norms for both placements, every depth in `layers` and every seed.

    Returns {"runs": [ln_grad_norms results], "mean": {(norm, L): {matrix: (L,) mean over
    seeds, "x_norm2": (L + 1,)}}, "summary": see ln_grad_summary}.
    """
    runs, mean = [], {}
    for norm in PLACEMENTS:
        for L in layers:
            rs = [ln_grad_norms(norm, L, d_model, s, model=model, **kw) for s in seeds]
            runs.extend(rs)
            mean[norm, L] = {m: np.mean([r["grad"][m] for r in rs], axis=0) for m in MATRICES}
            mean[norm, L]["x_norm2"] = np.mean([r["x_norm2"] for r in rs], axis=0)
    return {"runs": runs, "mean": mean, "summary": ln_grad_summary(mean, layers),
            "layers": tuple(layers), "d_model": d_model, "seeds": tuple(seeds), "model": model}


def ln_grad_summary(mean, layers, matrix="W_2"):
    """The numbers the paper's claims are about, from seed-averaged norms.

    ratio[norm][i]: top/bottom layer ||dL/dW|| at depth layers[i]; last[norm][i]: the last
    layer's ||dL/dW||; checks: the three qualitative claims, each True/False.
    """
    ratio = {n: np.array([mean[n, L][matrix][-1] / mean[n, L][matrix][0] for L in layers])
             for n in PLACEMENTS}
    last = {n: np.array([mean[n, L][matrix][-1] for L in layers]) for n in PLACEMENTS}
    growth = {n: last[n] / last[n][0] for n in PLACEMENTS}          # relative to the shallowest
    checks = {
        # Post-LN's gradients grow toward the output more than Pre-LN's, at every depth
        "post_ratio_above_pre": bool(np.all(ratio["post"] > ratio["pre"])),
        # in the deepest model Post-LN's top layer gets more gradient than its bottom one
        "post_grows_toward_output": bool(ratio["post"][-1] > 1.0),
        # Pre-LN: the last layer's gradient shrinks as the model gets deeper
        "pre_last_shrinks": bool(np.all(np.diff(last["pre"]) < 0)),
        # Post-LN: it does not (Theorem 1: independent of L); allow 20% of noise downwards
        "post_last_does_not_shrink": bool(np.all(growth["post"] > 0.8)),
        # and the contrast itself: Post-LN keeps more of its last-layer gradient than Pre-LN
        "post_keeps_more_than_pre": bool(np.all(growth["post"][1:] > growth["pre"][1:])),
    }
    return {"matrix": matrix, "layers": tuple(layers), "ratio": ratio, "last": last,
            "growth": growth, "checks": checks}


def format_ln_grad(result):
    """The text summary printed by `tinygradx experiment ln-grad`."""
    s, layers, mean = result["summary"], result["layers"], result["mean"]
    d = result["d_model"]
    what = {"decoder": "the decoder layers of make_model's encoder-decoder",
            "encoder": "make_model's encoder", "gpt": "a GPT with Xavier init"}[result["model"]]
    out = [f"LN placement at initialisation: {what}, d_model={d}, d_ff={4 * d}, Xavier-uniform "
           f"init, one forward/backward on a fixed batch, mean over seeds "
           f"{list(result['seeds'])}"]
    for m in ("W_2", "W_1"):
        out.append(f"\n||dL/d{m}||_F per layer, bottom -> top:")
        for n in PLACEMENTS:
            for L in layers:
                vals = " ".join(f"{v:.3f}" for v in mean[n, L][m])
                out.append(f"  {_LABEL[n]:<8} L={L:<3} {vals}")
    head = "".join(f"{'L=' + str(L):>9}" for L in layers)
    out.append(f"\ntop/bottom layer ||dL/dW_2||   {head}")
    for n in PLACEMENTS:
        out.append(f"  {_LABEL[n]:<28}" + "".join(f"{v:9.2f}" for v in s["ratio"][n]))
    out.append(f"last layer ||dL/dW_2||        {head}")
    for n in PLACEMENTS:
        out.append(f"  {_LABEL[n]:<28}" + "".join(f"{v:9.3f}" for v in s["last"][n]))
    out.append(f"  {'Post-LN / its L=' + str(layers[0]):<28}"
               + "".join(f"{v:9.2f}" for v in s["growth"]["post"]))
    out.append(f"  {'Pre-LN / its L=' + str(layers[0]):<28}"
               + "".join(f"{v:9.2f}" for v in s["growth"]["pre"]))
    out.append(f"  {'sqrt(' + str(layers[0]) + '/L) for reference':<28}"
               + "".join(f"{math.sqrt(layers[0] / L):9.2f}" for L in layers))
    Lmax = layers[-1]
    out.append(f"E||x_l||^2/d of the residual stream, l = 0..{Lmax} (L={Lmax}):")
    for n in PLACEMENTS:
        out.append(f"  {_LABEL[n]:<8} " + " ".join(f"{v:.2f}" for v in mean[n, Lmax]["x_norm2"]))
    text = {"post_ratio_above_pre": "Post-LN's top/bottom ratio exceeds Pre-LN's at every L",
            "post_grows_toward_output": f"Post-LN's top/bottom ratio is > 1 at L={layers[-1]}",
            "pre_last_shrinks": "Pre-LN's last-layer gradient shrinks as L grows",
            "post_last_does_not_shrink": "Post-LN's last-layer gradient does not shrink as "
                                         "L grows (> 0.8x its shallowest value)",
            "post_keeps_more_than_pre": "Post-LN keeps more of its last-layer gradient "
                                        "than Pre-LN as L grows"}
    out.append("checks:")
    for k, ok in s["checks"].items():
        out.append(f"  [{'ok' if ok else 'FAILED'}] {text[k]}")
    return "\n".join(out)


def write_ln_grad(result, out_dir, lang="en"):
    """ln_grad.csv (every run, layer and matrix), ln_grad_mean.csv (seed means per layer, with
    E||x_l||^2/d), and ln_grad.png with matplotlib (labels in `lang`). Returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, "ln_grad.csv"), os.path.join(out_dir, "ln_grad_mean.csv")]
    with open(paths[0], "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["placement", "n_layers", "seed", "layer", "matrix", "grad_norm"])
        for r in result["runs"]:
            for m in MATRICES:
                for i, v in enumerate(r["grad"][m]):
                    w.writerow([r["norm"], r["n_layers"], r["seed"], i, m, f"{v:.6g}"])
    with open(paths[1], "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["placement", "n_layers", "layer", *MATRICES, "x_norm2_in"])
        for (n, L), mean in result["mean"].items():
            for i in range(L):
                w.writerow([n, L, i, *(f"{mean[m][i]:.6g}" for m in MATRICES),
                            f"{mean['x_norm2'][i]:.6g}"])
    png = plot_ln_grad(result, os.path.join(out_dir, "ln_grad.png"), lang)
    if png:
        paths.append(png)
    return paths


def plot_ln_grad(result, path, lang="en"):
    from .pictures import figure_class, save_figure, words
    tr = words(ZH, lang)
    Figure = figure_class()
    if Figure is None:
        return None
    layers, mean, s = result["layers"], result["mean"], result["summary"]
    fig = Figure(figsize=(13, 7.5))
    axes = fig.subplots(2, 3)
    for row, m in enumerate(("W_2", "W_1")):
        top = max(float(mean[n, L][m].max()) for n in PLACEMENTS for L in layers) * 1.1
        for col, n in enumerate(PLACEMENTS):
            ax = axes[row][col]
            for L in layers:
                ax.plot(np.arange(1, L + 1), mean[n, L][m], "o-", ms=3, label=f"L={L}")
            ax.set_ylim(0, top)
            ax.set_xlabel(tr("layer (1 = bottom, L = next to the output)"))
            ax.set_ylabel(f"||dL/d{m}||_F")
            ax.set_title(tr("{label}: {m} at initialisation").format(label=_LABEL[n], m=m))
            ax.legend(fontsize=8)
    ax = axes[0][2]
    for n in PLACEMENTS:
        ax.plot(layers, s["last"][n], "o-", label=_LABEL[n])
    ref = s["last"]["pre"][0] * np.sqrt(layers[0] / np.asarray(layers, dtype=float))
    ax.plot(layers, ref, "k:", label="Pre-LN at L=%d x sqrt(%d/L)" % (layers[0], layers[0]))
    ax.set_xlabel(tr("number of layers L"))
    ax.set_ylabel(tr("last layer ||dL/dW_2||_F"))
    ax.set_ylim(0, None)
    ax.set_title(tr("last layer vs depth"))
    ax.legend(fontsize=8)
    ax = axes[1][2]
    Lmax = layers[-1]
    for n in PLACEMENTS:
        ax.plot(np.arange(Lmax + 1), mean[n, Lmax]["x_norm2"], "o-", ms=3, label=_LABEL[n])
    ax.set_xlabel(tr("l (input of layer l; {L} = output of the stack)").format(L=Lmax))
    ax.set_ylabel("E||x_l||^2 / d")
    ax.set_title(tr("residual stream scale, L={L}").format(L=Lmax))
    ax.legend(fontsize=8)
    what = {"decoder": "decoder layers of the encoder-decoder", "encoder": "encoder",
            "gpt": "GPT"}[result["model"]]
    fig.suptitle(tr("Xiong et al. 2020, {what}, d_model={d}: mean over {n} initialisations")
                 .format(what=tr(what), d=result["d_model"], n=len(result["seeds"])),
                 fontsize=11)
    return save_figure(fig, path, lang)


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
    from .pictures import figure_class, save_figure, words
    tr = words(ZH, lang)
    Figure = figure_class()
    if Figure is None:
        return None
    both = np.concatenate([grads["unscaled"], grads["scaled"]])
    lo = max(float(both[both > 0].min()), 1e-300)
    bins = np.logspace(np.log10(lo), np.log10(float(both.max())), 60)
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


# ------------------------------------------------------------------------------------------
# warmup: training with and without learning-rate warm-up at a large learning rate
# ------------------------------------------------------------------------------------------

def warmup_config(norm, warmup, steps=200, lr=1e-2, d_model=64, n_layer=2, batch_size=32,
                  seed=0, task="reverse", n_train=2000):
    """The TrainConfig of one warmup run: a tiny encoder-decoder on a toy translation task,
    Adam (beta2 0.98, as Vaswani et al.) at a constant rate `lr` after `warmup` linear steps.

    No gradient clipping and no dropout or weight decay: clipping caps the first updates the
    same way warm-up does and would hide the effect we want to see.
    """
    from tinygradx.models.training.trainer import TrainConfig
    return TrainConfig(task=task, seed=seed, n_train=n_train, n_layer=n_layer, d_model=d_model,
                       n_head=4, dropout=0.0, norm_first=_placement(norm), optimizer="adam",
                       lr=lr, min_lr=lr, schedule="cosine", warmup=warmup, weight_decay=0.0,
                       beta2=0.98, grad_clip=0.0, batch_size=batch_size, max_steps=steps,
                       progress=False)


def warmup_curves(steps=200, warmup=50, lr=1e-2, d_model=64, n_layer=2, batch_size=32, seed=0,
                  task="reverse", placements=PLACEMENTS, log=None):
    """Train Post-LN and Pre-LN models with warm-up 0 and `warmup` steps.

    Returns {(norm, warmup_steps): training loss per step, array (steps,)} (NaN after a
    non-finite loss). With warm-up the rate rises linearly over `warmup` steps, then stays at
    lr (warmup_cosine with min_lr = lr), so the only difference is the first steps.
    """
    from tinygradx.models.training.trainer import Trainer
    curves = {}
    for norm in placements:
        for w in (0, warmup):
            t0 = time.perf_counter()
            trainer = Trainer(warmup_config(norm, w, steps, lr, d_model, n_layer, batch_size,
                                            seed, task), log=lambda *a: None)
            losses = np.full(steps, np.nan)
            for i in range(steps):
                loss = trainer.train_step()[0]
                if not math.isfinite(loss):
                    break
                losses[i] = loss
            curves[norm, w] = losses
            if log:
                log(f"  {_LABEL[norm]:<8} warm-up {w:>4}: final loss "
                    f"{final_loss(losses):.3f}  ({time.perf_counter() - t0:.0f} s)")
    return curves


def final_loss(losses, frac=0.1):
    """Mean training loss over the last `frac` of the steps (inf if the run diverged)."""
    n = max(1, int(len(losses) * frac))
    tail = losses[-n:]
    return float(np.mean(tail)) if np.all(np.isfinite(tail)) else math.inf


def write_warmup(curves, out_dir, lr, lang="en"):
    """warmup.csv (the loss of every run at every step) and warmup.png with matplotlib (labels
    in `lang`). Returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    keys = list(curves)
    paths = [os.path.join(out_dir, "warmup.csv")]
    with open(paths[0], "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["step"] + [f"{n}_warmup{wu}" for n, wu in keys])
        steps = len(next(iter(curves.values())))
        for i in range(steps):
            w.writerow([i + 1] + ["" if not np.isfinite(curves[k][i]) else f"{curves[k][i]:.5g}"
                                  for k in keys])
    from .pictures import figure_class, save_figure, words
    tr = words(ZH, lang)
    Figure = figure_class()
    if Figure is not None:
        fig = Figure(figsize=(7.5, 4.5))
        ax = fig.subplots()
        styles = {"post": "tab:red", "pre": "tab:blue"}
        for (n, wu), v in curves.items():
            k = max(1, len(v) // 40)                      # light smoothing: a moving mean
            sm = np.convolve(v, np.ones(k) / k, mode="valid")
            ax.plot(np.arange(len(sm)) + k, sm, color=styles[n], ls="-" if wu else "--",
                    label=f"{_LABEL[n]}, " + (tr("warm-up {wu} steps").format(wu=wu) if wu
                                              else tr("no warm-up")))
        ax.set_xlabel(tr("step"))
        ax.set_ylabel(tr("training loss (moving mean)"))
        ax.set_title(tr("Adam at lr={lr:g}: Post-LN needs warm-up").format(lr=lr))
        ax.legend()
        paths.append(save_figure(fig, os.path.join(out_dir, "warmup.png"), lang))
    return paths


def format_warmup(curves):
    out = ["final training loss (mean of the last 10% of steps):"]
    for (n, wu), v in curves.items():
        out.append(f"  {_LABEL[n]:<8} " + (f"warm-up {wu:<4}" if wu else "no warm-up  ")
                   + f"  {final_loss(v):.3f}")
    return "\n".join(out)


def warmup_checks(curves):
    """Post-LN without warm-up ends worse than Post-LN with it, and worse than Pre-LN without."""
    (wu,) = {w for (_, w) in curves if w}
    post0, post1 = final_loss(curves["post", 0]), final_loss(curves["post", wu])
    pre0 = final_loss(curves["pre", 0])
    return {"post_needs_warmup": post0 > post1, "pre_trains_without_warmup": post0 > pre0}


# ------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------

def _parse_layers(layers):
    if isinstance(layers, str):
        try:
            layers = [int(x) for x in layers.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--layers: expected comma-separated integers like 2,6,12, got "
                             f"{layers!r}") from None
    layers = tuple(sorted(set(int(x) for x in layers)))
    if len(layers) < 2 or layers[0] < 1:
        raise ValueError(f"--layers: give at least two depths >= 1, got {layers}")
    return layers


def main(name, out_dir, layers="2,6,12", steps=None, lang="en", **kw):
    """`tinygradx experiment ln-grad|warmup --out DIR [--layers 2,6,12] [--steps N] [--lang]`.

    Prints the summary, writes CSV (and PNG with matplotlib, labelled in `lang`) into out_dir
    and returns 0 when the paper's qualitative claims hold, 1 when they do not. Extra keyword
    arguments go to ln_grad_experiment or warmup_curves (e.g. d_model=32, seeds=(0, 1)).
    """
    if name == "ln-grad":
        result = ln_grad_experiment(_parse_layers(layers), **kw)
        print(format_ln_grad(result))
        for p in write_ln_grad(result, out_dir, lang):
            print(f"wrote {p}")
        return 0 if all(result["summary"]["checks"].values()) else 1
    if name == "warmup":
        steps = 200 if steps is None else int(steps)
        if steps < 10:
            raise ValueError(f"--steps: the warmup experiment needs at least 10 steps, got {steps}")
        kw.setdefault("warmup", max(1, steps // 4))
        lr = kw.get("lr", 1e-2)
        print(f"warmup experiment: {kw.get('task', 'reverse')} task, "
              f"{kw.get('n_layer', 2)}+{kw.get('n_layer', 2)} layers, d_model "
              f"{kw.get('d_model', 64)}, Adam at lr {lr:g}, {steps} steps, warm-up 0 or "
              f"{kw['warmup']} steps, no clipping")
        curves = warmup_curves(steps=steps, log=print, **kw)
        print(format_warmup(curves))
        checks = warmup_checks(curves)
        print("checks:")
        print(f"  [{'ok' if checks['post_needs_warmup'] else 'FAILED'}] Post-LN without "
              f"warm-up ends worse than with it")
        print(f"  [{'ok' if checks['pre_trains_without_warmup'] else 'FAILED'}] Post-LN "
              f"without warm-up ends worse than Pre-LN without it")
        for p in write_warmup(curves, out_dir, lr, lang):
            print(f"wrote {p}")
        return 0 if all(checks.values()) else 1
    raise ValueError(f"unknown experiment {name!r}; known: ln-grad, warmup")
