"""torch.nn's module classes through the look-alike, each against torch itself (the coverage
table, docs/pytorch-coverage.md, reads these test ids: the parameter is the full torch name).

For each class the look-alike provides, one case: the module built with the same arguments on
both sides, torch's parameters and buffers loaded into the look-alike's (strict: the same state
dict keys), the same inputs; then held equal, in float64 (1e-10) and float32 (1e-5): the outputs
(every tensor of a tuple), the gradient of every float input and every parameter for a random
weighting of the outputs, the buffers after the call (running statistics), and, for modules that
behave differently in training, the same again in eval mode. Modules that draw random numbers
(dropout) are compared in eval mode, and in training mode by what both must do whatever the
draws: zeros or the input times 1/(1-p). Classes only meant to be derived from (RNNBase) are
compared by what torch's say of them: the same subclasses.

A case for a class the look-alike does not have yet is written here all the same and runs as
soon as the class lands (nothing to add then).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import tinygradx.compat as compat

torch = pytest.importorskip("torch")

LOOK = compat.torch
TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}


@dataclass
class Case:
    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    inputs: tuple = ((2, 3, 4),)    # per input: a shape (normal floats) or a (kind, ...) spec
    train: bool = True              # also compare in training mode (else eval only)
    random: bool = False            # training mode draws random numbers (dropout)
    grad: bool = True               # outputs are differentiable
    tol: float = 1.0                # a factor on the tolerances
    build: object = None            # build(nn) instead of nn.<name>(*args, **kwargs)
    wrt: tuple = None               # the inputs that require grad (default: every float one;
                                    # a loss's: its input only, targets are data)

    def grad_inputs(self):
        if self.wrt is not None:
            return self.wrt
        return (0,) if self.name.endswith("Loss") else None


def _input(spec, rng):
    """A numpy array from a spec: a shape, or ("int", high, shape), ("pos", shape),
    ("prob", shape), ("sign", shape), ("array", values)."""
    if not isinstance(spec[0], str):
        return rng.standard_normal(spec)
    kind = spec[0]
    if kind == "int":
        return rng.integers(0, spec[1], spec[2]).astype(np.int64)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, spec[1])
    if kind == "prob":
        return rng.uniform(0.05, 0.95, spec[1])
    if kind == "sign":
        return rng.choice([-1.0, 1.0], spec[1])
    if kind == "array":
        return np.asarray(spec[1])
    raise ValueError(kind)


def A(*specs):
    return tuple(specs)


LOSS2 = A((4, 5), (4, 5))
CASES = [
    # activations
    Case("ReLU"), Case("ReLU6"), Case("LeakyReLU", (0.1,)), Case("ELU", (0.5,)), Case("SELU"),
    # torch's float64 backward of CELU (alpha != 1) and Hardsigmoid uses float32 constants
    # (1/alpha, 1/6): ~5e-9 off the exact derivative, which tinygradx gives (test_activations)
    Case("CELU", (0.7,), tol=100), Case("GELU"), Case("GELU", kwargs={"approximate": "tanh"}),
    Case("SiLU"), Case("Mish"), Case("Sigmoid"), Case("Tanh"), Case("Hardtanh", (-0.5, 0.7)),
    Case("Hardsigmoid", tol=100), Case("Hardswish"), Case("Hardshrink", (0.3,)),
    Case("Softshrink", (0.3,)), Case("Tanhshrink"), Case("Softsign"),
    Case("Softplus", kwargs={"beta": 2.0, "threshold": 5.0}), Case("LogSigmoid"),
    Case("Threshold", (0.1, 20.0)), Case("PReLU", (3,), inputs=A((2, 3, 4))),
    Case("GLU", (-1,)), Case("Softmax", (1,)), Case("LogSoftmax", (1,)), Case("Softmin", (1,)),
    Case("Softmax2d", inputs=A((2, 3, 4, 5))), Case("Identity"), Case("Flatten"),
    Case("Unflatten", (2, (2, 2))), Case("RReLU", (0.1, 0.3), train=False),
    # linear layers and embeddings
    Case("Linear", (4, 3), inputs=A((2, 4))), Case("Bilinear", (3, 4, 2), inputs=A((2, 3), (2, 4))),
    Case("Embedding", (10, 4), inputs=A(("int", 10, (2, 5)))),
    Case("EmbeddingBag", (10, 4), {"mode": "mean"}, inputs=A(("int", 10, (2, 5)))),
    # convolutions, folding
    Case("Conv1d", (3, 4, 3), inputs=A((2, 3, 8))),
    Case("Conv2d", (3, 4, 3), {"padding": 1}, inputs=A((2, 3, 6, 6))),
    Case("Conv3d", (2, 3, 2), inputs=A((1, 2, 4, 4, 4))),
    Case("ConvTranspose1d", (3, 2, 3), {"stride": 2}, inputs=A((2, 3, 5))),
    Case("ConvTranspose2d", (3, 2, 3), {"stride": 2, "padding": 1}, inputs=A((1, 3, 4, 4))),
    Case("ConvTranspose3d", (2, 2, 2), {"stride": 2}, inputs=A((1, 2, 2, 3, 3))),
    Case("Fold", kwargs={"output_size": (4, 5), "kernel_size": 2}, inputs=A((1, 12, 12))),
    Case("Unfold", kwargs={"kernel_size": 2}, inputs=A((1, 3, 4, 5))),
    # pooling
    Case("MaxPool1d", (2,), inputs=A((2, 3, 8))), Case("MaxPool2d", (2,), inputs=A((2, 3, 4, 6))),
    Case("MaxPool3d", (2,), inputs=A((1, 2, 4, 4, 4))),
    Case("AvgPool1d", (2,), inputs=A((2, 3, 8))), Case("AvgPool2d", (2,), inputs=A((2, 3, 4, 6))),
    Case("AvgPool3d", (2,), inputs=A((1, 2, 4, 4, 4))),
    Case("AdaptiveAvgPool1d", (3,), inputs=A((2, 3, 7))),
    Case("AdaptiveAvgPool2d", ((2, 3),), inputs=A((2, 3, 5, 7))),
    Case("AdaptiveAvgPool3d", (2,), inputs=A((1, 2, 4, 5, 3))),
    Case("AdaptiveMaxPool1d", (3,), inputs=A((2, 3, 7))),
    Case("AdaptiveMaxPool2d", ((2, 3),), inputs=A((2, 3, 5, 7))),
    Case("AdaptiveMaxPool3d", (2,), inputs=A((1, 2, 4, 5, 3))),
    Case("LPPool1d", (2, 2), inputs=A((2, 3, 8))), Case("LPPool2d", (2, 2), inputs=A((2, 3, 4, 6))),
    Case("LPPool3d", (2, 2), inputs=A((1, 2, 4, 4, 4))),
    # padding
    Case("ZeroPad1d", ((1, 2),), inputs=A((2, 3, 4))),
    Case("ZeroPad2d", ((1, 2, 0, 1),), inputs=A((2, 3, 4))),
    Case("ZeroPad3d", (1,), inputs=A((1, 2, 2, 3, 3))),
    Case("ConstantPad1d", ((1, 2), 0.5), inputs=A((2, 3, 4))),
    Case("ConstantPad2d", ((1, 2, 0, 1), -1.0), inputs=A((2, 3, 4))),
    Case("ConstantPad3d", (1, 2.0), inputs=A((1, 2, 2, 3, 3))),
    Case("ReflectionPad1d", ((1, 2),), inputs=A((2, 3, 4))),
    Case("ReflectionPad2d", ((1, 2, 0, 1),), inputs=A((2, 3, 4))),
    Case("ReflectionPad3d", (1,), inputs=A((1, 2, 2, 3, 3))),
    Case("ReplicationPad1d", ((1, 2),), inputs=A((2, 3, 4))),
    Case("ReplicationPad2d", ((1, 2, 0, 1),), inputs=A((2, 3, 4))),
    Case("ReplicationPad3d", (1,), inputs=A((1, 2, 2, 3, 3))),
    Case("CircularPad1d", ((1, 2),), inputs=A((2, 3, 4))),
    Case("CircularPad2d", ((1, 2, 0, 1),), inputs=A((2, 3, 4))),
    Case("CircularPad3d", (1,), inputs=A((1, 2, 2, 3, 3))),
    # normalization (train: batch statistics and the running ones after; then eval)
    Case("BatchNorm1d", (3,), inputs=A((4, 3, 5))),
    Case("BatchNorm2d", (3,), {"momentum": None}, inputs=A((4, 3, 2, 2))),
    Case("BatchNorm3d", (2,), inputs=A((2, 2, 2, 2, 3))),
    Case("GroupNorm", (2, 4), inputs=A((2, 4, 3))),
    Case("InstanceNorm1d", (3,), {"affine": True}, inputs=A((2, 3, 5))),
    Case("InstanceNorm2d", (3,), {"track_running_stats": True}, inputs=A((2, 3, 4, 4))),
    Case("InstanceNorm3d", (2,), inputs=A((2, 2, 2, 3, 3))),
    Case("LayerNorm", (4,)), Case("RMSNorm", (4,)),
    Case("LocalResponseNorm", (2,), inputs=A((2, 4, 3, 3))),
    Case("CrossMapLRN2d", (3,), inputs=A((2, 4, 3, 3))),
    # dropout (random in training mode)
    Case("Dropout", (0.4,), random=True), Case("Dropout1d", (0.4,), random=True),
    Case("Dropout2d", (0.4,), random=True, inputs=A((2, 3, 4, 4))),
    Case("Dropout3d", (0.4,), random=True, inputs=A((2, 3, 2, 2, 2))),
    Case("AlphaDropout", (0.4,), random=True),
    Case("FeatureAlphaDropout", (0.4,), random=True, inputs=A((2, 3, 4, 4))),
    # recurrent
    Case("RNN", (3, 4), {"num_layers": 2}, inputs=A((5, 2, 3))),
    Case("LSTM", (3, 4), {"batch_first": True, "bidirectional": True}, inputs=A((2, 5, 3))),
    Case("GRU", (3, 4), inputs=A((5, 2, 3))),
    Case("RNNCell", (3, 4), inputs=A((2, 3))), Case("LSTMCell", (3, 4), inputs=A((2, 3))),
    Case("GRUCell", (3, 4), inputs=A((2, 3))),
    # attention and Transformer blocks (no dropout, so training mode is deterministic)
    Case("MultiheadAttention", (8, 2), inputs=A((3, 2, 8), (4, 2, 8), (4, 2, 8))),
    Case("TransformerEncoderLayer", (8, 2, 16, 0.0), inputs=A((3, 2, 8))),
    Case("TransformerDecoderLayer", (8, 2, 16, 0.0), inputs=A((3, 2, 8), (4, 2, 8))),
    Case("TransformerEncoder", inputs=A((3, 2, 8)), build=lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, 0.0), num_layers=2, enable_nested_tensor=False)),
    Case("TransformerDecoder", inputs=A((3, 2, 8), (4, 2, 8)), build=lambda nn:
         nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, 0.0), num_layers=2)),
    Case("Transformer", kwargs=dict(d_model=8, nhead=2, num_encoder_layers=1,
                                    num_decoder_layers=1, dim_feedforward=16, dropout=0.0),
         inputs=A((4, 2, 8), (3, 2, 8))),
    # shuffles and resizing
    Case("ChannelShuffle", (2,), inputs=A((1, 4, 2, 2))),
    Case("PixelShuffle", (2,), inputs=A((1, 8, 2, 3))),
    Case("PixelUnshuffle", (2,), inputs=A((1, 2, 4, 6))),
    Case("Upsample", kwargs={"scale_factor": 2, "mode": "nearest"}, inputs=A((1, 2, 3, 3))),
    Case("UpsamplingNearest2d", kwargs={"scale_factor": 2}, inputs=A((1, 2, 3, 3))),
    Case("UpsamplingBilinear2d", kwargs={"scale_factor": 2}, inputs=A((1, 2, 3, 3))),
    Case("CosineSimilarity", kwargs={"dim": 1}, inputs=LOSS2),
    Case("PairwiseDistance", inputs=LOSS2),
    # losses
    Case("L1Loss", inputs=LOSS2, wrt=(0, 1)), Case("MSELoss", inputs=LOSS2, wrt=(0, 1)),
    Case("HuberLoss", kwargs={"delta": 0.5}, inputs=LOSS2),
    Case("SmoothL1Loss", kwargs={"beta": 0.5}, inputs=LOSS2),
    Case("CrossEntropyLoss", kwargs={"label_smoothing": 0.1}, inputs=A((4, 5), ("int", 5, (4,)))),
    Case("NLLLoss", inputs=A((4, 5), ("int", 5, (4,)))),
    Case("NLLLoss2d", inputs=A((2, 5, 2, 2), ("int", 5, (2, 2, 2)))),
    Case("BCELoss", inputs=A(("prob", (4, 5)), ("prob", (4, 5)))),
    Case("BCEWithLogitsLoss", inputs=A((4, 5), ("prob", (4, 5)))),
    Case("KLDivLoss", kwargs={"reduction": "batchmean"}, inputs=A((4, 5), ("prob", (4, 5)))),
    Case("SoftMarginLoss", inputs=A((4, 5), ("sign", (4, 5)))),
    Case("MultiLabelSoftMarginLoss", inputs=A((4, 5), ("int", 2, (4, 5)))),
    Case("MultiLabelMarginLoss", inputs=A((2, 4), ("array", [[3, 0, -1, 1], [1, 2, 3, -1]]))),
    Case("MultiMarginLoss", inputs=A((4, 5), ("int", 5, (4,)))),
    Case("MarginRankingLoss", kwargs={"margin": 0.1}, wrt=(0, 1),
         inputs=A((6,), (6,), ("sign", (6,)))),
    Case("HingeEmbeddingLoss", inputs=A((4, 5), ("sign", (4, 5)))),
    Case("CosineEmbeddingLoss", wrt=(0, 1), inputs=A((4, 5), (4, 5), ("sign", (4,)))),
    Case("TripletMarginLoss", wrt=(0, 1, 2), inputs=A((4, 5), (4, 5), (4, 5))),
    Case("TripletMarginWithDistanceLoss", wrt=(0, 1, 2), inputs=A((4, 5), (4, 5), (4, 5))),
    Case("PoissonNLLLoss", inputs=A((4, 5), ("pos", (4, 5)))),
    Case("GaussianNLLLoss", wrt=(0, 2), inputs=A((4, 5), (4, 5), ("pos", (4, 5)))),
    Case("CTCLoss", inputs=A(("logsoftmax", (6, 2, 4)), ("array", [[1, 2, 1], [3, 1, 0]]),
                             ("array", [6, 5]), ("array", [3, 2]))),
    Case("AdaptiveLogSoftmaxWithLoss", (6, 10, [4, 7]), inputs=A((5, 6), ("int", 10, (5,)))),
]
ABSTRACT = {"Module": (), "RNNBase": ("RNN", "LSTM", "GRU"),
            "RNNCellBase": ("RNNCell", "LSTMCell", "GRUCell")}


def _ids(case):
    extra = "-".join(f"{k}={v}" for k, v in case.kwargs.items() if k == "approximate")
    return f"torch.nn.{case.name}" + (f"({extra})" if extra else "")


def _arrays(case):
    rng = np.random.default_rng(abs(hash(_ids(case))) % 2**32)
    out = []
    for spec in case.inputs:
        if spec[0] == "logsoftmax":
            a = rng.standard_normal(spec[1])
            out.append(a - np.log(np.exp(a).sum(-1, keepdims=True)))
        else:
            out.append(_input(spec, rng))
    return out


def _tensors(ns, arrays, dtype, wrt=None):
    out = []
    for i, a in enumerate(arrays):
        if a.dtype.kind == "f":
            out.append(ns.tensor(a.astype(dtype),
                                 requires_grad=wrt is None or i in wrt))
        else:
            out.append(ns.tensor(a))
    return out


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [] if out is None else [out]


def _np(t):
    return t.detach().numpy()


def _state(m):
    return {k: v.detach().numpy() for k, v in m.state_dict().items()}


def _pair(case, dtype):
    """The torch module and the look-alike's, with torch's state loaded into it."""
    if case.build is not None:
        theirs, mine = case.build(torch.nn), case.build(LOOK.nn)
    else:
        theirs = getattr(torch.nn, case.name)(*case.args, **case.kwargs)
        mine = getattr(LOOK.nn, case.name)(*case.args, **case.kwargs)
    if dtype == np.float64:
        theirs, mine = theirs.double(), mine.double()
    else:
        theirs, mine = theirs.float(), mine.float()
    state = _state(theirs)
    assert list(_state(mine)) == list(state), "state dict keys differ from torch's"
    mine.load_state_dict(state)
    return theirs, mine


def _compare_call(case, theirs, mine, dtype, what):
    arrays = _arrays(case)
    tol = {k: v * case.tol for k, v in TOL[dtype].items()}
    wrt = case.grad_inputs()
    xs_t, xs_m = _tensors(torch, arrays, dtype, wrt), _tensors(LOOK, arrays, dtype, wrt)
    outs_t, outs_m = _flat(theirs(*xs_t)), _flat(mine(*xs_m))
    assert len(outs_m) == len(outs_t), f"{what}: {len(outs_m)} outputs, torch {len(outs_t)}"
    for i, (o, t) in enumerate(zip(outs_m, outs_t, strict=True)):
        assert str(o.dtype) == str(t.dtype).replace("torch.", ""), f"{what} output {i} dtype"
        np.testing.assert_allclose(_np(o), _np(t), err_msg=f"{what} output {i}", **tol)
    for k, v in _state(theirs).items():
        np.testing.assert_allclose(_state(mine)[k], v, err_msg=f"{what}: buffer {k}", **tol)
    if not case.grad:
        return
    rng = np.random.default_rng(1)
    pairs = [(o, t) for o, t in zip(outs_m, outs_t, strict=True) if t.requires_grad]
    weights = [rng.standard_normal(tuple(t.shape)).astype(dtype) for _, t in pairs]
    sum(((t * torch.tensor(w)).sum() for (_, t), w in zip(pairs, weights, strict=True)),
        torch.zeros((), dtype=pairs[0][1].dtype)).backward()
    sum(((o * LOOK.tensor(w)).sum() for (o, _), w in zip(pairs, weights, strict=True)),
        LOOK.zeros((), dtype=dtype)).backward()
    for i, (x, t) in enumerate(zip(xs_m, xs_t, strict=True)):
        if t.grad is not None:
            np.testing.assert_allclose(_np(x.grad), _np(t.grad),
                                       err_msg=f"{what}: input {i}'s gradient", **tol)
    grads = dict(mine.named_parameters())
    for name, p in theirs.named_parameters():
        if p.grad is not None:
            np.testing.assert_allclose(_np(grads[name].grad), _np(p.grad),
                                       err_msg=f"{what}: {name}'s gradient", **tol)


def _random_training_call(case, mine, dtype):
    """Dropout in training mode, whatever the draws: each output is 0 or the input times
    1/(1-p), whole channels at a time for Dropout1d/2d/3d, and the gradient is the same mask
    times the same scale (alpha dropouts: the shape and dtype only)."""
    x = _arrays(case)[0].astype(dtype)
    xt = LOOK.tensor(x, requires_grad=True)
    y = mine(xt)
    assert tuple(y.shape) == x.shape and str(y.dtype) == np.dtype(dtype).name
    if "Alpha" in case.name:
        return
    p = case.args[0]
    yv, scale = _np(y), 1.0 / (1.0 - p)
    kept = np.abs(yv) > 0
    np.testing.assert_allclose(yv[kept], x[kept] * scale, rtol=1e-6)
    if case.name != "Dropout":
        per_channel = kept.reshape(x.shape[0], x.shape[1], -1)
        assert (per_channel.all(-1) | ~per_channel.any(-1)).all(), "a channel partly dropped"
    y.sum().backward()
    np.testing.assert_allclose(_np(xt.grad), kept * scale, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("case", [pytest.param(c, id=_ids(c)) for c in CASES
                                  if LOOK.nn.provides(c.name)])
def test_module(case, dtype):
    torch.manual_seed(0)
    theirs, mine = _pair(case, dtype)
    if case.train and not case.random:
        _compare_call(case, theirs, mine, dtype, "train mode")
    elif case.random:
        _random_training_call(case, mine, dtype)
    theirs.eval()
    mine.eval()
    _compare_call(case, theirs, mine, dtype, "eval mode")


@pytest.mark.parametrize("name", [f"torch.nn.{n}" for n in ABSTRACT
                                  if LOOK.nn.provides(n)])
def test_module_base_class(name):
    """A base class: the same subclasses as torch's, and a Module subclass as torch's."""
    leaf = name.rpartition(".")[2]
    mine, theirs = getattr(LOOK.nn, leaf), getattr(torch.nn, leaf)
    for sub in ABSTRACT[leaf]:
        if LOOK.nn.provides(sub):
            assert issubclass(getattr(LOOK.nn, sub), mine) == issubclass(getattr(torch.nn, sub),
                                                                          theirs)
    assert issubclass(mine, LOOK.nn.Module)


# -- Module and the containers: the same structure as torch's ---------------------------------

def _tree(ns):
    """One model built with every container, written against torch's names."""
    nn = ns.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4))
            self.heads = nn.ModuleList([nn.Linear(4, 2) for _ in range(2)])
            self.extra = nn.ModuleDict({"a": nn.Linear(4, 1), "b": nn.Identity()})
            self.scales = nn.ParameterList([nn.Parameter(ns.ones(2) * (i + 1)) for i in range(2)])
            self.shifts = nn.ParameterDict({"x": nn.Parameter(ns.zeros(1))})
            self.register_buffer("steps", ns.zeros(1))

        def forward(self, x):
            h = self.body(x)
            out = sum(head(h) * s for head, s in zip(self.heads, self.scales, strict=True))
            return out + self.extra["a"](self.extra["b"](h)) + self.shifts["x"]
    return Net()


