"""A character-level language model: an embedding, a recurrent core (LSTM, GRU or RNN) and a
linear read-out, trained with truncated backpropagation through time on a short text, then
asked to continue a prompt greedily. A plain PyTorch script:

    python char_rnn.py --cell lstm --steps 200                      # with PyTorch
    python -m tinygradx.compat char_rnn.py --cell gru --steps 200   # the same file on tinygradx
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT = ("the quick brown fox jumps over the lazy dog. "
        "a lazy dog sleeps while the quick fox runs. ") * 4


class Vocab:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def encode(self, s):
        return torch.tensor([self.stoi[c] for c in s], dtype=torch.long)

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


class CharRNN(nn.Module):
    def __init__(self, vocab_size, embed=16, hidden=32, layers=2, cell="lstm", dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        rnn_cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[cell]
        self.rnn = rnn_cls(embed, hidden, num_layers=layers, batch_first=True,
                           dropout=dropout)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, idx, state=None):
        x = self.embed(idx)                       # (B, T, embed)
        out, state = self.rnn(x, state)           # (B, T, hidden)
        return self.head(out), state              # (B, T, vocab)


def detach(state):
    """Cut the graph between chunks (truncated BPTT); LSTM's state is a pair."""
    if isinstance(state, tuple):
        return tuple(s.detach() for s in state)
    return state.detach()


def batches(data, batch_size, seq_len):
    """Split the text into batch_size parallel streams and walk them seq_len at a time."""
    n = data.size(0) // batch_size
    streams = data[: n * batch_size].view(batch_size, n)
    for i in range(0, n - 1, seq_len):
        t = min(seq_len, n - 1 - i)
        yield streams[:, i:i + t], streams[:, i + 1:i + 1 + t]


def train_step(model, optimizer, x, y, state, clip=1.0):
    model.train()
    logits, state = model(x, state)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item(), detach(state)


@torch.no_grad()
def greedy(model, prompt_ids, n):
    model.eval()
    logits, state = model(prompt_ids.unsqueeze(0))
    out = []
    nxt = logits[0, -1].argmax()
    for _ in range(n):
        out.append(int(nxt))
        logits, state = model(nxt.view(1, 1), state)
        nxt = logits[0, -1].argmax()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cell", choices=("lstm", "gru", "rnn"), default="lstm")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    vocab = Vocab(TEXT)
    data = vocab.encode(TEXT)
    model = CharRNN(len(vocab.chars), cell=args.cell)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    step = 0
    while step < args.steps:
        state = None
        for x, y in batches(data, args.batch, args.seq):
            loss, state = train_step(model, optimizer, x, y, state)
            if step % 25 == 0:
                print(f"step {step:4d}  loss {loss:.3f}")
            step += 1
            if step == args.steps:
                break
    prompt = "the quick "
    print(repr(prompt + vocab.decode(greedy(model, vocab.encode(prompt), 20))))


if __name__ == "__main__":
    main()
