"""Decoding: greedy and beam search for the encoder-decoder, sampling for GPT.

All functions run under no_grad and put the model in eval mode for their duration.
The encoder-decoder is called through three methods of models.transformer.EncoderDecoder:
`encode(src, src_pad)` -> memory H (B, S, d_model), `decode(memory, src_pad, tgt, tgt_pad)`
-> decoder states (B, T, d_model), and `generator(states)` -> log-probabilities (B, T, V).
"""
from __future__ import annotations

import numpy as np

import tinygradx as tgx


class _eval_mode:
    """Switch a model to eval for a block and restore its previous mode after."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.was_training = self.model.training
        self.model.eval()
        self.nograd = tgx.no_grad()
        self.nograd.__enter__()

    def __exit__(self, *exc):
        self.nograd.__exit__(*exc)
        self.model.train(self.was_training)
        return False


def _next_logprobs(model, memory, src_pad, prefix):
    """log p(y_t | y_<t, x) for the last position of every prefix, recomputing the whole
    prefix: (B, V) numpy. The reference the cached path is tested against."""
    states = model.decode(memory, src_pad, tgx.tensor(prefix), None)     # (B, t, d_model)
    return model.generator(states[:, -1:, :]).detach().numpy()[:, 0, :]           # (B, V)


class _Stepper:
    """The next-token log-probabilities of a batch of target prefixes, one call per step.

    cached (the default): model.decode_step feeds only the newest token; the self-attention
    K, V of earlier positions and the cross-attention K, V of H live in a DecodeState, so a
    step costs one position, not the whole prefix. Uncached: the whole prefix is decoded
    again (the reference). `keep(rows)` narrows the batch to `rows` (finished sentences leave
    it; beams follow their parents)."""

    def __init__(self, model, src, src_pad, cached):
        # a decoder attention with its own forward cannot be cached (decode_step would
        # compute the stock module's math instead): such a model decodes whole prefixes
        self.model, self.cached = model, cached and model.cacheable()
        self.src_pad = None if src_pad is None else np.asarray(src_pad, dtype=bool)
        self.memory = _encode_by_length(model, np.asarray(src), self.src_pad)  # H: (B, S, d)
        self.state = model.init_decode_state(self.memory, self.src_pad) if self.cached else None

    def keep(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        if self.cached:
            self.state.reorder(rows)
        else:
            self.memory = self.memory[rows]                               # (B', S, d_model)
            self.src_pad = None if self.src_pad is None else self.src_pad[rows]

    def __call__(self, prefix):
        """prefix (B, t) ids, the same rows as the batch -> (B, V) log-probs of token t+1."""
        if not self.cached:
            return _next_logprobs(self.model, self.memory, self.src_pad, prefix)
        fed = self.state.length                                          # positions cached
        return self.model.decode_step(tgx.tensor(prefix[:, fed:]), self.state).detach().numpy()


# A call of the encoder costs about as much as this many extra source positions (its ops'
# fixed cost against the GEMM work per position, measured on the demo's model): the unit of
# the grouping below
_GROUP_COST = 128


def _length_groups(lengths):
    """Split rows into groups of similar source length: a list of row-index arrays.

    Each group is encoded at the length of its longest source, so a group of n rows costs
    n * max_length positions plus _GROUP_COST; a dynamic program over the distinct lengths
    (sorted) picks the cheapest split."""
    order = np.argsort(lengths, kind="stable")
    uniq, counts = np.unique(lengths[order], return_counts=True)
    ends = np.cumsum(counts)                                  # rows up to each distinct length
    best = [0.0] + [np.inf] * len(uniq)                       # best[j]: first j lengths
    cut = [0] * (len(uniq) + 1)
    for j in range(1, len(uniq) + 1):
        for i in range(j):
            rows = ends[j - 1] - (ends[i - 1] if i else 0)
            cost = best[i] + rows * uniq[j - 1] + _GROUP_COST
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], len(uniq)
    while j:
        i = cut[j]
        groups.append(order[(ends[i - 1] if i else 0):ends[j - 1]])
        j = i
    return groups[::-1]


def _encode_by_length(model, src, src_pad):
    """H = model.encode(src, src_pad) (B, S, d), with the sources grouped by length so that
    little of the encoder's work is spent on padding.

    Each group is cut to its longest source and encoded alone; its rows go back to their
    places, zeros past the cut (padded positions, which every later attention masks out).
    Padding must sit at the end of each row (as pad_batch makes it); otherwise, or with no
    padding, this is one plain encode."""
    if src_pad is None or not src_pad.any():
        return model.encode(tgx.tensor(src), src_pad)
    lengths = (~src_pad).sum(axis=1)
    if not np.array_equal(src_pad, np.arange(src.shape[1]) >= lengths[:, None]):
        return model.encode(tgx.tensor(src), src_pad)             # padding not at the ends
    groups = _length_groups(lengths)
    if len(groups) == 1:
        return model.encode(tgx.tensor(src), src_pad)
    memory = None
    for rows in groups:
        n = max(int(lengths[rows].max()), 1)
        pad = src_pad[rows, :n]
        h = model.encode(tgx.tensor(src[rows, :n]), pad if pad.any() else None).numpy()
        if memory is None:
            memory = np.zeros((src.shape[0], src.shape[1], h.shape[-1]), dtype=h.dtype)
        memory[rows, :n] = h                                      # (rows, n, d)
    return tgx.Tensor(memory)


def _check_args(where, model, src, src_pad, max_len, bos_id, eos_id):
    """The arguments every decoder shares, each refused by name: src (B, S) integer ids with
    S >= 1 (B may be 0), src_pad None or of src's shape, max_len an int >= 0, bos_id and
    eos_id ids of the target vocabulary. Returns src and src_pad as arrays."""
    a = np.asarray(src.detach().numpy() if isinstance(src, tgx.Tensor) else src)
    if a.dtype.kind not in "iu" or a.ndim != 2:
        raise ValueError(f"{where}: src must be integer token ids of shape (B, S), got dtype "
                         f"{a.dtype} and shape {a.shape}")
    if a.shape[1] == 0:
        raise ValueError(f"{where}: src has no positions (shape {a.shape}); each source "
                         f"needs at least one token")
    if src_pad is not None:
        src_pad = np.asarray(src_pad)
        if src_pad.shape != a.shape:
            raise ValueError(f"{where}: src_pad must have the shape of src {a.shape}, got "
                             f"{src_pad.shape}")
    if isinstance(max_len, bool) or not isinstance(max_len, (int, np.integer)) or max_len < 0:
        raise ValueError(f"{where}: max_len must be an int >= 0, got {max_len!r}")
    vocab = getattr(getattr(model, "config", None), "tgt_vocab", None)
    for name, v in (("bos_id", bos_id), ("eos_id", eos_id)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 or (
                vocab is not None and v >= vocab):
            raise ValueError(f"{where}: {name} must be a token id of the target vocabulary "
                             f"(0..{'' if vocab is None else vocab - 1}), got {v!r}")
    return a, src_pad


def greedy_decode(model, src, src_pad, max_len, bos_id, eos_id, cached=True):
    """Pick the most likely next token until <eos> or max_len; returns a list of id lists.

    src: (B, S) int array, src_pad: (B, S) bool array (True at padding). All sentences are
    decoded together; a sentence leaves the batch when it emits <eos>. cached=False recomputes
    every prefix (the reference: same tokens, tested).
    """
    src, src_pad = _check_args("greedy_decode", model, src, src_pad, max_len, bos_id, eos_id)
    B = src.shape[0]
    out = [None] * B
    if not B:
        return []
    with _eval_mode(model):
        step = _Stepper(model, src, src_pad, cached)
        prefix = np.full((B, 1), bos_id, dtype=np.int64)                 # (B', t)
        alive = np.arange(B)                                             # sentence of each row
        for _ in range(max_len):
            nxt = step(prefix).argmax(-1)                                # (B',)
            prefix = np.concatenate([prefix, nxt[:, None]], axis=1)      # (B', t+1)
            done = nxt == eos_id
            for row in np.flatnonzero(done):
                out[alive[row]] = prefix[row, 1:]
            if done.all():
                break
            if done.any():
                keep = np.flatnonzero(~done)
                step.keep(keep)
                prefix, alive = prefix[keep], alive[keep]
        for row, b in enumerate(alive):                                  # max_len reached
            if out[b] is None:
                out[b] = prefix[row, 1:]
    return [_strip(ids, eos_id) for ids in out]


def _strip(ids, eos_id):
    ids = np.asarray(ids, dtype=np.int64).tolist()                      # Python ints, in C
    return ids[:ids.index(eos_id)] if eos_id in ids else ids


def _length_penalty(length, alpha):
    """GNMT's ((5 + |Y|) / 6)^alpha: alpha = 0 compares raw log-probabilities."""
    return ((5.0 + length) / 6.0) ** alpha