def _structure(ns, net):
    return dict(
        state=list(net.state_dict()), params=[n for n, _ in net.named_parameters()],
        modules=[n for n, _ in net.named_modules()], children=[n for n, _ in
                                                                 net.named_children()],
        buffers=[n for n, _ in net.named_buffers()], seq_len=len(net.body),
        seq_slice=[type(m).__name__ for m in net.body[1:]], list_len=len(net.heads),
        dict_keys=list(net.extra.keys()), plist_len=len(net.scales),
        pdict_keys=list(net.shifts.keys()), training=[m.training for m in net.modules()])


CONTAINERS = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
              "ParameterDict"]


@pytest.mark.parametrize("name", [f"torch.nn.{n}" for n in CONTAINERS if LOOK.nn.provides(n)])
def test_container(name):
    """Module and the containers: one model using all of them has torch's state dict keys,
    parameter, module and buffer names, lengths, slices and keys; given torch's weights, the
    same output and gradients; eval() reaches every module."""
    torch.manual_seed(0)
    theirs, mine = _tree(torch), _tree(LOOK)
    assert _structure(LOOK, mine) == _structure(torch, theirs)
    mine.load_state_dict(_state(theirs))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    yt, ym = theirs(torch.tensor(x)), mine(LOOK.tensor(x))
    np.testing.assert_allclose(_np(ym), _np(yt), rtol=1e-5, atol=1e-6)
    yt.sum().backward()
    ym.sum().backward()
    grads = dict(mine.named_parameters())
    for n, p in theirs.named_parameters():
        np.testing.assert_allclose(_np(grads[n].grad), _np(p.grad), rtol=1e-5, atol=1e-6,
                                   err_msg=n)
    theirs.eval()
    mine.eval()
    assert _structure(LOOK, mine) == _structure(torch, theirs)


