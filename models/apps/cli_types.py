"""The types of the command line's flags: each parses one value or says in one line what it
expected (argparse prints it as `tinygradx CMD: error: argument --FLAG: ...`, exit 2). Every size
a user can pass has an upper bound, so a typo is an error, not a hang."""
from __future__ import annotations

import argparse
import os

def typed(kind, name):
    def parse(text):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") from None
    parse.__name__ = kind.__name__
    return parse


GRAPH_FORMATS = ("svg", "png", "pdf", "jpeg", "jpg", "dot", "gv", "html")


def graph_file(text):
    ext = os.path.splitext(text)[1].lstrip(".").lower()
    if ext not in GRAPH_FORMATS:
        raise argparse.ArgumentTypeError(
            f"cannot write {text!r}: unknown format {('.' + ext) if ext else '(no suffix)'}; "
            f"use {', '.join('.' + e for e in GRAPH_FORMATS)}")
    return text


def bool_value(text):
    low = text.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def int_at_least(low, high=None):
    """An integer >= low (and <= high: every size a user can pass has an upper bound, so a
    typo is a one-line error, not a hang)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:_}, got {value:_}")
        return value
    parse.__name__ = f"int >= {low}"
    return parse


# the upper bounds of the commands' own sizes (TrainConfig's are config.UPPER)
MAX_BEAM, MAX_NEW_TOKENS, MAX_DRAWN_LAYERS, MAX_EXPERIMENT_STEPS = 64, 100_000, 48, 100_000


def layer_list(text):
    """experiment --layers: 1 to 8 comma-separated depths, each in [1, MAX_DRAWN_LAYERS] (ln-grad
    compares them; warmup takes one, experiments.main says so otherwise)."""
    try:
        depths = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 2,6,12, got "
                                         f"{text!r}") from None
    if not 1 <= len(depths) <= 8 or depths[0] < 1 or depths[-1] > MAX_DRAWN_LAYERS:
        raise argparse.ArgumentTypeError(f"give 1 to 8 depths in [1, {MAX_DRAWN_LAYERS}], got "
                                         f"{text!r}")
    return text


def float_in(low, high, low_open=False):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not ((low < value) if low_open else (low <= value)) or value > high:
            lo = "(" if low_open else "["
            raise argparse.ArgumentTypeError(f"must be in {lo}{low}, {high}], got {value}")
        return value
    parse.__name__ = "float"
    return parse


def depth_value(text):
    return "all" if text == "all" else int_at_least(1, 64)(text)
