"""Offline, deterministic training data: pure Python + numpy, nothing downloaded.

Translation tasks (encoder-decoder), built with ``make_translation_task(name, seed, ...)``:

============  ===========================================  =====================  ===============
name          source -> target                             tokens (src / tgt)     default sizes
============  ===========================================  =====================  ===============
copy          "cabj" -> "cabj" (a-j, length 3..10)         chars / chars          10000/1000/1000
reverse       "cabj" -> "jbac"                             chars / chars          10000/1000/1000
sort          "cabj" -> "abcj"                             chars / chars          10000/1000/1000
numbers       "1984" -> "one thousand nine hundred ..."    digits / words         20000/1000/1000
numbers_zh    "1984" -> "一千九百八十四"                   digits / chars         20000/1000/1000
dates         "30 Nov 2026", "11/30/26", ... -> 2026-11-30 chars / chars          20000/1000/1000
tsv           your eng-fra.txt style file (``path=``)       words / words          90%/5..10%/10%
============  ===========================================  =====================  ===============

(sizes are train/valid/test pairs; source strings never repeat across splits, and ``dates`` splits
by date, so a held-out date appears in training in no format.)

Language-model tasks (GPT), built with ``make_lm_task(name, ...)``:

======  ===================================================================  ==================
name    data                                                                 vocabulary
======  ===================================================================  ==================
add     n-digit a, b, reversed sum: 47+85 -> 4 7 8 5 2 3 1 (minGPT adder)    10 digits
chars   a UTF-8 text file (``path=``), default: stdlib docstrings; 90/10     sorted characters
======  ===================================================================  ==================

Batching for encoder-decoder training is in :mod:`.batching` (``pad_batch``, ``iterate_batches``).
"""

from .batching import Batch, batch_indices, iterate_batches, pad_batch
from .dates import DATE_FORMATS, format_date
from .lm import (
    IGNORE,
    LM_TASKS,
    STDLIB_DOC_MODULES,
    AdditionTask,
    CharTask,
    add_task,
    chars_task,
    make_lm_task,
    read_text,
    stdlib_docstrings,
)
from .numbers import english_words, number_to_chinese, number_to_english
from .translation import (
    TranslationTask,
    copy_task,
    dates_task,
    numbers_task,
    numbers_zh_task,
    reverse_task,
    sort_task,
)
from .registry import TRANSLATION_TASKS, make_translation_task
from .tsv import normalize_string, read_tsv_pairs, tsv_task, unicode_to_ascii
from .vocab import BOS, EOS, PAD, SPECIALS, UNK, Vocab

TASK_NAMES = tuple(TRANSLATION_TASKS) + tuple(LM_TASKS)


def make_task(name: str, seed: int = 0, **kw):
    """Any task by name: a :class:`TranslationTask`, :class:`AdditionTask` or :class:`CharTask`."""
    if name in TRANSLATION_TASKS:
        return make_translation_task(name, seed=seed, **kw)
    if name in LM_TASKS:
        return make_lm_task(name, seed=seed, **kw)
    raise ValueError(f"unknown task {name!r}; known: {', '.join(TASK_NAMES)}")


def is_lm_task(name: str) -> bool:
    """Whether ``name`` is a language-model (GPT) task rather than a translation task."""
    return name in LM_TASKS


__all__ = [
    "Batch", "batch_indices", "iterate_batches", "pad_batch",
    "DATE_FORMATS", "format_date",
    "IGNORE", "LM_TASKS", "STDLIB_DOC_MODULES", "AdditionTask", "CharTask", "add_task",
    "chars_task", "make_lm_task", "read_text", "stdlib_docstrings",
    "english_words", "number_to_chinese", "number_to_english",
    "TRANSLATION_TASKS", "TranslationTask", "copy_task", "dates_task", "make_translation_task",
    "numbers_task", "numbers_zh_task", "reverse_task", "sort_task",
    "normalize_string", "read_tsv_pairs", "tsv_task", "unicode_to_ascii",
    "BOS", "EOS", "PAD", "SPECIALS", "UNK", "Vocab",
    "TASK_NAMES", "make_task", "is_lm_task",
]
