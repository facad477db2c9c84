"""The ln-grad experiment of Xiong et al. 2020, "On Layer Normalization in the Transformer
Architecture" (`tinygradx experiment ln-grad`): at initialisation, Post-LN's gradients are large
near the output and the last layer's gradient does not shrink with depth; Pre-LN's are of one
size across layers and shrink as the model gets deeper (their Theorem 1 and Figure 3).

We build Post-LN and Pre-LN encoder-decoders (make_model, its own Xavier init), run one
forward/backward on a fixed random batch and record ||dL/dW||_F of W^Q, W^K, W^V, W^O
(self-attention), W_1, W_2 in every decoder layer, averaged over a few seeds. The encoder alone
and a GPT are options. The two placements (`PLACEMENTS`, `placement`) are shared with the warmup
experiment (warmup_experiment.py); experiments.py runs both from the command line.
"""
from __future__ import annotations

import csv
import math
import os

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F

from tinygradx.models.nets.transformer import make_model

from .figures import figure_class, save_figure, words

MATRICES = ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")
PLACEMENTS = ("post", "pre")
LABEL = {"post": "Post-LN", "pre": "Pre-LN"}
# the picture's words in Chinese (lang="zh"); formulas and names stay as written
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
}



# ------------------------------------------------------------------------------------------
# ln-grad: gradient norms at initialisation
# ------------------------------------------------------------------------------------------

def placement(norm):
    """True for Pre-LN ('pre'), False for Post-LN ('post'): make_model's norm_first."""
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
            grads[name].append(float(np.linalg.norm(p.grad.numpy())))
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
        g_qkv = block.attn.c_attn.weight.grad.numpy()               # (3C, C): Q, K, V rows
        mats = (g_qkv[:C], g_qkv[C:2 * C], g_qkv[2 * C:], block.attn.c_proj.weight.grad.numpy(),
                block.mlp.c_fc.weight.grad.numpy(), block.mlp.c_proj.weight.grad.numpy())
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
    norm_first = placement(norm)
    tgx.manual_seed(seed)
    run = {"encoder": _encoder_grads, "decoder": _decoder_grads, "gpt": _gpt_grads}.get(model)
    if run is None:
        raise ValueError(f"model must be 'encoder', 'decoder' or 'gpt', got {model!r}")
    loss, grads, hidden = run(norm_first, n_layers, d_model, n_head, batch, seq_len, vocab,
                              data_seed)
    x_norm2 = np.array([float((h.detach().numpy().astype(np.float64) ** 2).sum(-1).mean())
                        / d_model for h in hidden])
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
                out.append(f"  {LABEL[n]:<8} L={L:<3} {vals}")
    head = "".join(f"{'L=' + str(L):>9}" for L in layers)
    out.append(f"\ntop/bottom layer ||dL/dW_2||   {head}")
    for n in PLACEMENTS:
        out.append(f"  {LABEL[n]:<28}" + "".join(f"{v:9.2f}" for v in s["ratio"][n]))
    out.append(f"last layer ||dL/dW_2||        {head}")
    for n in PLACEMENTS:
        out.append(f"  {LABEL[n]:<28}" + "".join(f"{v:9.3f}" for v in s["last"][n]))
    out.append(f"  {'Post-LN / its L=' + str(layers[0]):<28}"
               + "".join(f"{v:9.2f}" for v in s["growth"]["post"]))
    out.append(f"  {'Pre-LN / its L=' + str(layers[0]):<28}"
               + "".join(f"{v:9.2f}" for v in s["growth"]["pre"]))
    out.append(f"  {'sqrt(' + str(layers[0]) + '/L) for reference':<28}"
               + "".join(f"{math.sqrt(layers[0] / L):9.2f}" for L in layers))
    Lmax = layers[-1]
    out.append(f"E||x_l||^2/d of the residual stream, l = 0..{Lmax} (L={Lmax}):")
    for n in PLACEMENTS:
        out.append(f"  {LABEL[n]:<8} " + " ".join(f"{v:.2f}" for v in mean[n, Lmax]["x_norm2"]))
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
            ax.set_title(tr("{label}: {m} at initialisation").format(label=LABEL[n], m=m))
            ax.legend(fontsize=8)
    ax = axes[0][2]
    for n in PLACEMENTS:
        ax.plot(layers, s["last"][n], "o-", label=LABEL[n])
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
        ax.plot(np.arange(Lmax + 1), mean[n, Lmax]["x_norm2"], "o-", ms=3, label=LABEL[n])
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
