"""A small GPT (a decoder-only Transformer language model) in plain PyTorch.

Nothing in this file knows about tinygradx: tests/compat/test_compat_models.py runs it once with
PyTorch and once with `torch` being tinygradx's look-alike (tinygradx.compat), from the same
weights, and compares the two.

    model = GPT(GPTConfig(vocab_size=50, context=16))
    logits, loss = model(idx, targets)            # idx, targets: (B, T) token ids
    out = model.generate(idx, max_new_tokens=5, temperature=0.8, top_k=10)
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    vocab_size: int = 64
    context: int = 16          # the longest sequence the model sees (positions 0..context-1)
    n_layer: int = 2
    n_head: int = 2
    d_model: int = 32
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.d_model % cfg.n_head == 0, "d_model must split evenly into heads"
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=cfg.bias)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.bias)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        # ones on and below the diagonal: query i may attend to keys 0..i
        mask = torch.tril(torch.ones(cfg.context, cfg.context))
        self.register_buffer("tril", mask.view(1, 1, cfg.context, cfg.context))

    def forward(self, x):
        B, T, C = x.size()
        head = C // self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, head).transpose(1, 2)          # (B, h, T, head)
        k = k.view(B, T, self.n_head, head).transpose(1, 2)
        v = v.view(B, T, self.n_head, head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head))   # (B, h, T, T)
        att = att.masked_fill(self.tril[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v                                                  # (B, h, T, head)
        y = y.transpose(1, 2).contiguous().view(B, T, C)             # heads side by side
        return self.resid_dropout(self.proj(y))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, 4 * cfg.d_model, bias=cfg.bias)
        self.gelu = nn.GELU()
        self.proj = nn.Linear(4 * cfg.d_model, cfg.d_model, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.dropout(self.proj(self.gelu(self.fc(x))))


class Block(nn.Module):
    """Pre-LN: x + attn(LN(x)), then x + mlp(LN(x))."""

    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.context, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.tok_emb.weight = self.head.weight      # weight tying: one matrix, two uses

        self.apply(self._init_weights)
        # the projections that end a residual branch start smaller, one factor per layer
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        B, T = idx.size()
        assert T <= self.cfg.context, f"sequence of {T} tokens, context is {self.cfg.context}"
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))                              # (B, T, vocab)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return logits, loss

    def configure_optimizer(self, lr, weight_decay, betas=(0.9, 0.95)):
        """AdamW; matrices decay, biases and LayerNorm weights do not."""
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        """Append max_new_tokens sampled tokens to idx (B, T), one at a time."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.cfg.context else idx[:, -self.cfg.context:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


if __name__ == "__main__":
    # a few steps on the sequences 0 1 2 ... 9 0 1 ...: the model learns to count on
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=10, context=8, n_layer=2, n_head=2, d_model=24))
    opt = model.configure_optimizer(lr=1e-2, weight_decay=0.0)
    seq = (torch.arange(3)[:, None] + torch.arange(9)) % 10          # (3, 9)
    x, y = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()           # each next token
    for _ in range(30):
        logits, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"loss {loss.item():.3f}")
    print(model.generate(torch.tensor([[3]]), max_new_tokens=7, top_k=1).tolist())
