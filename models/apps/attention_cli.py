"""`tinygradx attention --checkpoint CKPT "sentence"`: the attention weights of every layer and
head of a trained model reading one input, as text heatmaps in the terminal and as PNG heatmaps
(with CSV files of the numbers) in a folder.

An encoder-decoder (the translation tasks) reads the sentence as its source and, in the decoder,
<bos> followed by its own greedy translation (or `--target`): three kinds of maps, the encoder's
self-attention, the decoder's causal self-attention and the cross-attention. A GPT (chars, add)
reads the sentence as its prompt: one kind, the causal self-attention. Every input the model
cannot read (an empty sentence, characters outside a language model's vocabulary, more tokens
than the model has positions for) is one error line naming it; a translation's unknown source
tokens are read as <unk>, said in one warning line, as `translate` does.

The maps are captured by `attention_pictures.attention_weights` (each attention softmax's output,
A = softmax(QKᵀ/√d_k + M)), the pictures drawn by `attention_pictures.plot_attention`.
"""
from __future__ import annotations

import os
import sys
import unicodedata

import numpy as np

from .attention_pictures import (TITLES, ZH, gpt_attention, plot_attention,
                                 translation_attention, write_attention_csv)
from .figures import ensure_dir, have_matplotlib, words

KINDS = ("encoder_self", "decoder_self", "cross", "self")
_SHADES = " .:-=+*#%@"      # 10 levels, light to dark, as ascii_heatmap
_ZH_TERMINAL = {"layer {layer}, head {k}": "第 {layer} 层，第 {k} 个头",
                "rows: queries, columns: keys; darker is more weight (. 0.1, : 0.2, ..., @ 1)":
                    "行：查询，列：键；字符越深权重越大（. 0.1，: 0.2，……，@ 1）",
                "wrote {path}": "已写出 {path}"}


def cells(text):
    """Terminal cells of a string: a wide (CJK) character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _visible(token):
    """A token as the terminal can show it: a space is ␣, a line break ⏎, a tab ⇥."""
    return str(token).replace(" ", "␣").replace("\n", "⏎").replace("\t", "⇥") or "∅"


def text_heatmap(a, rows, cols):
    """One (n, m) map of weights in [0, 1] as terminal text, whatever the tokens: the key tokens
    written downwards above their columns, the query tokens down the left. A column is as wide
    as the widest character of its token (a CJK character takes two cells)."""
    a = np.asarray(a, dtype=float)
    rows, cols = [_visible(r) for r in rows], [_visible(c) for c in cols]
    width = max([cells(r) for r in rows] + [0])
    w = max([cells(ch) for c in cols for ch in c] + [1])
    depth = max([len(c) for c in cols] + [1])
    levels = len(_SHADES) - 1
    lines = []
    for k in range(depth):                            # the key tokens, one character a line
        chars = [c[k] if k < len(c) else "" for c in cols]
        head = "".join(ch + " " * (w - cells(ch)) for ch in chars)
        lines.append(" " * (width + 1) + head.rstrip())
    for i, r in enumerate(rows):
        shades = "".join(_SHADES[int(round(float(np.clip(v, 0, 1)) * levels))] * w
                         for v in a[i])
        lines.append(" " * (width - cells(r)) + r + " " + shades.rstrip())
    return "\n".join(lines)


def read_input(trainer, text, target=None):
    """(maps {kind: A (L, h, n, m)}, labels {kind: (query tokens, key tokens)}, warnings) of
    the checkpoint's model reading `text`; ValueError (one line) for an input it cannot read."""
    if not text.strip():
        raise ValueError("the sentence is empty; give the text to read, e.g. \"4 July 1976\"")
    model, task = trainer.model, trainer.task
    notes = []
    if trainer.lm:
        if target is not None:
            raise ValueError(f"--target: the checkpoint is a {trainer.cfg.task} language model, "
                             f"which reads one text (the prompt); drop --target")
        vocab = list(task.vocab)
        unknown = sorted(set(text) - set(vocab))
        if unknown:
            raise ValueError(f"the sentence has characters the model never saw: "
                             f"{', '.join(map(repr, unknown[:10]))} (task {trainer.cfg.task})")
        most = model.config.block_size
        if len(text) > most:
            raise ValueError(f"the sentence has {len(text)} characters; this model reads at most "
                             f"{most} (its block_size)")
        ids = task.encode(text) if trainer.cfg.task == "chars" else [vocab.index(c) for c in text]
        toks = list(text)
        return gpt_attention(model, ids), {"self": (toks, toks)}, notes
    src = list(task.tokenize_src(text))
    unknown = sorted({t for t in src if t not in task.src_vocab})
    if unknown:
        notes.append(f"{len(unknown)} source token(s) outside the vocabulary of task "
                     f"{trainer.cfg.task} are read as <unk>: {', '.join(map(repr, unknown[:10]))}")
    positions = model.pos_encoding.pe.shape[0]
    if len(src) > positions:
        raise ValueError(f"the sentence has {len(src)} tokens; this model reads at most "
                         f"{positions} (its positional encoding's rows)")
    if target is not None:
        tgt = list(task.tokenize_tgt(target))
        if len(tgt) + 1 > positions:
            raise ValueError(f"--target has {len(tgt)} tokens; this model's decoder reads at "
                             f"most {positions - 1} after <bos> (its positional encoding's rows)")
    else:
        import warnings
        with warnings.catch_warnings():          # the unknown tokens are said above, once
            warnings.simplefilter("ignore")
            tgt = list(trainer.translate([src], as_tokens=True)[0])
        if len(tgt) + 1 > positions:             # an untrained model may never say <eos>
            notes.append(f"the model's translation did not end within {positions - 1} tokens; "
                         f"the decoder reads its first {positions - 1}")
            tgt = tgt[:positions - 1]
    if target is not None:
        bad = sorted({t for t in tgt if t not in task.tgt_vocab})
        if bad:
            raise ValueError(f"--target: tokens outside the target vocabulary of task "
                             f"{trainer.cfg.task}: {', '.join(map(repr, bad[:10]))}")
    maps = translation_attention(model, task.src_vocab.encode(src), task.tgt_vocab.encode(tgt))
    tgt_in = ["<bos>"] + tgt
    return maps, {"encoder_self": (src, src), "decoder_self": (tgt_in, tgt_in),
                  "cross": (tgt_in, src)}, notes


