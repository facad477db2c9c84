"""A translation toy on torch's nn.Transformer: the "target language" is the source sequence
reversed. Token and learned position embeddings, nn.Transformer(batch_first=True) with a
causal target mask and padding masks for sources of different lengths, cross-entropy that
ignores padding, and greedy decoding one token at a time. A plain PyTorch script:

    python reverse_transformer.py --steps 300                      # with PyTorch
    python -m tinygradx.compat reverse_transformer.py --steps 300  # the same file on tinygradx
"""
import argparse
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

PAD, BOS, EOS = 0, 1, 2
N_SPECIAL = 3


def make_batch(batch_size, max_len, vocab):
    """Sources of random lengths (padded with PAD) and targets BOS reversed(src) EOS."""
    lengths = torch.randint(2, max_len + 1, (batch_size,))
    src = torch.full((batch_size, max_len), PAD, dtype=torch.long)
    tgt = torch.full((batch_size, max_len + 2), PAD, dtype=torch.long)
    for i in range(batch_size):
        n = int(lengths[i])
        seq = torch.randint(N_SPECIAL, vocab, (n,))
        src[i, :n] = seq
        tgt[i, 0] = BOS
        tgt[i, 1:n + 1] = seq.flip(0)
        tgt[i, n + 1] = EOS
    return src, tgt


class Seq2Seq(nn.Module):
    def __init__(self, vocab, d_model=32, nhead=4, layers=2, d_ff=64, dropout=0.1,
                 max_len=32):
        super().__init__()
        self.d_model = d_model
        self.tok = nn.Embedding(vocab, d_model, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, d_model)
        self.transformer = nn.Transformer(d_model=d_model, nhead=nhead,
                                          num_encoder_layers=layers,
                                          num_decoder_layers=layers, dim_feedforward=d_ff,
                                          dropout=dropout, batch_first=True)
        self.out = nn.Linear(d_model, vocab)

    def embed(self, ids):
        positions = torch.arange(ids.size(1)).unsqueeze(0)       # (1, T)
        return self.tok(ids) * math.sqrt(self.d_model) + self.pos(positions)

    def encode(self, src):
        return self.transformer.encoder(self.embed(src), src_key_padding_mask=src == PAD)

    def decode(self, tgt, memory, src_pad):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        h = self.transformer.decoder(self.embed(tgt), memory, tgt_mask=mask,
                                     tgt_key_padding_mask=tgt == PAD,
                                     memory_key_padding_mask=src_pad)
        return self.out(h)

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src == PAD)


def train_step(model, criterion, optimizer, src, tgt):
    model.train()
    logits = model(src, tgt[:, :-1])                            # (B, T, vocab)
    loss = criterion(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


@torch.no_grad()
def greedy_decode(model, src, max_len):
    model.eval()
    memory = model.encode(src)
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
    for _ in range(max_len - 1):
        logits = model.decode(ys, memory, src == PAD)
        next_tok = logits[:, -1].argmax(dim=-1)
        ys = torch.cat([ys, next_tok.unsqueeze(1)], dim=1)
    return ys


def loader(n_pairs, batch_size, max_len, vocab, seed):
    """A fixed training set of n_pairs, served in shuffled batches by a DataLoader."""
    src, tgt = make_batch(n_pairs, max_len, vocab)
    g = torch.Generator().manual_seed(seed)
    return DataLoader(TensorDataset(src, tgt), batch_size=batch_size, shuffle=True,
                      drop_last=True, generator=g)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--vocab", type=int, default=12)
    parser.add_argument("--max-len", type=int, default=6)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pairs", type=int, default=2000)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    model = Seq2Seq(args.vocab)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    data = loader(args.pairs, args.batch, args.max_len, args.vocab, args.seed)
    step = 0
    while step < args.steps:
        for src, tgt in data:                      # one epoch of shuffled batches
            loss = train_step(model, criterion, optimizer, src, tgt)
            if step % 50 == 0 or step == args.steps - 1:
                print(f"step {step:4d}  loss {loss:.3f}")
            step += 1
            if step == args.steps:
                break
    src, tgt = make_batch(4, args.max_len, args.vocab)
    out = greedy_decode(model, src, args.max_len + 2)
    for s, t, o in zip(src.tolist(), tgt.tolist(), out.tolist(), strict=True):
        print("src", s, "want", t[1:], "got", o[1:])


if __name__ == "__main__":
    main()
