"""tinygradx: a readable tensor + reverse-mode autograd engine on numpy.

    import tinygradx as tgx
    import tinygradx.functional as F
    x = tgx.randn(2, 3, requires_grad=True)
    F.softmax(x, dim=-1).sum().backward()
"""
import os as _os
import sys as _sys

if "numpy" not in _sys.modules and _os.environ.get("TINYGRADX_BLAS_TIMEOUT", "1") != "0":
    # Before numpy (and its OpenBLAS) loads: let idle BLAS threads sleep after a short spin
    # instead of ~2^28 cycles, so the second core is free for tinygradx.parallel's element-wise
    # work between GEMMs (GELU forward+backward 4.5 -> 3.1 ms with it, no change without).
    # Results are unchanged; export OPENBLAS_THREAD_TIMEOUT yourself, or set
    # TINYGRADX_BLAS_TIMEOUT=0, to keep OpenBLAS's default. See docs/performance.md.
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from . import autograd, ops  # noqa: E402
from .autograd import (Function, OpError, detect_anomaly, enable_grad, get_rng_state, grad,
                       is_grad_enabled, manual_seed, no_grad, set_rng_state, unbroadcast)
from .tensor import (Tensor, arange, bool_, cat, concatenate, eye, float16, float32, float64,
                     full, full_like, int32, int64, matmul, maximum, minimum, ones, ones_like,
                     rand, rand_like, randint, randn, randn_like, stack, tensor, uint8, where,
                     zeros, zeros_like)
from . import functional, nn, optim
from .gradcheck import GradcheckError, gradcheck
from . import perf
from .perf import profile
from .trace import trace

__version__ = "0.1.0"
