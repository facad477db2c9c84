"""Recurrent layers as torch.nn has them (re-exported by tinygradx.nn): RNN (tanh or relu),
GRU, LSTM and their one-step cells, with torch's parameter names, shapes, gate order and
initialisation, so a torch state dict loads as it is.

Built step by step from ops the engine already has (linear, sigmoid, tanh, getitem, stack,
cat), so a recurrent net draws as its unrolled graph and differentiates to any order. The
input's part of every gate is one linear over the whole sequence; each step then adds the
hidden state's part:

    RNN   h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)            (or relu)
    GRU   r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)            gates in the order r, z, n
          n = tanh(x_n + r * h_n);  h' = (1 - z) * n + z * h
    LSTM  i, f, o = sigmoid(...), g = tanh(...)                    gates in the order i, f, g, o
          c' = f * c + i * g;  h' = o * tanh(c')
"""
from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from ..autograd import OpError
from ..tensor.creation import cat, stack, zeros
from .module import Module, Parameter
from ..tensor import Tensor
from .layers import uniform_table
from .utils.rnn import PackedSequence

__all__ = ["RNN", "GRU", "LSTM", "RNNCell", "GRUCell", "LSTMCell", "RNNBase", "RNNCellBase"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


def _step(mode, xw, h, c, w_hh, b_hh):
    """One time step: xw = x W_ih^T + b_ih (N, G*H), h and c (N, H) -> (h', c')."""
    hw = F.linear(h, w_hh, b_hh)                               # (N, G*H)
    H = h.shape[-1]
    if mode == "RNN_TANH":
        return (xw + hw).tanh(), None
    if mode == "RNN_RELU":
        return (xw + hw).relu(), None
    if mode == "GRU":
        r = (xw[..., :H] + hw[..., :H]).sigmoid()
        z = (xw[..., H:2 * H] + hw[..., H:2 * H]).sigmoid()
        n = (xw[..., 2 * H:] + r * hw[..., 2 * H:]).tanh()
        return (1 - z) * n + z * h, None
    gates = xw + hw                                            # (N, 4H): i, f, g, o
    i, f = gates[..., :H].sigmoid(), gates[..., H:2 * H].sigmoid()
    g, o = gates[..., 2 * H:3 * H].tanh(), gates[..., 3 * H:].sigmoid()
    c = f * c + i * g
    return o * c.tanh(), c


def _positive(cls, name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{cls}: {name} must be a positive int, got {v!r}")
    return int(v)


def _uniform(shape, bound):
    return Parameter(uniform_table(shape, bound))     # torch's U(-1/sqrt(H), 1/sqrt(H))


class RNNBase(Module):
    """The multi-layer recurrent net shared by RNN, GRU and LSTM (torch's RNNBase)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        cls = type(self).__name__
        if mode not in _GATES:
            raise ValueError(f"{cls}: unrecognized RNN mode {mode!r} (expected one of "
                             f"{', '.join(_GATES)})")
        self.mode = mode
        self.input_size = _positive(cls, "input_size", input_size)
        self.hidden_size = _positive(cls, "hidden_size", hidden_size)
        self.num_layers = _positive(cls, "num_layers", num_layers)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or \
                not 0 <= dropout <= 1:
            raise ValueError(f"{cls}: dropout must be a number in [0, 1], got {dropout!r}")
        if proj_size:
            raise NotImplementedError(f"{cls}: proj_size is not supported by tinygradx")
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bool(bidirectional), 0
        G, H = _GATES[mode], self.hidden_size
        bound = 1 / math.sqrt(H)
        self._names = []
        for layer in range(self.num_layers):
            for suffix in ("", "_reverse")[:1 + self.bidirectional]:
                d_in = self.input_size if layer == 0 else H * (1 + self.bidirectional)
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(G * H, d_in), (G * H, H)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(G * H,), (G * H,)]
                for name, shape in zip(names, shapes, strict=True):
                    setattr(self, name, _uniform(shape, bound))
                self._names.append(names)
        if device is not None or dtype is not None:       # torch's factory arguments
            self.to(device=device, dtype=dtype)

    def _direction(self, k, x, h, c, reverse):
        """One layer, one direction over x (L, N, D_in) -> (outputs (L, N, H), h, c)."""
        names = self._names[k]
        w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
        b_ih, b_hh = (getattr(self, names[2]), getattr(self, names[3])) if self.bias else \
            (None, None)
        xw = F.linear(x, w_ih, b_ih)                           # (L, N, G*H), all steps at once
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        outs = [None] * x.shape[0]
        for t in steps:
            h, c = _step(self.mode, xw[t], h, c, w_hh, b_hh)
            outs[t] = h
        return stack(outs, dim=0), h, c                        # (L, N, H)

    def forward(self, input, hx=None):
        cls = type(self).__name__
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if not isinstance(input, Tensor) or input.ndim not in (2, 3):
            raise OpError(f"{cls}: expected a 2-d (unbatched) or 3-d input Tensor, got "
                          f"{getattr(input, 'shape', type(input).__name__)}")
        if input.shape[-1] != self.input_size:
            raise OpError(f"{cls}: input has {input.shape[-1]} features, expected "
                          f"input_size={self.input_size}")
        unbatched = input.ndim == 2
        x = input.unsqueeze(1) if unbatched else \
            (input.transpose(0, 1) if self.batch_first else input)   # (L, N, D_in)
        D, H, N = 1 + self.bidirectional, self.hidden_size, x.shape[1]
        lstm = self.mode == "LSTM"
        h0, c0 = (hx if hx is not None else (None, None)) if lstm else (hx, None)
        want = (D * self.num_layers, N, H)
        states = []
        for s in (h0, c0) if lstm else (h0,):
            if s is None:
                s = zeros(*want, dtype=x.dtype)
            elif unbatched:
                s = s.unsqueeze(1)                             # (D*layers, 1, H)
            if tuple(s.shape) != want:
                raise OpError(f"{cls}: initial state has shape {tuple(s.shape)}, expected "
                              f"{want if not unbatched else (want[0], H)}")
            states.append(s)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                c = states[1][k] if lstm else None
                out, h, c = self._direction(k, x, states[0][k], c, reverse=d == 1)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if D == 1 else cat(outs, dim=-1)       # (L, N, D*H)
            if self.dropout and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        output = x.squeeze(1) if unbatched else (x.transpose(0, 1) if self.batch_first else x)
        h_n = stack(h_n, dim=0)                                # (D*layers, N, H)
        if unbatched:
            h_n = h_n.squeeze(1)
        if not lstm:
            return output, h_n
        c_n = stack(c_n, dim=0)
        return output, (h_n, c_n.squeeze(1) if unbatched else c_n)

    # -- a PackedSequence: each sequence runs for its own length ---------------------------
    def _direction_packed(self, k, x, batch_sizes, h0, c0, reverse):
        """One layer, one direction over packed rows x (sum of lengths, D_in), batch_sizes[t]
        sequences running at step t (longest first) -> (rows (same, H), h_last, c_last), the
        last state of each sequence, in its order. Forward, a sequence that ends leaves the
        running batch (its state is kept); backward, each starts at its own last step from
        its initial state, joining the batch as it goes back."""
        names = self._names[k]
        w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
        b_ih, b_hh = (getattr(self, names[2]), getattr(self, names[3])) if self.bias else \
            (None, None)
        xw = F.linear(x, w_ih, b_ih)                           # every step's input part at once
        starts = np.concatenate([[0], np.cumsum(batch_sizes)]).tolist()
        lstm, steps = self.mode == "LSTM", len(batch_sizes)
        outs = [None] * steps
        if not reverse:
            h, c, ended = h0, c0, []
            for t in range(steps):
                n = batch_sizes[t]
                if n < h.shape[0]:                             # sequences n.. ended at t - 1
                    ended.append((h[n:], c[n:] if lstm else None))
                    h, c = h[:n], (c[:n] if lstm else None)
                h, c = _step(self.mode, xw[starts[t]:starts[t + 1]], h, c, w_hh, b_hh)
                outs[t] = h
            ended.append((h, c))                               # the longest sequences
            h = cat([e[0] for e in reversed(ended)], dim=0)    # (B, H), in batch order
            c = cat([e[1] for e in reversed(ended)], dim=0) if lstm else None
        else:
            n = batch_sizes[-1]
            h, c = h0[:n], (c0[:n] if lstm else None)
            for t in range(steps - 1, -1, -1):
                n = batch_sizes[t]
                if n > h.shape[0]:                             # sequences ending at t join
                    h = cat([h, h0[h.shape[0]:n]], dim=0)
                    c = cat([c, c0[c.shape[0]:n]], dim=0) if lstm else None
                h, c = _step(self.mode, xw[starts[t]:starts[t + 1]], h, c, w_hh, b_hh)
                outs[t] = h
        return cat(outs, dim=0), h, c

    def _forward_packed(self, packed, hx):
        cls = type(self).__name__
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        if not isinstance(data, Tensor) or data.ndim != 2 or data.shape[-1] != self.input_size:
            raise OpError(f"{cls}: a PackedSequence's data must be (steps, input_size="
                          f"{self.input_size}), got {getattr(data, 'shape', None)}")
        sizes = [int(n) for n in np.asarray(batch_sizes.detach().numpy() if isinstance(
            batch_sizes, Tensor) else batch_sizes).tolist()]
        D, H, B = 1 + self.bidirectional, self.hidden_size, sizes[0] if sizes else 0
        lstm = self.mode == "LSTM"
        h0, c0 = (hx if hx is not None else (None, None)) if lstm else (hx, None)
        want = (D * self.num_layers, B, H)
        states = []
        for s in (h0, c0) if lstm else (h0,):
            if s is None:
                s = zeros(*want, dtype=data.dtype)
            else:
                if tuple(s.shape) != want:
                    raise OpError(f"{cls}: initial state has shape {tuple(s.shape)}, expected "
                                  f"{want} (num_layers * directions, batch, hidden_size)")
                if sorted_indices is not None:                 # the caller's order -> sorted
                    s = s.index_select(1, sorted_indices)
            states.append(s)
        x, h_n, c_n = data, [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                out, h, c = self._direction_packed(k, x, sizes, states[0][k],
                                                   states[1][k] if lstm else None,
                                                   reverse=d == 1)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if D == 1 else cat(outs, dim=-1)       # (steps, D*H)
            if self.dropout and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        finals = [stack(h_n, dim=0)] + ([stack(c_n, dim=0)] if lstm else [])  # (D*layers, B, H)
        if unsorted_indices is not None:                       # back to the caller's order
            finals = [f.index_select(1, unsorted_indices) for f in finals]
        output = PackedSequence(x, batch_sizes, sorted_indices, unsorted_indices)
        return (output, (finals[0], finals[1])) if lstm else (output, finals[0])

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """torch.nn.RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (nonlinearity
    'tanh' or 'relu'). Input (L, N, input_size), or (N, L, ...) with batch_first, or (L,
    input_size); returns (output (L, N, D*hidden_size), h_n (D*num_layers, N, hidden_size))."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class GRU(RNNBase):
    """torch.nn.GRU (gates r, z, n in weight_ih_l0's rows); returns (output, h_n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


class LSTM(RNNBase):
    """torch.nn.LSTM (gates i, f, g, o); hx is (h_0, c_0); returns (output, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)


class RNNCellBase(Module):
    """torch's base of the one-step cells: weight_ih (num_chunks * hidden, input), weight_hh
    (num_chunks * hidden, hidden) and, with bias, bias_ih and bias_hh, all
    U(-1/sqrt(hidden), 1/sqrt(hidden)). RNNCell, GRUCell and LSTMCell derive from it."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        cls = type(self).__name__
        self.input_size = _positive(cls, "input_size", input_size)
        self.hidden_size = _positive(cls, "hidden_size", hidden_size)
        self.bias = bias
        G, H = _positive(cls, "num_chunks", num_chunks), self.hidden_size
        bound = 1 / math.sqrt(H)
        self.weight_ih = _uniform((G * H, self.input_size), bound)
        self.weight_hh = _uniform((G * H, H), bound)
        self.bias_ih = _uniform((G * H,), bound) if bias else None
        self.bias_hh = _uniform((G * H,), bound) if bias else None
        if device is not None or dtype is not None:       # torch's factory arguments
            self.to(device=device, dtype=dtype)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class _Cell(RNNCellBase):
    mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, _GATES[self.mode], device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        cls = type(self).__name__
        if not isinstance(input, Tensor) or input.ndim not in (1, 2) or \
                input.shape[-1] != self.input_size:
            raise OpError(f"{cls}: expected input (N, {self.input_size}) or "
                          f"({self.input_size},), got "
                          f"{getattr(input, 'shape', type(input).__name__)}")
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input            # (N, input_size)
        lstm = self.mode == "LSTM"
        h, c = (hx if hx is not None else (None, None)) if lstm else (hx, None)
        want = (x.shape[0], self.hidden_size)
        h = zeros(*want, dtype=x.dtype) if h is None else (h.unsqueeze(0) if unbatched else h)
        if lstm:
            c = zeros(*want, dtype=x.dtype) if c is None else \
                (c.unsqueeze(0) if unbatched else c)
        if tuple(h.shape) != want:
            raise OpError(f"{cls}: hidden state has shape {tuple(h.shape)}, expected {want}")
        h, c = _step(self.mode, F.linear(x, self.weight_ih, self.bias_ih), h, c,
                     self.weight_hh, self.bias_hh)
        if unbatched:
            h, c = h.squeeze(0), (c.squeeze(0) if lstm else None)
        return (h, c) if lstm else h


class RNNCell(_Cell):
    """torch.nn.RNNCell: one step h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        self.nonlinearity = nonlinearity
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)


class GRUCell(_Cell):
    """torch.nn.GRUCell: one GRU step, returns h'."""
    mode = "GRU"


class LSTMCell(_Cell):
    """torch.nn.LSTMCell: one LSTM step, hx = (h, c), returns (h', c')."""
    mode = "LSTM"