def attention_command(checkpoint, text, out_dir="attention", target=None, layer=None, head=None,
                      kind=None, lang="en", png=True, allow_nonfinite=False, out=print,
                      warn=None):
    """`tinygradx attention`: print the text heatmaps of every layer and head (or of the ones
    `layer`, `head`, `kind` pick) and write attention_KIND.png and .csv into out_dir. Returns
    the maps {kind: A (L, h, n, m)}."""
    from tinygradx import io
    from tinygradx.models.training.trainer import Trainer
    if not os.path.isfile(checkpoint):
        raise ValueError(f"checkpoint file not found: {checkpoint}")
    try:
        trainer = Trainer.from_checkpoint(checkpoint, log=lambda *a, **k: None, progress=False,
                                          need_data=False, allow_nonfinite=allow_nonfinite)
    except io.CheckpointError as err:
        raise ValueError(str(err).splitlines()[0]) from None
    maps, labels, notes = read_input(trainer, text, target)
    if kind is not None and kind not in maps:
        raise ValueError(f"--kind {kind}: this model's attention is {', '.join(maps)}")
    some = next(iter(maps.values()))
    L, h = some.shape[:2]
    for flag, value, most in (("--layer", layer, L), ("--head", head, h)):
        if value is not None and not 0 <= value < most:
            raise ValueError(f"{flag} {value}: the model has {most} "
                             f"{'layers' if flag == '--layer' else 'heads'} (0..{most - 1})")
    for note in notes:                           # the input is readable: say what was changed
        (warn or (lambda s: print(f"tinygradx attention: warning: {s}", file=sys.stderr)))(note)
    tr, tt = words(ZH, lang), words(_ZH_TERMINAL, lang)
    out(tt("rows: queries, columns: keys; darker is more weight (. 0.1, : 0.2, ..., @ 1)"))
    for name, A in maps.items():
        if kind is not None and name != kind:
            continue
        rows, cols = labels[name]
        for i in range(A.shape[0]) if layer is None else [layer]:
            for k in range(A.shape[1]) if head is None else [head]:
                out("")
                out(f"{tr(TITLES[name])}: " + tt("layer {layer}, head {k}").format(layer=i, k=k))
                out(text_heatmap(A[i, k], rows, cols))
    if png:
        out("")
        ensure_dir(out_dir)
        for name, A in maps.items():
            if kind is not None and name != kind:
                continue
            rows, cols = labels[name]
            base = os.path.join(out_dir, f"attention_{name}")
            written = [write_attention_csv(A, rows, cols, base + ".csv")]
            picture = plot_attention(A, rows, cols, TITLES[name], base + ".png", lang)
            written += [picture] if picture else []
            for path in written:
                out(tt("wrote {path}").format(path=path))
        if not have_matplotlib():
            out("(PNG heatmaps need matplotlib: pip install 'tinygradx[plot]'; the CSV files "
                "hold the same numbers)")
    return maps


def add_attention_command(sub, command, groups):
    """The `attention` subcommand of the parser (`command`, `groups`: cli.py's helpers)."""
    from .cli_types import int_at_least
    a = command(sub, "attention", "print and draw a checkpoint's attention maps",
                "Print and draw the attention weights of every layer and head of a trained "
                "model reading one sentence: text heatmaps in the terminal, PNG heatmaps and "
                "CSV files in --out. A translation model reads the sentence as its source and "
                "its own translation (or --target) in the decoder; a language model reads it "
                "as its prompt.")
    model, data, output = groups(a, "model", "data", "output")
    model.add_argument("--checkpoint", required=True,
                       help="a checkpoint.npz of `tinygradx train` (required)")
    model.add_argument("--allow_nonfinite", action="store_true",
                       help="load a checkpoint whose weights hold NaN or inf (default: refuse)")
    data.add_argument("sentence", help="the text the model reads (quote it)")
    data.add_argument("--target", default=None,
                      help="translation models: the text the decoder reads (default: the "
                           "model's own greedy translation)")
    output.add_argument("--kind", choices=list(KINDS), default=None,
                        help="only this attention (default: every kind the model has)")
    output.add_argument("--layer", type=int_at_least(0, 1_000), default=None, metavar="N",
                        help="only this layer, counted from 0 (default: every layer)")
    output.add_argument("--head", type=int_at_least(0, 1_000), default=None, metavar="N",
                        help="only this head, counted from 0 (default: every head)")
    output.add_argument("--out", default="attention",
                        help="folder for attention_KIND.png and .csv (default attention)")
    output.add_argument("--no_png", action="store_true",
                        help="print the text heatmaps only, write no files (default: write)")
    output.add_argument("--lang", choices=["en", "zh"], default="en",
                        help="label language (default en)")
    a.set_defaults(fn=_run)


def _run(args):
    attention_command(args.checkpoint, args.sentence, out_dir=args.out, target=args.target,
                      layer=args.layer, head=args.head, kind=args.kind, lang=args.lang,
                      png=not args.no_png, allow_nonfinite=args.allow_nonfinite)
    return 0
