"""A sequence-to-sequence GRU with additive (Bahdanau) attention, in the style of the translation
tutorials: source and target batches padded with `pad_sequence`, an encoder GRU over the padded
source, a decoder that attends over the encoder outputs step by step (the padded positions masked
out with masked_fill), teacher forcing in training and greedy decoding after.

The task is made up so the file runs anywhere: reverse a sequence of 3..8 digits (ids 3..12).

    python seq2seq_attention.py --steps 200
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

PAD, SOS, EOS = 0, 1, 2
VOCAB = 13


def make_pairs(n, generator=None):
    """n (source, target) pairs of 1-d LongTensors; the target is the source reversed + EOS."""
    pairs = []
    for k in torch.randint(3, 9, (n,), generator=generator):
        src = torch.randint(3, VOCAB, (int(k),), generator=generator)
        pairs.append((src, torch.cat([src.flip(0), torch.tensor([EOS])])))
    return pairs


def batchify(pairs):
    """Padded (B, S) sources, their lengths, and padded (B, T) targets."""
    src = pad_sequence([s for s, _ in pairs], batch_first=True, padding_value=PAD)
    tgt = pad_sequence([t for _, t in pairs], batch_first=True, padding_value=PAD)
    return src, torch.tensor([len(s) for s, _ in pairs]), tgt


class Encoder(nn.Module):
    def __init__(self, vocab, embed, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed, padding_idx=PAD)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)

    def forward(self, src):
        outputs, hidden = self.rnn(self.embedding(src))       # (B, S, H), (1, B, H)
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.W_dec = nn.Linear(hidden, hidden, bias=False)
        self.W_enc = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def forward(self, dec_hidden, enc_outputs, mask):
        # energy_(b,s) = v . tanh(W_dec h_b + W_enc e_(b,s))
        energy = self.v(torch.tanh(self.W_dec(dec_hidden).unsqueeze(1) +
                                   self.W_enc(enc_outputs))).squeeze(2)     # (B, S)
        energy = energy.masked_fill(mask == 0, -1e10)
        return F.softmax(energy, dim=1)


class Decoder(nn.Module):
    def __init__(self, vocab, embed, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed, padding_idx=PAD)
        self.attention = Attention(hidden)
        self.rnn = nn.GRU(embed + hidden, hidden, batch_first=True)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, token, hidden, enc_outputs, mask):
        embedded = self.embedding(token).unsqueeze(1)                       # (B, 1, E)
        weights = self.attention(hidden[-1], enc_outputs, mask)              # (B, S)
        context = torch.bmm(weights.unsqueeze(1), enc_outputs)               # (B, 1, H)
        output, hidden = self.rnn(torch.cat((embedded, context), dim=2), hidden)
        logits = self.out(torch.cat((output.squeeze(1), context.squeeze(1)), dim=1))
        return logits, hidden, weights


class Seq2Seq(nn.Module):
    def __init__(self, vocab=VOCAB, embed=10, hidden=24):
        super().__init__()
        self.encoder = Encoder(vocab, embed, hidden)
        self.decoder = Decoder(vocab, embed, hidden)

    def forward(self, src, tgt):
        """Teacher forcing: logits (B, T, V) for each target position."""
        enc_outputs, hidden = self.encoder(src)
        mask = src != PAD
        token = torch.full((src.size(0),), SOS, dtype=torch.long)
        steps = []
        for t in range(tgt.size(1)):
            logits, hidden, _ = self.decoder(token, hidden, enc_outputs, mask)
            steps.append(logits)
            token = tgt[:, t]
        return torch.stack(steps, dim=1)

    @torch.no_grad()
    def greedy(self, src, max_len=10):
        enc_outputs, hidden = self.encoder(src)
        mask = src != PAD
        token = torch.full((src.size(0),), SOS, dtype=torch.long)
        out = []
        for _ in range(max_len):
            logits, hidden, _ = self.decoder(token, hidden, enc_outputs, mask)
            token = logits.argmax(dim=1)
            out.append(token)
        return torch.stack(out, dim=1)


def loss_fn(logits, tgt):
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1),
                           ignore_index=PAD)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    pairs = make_pairs(512, g)
    model = Seq2Seq()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(args.steps):
        idx = torch.randint(0, len(pairs), (32,), generator=g)
        src, _, tgt = batchify([pairs[i] for i in idx])
        loss = loss_fn(model(src, tgt), tgt)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    model.eval()
    src, _, tgt = batchify(pairs[:4])
    print("greedy", model.greedy(src).tolist())


if __name__ == "__main__":
    main()
