"""The learner's core: a Tensor, the graph node, the backward walk, and the ops the seed's
Transformer is made of, in plain numpy. It imports nothing else of tinygradx; the rest of the
library is built on it (tinygradx.Tensor is a subclass of its Tensor, every op a Function of
its node), so what you read here is what trains.

Reading order (about 2,480 lines; a file's imports from further down the list are short, and
each is named where it is used):
  tensor_base.py  what the engine knows of a tensor: the array, requires_grad, .grad, _ctx
  node.py         Function: the graph node every op is; apply = forward on arrays + record
  walk.py         backward: toposort the graph, then each node's backward, newest first
  gradbuf.py      summing the gradients a tensor gets from several consumers
  xp.py           how one backward formula runs on arrays (and, for create_graph, on Tensors)
  elementwise.py  + - * / ** exp log sqrt tanh relu, where/masked_fill, and dtype promotion
  reduce.py       sum, mean, max, var, logsumexp
  linalg.py       matmul (broadcasting), linear, embedding
  movement.py     reshape, permute, expand, indexing
  rows.py         softmax and layer_norm
  tensor.py       the Tensor users call: one line per method, calling the ops above
The rest is met on the way: dtypes.py (torch's promotion rule), dims.py (dim arguments),
versions.py (in-place safety, which tinygradx.Tensor's in-place ops need) and fastpath.py (the
two hooks where the library's speed layer plugs in; the core alone registers nothing).

    from tinygradx.core import Tensor
    x = Tensor(np.random.randn(4, 8), requires_grad=True)
    (x @ x.T).softmax(-1).sum().backward()
"""
from __future__ import annotations

from .node import Function, OpError, no_grad  # noqa: F401
from .tensor import Tensor, embedding, layer_norm, linear  # noqa: F401
