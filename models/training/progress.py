"""What a run prints as it goes: a progress bar on a terminal, one plain line per log interval
elsewhere (no carriage-return frames in a pipe or a file), and the evaluation line."""
from __future__ import annotations

import contextlib
import signal
import sys
import threading


class Progress:
    """Progress of a run: when stderr is a terminal, a tqdm bar there (loss, lr, tokens/s);
    elsewhere (a pipe, a file, CI's log) no carriage-return frames but one plain line every
    `every` steps on stdout, flushed, in order with the evaluation lines."""

    def __init__(self, total, initial, enabled, every=0):
        self.bar, self.total, self.every = None, total, every if enabled else 0
        self.step = initial
        if enabled and is_terminal(sys.stderr):
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True,
                                file=sys.stderr)
                self.every = 0
            except ImportError:
                pass

    def update(self, loss, lr, rate):
        self.step += 1
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", lr=f"{lr:.2e}", tok_s=f"{rate:,.0f}",
                                 refresh=False)
            self.bar.update(1)
        elif self.every and self.step % self.every == 0:
            print(f"step {self.step}/{self.total} | loss {loss:.4f} | lr {lr:.2e} | "
                  f"{rate:,.0f} tok/s", flush=True)

    def write(self, text):
        if self.bar is not None:
            self.bar.write(text)
        else:
            print(text, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):         # no isatty, or a closed file
        return False


def fmt_eval(row):
    parts = [f"step {row['step']}", f"train loss {row['loss']:.4f}",
             f"val loss {row['val_loss']:.4f}"]
    if "val_exact_match" in row:
        parts.append(f"val exact match {100 * row['val_exact_match']:.1f}%")
    if "flops" in row:
        parts.append(f"{row['flops'] / 1e9:.3f} GFLOP/step, {row['flop_per_s'] / 1e9:.1f} "
                     f"GFLOP/s, MFU {row['mfu']:.0%}")
    return " | ".join(parts)


@contextlib.contextmanager
def ctrl_c_after():
    """Hold a Ctrl-C that arrives during the block until the block is done, then hand it to the
    handler that was in place (the Trainer's: stop after this step; or Python's: raise
    KeyboardInterrupt). A save is never cut in the middle (numpy's zip writer turns an
    interrupt into a "seek of closed file" error): the checkpoint on disk is the old one or
    the complete new one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    for frame in caught:
        if callable(previous):
            previous(signal.SIGINT, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt
