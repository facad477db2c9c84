"""Reverse-mode autograd, as `torch.autograd`: `grad`, `backward`, `Function`, the grad-mode
switches. The package's modules, in reading order: `node.py` (the Function node, grad mode,
frames, `unbroadcast`), `tensor_base.py` (what the engine knows of a tensor), `walk.py` (the
walk: `toposort`, `run_backward`), `gradbuf.py` (summing the gradients of several consumers),
`fastpath.py` (an op's faster array derivative, beside it), `backprop.py` (`backward()`,
`grad()`, and create_graph's carrier), `custom_function.py` (the public `Function`: the node
plus PyTorch's style). This file only gathers them; none of them imports it back.
"""
from __future__ import annotations

from .node import (ROOT, STATE, Frame, OpError, current_scope, detect_anomaly,  # noqa: F401
                   enable_grad, fmt_shapes, is_grad_enabled, no_grad, observe, scope,
                   unbroadcast, unbroadcast_axes, user_line)
from .tensor_base import TensorBase  # noqa: F401
from .fastpath import FAST_BACKWARD, Slice, fast_backward  # noqa: F401  (the public hook)
from .walk import (ArrayWalk, bad_grad, check_root, grads_per_input, run_backward,  # noqa: F401
                   toposort, toposort_to)
from .custom_function import Function  # noqa: F401  (the public class: both styles)
from .backprop import backward, grad  # noqa: F401
from .grad_mode import inference_mode, set_grad_enabled  # noqa: F401