def _tied(ns):
    class Tied(ns.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = ns.nn.Embedding(7, 4)
            self.head = ns.nn.Linear(4, 7, bias=False)
            self.head.weight = self.emb.weight             # weight tying, as GPTs do
    return Tied()


def test_a_tied_models_torch_state_dict_loads_strictly():
    """PyTorch lists a tied weight under each name (tinygradx under the first): its state dict
    loads strictly all the same, under either name, into the one shared parameter."""
    torch.manual_seed(0)
    theirs, mine = _tied(torch), _tied(LOOK)
    state = {k: arr.detach().numpy() for k, arr in theirs.state_dict().items()}
    assert sorted(state) == ["emb.weight", "head.weight"]
    result = mine.load_state_dict(state)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    np.testing.assert_array_equal(_np(mine.head.weight), state["head.weight"])
    assert mine.head.weight is mine.emb.weight
    only_alias = {"head.weight": state["emb.weight"] * 2}
    mine.load_state_dict(only_alias)
    np.testing.assert_array_equal(_np(mine.emb.weight), state["emb.weight"] * 2)
    with pytest.raises(KeyError, match="unexpected key 'tail.weight'"):
        mine.load_state_dict(dict(state, **{"tail.weight": state["emb.weight"]}))


def _shared(ns):
    class Shared(ns.nn.Module):
        def __init__(self):
            super().__init__()
            norm = ns.nn.BatchNorm1d(3)                   # buffers too
            self.a = norm
            self.b = ns.nn.Sequential(ns.nn.Linear(3, 3), norm)    # the same module again
    return Shared()


def test_a_shared_modules_torch_state_dict_loads_strictly():
    """A module held by two parents: PyTorch lists its parameters and buffers under both paths,
    and its state dict loads strictly here, each entry into the one tensor."""
    torch.manual_seed(0)
    theirs, mine = _shared(torch), _shared(LOOK)
    theirs.b(torch.randn(5, 3))                            # running statistics, not the defaults
    state = {k: arr.detach().numpy() for k, arr in theirs.state_dict().items()}
    assert "a.running_mean" in state and "b.1.running_mean" in state
    result = mine.load_state_dict(state)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert mine.b[1] is mine.a
    for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_array_equal(_np(getattr(mine.a, name)), state[f"b.1.{name}"])
    np.testing.assert_array_equal(_np(mine.b[0].weight), state["b.0.weight"])
