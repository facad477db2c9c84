"""Train the encoder-decoder Transformer of transformer.py to copy short sequences, with the
paper's learning rate: Adam(betas=(0.9, 0.98), eps=1e-9) driven by a LambdaLR warm-up,

    lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)

then decode a few sequences greedily. A plain PyTorch script:

    python train_copy.py --steps 200                      # with PyTorch
    python -m tinygradx.compat train_copy.py --steps 200  # the same file on tinygradx
"""
import argparse

import torch
from torch.optim.lr_scheduler import LambdaLR

from transformer import PAD, LabelSmoothingLoss, Transformer, greedy_decode

BOS = 1


def rate(step, d_model, factor, warmup):
    """The paper's schedule (section 5.3); LambdaLR counts from 0, the formula from 1."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def make_optimizer(model, d_model, warmup, factor=1.0):
    # lr=1.0: LambdaLR multiplies the base rate by rate(step), so the rate IS the schedule
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = LambdaLR(optimizer, lr_lambda=lambda step: rate(step, d_model, factor, warmup))
    return optimizer, scheduler


def copy_batch(batch_size, length, vocab):
    """Random sequences that start with BOS; the target is the sequence itself."""
    data = torch.randint(2, vocab, (batch_size, length))
    data[:, 0] = BOS
    return data, data.clone()


def train_step(model, criterion, optimizer, scheduler, src, tgt):
    """One update on (src, tgt); returns the loss per target token (a float)."""
    model.train()
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    log_probs = model(src, tgt_in)
    n_tokens = (tgt_out != PAD).sum()
    loss = criterion(log_probs.reshape(-1, log_probs.size(-1)), tgt_out.reshape(-1)) / n_tokens
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    return loss.item()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--vocab", type=int, default=11)
    parser.add_argument("--length", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--d-model", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--factor", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    model = Transformer(args.vocab, args.vocab, n_layers=2, d_model=args.d_model,
                        d_ff=2 * args.d_model, n_heads=4, dropout=0.0)
    criterion = LabelSmoothingLoss(args.vocab, padding_idx=PAD, smoothing=0.1)
    optimizer, scheduler = make_optimizer(model, args.d_model, args.warmup, args.factor)
    for step in range(args.steps):
        src, tgt = copy_batch(args.batch, args.length, args.vocab)
        loss = train_step(model, criterion, optimizer, scheduler, src, tgt)
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss:.3f}  lr {scheduler.get_last_lr()[0]:.2e}")

    model.eval()
    src, _ = copy_batch(3, args.length, args.vocab)
    out = greedy_decode(model, src, max_len=args.length, bos=BOS)
    correct = (out == src).all(dim=1)
    for s, o, ok in zip(src.tolist(), out.tolist(), correct.tolist(), strict=True):
        print("src", s, "-> out", o, "ok" if ok else "WRONG")
    return model


if __name__ == "__main__":
    main()
