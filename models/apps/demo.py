"""The main job (`make demo` / `tinygradx demo`): train, show, save, draw.

1. trains the original encoder-decoder Transformer (Post-LN, 2+2 layers, d_model 64) on the
   `dates` task: human-written dates in a dozen formats -> ISO 8601;
2. reports exact match on 1,000 held-out dates (none of them seen in training in any format)
   and translates a handful of examples, including today's date;
3. saves the checkpoint (atomic, pickle-free) so `tinygradx translate` can use it;
4. writes the backward graph with the residual (identity) path highlighted, the
   cross-attention heatmap of one example, and the run's health plot (loss, lr, per-layer
   gradient norms and update:data ratios; PNG with matplotlib, CSV always).
"""
from __future__ import annotations

import datetime
import os
import time
import unicodedata

import tinygradx as tgx

from tinygradx.models.tasks import is_lm_task, pad_batch
from tinygradx.models.training.trainer import Trainer, TrainConfig

# measured on 2 cores: see docs/tasks.md for the run that produced these settings
DEMO_CONFIG = dict(task="dates", n_layer=2, d_model=64, n_head=4, dropout=0.0, lr=3e-3,
                   min_lr=1e-4, warmup=100, batch_size=64, max_steps=1200, eval_interval=400,
                   eval_examples=300, health_interval=10)

EXAMPLES = ["30 Nov 2026", "November 30, 2026", "2026年11月30日", "11/30/26", "30.11.2026",
            "Monday, November 30, 2026", "july 4 1976", "1999/12/31", "1 jan 2000"]


def _today_examples():
    today = datetime.date.today()
    return [f"{today.day} {today.strftime('%b')} {today.year}",
            f"{today.strftime('%B')} {today.day}, {today.year}"]


def run_demo(steps=None, out_dir="runs/demo", task="dates", log=print):
    if is_lm_task(task):
        raise ValueError(f"the demo trains an encoder-decoder; {task!r} is a language-model "
                         f"task (use `tinygradx train --task {task}`)")
    cfg = dict(DEMO_CONFIG, task=task, out_dir=out_dir)
    if steps is not None:
        cfg["max_steps"] = steps
    trainer = Trainer(TrainConfig(**cfg), log=log, overwrite=True)   # the demo owns its dir
    model = trainer.model
    from .inspect_models import model_facts
    facts = model_facts(model)                  # what the model is, read from the model
    ln, layers = {"post": "Post-LN", "pre": "Pre-LN"}[facts["norm"]], facts["layers"]
    log(f"tinygradx demo: the encoder-decoder Transformer of 'Attention Is All You Need' "
        f"({model.num_parameters():,} parameters, {ln}, {layers}+{layers} layers, d_model "
        f"{trainer.cfg.d_model}) learns the '{task}' "
        f"task: {len(trainer.task.train):,} training pairs, {len(trainer.task.test):,} "
        f"held out.")
    start = time.perf_counter()
    if not trainer.train():
        return 130
    minutes = (time.perf_counter() - start) / 60
    acc = trainer.exact_match("test", limit=len(trainer.task.test))
    log(f"\ntrained {trainer.step} steps in {minutes:.1f} min; exact match on "
        f"{len(trainer.task.test):,} held-out examples: {100 * acc:.1f}%\n")
    examples = EXAMPLES + [e for e in _today_examples() if e not in EXAMPLES] \
        if task == "dates" else \
        [s for s, _ in trainer.task.test[:8]]
    if task != "dates":
        examples = [trainer.task.detok_src(list(s)) if isinstance(s, (list, tuple)) else s
                    for s in examples]
    outputs = trainer.translate(examples)
    width = max(_display_width(e) for e in examples)
    for src, out in zip(examples, outputs, strict=True):
        log(f"  {src}{' ' * (width - _display_width(src))}  ->  {out}")
    ckpt = trainer.save()
    log(f"\ncheckpoint: {ckpt}   (try: tinygradx translate --checkpoint {ckpt} "
        f"\"4 July 1976\")")
    _draw_graph(trainer, out_dir, log)
    _draw_attention(trainer, examples[0], out_dir, log)
    _draw_health(out_dir, log)
    return 0


def _draw_health(out_dir, log):
    """Loss, lr, per-layer gradient norms and update:data ratios (`tinygradx plot`)."""
    from . import pictures
    written = pictures.training_health(out_dir)
    log("health: " + ", ".join(written) + "   (update:data ratios near 1e-3 are healthy)")


def _display_width(text):
    """Terminal columns: CJK characters take two, so the example table stays aligned."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _draw_graph(trainer, out_dir, log):
    """Backward graph of the loss on two examples, residual path in bold."""
    from tinygradx import viz
    model = trainer.model
    model.eval()
    batch = pad_batch(trainer.task.encoded("valid")[:2])
    logp = model(tgx.tensor(batch.src), tgx.tensor(batch.tgt_in), batch.src_key_padding,
                 batch.tgt_key_padding)                                    # (2, T, V)
    V = logp.shape[-1]
    loss = tgx.functional.cross_entropy(logp.reshape(-1, V),              # (2*T, V)
                                        batch.tgt_out.reshape(-1),        # (2*T,)
                                        ignore_index=0)
    loss.backward(retain_graph=True)
    graph = viz.to_dot(loss, params=model, depth=4, highlight="residual",
                       title="backward graph of the dates model (depth 4); bold: the "
                             "identity path from the loss to the embeddings")
    dot_path = os.path.join(out_dir, "graph.dot")
    with open(dot_path, "w", encoding="utf-8") as f:
        f.write(graph.source)
    log(viz.residual_summary(loss))
    try:
        path = viz.render(graph, os.path.join(out_dir, "graph.svg"))
        log(f"graph: {path} (and {dot_path})")
    except viz.RendererNotFound as err:
        log(f"graph: {dot_path} (no renderer: {err})")
    model.zero_grad()
    model.train()


def _draw_attention(trainer, sentence, out_dir, log):
    """Encoder, decoder and cross-attention of one translated sentence: PNG (matplotlib) + CSV."""
    from . import pictures
    task = trainer.task
    src = task.tokenize_src(sentence)
    tgt = trainer.translate([src], as_tokens=True)[0]
    maps = pictures.translation_attention(trainer.model, task.src_vocab.encode(src),
                                          task.tgt_vocab.encode(tgt))
    bos = ["<bos>"] + list(tgt)
    labels = {"encoder_self": (src, src), "decoder_self": (bos, bos), "cross": (bos, src)}
    written = pictures.save_attention(maps, labels, out_dir, prefix="attention")
    paths = [p for kind in ("cross", "encoder_self", "decoder_self") for p in written[kind]]
    log("attention: " + ", ".join(paths))
    if not any(p.endswith(".png") for p in paths):
        log("  (PNG heatmaps need matplotlib: pip install 'tinygradx[plot]'; the CSVs hold the "
            "same numbers)")


__all__ = ["run_demo", "DEMO_CONFIG"]