class _Beams:
    """One sentence's search: up to k open prefixes with their log-probabilities, and the
    finished ones."""

    def __init__(self, bos_id, k, alpha):
        self.open, self.finished, self.k, self.alpha = [([bos_id], 0.0)], [], k, alpha
        self.done = False

    def score(self, ts):
        return ts[1] / _length_penalty(len(ts[0]) - 1, self.alpha)

    def advance(self, logp, eos_id):
        """logp (n, V): next-token log-probs of the n open prefixes. Keeps the k best
        continuations; returns the row (0..n-1) each new open prefix extends."""
        scores = np.array([s for _, s in self.open])[:, None] + logp      # (n, V)
        flat = np.argsort(-scores, axis=None, kind="stable")[:2 * self.k]
        parents, candidates = [], []
        for f in flat:
            i, tok = divmod(int(f), scores.shape[1])
            seq = self.open[i][0] + [tok]
            if tok == eos_id:
                self.finished.append((seq, scores[i, tok]))
            else:
                candidates.append((seq, scores[i, tok]))
                parents.append(i)
            if len(candidates) == self.k:
                break
        self.open = candidates
        best_done = max(map(self.score, self.finished), default=-np.inf)
        best_open = max(map(self.score, self.open), default=-np.inf)
        # log-probabilities only fall as a prefix grows; with alpha = 0 no open beam can
        # overtake a finished one once it is behind
        self.done = (not self.open or (self.alpha == 0 and best_done >= best_open)
                     or len(self.finished) >= self.k)
        return parents

    def best(self):
        return max(self.finished or self.open, key=self.score)[0]


