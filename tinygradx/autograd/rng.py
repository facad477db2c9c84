"""tinygradx's one random generator: randn, rand, dropout, initialisation and sampling all draw
from it, so `manual_seed` makes a run repeatable. It lives in autograd's process state
(`STATE.rng`); checkpoints save and restore it with get_rng_state / set_rng_state."""
from __future__ import annotations

import numpy as np

from ..core.node import STATE

__all__ = ["manual_seed", "get_rng_state", "set_rng_state", "default_rng"]


def manual_seed(seed):
    """Seed tinygradx's one random generator (randn, rand, dropout, initialisation)."""
    STATE.rng = np.random.default_rng(seed)


def get_rng_state():
    """The generator's state as a JSON-serialisable dict (for checkpoints)."""
    return STATE.rng.bit_generator.state


def set_rng_state(state):
    """Restore the generator from a dict made by get_rng_state()."""
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    STATE.rng = rng


def default_rng():
    """The generator itself (a numpy Generator): draw from it to share tinygradx's seeding."""
    return STATE.rng
