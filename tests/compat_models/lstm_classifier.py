"""A sentiment-style LSTM classifier over variable-length sequences, as the text-classification
tutorials write it: a padded batch from `pad_sequence`, an Embedding with padding_idx,
`pack_padded_sequence(..., enforce_sorted=False)` into a bidirectional two-layer LSTM, the final
hidden states of both directions concatenated into a linear head; `pad_packed_sequence` gives
the per-step outputs back for a mean-pooled variant.

The task is made up so the file runs anywhere: a sequence of word ids 3..19 is "positive" when
it holds more ids from the upper half of the vocabulary than from the lower half.

    python lstm_classifier.py --epochs 4
"""
import argparse

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

PAD = 0
VOCAB = 20


def make_reviews(n, generator=None):
    """n sequences of 3..11 word ids (a list of 1-d LongTensors) and their labels (n,)."""
    lengths = torch.randint(3, 12, (n,), generator=generator)
    seqs = [torch.randint(3, VOCAB, (int(k),), generator=generator) for k in lengths]
    labels = torch.tensor([int((s >= 11).sum() > (s < 11).sum()) for s in seqs])
    return seqs, labels


def collate(seqs):
    """A padded (batch, time) LongTensor and the lengths."""
    lengths = torch.tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True, padding_value=PAD), lengths


class LSTMClassifier(nn.Module):
    def __init__(self, vocab=VOCAB, embed=12, hidden=16, num_layers=2, num_classes=2,
                 dropout=0.0, pool="last"):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed, padding_idx=PAD)
        self.lstm = nn.LSTM(embed, hidden, num_layers=num_layers, batch_first=True,
                            bidirectional=True, dropout=dropout)
        self.fc = nn.Linear(2 * hidden, num_classes)
        self.pool = pool

    def forward(self, text, lengths):
        embedded = self.embedding(text)                                   # (B, T, E)
        packed = pack_padded_sequence(embedded, lengths, batch_first=True,
                                      enforce_sorted=False)
        packed_out, (hidden, cell) = self.lstm(packed)
        if self.pool == "last":
            # the last layer's forward and backward final states: (B, 2H)
            features = torch.cat((hidden[-2], hidden[-1]), dim=1)
        else:
            out, out_lengths = pad_packed_sequence(packed_out, batch_first=True)  # (B, T, 2H)
            mask = (torch.arange(out.size(1))[None, :] < out_lengths[:, None]).float()
            features = (out * mask.unsqueeze(-1)).sum(1) / out_lengths[:, None].float()
        return self.fc(features)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--pool", choices=["last", "mean"], default="last")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    seqs, labels = make_reviews(192, g)
    model = LSTMClassifier(pool=args.pool)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        perm = torch.randperm(len(seqs), generator=g)
        correct = 0
        for start in range(0, len(seqs), 32):
            idx = perm[start:start + 32]
            text, lengths = collate([seqs[i] for i in idx])
            logits = model(text, lengths)
            loss = criterion(logits, labels[idx])
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            correct += (logits.argmax(1) == labels[idx]).sum().item()
        print(f"epoch {epoch}: loss {loss.item():.4f}, train accuracy "
              f"{correct / len(seqs):.3f}")


if __name__ == "__main__":
    main()