def beam_search(model, src, src_pad, max_len, bos_id, eos_id, beam_size=4, length_penalty=0.6,
                cached=True):
    """Keep the beam_size best prefixes by log-probability / length penalty, per sentence.

    Returns a list (one per source sentence) of the best id list. beam_size=1 is greedy. Every
    open beam of every sentence is one row of a single batch, so a step is one decoder call;
    a sentence's rows leave the batch when its search ends. cached=False recomputes every
    prefix (the reference: same tokens, tested).
    """
    src, src_pad = _check_args("beam_search", model, src, src_pad, max_len, bos_id, eos_id)
    if isinstance(beam_size, bool) or not isinstance(beam_size, (int, np.integer)) \
            or beam_size < 1:
        raise ValueError(f"beam_search: beam_size must be an int >= 1, got {beam_size!r}")
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)) \
            or not np.isfinite(length_penalty):
        raise ValueError(f"beam_search: length_penalty must be a finite number, got "
                         f"{length_penalty!r}")
    if not src.shape[0]:
        return []
    searches = [_Beams(bos_id, beam_size, length_penalty) for _ in range(src.shape[0])]
    with _eval_mode(model):
        step = _Stepper(model, src, src_pad, cached)
        owner = list(range(len(searches)))                # sentence of each batch row
        for _ in range(max_len):
            rows = {}                                     # sentence -> its rows in the batch
            for r, b in enumerate(owner):
                rows.setdefault(b, []).append(r)
            prefix = np.array([t for b in rows for t, _ in searches[b].open],
                              dtype=np.int64)             # (rows, t): all open beams alike long
            logp = step(prefix)                           # (rows, V)
            keep, owner = [], []
            for b, rs in rows.items():
                parents = searches[b].advance(logp[rs], eos_id)
                if not searches[b].done:
                    keep += [rs[i] for i in parents]
                    owner += [b] * len(parents)
            if not keep:
                break
            step.keep(keep)                               # beams follow their parents
    return [_strip(s.best()[1:], eos_id) for s in searches]


def sample(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, eos_id=None):
    """GPT sampling through the model's KV-cached generate(); idx (B, t) int -> (B, t+new)."""
    with _eval_mode(model):
        out = model.generate(tgx.tensor(np.asarray(idx)), max_new_tokens,
                             temperature=temperature, top_k=top_k, top_p=top_p, eos_id=eos_id)
    return out.detach().numpy() if isinstance(out, tgx.Tensor) else np.asarray(out)
