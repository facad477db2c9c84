"""A small BERT-style encoder trained with masked language modelling on made-up sentences.

The encoder is written out from nn.Linear, nn.LayerNorm and softmax (no nn.TransformerEncoder):
token, position and segment embeddings, Post-LN blocks of multi-head self-attention and a GELU
feed-forward, a padding mask filled into the scores in place, and an MLM head whose decoder
shares the token embedding. Masking follows BERT: 15% of the real tokens are chosen; of those
80% become [MASK], 10% a random token, 10% stay; the loss is read only at chosen positions.

Run it with PyTorch (`python bert_mlm.py --steps 100`) or on tinygradx
(`python -m tinygradx.compat bert_mlm.py --steps 100`).
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

PAD, CLS, SEP, MASK = 0, 1, 2, 3
WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "log", "a", "big", "small", "red"]
VOCAB = 4 + len(WORDS)
IGNORE = -100


class Config:
    vocab_size = VOCAB
    max_len = 16
    d_model = 32
    n_heads = 4
    n_layers = 2
    d_ff = 64
    dropout = 0.0


def make_corpus(n, max_len, generator=None):
    """n sentences [CLS] w w ... [SEP] [PAD]..., as ids (n, max_len) and a padding mask."""
    lengths = torch.randint(3, max_len - 1, (n,), generator=generator)
    words = torch.randint(4, VOCAB, (n, max_len), generator=generator)
    ids = torch.full((n, max_len), PAD, dtype=torch.long)
    for i in range(n):
        L = int(lengths[i])
        ids[i, 0] = CLS
        ids[i, 1:L + 1] = words[i, :L]
        ids[i, L + 1] = SEP
    return ids, ids != PAD


def apply_masks(ids, chosen, to_mask, to_random, random_ids):
    """BERT's corruption given its random choices: labels keep the chosen tokens only."""
    labels = ids.clone()
    labels[~chosen] = IGNORE
    inputs = ids.clone()
    inputs[chosen & to_mask] = MASK
    swap = chosen & ~to_mask & to_random
    inputs[swap] = random_ids[swap]
    return inputs, labels


def mask_tokens(ids, prob=0.15):
    special = (ids == PAD) | (ids == CLS) | (ids == SEP)
    chosen = torch.bernoulli(torch.full(ids.shape, prob)).bool() & ~special
    to_mask = torch.rand(ids.shape) < 0.8
    to_random = torch.rand(ids.shape) < 0.5
    random_ids = torch.randint(4, VOCAB, ids.shape, dtype=torch.long)
    return apply_masks(ids, chosen, to_mask, to_random, random_ids)


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_heads, self.d_head = cfg.n_heads, cfg.d_model // cfg.n_heads
        self.query = nn.Linear(cfg.d_model, cfg.d_model)
        self.key = nn.Linear(cfg.d_model, cfg.d_model)
        self.value = nn.Linear(cfg.d_model, cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def split(self, x):
        B, T, _ = x.size()
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, x, pad_mask):
        B, T, D = x.size()
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        scores.masked_fill_(~pad_mask[:, None, None, :], -1e9)
        weights = self.dropout(F.softmax(scores, dim=-1))
        ctx = (weights @ v).transpose(1, 2).contiguous().view(B, T, D)
        return self.out(ctx)


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = SelfAttention(cfg)
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=1e-12)
        self.ff1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.ff2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=1e-12)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, pad_mask):
        x = self.ln1(x + self.dropout(self.attn(x, pad_mask)))
        x = self.ln2(x + self.dropout(self.ff2(F.gelu(self.ff1(x)))))
        return x


class BertForMLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=PAD)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.seg = nn.Embedding(2, cfg.d_model)
        self.ln = nn.LayerNorm(cfg.d_model, eps=1e-12)
        self.layers = nn.ModuleList([EncoderLayer(cfg) for _ in range(cfg.n_layers)])
        self.transform = nn.Linear(cfg.d_model, cfg.d_model)
        self.head_ln = nn.LayerNorm(cfg.d_model, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.apply(self._init)

    @staticmethod
    def _init(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids, pad_mask, labels=None):
        B, T = ids.shape
        positions = torch.arange(T).unsqueeze(0).expand(B, T)
        segments = torch.zeros_like(ids)
        x = self.ln(self.tok(ids) + self.pos(positions) + self.seg(segments))
        for layer in self.layers:
            x = layer(x, pad_mask)
        h = self.head_ln(F.gelu(self.transform(x)))
        logits = h @ self.tok.weight.t() + self.bias             # decoder tied to the input
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1),
                                   ignore_index=IGNORE)
        return logits, loss


def train(model, ids, pad_mask, steps, batch_size=8, lr=2e-3, generator=None, log=print):
    loader = DataLoader(TensorDataset(ids, pad_mask), batch_size=batch_size, shuffle=True,
                        drop_last=True, generator=generator)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    step = 0
    while step < steps:
        for batch_ids, batch_mask in loader:
            inputs, labels = mask_tokens(batch_ids)
            _, loss = model(inputs, batch_mask, labels)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if step % 25 == 0:
                log(f"step {step}: loss {loss.item():.4f}")
            step += 1
            if step == steps:
                break
    return model


@torch.no_grad()
def fill_masks(model, ids, pad_mask):
    """The most likely token at every [MASK] position (the others kept)."""
    logits, _ = model(ids, pad_mask)
    guess = logits.argmax(dim=-1)
    return torch.where(ids == MASK, guess, ids)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    torch.manual_seed(0)
    cfg = Config()
    ids, pad_mask = make_corpus(64, cfg.max_len, generator=torch.Generator().manual_seed(0))
    model = BertForMLM(cfg)
    train(model, ids, pad_mask, args.steps, generator=torch.Generator().manual_seed(1))
    inputs, _ = mask_tokens(ids[:2])
    print(fill_masks(model, inputs, pad_mask[:2]).tolist())
