"""Where a step spends its time: the profile table.

    with tgx.profile() as prof:
        loss = model(x, y)[1]; loss.backward(); opt.step()
    print(prof.table())          # time per op type, forward and backward, and what is left

The process-wide speed settings (OpenBLAS's idle threads, glibc's allocator) are in
`tinygradx.process`.
"""
from __future__ import annotations

import contextlib
import time
from collections import defaultdict

from .autograd import STATE, observe


class Profile:
    """Seconds and call counts per op type, forward and backward, collected while active."""

    def __init__(self):
        self.forward = defaultdict(lambda: [0, 0.0])
        self.backward = defaultdict(lambda: [0, 0.0])
        self.wall = 0.0

    def _on_forward(self, ctx, inputs, out, seconds):
        entry = self.forward[ctx.name()]
        entry[0] += 1
        entry[1] += seconds

    def _on_backward(self, ctx, seconds):
        entry = self.backward[ctx.name()]
        entry[0] += 1
        entry[1] += seconds

    def totals(self):
        """{op: (forward s, backward s, forward calls)} sorted by total time, largest first."""
        names = set(self.forward) | set(self.backward)
        rows = {n: (self.forward[n][1], self.backward[n][1], self.forward[n][0])
                for n in names}
        return dict(sorted(rows.items(), key=lambda kv: -(kv[1][0] + kv[1][1])))

    def table(self):
        """A text table: ms per op type (forward, backward, share of the wall time)."""
        rows = self.totals()
        op_time = sum(f + b for f, b, _ in rows.values())
        lines = [f"{'op':<16}{'calls':>7}{'fwd ms':>10}{'bwd ms':>10}{'share':>8}",
                 "-" * 51]
        for name, (f, b, n) in rows.items():
            share = (f + b) / self.wall if self.wall else 0.0
            lines.append(f"{name:<16}{n:>7}{f * 1e3:>10.2f}{b * 1e3:>10.2f}{share:>8.1%}")
        other = self.wall - op_time
        lines.append("-" * 51)
        lines.append(f"{'ops total':<16}{'':>7}{op_time * 1e3:>20.2f}"
                     f"{(op_time / self.wall if self.wall else 0):>8.1%}")
        lines.append(f"{'other':<16}{'':>7}{other * 1e3:>20.2f}"
                     f"{(other / self.wall if self.wall else 0):>8.1%}   (Python, optimizer, "
                     f"data)")
        lines.append(f"{'wall':<16}{'':>7}{self.wall * 1e3:>20.2f}")
        return "\n".join(lines)


@contextlib.contextmanager
def profile():
    """Time every op's forward and backward inside the block; yields a Profile."""
    prof = Profile()
    STATE.backward_observers.append(prof._on_backward)
    start = time.perf_counter()
    try:
        with observe(prof._on_forward):
            yield prof
    finally:
        prof.wall = time.perf_counter() - start
        STATE.backward_observers.remove(prof._on_backward)
