"""In-place changes and the backward walk: version counters (docs/design.md, "In-place
operations").

Each in-place op bumps the version counter of the tensor it changes (shared by its views); a
node records the versions of its inputs and output when it is created. The walk's
toposort calls `resolve_parents` on a node whose versions no longer match: an error if the node
holds the changed memory, else its edge goes to the graph the tensor had when the node used it.
"""
from __future__ import annotations

import numpy as np

def resolve_parents(t, ctx):
    """Check a node whose output or inputs changed in place since it was recorded.

    A change is fatal only if the node holds the changed memory (it saved that input or its
    output for backward); otherwise the node's edge goes to the tensor's history as it was
    when the node used it (`Tensor._history`: the graph an in-place op replaced).
    """
    now = t._version[0]
    if now != ctx.out_version and _holds(ctx, t._data):
        raise _modified_error(ctx, "its output", t, ctx.out_version, now)
    parents = list(ctx.parents)
    for i, (p, seen_at) in enumerate(zip(ctx.parents, ctx.versions, strict=True)):
        now = p._version[0]
        if now == seen_at:
            continue
        if _holds(ctx, p._data):
            raise _modified_error(ctx, "an input", p, seen_at, now)
        for changed_at, old in p._history or ():
            if changed_at >= seen_at:             # p's graph as it was at version seen_at
                parents[i] = old
                break
    ctx.parents = tuple(parents)
    ctx.versions = tuple([p._version[0] for p in parents])
    ctx.out_version = t._version[0]


def _holds(ctx, arr):
    """Whether the node keeps an array that shares memory with `arr` (saved for backward)."""
    for v in ctx.__dict__.values():
        for a in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(a, np.ndarray) and np.may_share_memory(a, arr):
                return True
    return False


def _modified_error(ctx, what, t, saved_at, now):
    where = f" (in {ctx.scope})" if ctx.scope else ""
    by = f"{t._version[1]}; " if len(t._version) > 1 else ""
    made = getattr(ctx, "callsite", None)
    return RuntimeError(
        f"{ctx.name()}{where}: {what} of shape {tuple(t.shape)} was modified by an in-place "
        f"operation ({by}version {now}, saved at version {saved_at}) after {ctx.name()} saved "
        f"it; backward needs its old value. Use .clone() before the in-place change."
        + (f" The {ctx.name()} node was created at {made}." if made else ""))

