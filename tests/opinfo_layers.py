"""Op-info entries of the layers people use in small models (loaded at the end of opinfo.py,
into the same OPS table): F.conv1d/2d, pooling, adaptive pooling, interpolate (each with a
loop-by-loop numpy reference), and torch's modules as functions of their input and
parameters: nn.Conv1d/2d, nn.RNN/GRU/LSTM and their cells, nn.MultiheadAttention,
nn.TransformerEncoderLayer / DecoderLayer (compared with torch through
torch.func.functional_call; gradcheck and gradgradcheck over the input and every parameter).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from opinfo import OpInfo, S, Sample, TF, _f64, add, array, family, torch

# ------------------------------------------------------------------------------------------
# numpy references: one output position at a time
# ------------------------------------------------------------------------------------------


def _nt(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    n = w.ndim - 2
    unb = x.ndim == n + 1
    x = x[None] if unb else x
    k, s, d = w.shape[2:], _nt(stride, n), _nt(dilation, n)
    if padding == "same":
        pads = [(t // 2, t - t // 2) for t in (dd * (kk - 1) for dd, kk in zip(d, k, strict=True))]
    else:
        pads = [(p, p) for p in _nt(0 if padding == "valid" else padding, n)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(n)]
    N, n_out = x.shape[0], w.shape[0]
    cg, og = w.shape[1], n_out // groups
    y = np.zeros((N, n_out, *out))
    for pos in np.ndindex(*out):
        sl = tuple(slice(p * ss, p * ss + dd * (kk - 1) + 1, dd)
                   for p, ss, dd, kk in zip(pos, s, d, k, strict=True))
        win = xp[(slice(None), slice(None)) + sl]               # (N, C, *k)
        for o in range(n_out):
            g = o // og
            y[(slice(None), o) + pos] = (win[:, g * cg:(g + 1) * cg] * w[o]).sum(
                axis=tuple(range(1, n + 2)))
    if b is not None:
        y += b.reshape(n_out, *([1] * n))
    return y[0] if unb else y


def _pool_geometry(L, k, s, p, d, ceil):
    num = L + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= L + p:
        o -= 1
    return o


def np_pool(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
            count_include_pad=True, kind="max", n=2):
    unb = x.ndim == n + 1
    x = x[None] if unb else x
    k = _nt(kernel_size, n)
    s = _nt(stride, n) if stride is not None else k
    p, d = _nt(padding, n), _nt(dilation, n)
    sizes = x.shape[2:]
    out = [_pool_geometry(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for pos in np.ndindex(*out):
        vals, cnt, pool = [], 1, 1
        idx = []
        for i in range(n):
            start = pos[i] * s[i] - p[i]
            cells = [start + j * d[i] for j in range(k[i])]
            idx.append([c for c in cells if 0 <= c < sizes[i]])
            end = min(start + k[i], sizes[i] + p[i])
            pool *= end - start
            cnt *= min(end, sizes[i]) - max(start, 0)
        vals = np.stack([x[(slice(None), slice(None)) + c] for c in itertools.product(*idx)],
                        -1)
        y[(slice(None), slice(None)) + pos] = vals.max(-1) if kind == "max" else \
            vals.sum(-1) / (pool if count_include_pad else cnt)
    return y[0] if unb else y


def np_adaptive_avg(x, output_size, n=2):
    unb = x.ndim == n + 1
    x = x[None] if unb else x
    out = _nt(output_size, n)
    sizes = x.shape[2:]
    y = np.zeros(x.shape[:2] + out)
    for pos in np.ndindex(*out):
        sl = tuple(slice((o * L) // oo, -(-((o + 1) * L) // oo))
                   for o, L, oo in zip(pos, sizes, out, strict=True))
        y[(slice(None), slice(None)) + pos] = x[(slice(None), slice(None)) + sl].mean(
            axis=tuple(range(2, 2 + n)))
    return y[0] if unb else y


def np_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    n = x.ndim - 2
    sizes = x.shape[2:]
    out = _nt(size, n) if size is not None else \
        tuple(int(math.floor(L * scale_factor)) for L in sizes)
    scales = [L / o if size is not None else 1 / scale_factor
              for L, o in zip(sizes, out, strict=True)]
    y = x
    for i in range(n):
        L, o, sc = sizes[i], out[i], scales[i]
        rows = []
        for j in range(o):
            if mode == "nearest":
                rows.append(np.take(y, min(int(math.floor(np.float32(j) * np.float32(sc))),
                                           L - 1), axis=2 + i))
                continue
            src = j * (L - 1) / (o - 1) if align_corners and o > 1 else \
                (0.0 if align_corners else max((j + 0.5) * sc - 0.5, 0.0))
            i0 = min(int(math.floor(src)), L - 1)
            i1, lam = min(i0 + 1, L - 1), src - min(int(math.floor(src)), L - 1)
            rows.append(np.take(y, i0, axis=2 + i) * (1 - lam) +
                        np.take(y, i1, axis=2 + i) * lam)
        y = np.stack(rows, axis=2 + i)
    return y


# ------------------------------------------------------------------------------------------
# samples
# ------------------------------------------------------------------------------------------


def _conv_family(n):
    def build(draw, dt):
        groups = draw(st.sampled_from((1, 1, 2)))
        cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        k = tuple(draw(st.integers(1, 3)) for _ in range(n))
        kw = {"dilation": draw(st.sampled_from((1, 2))), "groups": groups}
        pad = draw(st.sampled_from(("int", "same", "valid")))
        if pad == "same":
            kw["padding"] = "same"
        else:
            kw["stride"] = tuple(draw(st.integers(1, 2)) for _ in range(n))
            kw["padding"] = "valid" if pad == "valid" else draw(st.integers(0, 2))
        span = [kw["dilation"] * (kk - 1) + 1 for kk in k]
        sizes = tuple(s + draw(st.integers(0, 3)) for s in span)
        batch = draw(st.sampled_from(((), (1,), (2,), (0,))))
        x = array(draw, batch + (cg * groups,) + sizes, dt)
        w = array(draw, (og * groups, cg) + k, dt)
        inputs = (x, w) + ((array(draw, (og * groups,), dt),) if draw(st.booleans()) else ())
        return Sample(inputs, kw)
    return family(build)


def _pool_family(n, kind):
    def build(draw, dt):
        k = tuple(draw(st.integers(1, 3)) for _ in range(n))
        kw = {"kernel_size": k, "stride": draw(st.sampled_from((None, 1, 2))),
              "padding": tuple(draw(st.integers(0, kk // 2)) for kk in k),
              "ceil_mode": draw(st.booleans())}
        if kind == "max":
            kw["dilation"] = draw(st.sampled_from((1, 2)))
        else:
            kw["count_include_pad"] = draw(st.booleans())
        d = kw.get("dilation", 1)
        sizes = tuple(d * (kk - 1) + 1 + draw(st.integers(0, 3)) for kk in k)
        batch = draw(st.sampled_from(((), (2,), (1,))))
        return Sample((array(draw, batch + (draw(st.integers(1, 2)),) + sizes, dt),), kw)
    return family(build)


def _adaptive_family(n):
    def build(draw, dt):
        sizes = tuple(draw(st.integers(1, 6)) for _ in range(n))
        out = tuple(draw(st.integers(1, 4)) for _ in range(n))
        batch = draw(st.sampled_from(((), (2,))))
        return Sample((array(draw, batch + (2,) + sizes, dt),),
                      {"output_size": out if n > 1 else out[0]})
    return family(build)


def _interp_family(mode, n):
    def build(draw, dt):
        kw = {"mode": mode}
        if draw(st.booleans()):
            kw["size"] = tuple(draw(st.integers(1, 7)) for _ in range(n))
        else:
            kw["scale_factor"] = draw(st.sampled_from((0.5, 1.5, 2.0, 3.0)))
        low = 2 if kw.get("scale_factor") == 0.5 else 1      # an empty output is an error
        sizes = tuple(draw(st.integers(low, 5)) for _ in range(n))
        if mode != "nearest":
            kw["align_corners"] = draw(st.booleans())
        x = array(draw, (draw(st.integers(1, 2)), 2) + sizes, dt)
        return Sample((x,), kw)
    return family(build)


add(
    OpInfo("F.conv1d", lambda *a, **kw: F.conv1d(*a, **kw),
           torch_op=lambda *a, **kw: TF.conv1d(*a, **kw), ref=np_conv, samples=_conv_family(1),
           fixed=(S(_f64(2, 4, 7), _f64(6, 2, 3, seed=1), _f64(6, seed=2), stride=2, padding=2,
                    dilation=2, groups=2, desc="grouped_strided_dilated"),)),
    OpInfo("F.conv2d", lambda *a, **kw: F.conv2d(*a, **kw),
           torch_op=lambda *a, **kw: TF.conv2d(*a, **kw), ref=np_conv, samples=_conv_family(2),
           fixed=(S(_f64(1, 3, 5, 4), _f64(2, 3, 2, 3, seed=1), padding="same", dilation=2,
                    desc="same_even_kernel"),)),
    OpInfo("F.max_pool1d", lambda x, **kw: F.max_pool1d(x, **kw),
           torch_op=lambda x, **kw: TF.max_pool1d(x, **kw),
           ref=lambda x, **kw: np_pool(x, kind="max", n=1, **kw), samples=_pool_family(1, "max")),
    OpInfo("F.max_pool2d", lambda x, **kw: F.max_pool2d(x, **kw),
           torch_op=lambda x, **kw: TF.max_pool2d(x, **kw),
           ref=lambda x, **kw: np_pool(x, kind="max", n=2, **kw), samples=_pool_family(2, "max")),
    OpInfo("F.avg_pool1d", lambda x, **kw: F.avg_pool1d(x, **kw),
           torch_op=lambda x, **kw: TF.avg_pool1d(x, **kw),
           ref=lambda x, **kw: np_pool(x, kind="avg", n=1, **kw), samples=_pool_family(1, "avg")),
    OpInfo("F.avg_pool2d", lambda x, **kw: F.avg_pool2d(x, **kw),
           torch_op=lambda x, **kw: TF.avg_pool2d(x, **kw),
           ref=lambda x, **kw: np_pool(x, kind="avg", n=2, **kw), samples=_pool_family(2, "avg")),
    OpInfo("F.adaptive_avg_pool1d", lambda x, **kw: F.adaptive_avg_pool1d(x, **kw),
           torch_op=lambda x, **kw: TF.adaptive_avg_pool1d(x, **kw),
           ref=lambda x, **kw: np_adaptive_avg(x, n=1, **kw), samples=_adaptive_family(1)),
    OpInfo("F.adaptive_avg_pool2d", lambda x, **kw: F.adaptive_avg_pool2d(x, **kw),
           torch_op=lambda x, **kw: TF.adaptive_avg_pool2d(x, **kw),
           ref=lambda x, **kw: np_adaptive_avg(x, n=2, **kw), samples=_adaptive_family(2)),
    *(OpInfo(f"F.interpolate[{mode}{n}d]" if (mode, n) != ("nearest", 2) else
             "F.interpolate", lambda x, **kw: F.interpolate(x, **kw),
             torch_op=lambda x, **kw: TF.interpolate(x, **kw), ref=np_interpolate,
             samples=_interp_family(mode, n), api=("F.interpolate",))
      for mode, n in (("nearest", 1), ("nearest", 2), ("linear", 1), ("bilinear", 2))),
)


# ------------------------------------------------------------------------------------------
# torch's modules as functions of (inputs..., parameters...)
# ------------------------------------------------------------------------------------------

def _flat(out):
    if isinstance(out, (tuple, list)):
        return tuple(t for o in out for t in _flat(o))
    return () if out is None else (out,)


def _module_fn(cls, n_inputs, call=None, torch_side=False):
    """op(*inputs, *params, ctor={...}, **call_kwargs): the module built with ctor, run with
    its parameters replaced by the given tensors (functional_call)."""
    def op(*tensors, ctor, **kw):
        if torch_side:
            m = getattr(torch.nn, cls)(**ctor)
            fcall = torch.func.functional_call
        else:
            m = getattr(tgx.nn, cls)(**ctor)
            fcall = tgx.func.functional_call
        names = [name for name, _ in m.named_parameters()]
        xs, ps = tensors[:n_inputs], tensors[n_inputs:]
        return _flat(fcall(m, dict(zip(names, ps, strict=True)), xs, kw))
    return op


def _params(draw, dt, cls, ctor, scale=0.6):
    m = getattr(tgx.nn, cls)(**ctor)
    return tuple(array(draw, p.shape, dt, -scale, scale) for p in m.parameters())


def _rnn_family(cls):
    def build(draw, dt):
        H, D_in, L = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
        ctor = {"input_size": D_in, "hidden_size": H,
                "num_layers": draw(st.integers(1, 2)), "bias": draw(st.booleans()),
                "batch_first": draw(st.booleans()), "bidirectional": draw(st.booleans())}
        if cls == "RNN":
            ctor["nonlinearity"] = draw(st.sampled_from(("tanh", "relu")))
        N = draw(st.sampled_from((None, 1, 2)))
        if N is None:
            shape = (L, D_in)
        else:
            shape = (N, L, D_in) if ctor["batch_first"] else (L, N, D_in)
        inputs = (array(draw, shape, dt),)
        n_in = 1
        if draw(st.booleans()):
            hs = (ctor["num_layers"] * (1 + ctor["bidirectional"]),) + \
                (() if N is None else (N,)) + (H,)
            inputs += (array(draw, hs, dt),)
            n_in = 2
            if cls == "LSTM":                          # (h_0, c_0)
                inputs += (array(draw, hs, dt),)
                n_in = 3
        return Sample(inputs + _params(draw, dt, cls, ctor), {"ctor": ctor, "_n": n_in})
    return family(build)


def _cell_family(cls):
    def build(draw, dt):
        H, D_in = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        ctor = {"input_size": D_in, "hidden_size": H, "bias": draw(st.booleans())}
        N = draw(st.sampled_from((None, 2)))
        batch = () if N is None else (N,)
        inputs = (array(draw, batch + (D_in,), dt),)
        n_in = 1
        if draw(st.booleans()):
            h = array(draw, batch + (H,), dt)
            inputs += ((h, array(draw, batch + (H,), dt)) if cls == "LSTMCell" else (h,))
            n_in = 1 + (cls == "LSTMCell") + 1
        return Sample(inputs + _params(draw, dt, cls, ctor), {"ctor": ctor, "_n": n_in})
    return family(build)


def _rnn_op(cls, torch_side=False):
    """inputs: x, [h0 | h0, c0], params; kwargs ctor and _n (how many are inputs)."""
    def op(*tensors, ctor, _n):
        fn = _module_fn(cls, 1 if _n == 1 else 2, torch_side=torch_side)
        if _n == 1:
            return fn(*tensors, ctor=ctor)
        lstm = cls in ("LSTM", "LSTMCell")
        if lstm:                       # (x, (h0, c0)) as one tuple argument
            x, h, c = tensors[:3]
            m_op = _module_fn(cls, 2, torch_side=torch_side)
            return m_op(x, (h, c), *tensors[3:], ctor=ctor)
        return fn(*tensors, ctor=ctor)
    return op


for _cls in ("RNN", "GRU", "LSTM"):
    add(OpInfo(f"nn.{_cls}", _rnn_op(_cls), torch_op=_rnn_op(_cls, True) if torch else None,
               torch_reason="torch is not installed", samples=_rnn_family(_cls)))
for _cls in ("RNNCell", "GRUCell", "LSTMCell"):
    add(OpInfo(f"nn.{_cls}", _rnn_op(_cls), torch_op=_rnn_op(_cls, True) if torch else None,
               torch_reason="torch is not installed", samples=_cell_family(_cls)))


def _conv_module_family(n):
    def build(draw, dt):
        groups = draw(st.sampled_from((1, 2)))
        ctor = {"in_channels": groups * draw(st.integers(1, 2)),
                "out_channels": groups * draw(st.integers(1, 2)),
                "kernel_size": draw(st.integers(1, 3)), "groups": groups,
                "padding": draw(st.sampled_from((0, 1, "same"))),
                "padding_mode": draw(st.sampled_from(("zeros", "reflect", "replicate",
                                                      "circular"))),
                "bias": draw(st.booleans())}
        sizes = tuple(draw(st.integers(3, 5)) for _ in range(n))
        x = array(draw, (2, ctor["in_channels"]) + sizes, dt)
        return Sample((x,) + _params(draw, dt, f"Conv{n}d", ctor), {"ctor": ctor})
    return family(build)


for _n in (1, 2):
    add(OpInfo(f"nn.Conv{_n}d", _module_fn(f"Conv{_n}d", 1),
               torch_op=_module_fn(f"Conv{_n}d", 1, torch_side=True) if torch else None,
               torch_reason="torch is not installed", samples=_conv_module_family(_n)))


def _mha_family(draw, dt):
    h = draw(st.integers(1, 2))
    E = h * draw(st.integers(1, 2))
    kd = draw(st.sampled_from((None, 3)))
    ctor = {"embed_dim": E, "num_heads": h, "batch_first": draw(st.booleans()),
            "bias": draw(st.booleans()), "kdim": kd, "vdim": kd}
    L, Sn, N = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    seq = (lambda n, d: (N, n, d)) if ctor["batch_first"] else (lambda n, d: (n, N, d))
    q = array(draw, seq(L, E), dt)
    k, v = array(draw, seq(Sn, kd or E), dt), array(draw, seq(Sn, kd or E), dt)
    kw = {"ctor": ctor, "average_attn_weights": draw(st.booleans())}
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    mask = draw(st.sampled_from(("none", "bool", "float", "padding")))
    if mask == "bool":
        m = rng.random((L, Sn)) < 0.4
        m[:, 0] = False                                # every query keeps one key
        kw["attn_mask"] = m
    elif mask == "float":
        kw["attn_mask"] = rng.standard_normal((N * h, L, Sn)).astype(dt)
    elif mask == "padding":
        m = rng.random((N, Sn)) < 0.4
        m[:, -1] = False
        kw["key_padding_mask"] = m
    return Sample((q, k, v) + _params(draw, dt, "MultiheadAttention", ctor), kw)


def _layer_family(cls):
    def build(draw, dt):
        h = draw(st.integers(1, 2))
        ctor = {"d_model": 4, "nhead": h, "dim_feedforward": 3, "dropout": 0.0,
                "batch_first": draw(st.booleans()), "norm_first": draw(st.booleans()),
                "activation": draw(st.sampled_from(("relu", "gelu")))}
        L, N = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        shape = (N, L, 4) if ctor["batch_first"] else (L, N, 4)
        inputs = (array(draw, shape, dt),)
        kw = {"ctor": ctor}
        if cls == "TransformerDecoderLayer":
            Sn = draw(st.integers(1, 3))
            inputs += (array(draw, (N, Sn, 4) if ctor["batch_first"] else (Sn, N, 4), dt),)
            if draw(st.booleans()):
                kw["tgt_mask"] = np.triu(np.full((L, L), -np.inf, dt), 1)
                kw["tgt_is_causal"] = True
        elif draw(st.booleans()):
            m = np.zeros((N, L), bool)
            m[:, 1:] = draw(st.booleans())
            kw["src_key_padding_mask"] = m
        # LayerNorm's gradient is ill-conditioned near constant rows: moderate weights
        return Sample(inputs + _params(draw, dt, cls, ctor, scale=0.8), kw)
    return family(build)


add(OpInfo("nn.MultiheadAttention", _module_fn("MultiheadAttention", 3),
           torch_op=_module_fn("MultiheadAttention", 3, torch_side=True) if torch else None,
           torch_reason="torch is not installed", samples=family(_mha_family)),
    OpInfo("nn.TransformerEncoderLayer", _module_fn("TransformerEncoderLayer", 1),
           torch_op=_module_fn("TransformerEncoderLayer", 1, torch_side=True) if torch
           else None, torch_reason="torch is not installed",
           samples=_layer_family("TransformerEncoderLayer"), grad_atol=1e-4),
    OpInfo("nn.TransformerDecoderLayer", _module_fn("TransformerDecoderLayer", 2),
           torch_op=_module_fn("TransformerDecoderLayer", 2, torch_side=True) if torch
           else None, torch_reason="torch is not installed",
           samples=_layer_family("TransformerDecoderLayer"), grad_atol=1e-4),
    )
