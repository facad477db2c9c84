"""The pictures a learner reads next to the formulas: attention maps, the PE matrix, the
learning-rate schedule, training curves and a run's health (gradient norms, update ratios).
Each family lives in its own module, and this one gathers them under one name:

    attention_pictures.py  attention maps of a model or a checkpoint (capture, CSV, heatmaps)
    formula_pictures.py    the positional encoding and the learning-rate schedule (and the masks
                           and label smoothing, which are not re-exported here)
    run_pictures.py        a run's training curves and `tinygradx plot`'s health picture
    figures.py             what they share: matplotlib as an optional extra, PNG writing, the
                           labels' language, CSV

matplotlib is an optional extra. Every function returns the numbers as numpy arrays and always
writes them as CSV; it writes a PNG too when matplotlib can be imported. Nothing imports
matplotlib at module import time, so `import tinygradx.models.apps.pictures` is free.

    from tinygradx.models.apps import pictures
    maps = pictures.attention_from_checkpoint("runs/reverse/checkpoint.npz", "abcdef", "pics")
    maps["cross"].shape                  # (layers, heads, target positions, source positions)
    pictures.positional_encoding(50, 64, "pics")
    pictures.training_curves("runs/reverse/metrics.jsonl", "pics")
"""
from __future__ import annotations

from .attention_pictures import (ascii_heatmap, attention_from_checkpoint, attention_weights,
                                 capture_attention, gpt_attention, plot_attention,
                                 save_attention, translation_attention, write_attention_csv)
from .figures import (cjk_text, ensure_dir, figure_class, have_matplotlib, save_figure, words,
                      write_matrix_csv)
from .formula_pictures import lr_schedule, positional_encoding
from .run_pictures import (TRAINING_COLUMNS, read_metrics, run_title, training_curves,
                           training_health)

__all__ = ["capture_attention", "attention_weights", "translation_attention", "gpt_attention",
           "write_attention_csv", "plot_attention", "ascii_heatmap", "save_attention",
           "attention_from_checkpoint", "positional_encoding", "lr_schedule", "TRAINING_COLUMNS",
           "read_metrics", "run_title", "training_health", "training_curves", "have_matplotlib",
           "figure_class", "save_figure", "cjk_text", "words", "ensure_dir", "write_matrix_csv"]
