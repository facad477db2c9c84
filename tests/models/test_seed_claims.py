"""The claims behind the Transformer's formulas, each tested as a claim.

Other tests check that the code computes a formula (often against a second implementation of it).
These check why the formula is there: what would go wrong without the √d_model, the √d_k, the
per-head split, the LayerNorm, and that the positional encoding is the written formula. Each
test computes its evidence from first principles (numpy loops, sampled statistics), never from
the function it checks. docs/walkthrough.md's "Claims and the tests that check them" lists them.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import nn
from tinygradx.models.nets.transformer import (Embeddings, PositionalEncoding, make_model,
                                               sinusoidal_table)


def rms(a):
    return float(np.sqrt(np.mean(np.square(a))))


# ---- X = √d_model · Emb + PE ---------------------------------------------------------------

@pytest.mark.parametrize("d_model", [64, 256])
def test_sqrt_d_model_puts_the_embedding_on_the_scale_of_pe(d_model):
    """With the model's own initialisation (Xavier-uniform, V close to d_model) an embedding
    component is of order 1/√d_model while a PE component is of order 1 (sin and cos, RMS
    1/√2). Times √d_model the two are on one scale; without it PE outweighs the word by about
    √d_model."""
    tgx.manual_seed(0)
    model = make_model(d_model, d_model, N=1, d_model=d_model, d_ff=4, h=1, dropout=0.0)
    table = model.src_embed.weight.detach().numpy()                  # (V, d_model)
    pe = sinusoidal_table(512, d_model)
    assert 0.6 / math.sqrt(d_model) < rms(table) < 1.4 / math.sqrt(d_model)
    assert abs(rms(pe) - 1 / math.sqrt(2)) < 0.02
    scaled = model.src_embed(np.arange(d_model)).detach().numpy()   # √d_model · Emb
    assert 0.5 < rms(scaled) / rms(pe) < 2.0                         # one scale
    assert rms(pe) / rms(table) > 0.4 * math.sqrt(d_model)           # unscaled: PE dominates


def test_the_scaling_happens_at_the_input_not_in_attention():
    """Embeddings multiplies by √d_model itself; attention's scale is 1/√d_k, another number."""
    emb = Embeddings(5, 16)
    ids = np.array([[1, 2]])
    want = emb.weight.detach().numpy()[ids] * 4.0                    # √16
    np.testing.assert_allclose(emb(ids).detach().numpy(), want, rtol=1e-6)


# ---- why divide by √d_k ---------------------------------------------------------------------

@pytest.mark.parametrize("d_k", [16, 64, 256])
def test_the_variance_of_q_dot_k_is_d_k_and_one_after_scaling(d_k):
    """q, k with independent components of mean 0 and variance 1: Var(q·k) ≈ d_k, so its
    standard deviation is √d_k, and Var(q·k / √d_k) ≈ 1 (20,000 samples, within 5%)."""
    rng = np.random.default_rng(d_k)
    q, k = rng.standard_normal((2, 20000, d_k))
    dots = np.einsum("nr,nr->n", q, k)
    assert abs(dots.var() / d_k - 1) < 0.05
    assert abs((dots / math.sqrt(d_k)).var() - 1) < 0.05


def _softmax_stats(scores):
    """Mean largest weight of each row of Softmax(scores), and the mean Frobenius norm of the
    softmax's Jacobian diag(a) - a aᵀ per row (how much gradient passes to the scores)."""
    s = tgx.tensor(scores)
    a = F.softmax(s, dim=-1).detach().numpy()                        # (rows, n)
    jac = np.einsum("rn,nm->rnm", a, np.eye(a.shape[1])) - a[:, :, None] * a[:, None, :]
    return a.max(axis=1).mean(), np.linalg.norm(jac, axis=(1, 2)).mean()


def test_unscaled_scores_saturate_the_softmax_and_starve_the_gradient():
    """As d_k grows, unscaled scores QKᵀ push Softmax towards one-hot (the largest weight near
    1) and the softmax's Jacobian, hence the gradient to every other position, towards 0.
    Divided by √d_k, the rows look the same at every d_k."""
    rng = np.random.default_rng(1)
    n, rows = 10, 2000
    scaled, unscaled = [], []
    for d_k in (4, 64, 1024):
        q, k = rng.standard_normal((rows, d_k)), rng.standard_normal((n, d_k))
        unscaled.append(_softmax_stats(q @ k.T))
        scaled.append(_softmax_stats(q @ k.T / math.sqrt(d_k)))
    (_, j_small), (_, _), (top_big, j_big) = unscaled
    assert top_big > 0.95                                    # d_k 1024 unscaled: one-hot rows
    assert j_big < 0.2 * j_small                             # and little gradient through
    tops = [t for t, _ in scaled]
    jacs = [j for _, j in scaled]
    assert max(tops) - min(tops) < 0.05 and max(jacs) / min(jacs) < 1.15   # the same at any d_k


# ---- multi-head attention --------------------------------------------------------------------

