"""torch.Size, and the shape `x.shape` returns.

`Size` is a tuple of ints with `numel()`, whose slices and sums are Sizes again, as PyTorch's.
The learner's core gives an array's shape as numpy does, a plain tuple; the library's Tensor
gives it as a `Shape`: a Size that prints as the plain tuple it equals.
"""
from __future__ import annotations

import math
import operator

import numpy as np


class Size(tuple):
    """torch.Size: a tuple of ints with `numel()`; slices and `+` give a Size.

    tinygradx's `x.shape` and `x.size()` are a `Shape`: a Size that prints as a plain tuple
    (and equals one); build a Size for code such as `x.view(Size([2, 3]))`."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        out = []
        for s in sizes:
            if isinstance(s, (bool, np.bool_)) or isinstance(s, (float, np.floating)):
                raise TypeError(f"Size: takes ints, got {s!r}")
            try:
                out.append(operator.index(s))
            except TypeError:
                raise TypeError(f"Size: takes ints, got {s!r}") from None
        return super().__new__(cls, out)

    def numel(self):
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __getitem__(self, index):
        out = super().__getitem__(index)
        return Size(out) if isinstance(index, slice) else out

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __repr__(self):
        return f"Size({list(self)})"


class Shape(Size):
    """What `x.shape` and `x.size()` return: the array's shape with torch.Size's methods
    (`x.shape.numel()`, slices, `+`), printed as the plain tuple it equals."""

    __slots__ = ()
    __repr__ = tuple.__repr__

    @classmethod
    def of(cls, shape):
        """From a numpy shape (ints already): no per-element check on this hot path."""
        return tuple.__new__(cls, shape)

    def __getitem__(self, index):                 # a slice of a shape is a shape
        out = tuple.__getitem__(self, index)
        return Shape.of(out) if isinstance(index, slice) else out

    def __add__(self, other):
        return Shape.of(tuple(self) + tuple(other)) if isinstance(other, tuple) else NotImplemented

    def __radd__(self, other):
        return Shape.of(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented
