"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017) in
plain PyTorch, as the paper draws it: Post-LN sublayers LayerNorm(x + Sublayer(x)), sinusoidal
positions, embeddings scaled by sqrt(d_model), label smoothing, greedy decoding.

Nothing in this file knows about tinygradx: tests/compat/test_compat_models.py runs it with PyTorch
and with tinygradx's look-alike `torch` (tinygradx.compat) and compares the two.

    model = Transformer(src_vocab=12, tgt_vocab=12, n_layers=2, d_model=32, d_ff=64, n_heads=4)
    logp = model(src, tgt_in)                      # (B, T, tgt_vocab) log-probabilities
    ys = greedy_decode(model, src, max_len=8, bos=1)
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD = 0


def padding_mask(tokens):
    """(B, 1, 1, S): True where a key position holds a real token."""
    return (tokens != PAD).unsqueeze(1).unsqueeze(2)


def causal_mask(size):
    """(1, 1, size, size): True where query i may look at key j, i.e. j <= i."""
    future = torch.triu(torch.ones(size, size, dtype=torch.uint8), diagonal=1)
    return (future == 0).view(1, 1, size, size)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
    head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V."""

    def __init__(self, d_model, n_heads, dropout):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def split_heads(self, x):
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, mask):
        q = self.split_heads(self.w_q(query))                      # (B, h, T, d_k)
        k = self.split_heads(self.w_k(key))                        # (B, h, S, d_k)
        v = self.split_heads(self.w_v(value))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        scores = scores.masked_fill(mask == 0, -1e9)               # mask: (B or 1, 1, T or 1, S)
        weights = self.dropout(scores.softmax(dim=-1))
        heads = torch.matmul(weights, v)                            # (B, h, T, d_k)
        batch, _, length, _ = heads.shape
        concat = heads.transpose(1, 2).contiguous().view(batch, length, -1)
        return self.w_o(concat)


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2"""

    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, src_mask):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, src_mask)))   # Post-LN
        return self.norm2(x + self.dropout(self.ffn(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y, memory, src_mask, tgt_mask):
        y = self.norm1(y + self.dropout(self.self_attn(y, y, y, tgt_mask)))
        # encoder-decoder attention: queries from the decoder, keys and values from the encoder
        y = self.norm2(y + self.dropout(self.cross_attn(y, memory, memory, src_mask)))
        return self.norm3(y + self.dropout(self.ffn(y)))


class PositionalEncoding(nn.Module):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))"""

    def __init__(self, d_model, dropout, max_len=512):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))                # (1, max_len, d_model)

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)])


class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, n_layers=6, d_model=512, d_ff=2048, n_heads=8,
                 dropout=0.1):
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(src_vocab, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model)
        self.position = PositionalEncoding(d_model, dropout)
        enc = EncoderLayer(d_model, n_heads, d_ff, dropout)
        dec = DecoderLayer(d_model, n_heads, d_ff, dropout)
        self.encoder = nn.ModuleList([copy.deepcopy(enc) for _ in range(n_layers)])
        self.decoder = nn.ModuleList([copy.deepcopy(dec) for _ in range(n_layers)])
        self.out = nn.Linear(d_model, tgt_vocab)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def encode(self, src, src_mask):
        x = self.position(self.src_embed(src) * math.sqrt(self.d_model))
        for layer in self.encoder:
            x = layer(x, src_mask)
        return x

    def decode(self, memory, src_mask, tgt, tgt_mask):
        y = self.position(self.tgt_embed(tgt) * math.sqrt(self.d_model))
        for layer in self.decoder:
            y = layer(y, memory, src_mask, tgt_mask)
        return F.log_softmax(self.out(y), dim=-1)

    def forward(self, src, tgt):
        src_mask = padding_mask(src)
        tgt_mask = padding_mask(tgt) & causal_mask(tgt.size(1))
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)


class LabelSmoothingLoss(nn.Module):
    """The paper's label smoothing (eps_ls): the target distribution puts `1 - smoothing` on the
    right token and spreads `smoothing` over the others except padding; positions whose target
    is padding count nothing. Returns the summed KL divergence to it."""

    def __init__(self, vocab_size, padding_idx=PAD, smoothing=0.1):
        super().__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.vocab_size = vocab_size
        self.padding_idx = padding_idx
        self.smoothing = smoothing

    def forward(self, log_probs, target):
        # log_probs: (N, vocab) log-probabilities, target: (N,) token ids
        true_dist = log_probs.detach().clone()
        true_dist.fill_(self.smoothing / (self.vocab_size - 2))
        true_dist.scatter_(1, target.unsqueeze(1), 1.0 - self.smoothing)
        true_dist[:, self.padding_idx] = 0
        true_dist.masked_fill_((target == self.padding_idx).unsqueeze(1), 0.0)
        return self.criterion(log_probs, true_dist)


@torch.no_grad()
def greedy_decode(model, src, max_len, bos):
    """The most probable next token, one at a time, from `bos`: (B, max_len) token ids."""
    src_mask = padding_mask(src)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), bos, dtype=torch.long)
    for _ in range(max_len - 1):
        log_probs = model.decode(memory, src_mask, ys, causal_mask(ys.size(1)))
        _, next_token = torch.max(log_probs[:, -1], dim=1)
        ys = torch.cat([ys, next_token.unsqueeze(1)], dim=1)
    return ys


if __name__ == "__main__":
    # an untrained model on a toy batch: its log-probabilities, the smoothed loss, a decoding
    torch.manual_seed(0)
    model = Transformer(src_vocab=12, tgt_vocab=12, n_layers=2, d_model=32, d_ff=64, n_heads=4)
    src = torch.tensor([[1, 5, 6, 7, 2], [1, 9, 3, 2, PAD]])
    tgt_in, tgt_out = src[:, :-1], src[:, 1:]
    log_probs = model(src, tgt_in)                                     # (B, T, tgt_vocab)
    loss = LabelSmoothingLoss(12)(log_probs.reshape(-1, 12), tgt_out.reshape(-1))
    print(f"log-probabilities {tuple(log_probs.shape)}, loss {loss.item():.3f}")
    print(greedy_decode(model.eval(), src, max_len=6, bos=1).tolist())
