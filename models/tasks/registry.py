"""The translation tasks by name: one table, built from the task modules below it."""

from __future__ import annotations

from collections.abc import Callable

from .translation import (TranslationTask, copy_task, dates_task, numbers_task, numbers_zh_task,
                          reverse_task, sort_task)
from .tsv import tsv_task


def _tsv(seed: int = 0, n_train: int | None = None, n_valid: int | None = None,
         n_test: int | None = None, **kw) -> TranslationTask:
    return tsv_task(seed=seed, n_train=n_train, n_valid=n_valid, n_test=n_test, **kw)


TRANSLATION_TASKS: dict[str, Callable[..., TranslationTask]] = {
    "copy": copy_task,
    "reverse": reverse_task,
    "sort": sort_task,
    "numbers": numbers_task,
    "numbers_zh": numbers_zh_task,
    "dates": dates_task,
    "tsv": _tsv,
}


def make_translation_task(name: str, seed: int = 0, n_train: int | None = None,
                          n_valid: int | None = None, n_test: int | None = None,
                          **kw) -> TranslationTask:
    """Build translation task ``name`` deterministically from ``seed``.

    ``n_train``/``n_valid``/``n_test`` left as ``None`` take the task's defaults (for ``tsv`` they
    are optional caps). Other keywords go to the task (e.g. ``max_len=12`` for ``copy``,
    ``path=...`` for ``tsv``). An unknown name raises ``ValueError`` listing the known names.
    """
    if name not in TRANSLATION_TASKS:
        raise ValueError(
            f"unknown translation task {name!r}; known: {', '.join(TRANSLATION_TASKS)}")
    sizes = {k: v for k, v in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test))
             if v is not None}
    try:
        return TRANSLATION_TASKS[name](seed=seed, **sizes, **kw)
    except TypeError as e:
        # A misspelt keyword would otherwise surface as a raw TypeError from deep inside.
        if "unexpected keyword argument" in str(e):
            raise ValueError(f"task {name!r}: {e}") from None
        raise
