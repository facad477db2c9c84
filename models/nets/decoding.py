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
    """log p(y_t | y_<t, x) for the last position of every prefix: (B, V) numpy."""
    states = model.decode(memory, src_pad, tgx.tensor(prefix), None)     # (B, t, d_model)
    return model.generator(states[:, -1:, :]).numpy()[:, 0, :]           # (B, V)


def greedy_decode(model, src, src_pad, max_len, bos_id, eos_id):
    """Pick the most likely next token until <eos> or max_len; returns a list of id lists.

    src: (B, S) int array, src_pad: (B, S) bool array (True at padding).
    """
    src = np.asarray(src)
    with _eval_mode(model):
        memory = model.encode(tgx.tensor(src), src_pad)                   # H: (B, S, d_model)
        prefix = np.full((src.shape[0], 1), bos_id, dtype=np.int64)       # (B, 1)
        done = np.zeros(src.shape[0], dtype=bool)
        for _ in range(max_len):
            nxt = _next_logprobs(model, memory, src_pad, prefix).argmax(-1)
            nxt = np.where(done, eos_id, nxt)
            prefix = np.concatenate([prefix, nxt[:, None]], axis=1)       # (B, t+1)
            done |= nxt == eos_id
            if done.all():
                break
    return [_strip(row[1:], eos_id) for row in prefix]


def _strip(ids, eos_id):
    ids = list(int(i) for i in ids)
    return ids[:ids.index(eos_id)] if eos_id in ids else ids


def _length_penalty(length, alpha):
    """GNMT's ((5 + |Y|) / 6)^alpha: alpha = 0 compares raw log-probabilities."""
    return ((5.0 + length) / 6.0) ** alpha


def beam_search(model, src, src_pad, max_len, bos_id, eos_id, beam_size=4, length_penalty=0.6):
    """Keep the beam_size best prefixes by log-probability / length penalty, per sentence.

    Returns a list (one per source sentence) of the best id list. beam_size=1 is greedy.
    """
    src = np.asarray(src)
    results = []
    for b in range(src.shape[0]):
        results.append(_beam_one(model, src[b:b + 1], src_pad[b:b + 1], max_len, bos_id,
                                 eos_id, beam_size, length_penalty))
    return results


def _beam_one(model, src, src_pad, max_len, bos_id, eos_id, k, alpha):
    with _eval_mode(model):
        memory = model.encode(tgx.tensor(src), src_pad)                   # (1, S, d_model)
        beams = [([bos_id], 0.0)]                                         # (tokens, log-prob)
        finished = []
        for _ in range(max_len):
            prefixes = np.array([t for t, _ in beams], dtype=np.int64)    # (k', t)
            n = len(beams)
            mem = memory.expand(n, *memory.shape[1:])                     # (k', S, d_model)
            pad = np.repeat(src_pad, n, axis=0)                           # (k', S)
            logp = _next_logprobs(model, mem, pad, prefixes)              # (k', V)
            scores = np.array([s for _, s in beams])[:, None] + logp      # (k', V)
            flat = np.argsort(-scores, axis=None, kind="stable")[:2 * k]
            candidates = []
            for f in flat:
                i, tok = divmod(int(f), scores.shape[1])
                seq = beams[i][0] + [tok]
                if tok == eos_id:
                    finished.append((seq, scores[i, tok]))
                else:
                    candidates.append((seq, scores[i, tok]))
                if len(candidates) == k:
                    break
            beams = candidates
            best_done = max((s / _length_penalty(len(t) - 1, alpha) for t, s in finished),
                            default=-np.inf)
            best_open = max((s / _length_penalty(len(t) - 1, alpha) for t, s in beams),
                            default=-np.inf)
            # log-probabilities only fall as a prefix grows; with alpha = 0 no open beam can
            # overtake a finished one once it is behind
            if not beams or (alpha == 0 and best_done >= best_open) or len(finished) >= k:
                break
        pool = finished or beams
        best = max(pool, key=lambda ts: ts[1] / _length_penalty(len(ts[0]) - 1, alpha))
    return _strip(best[0][1:], eos_id)


def sample(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, eos_id=None):
    """GPT sampling through the model's KV-cached generate(); idx (B, t) int -> (B, t+new)."""
    with _eval_mode(model):
        out = model.generate(tgx.tensor(np.asarray(idx)), max_new_tokens,
                             temperature=temperature, top_k=top_k, top_p=top_p, eos_id=eos_id)
    return out.numpy() if isinstance(out, tgx.Tensor) else np.asarray(out)