def _attention_by_hand(x, wq, wk, wv, bq, bk, bv, h):
    """head_i = Softmax(Q_i K_iᵀ / √d_k) V_i with Q_i = X W_i^Q from the i-th block of d_k
    output rows of W^Q (and K, V likewise), for one sequence x (n, d), in plain numpy loops."""
    n, d = x.shape
    d_k = d // h
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        q = x @ wq[cols].T + bq[cols]                        # Q_i: (n, d_k)
        k = x @ wk[cols].T + bk[cols]
        v = x @ wv[cols].T + bv[cols]
        s = q @ k.T / math.sqrt(d_k)                         # (n, n), scaled by √d_k, not √d
        a = np.exp(s - s.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        heads.append(a @ v)                                  # head_i: (n, d_k)
    return np.concatenate(heads, axis=1)                     # Concat: (n, h·d_k)


@pytest.mark.parametrize("d_model,h", [(512, 8), (24, 3)])
def test_mha_is_h_independent_heads_concatenated_then_mixed_by_w_o(d_model, h):
    """MHA(X) = Concat(head_1..head_h) W^O where each head has its own W_i^Q, W_i^K, W_i^V (the
    i-th d_k-wide block of W^Q, W^K, W^V) and is scaled by √d_k = √(d_model/h): with d_model 512
    and 8 heads, √64, not √512. Computed head by head in plain numpy, without torch."""
    tgx.manual_seed(2)
    mha = nn.MultiHeadAttention(d_model, h).double()
    x = np.random.default_rng(3).standard_normal((1, 5, d_model))
    got = mha(tgx.tensor(x), tgx.tensor(x), tgx.tensor(x))[0].detach().numpy()[0]
    p = {name: t.detach().numpy() for name, t in mha.named_parameters()}
    concat = _attention_by_hand(x[0], p["w_q.weight"], p["w_k.weight"], p["w_v.weight"],
                                p["w_q.bias"], p["w_k.bias"], p["w_v.bias"], h)
    assert concat.shape == (5, d_model)                      # h · d_v = d_model again
    want = concat @ p["w_o.weight"].T + p["w_o.bias"]         # · W^O: (n, d_model)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)


def test_concat_joins_the_heads_features_token_by_token():
    """The worked example: head_1 = [[a1 b1] [a2 b2]], head_2 = [[c1 d1] [c2 d2]] concatenate
    to [[a1 b1 c1 d1] [a2 b2 c2 d2]]: rows stay tokens, features are laid end to end (no sum,
    no mean). The model's head merge, transpose(1, 2) then reshape, is exactly this."""
    head_1 = np.array([[1.0, 2.0], [3.0, 4.0]])               # a1 b1 / a2 b2
    head_2 = np.array([[5.0, 6.0], [7.0, 8.0]])               # c1 d1 / c2 d2
    want = np.array([[1.0, 2.0, 5.0, 6.0], [3.0, 4.0, 7.0, 8.0]])
    assert np.array_equal(tgx.cat([tgx.tensor(head_1), tgx.tensor(head_2)], dim=1).numpy(), want)
    heads = tgx.tensor(np.stack([head_1, head_2])[None])      # (B=1, h=2, n=2, d_v=2)
    merged = heads.transpose(1, 2).reshape(1, 2, 4)           # the models' Concat: (1, n, h·d_v)
    assert np.array_equal(merged.numpy()[0], want)


# ---- LayerNorm ----------------------------------------------------------------------------------

def test_layer_norm_of_the_worked_example():
    """x = (1, 2, 3): mean 2, variance 2/3 (over the features, biased), normalised to
    (-√1.5, 0, √1.5), i.e. mean 0 and variance 1; γ, β then rescale and shift."""
    x = np.array([[1.0, 2.0, 3.0]])
    assert x.mean() == 2 and abs(x.var() - 2 / 3) < 1e-15
    y = F.layer_norm(tgx.tensor(x), (3,), eps=0.0).numpy()[0]
    np.testing.assert_allclose(y, [-math.sqrt(1.5), 0.0, math.sqrt(1.5)], atol=1e-12)
    g, b = tgx.tensor(np.array([2.0, 2.0, 2.0])), tgx.tensor(np.array([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(F.layer_norm(tgx.tensor(x), (3,), g, b, eps=0.0).numpy()[0],
                               2 * y + 1, atol=1e-12)


def test_layer_norm_works_per_token_with_shared_gamma_and_beta():
    """Each token is normalised over its own d_model features only: changing one token leaves
    every other token's output unchanged."""
    ln = nn.LayerNorm(4).double()
    x = np.random.default_rng(4).standard_normal((1, 3, 4))
    y0 = ln(tgx.tensor(x)).detach().numpy()
    x[0, 1] *= 100.0
    y1 = ln(tgx.tensor(x)).detach().numpy()
    assert np.array_equal(y0[0, [0, 2]], y1[0, [0, 2]])


class _Block(nn.Module):
    """x + MHA(x), then + FFN(x) (ReLU, d_ff = 4d), each add followed by a LayerNorm (Post-LN)
    when `norm`, else by nothing. Xavier-uniform matrices and zero biases, as make_model."""

    def __init__(self, d, h, norm):
        self.mha = nn.MultiHeadAttention(d, h)
        self.w_1, self.w_2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.norm1 = nn.LayerNorm(d) if norm else nn.Identity()
        self.norm2 = nn.LayerNorm(d) if norm else nn.Identity()
        for name, p in self.named_parameters():
            (nn.init.xavier_uniform_ if p.ndim == 2 else nn.init.zeros_)(p) \
                if not name.startswith("norm") else None

    def forward(self, x):
        out, a = self.mha(x, x, x, need_weights=True)
        x = self.norm1(x + out)
        return self.norm2(x + self.w_2(F.relu(self.w_1(x)))), a


def _stream_rms(norm, depth, d=32, n=16):
    """RMS of the residual stream after `depth` blocks."""
    tgx.manual_seed(5)
    blocks = [_Block(d, 4, norm).double() for _ in range(depth)]
    x = tgx.tensor(np.random.default_rng(6).standard_normal((2, n, d)))
    with tgx.no_grad():
        for block in blocks:
            x, _ = block(x)
    return rms(x.numpy())


def test_without_layer_norm_the_residual_stream_grows_with_depth():
    """Each residual add x + Sublayer(x) adds the sublayer's output to the stream, so without a
    norm its scale keeps growing with depth (here ~100x after 12 blocks); with Post-LN after
    every add it stays at 1."""
    plain = [_stream_rms(False, depth) for depth in (1, 4, 8, 12)]
    assert np.all(np.diff(plain) > 0) and plain[-1] > 50, plain
    assert all(abs(_stream_rms(True, depth) - 1) < 0.01 for depth in (1, 12))


def test_a_larger_stream_saturates_attention_and_layer_norm_undoes_it():
    """Scores are bilinear in the stream (Q and K both scale with it), so a stream c times
    larger gives scores c² times larger and Softmax rows towards one-hot, with the gradient
    through the softmax towards 0. LayerNorm in front of the sublayer removes the scale:
    LN(c x) = LN(x), so the rows are the same at any c."""
    tgx.manual_seed(10)
    mha, ln = nn.MultiHeadAttention(32, 4).double(), nn.LayerNorm(32).double()
    x = np.random.default_rng(11).standard_normal((1, 16, 32))

    def rows(z):
        a = mha(z, z, z, need_weights=True, average_attn_weights=False)[1]  # (1, h, 16, 16)
        return a.numpy().max(axis=-1).mean()                          # mean top weight of a row

    with tgx.no_grad():
        plain = [rows(tgx.tensor(c * x)) for c in (1, 10, 100)]
        normed = [rows(ln(tgx.tensor(c * x))) for c in (1, 10, 100)]
    assert plain[0] < 0.5 < 0.95 < plain[2], plain                   # spread -> one-hot
    assert max(normed) - min(normed) < 1e-4 and normed[0] < 0.5, normed   # (eps aside)


# ---- the positional encoding ------------------------------------------------------------------

def test_positional_encoding_is_the_written_formula():
    """PE_{pos,2i} = sin(pos / 10000^{2i/d_model}), PE_{pos,2i+1} = cos(same angle), element by
    element with math.sin / math.cos, against the table and the model's `pe` buffer (odd
    d_model too: its last even column has no cos partner)."""
    for d_model in (16, 7):
        pe = PositionalEncoding(d_model, dropout=0.0, max_len=50).pe.numpy()
        table = sinusoidal_table(50, d_model)
        for pos in range(50):
            for j in range(d_model):
                i = j // 2
                angle = pos / 10000 ** (2 * i / d_model)
                want = math.sin(angle) if j % 2 == 0 else math.cos(angle)
                assert abs(table[pos, j] - want) < 1e-12
                assert abs(pe[pos, j] - want) < 1e-6            # the float32 buffer


def test_pe_lets_attention_tell_positions_apart():
    """Self-attention alone is order-blind: permuting the tokens permutes its output rows.
    After adding PE the rows are no longer a permutation of each other."""
    tgx.manual_seed(7)
    mha = nn.MultiHeadAttention(8, 2).double()
    x = np.random.default_rng(8).standard_normal((1, 4, 8))
    perm = [2, 0, 3, 1]

    def attend(z):
        t = tgx.tensor(z)
        return mha(t, t, t)[0].detach().numpy()[0]

    np.testing.assert_allclose(attend(x[:, perm]), attend(x)[perm], atol=1e-12)
    pe = sinusoidal_table(4, 8)[None]
    assert not np.allclose(attend(x[:, perm] + pe), attend(x + pe)[perm], atol=1e-3)


# ---- the causal mask --------------------------------------------------------------------------

def test_the_causal_mask_gives_future_positions_exactly_zero_weight():
    """A = Softmax(QKᵀ/√d_k + M), M_ij = -inf for j > i: after the softmax the weight of every
    future position is exactly 0, and each row still sums to 1."""
    s = np.random.default_rng(9).standard_normal((1, 1, 5, 5))
    a = F.softmax(tgx.tensor(s) + F.causal_mask(5, 5, np.float64), dim=-1).numpy()[0, 0]
    assert np.all(a[np.triu_indices(5, 1)] == 0.0)
    np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-12)
