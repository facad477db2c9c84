"""Reverse-mode autograd, as `torch.autograd`: `grad`, `backward`, `Function`, the grad-mode
switches. The node and the walk themselves are the learner's core (`tinygradx/core/node.py`,
`walk.py`, `gradbuf.py`, `fastpath.py`); this package adds what the core leaves out:
`backprop.py` (`backward()`, `grad()`, and create_graph's carrier, which records the backward
pass so it can be differentiated again), `custom_function.py` (the public `Function`: the node
plus PyTorch's style; its ctx in `function_ctx.py`), `grad_mode.py` (torch's
`set_grad_enabled`, `inference_mode`), `hooks.py` (Tensor and Module hooks, removable handles),
`saved_hooks.py` (torch.autograd.graph's hooks on saved tensors), `rng.py` (the one random
generator). This file only gathers them with the core's names; none of them imports it back.
"""
from __future__ import annotations

from ..core.node import (ROOT, STATE, Frame, OpError, current_scope,  # noqa: F401
                         enable_grad, fmt_shapes, is_grad_enabled, no_grad, observe, scope,
                         unbroadcast, unbroadcast_axes, user_line)
from ..core.tensor_base import TensorBase  # noqa: F401
from ..core.fastpath import Slice  # noqa: F401  (what a fast backward of indexing returns)
from ..fast.dispatch import VERSIONS, fast_backward  # noqa: F401  (faster versions, by op)
from ..core.walk import (ArrayWalk, bad_grad, check_root, grads_per_input,  # noqa: F401
                         run_backward, toposort, toposort_to)
from .custom_function import Function  # noqa: F401  (the public class: both styles)
from .backprop import backward, grad  # noqa: F401
from .grad_mode import (detect_anomaly, inference_mode, set_detect_anomaly,  # noqa: F401
                        set_grad_enabled)
from .saved_hooks import (disable_saved_tensors_hooks, save_on_cpu,  # noqa: F401
                          saved_tensors_hooks)
