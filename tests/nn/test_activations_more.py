"""The rest of torch's activations (functional/activations.py, nn/activation_layers.py), the
in-place forms of every activation, F.embedding_bag / F.bilinear and nn.Bilinear,
nn.EmbeddingBag, nn.CosineSimilarity, nn.Container, nn.RNNBase, nn.RNNCellBase
(nn/more_layers.py, nn/rnn.py) against torch: values, gradients, dtypes, in-place semantics,
warnings and refusals. Random shapes, gradcheck and gradgradcheck are the op table's
(tests/opinfo_nn_more.py); module-by-module comparisons tests/compat/test_surface_nn.py's."""
import math
import warnings

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import nn
from oracle import requires_torch, same, torch

pytestmark = requires_torch

X = [-4.0, -3.0, -1.2, -0.5, 0.0, 0.3, 1.0, 3.0, 4.5]


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.celu(m.tensor(X), 0.7),
    lambda m: m.nn.functional.hardsigmoid(m.tensor(X)),
    lambda m: m.nn.functional.hardswish(m.tensor(X, dtype=m.float64)),
    lambda m: m.nn.functional.softsign(m.tensor([-2, 0, 3])),              # int -> float
    lambda m: m.nn.functional.tanhshrink(m.tensor([-2, 0, 3])),
    lambda m: m.nn.functional.softshrink(m.tensor(X), 1.0),
    lambda m: m.nn.functional.threshold(m.tensor([-2, 0, 3]), 0, 5),        # int stays int
    lambda m: m.nn.functional.threshold(m.tensor(X), 0.5, -9.0),
    lambda m: m.nn.functional.glu(m.arange(8.0).reshape(2, 4), 0),
    lambda m: m.nn.functional.prelu(m.tensor(-1.0), m.tensor([0.5])),
    lambda m: m.nn.functional.prelu(m.tensor([-1.0, 2.0]), m.tensor([0.5])),
    lambda m: m.nn.functional.prelu(m.tensor(X).reshape(3, 3), m.tensor(0.3)),
    lambda m: m.nn.functional.softmin(m.tensor(X).reshape(3, 3), 1, dtype=m.float64),
    lambda m: m.nn.functional.rrelu(m.tensor(X)),
    lambda m: m.nn.functional.relu_(m.tensor([-2, 0, 3])),
    lambda m: m.nn.functional.threshold_(m.tensor(X), 0.0, -9.0),
    lambda m: m.nn.functional.hardtanh_(m.tensor(X), -2.0, 2.0),
    lambda m: [repr(a) for a in (
        m.nn.CELU(0.5), m.nn.Hardswish(), m.nn.Softmin(1), m.nn.GLU(), m.nn.Threshold(0.1, 20),
        m.nn.RReLU(), m.nn.Softshrink(), m.nn.Hardshrink(0.2), m.nn.Tanhshrink(),
        m.nn.Softsign(), m.nn.Softmax2d(), m.nn.ReLU(True), m.nn.LeakyReLU(0.2, True),
        m.nn.ELU(inplace=True), m.nn.Hardtanh(inplace=True), m.nn.ReLU6(True),
        m.nn.SiLU(True), m.nn.Mish(True), m.nn.SELU(True), m.nn.Hardsigmoid(True),
        m.nn.Threshold(0.1, 2, True), m.nn.RReLU(0.1, 0.3, True), m.nn.CELU(inplace=True),
        m.nn.ReLU(), m.nn.Bilinear(3, 4, 5, bias=False), m.nn.EmbeddingBag(10, 4),
        m.nn.EmbeddingBag(10, 4, mode="sum", padding_idx=-1), m.nn.CosineSimilarity(),
        m.nn.GRUCell(2, 3, bias=False))],
], ids=lambda c: "")
def test_values_as_torch(call):
    same(lambda m: (lambda r: [s.splitlines()[0].split("  #")[0] for s in r]
                    if isinstance(r, list) else r)(call(m)))


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.celu(m.tensor([1, 2])),
    lambda m: m.nn.functional.celu(m.tensor(X), 0.0),
    lambda m: m.nn.functional.hardsigmoid(m.tensor([1, 2])),
    lambda m: m.nn.functional.hardswish(m.tensor([1, 2])),
    lambda m: m.nn.functional.softshrink(m.tensor(X), -1.0),
    lambda m: m.nn.functional.softshrink(m.tensor([1, 2])),
    lambda m: m.nn.functional.hardshrink(m.tensor([1, 2])),
    lambda m: m.nn.functional.glu(m.ones(2, 3)),
    lambda m: m.nn.functional.glu(m.tensor(1.0)),
    lambda m: m.nn.functional.glu(m.ones(2, 4, dtype=m.int64)),
    lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(2)),
    lambda m: m.nn.functional.prelu(m.tensor([-1.0, 2.0]), m.tensor([0.5, 0.3])),
    lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(3, 1)),
    lambda m: m.nn.functional.rrelu(m.tensor([1, 2]), training=True),
    lambda m: m.nn.functional.rrelu(m.tensor(X), 0.5, 0.1, True),
    lambda m: m.nn.Softmax2d()(m.ones(2, 3)),
    lambda m: m.nn.functional.hardsigmoid(m.ones(3, requires_grad=True), inplace=True),
    lambda m: m.nn.ReLU(inplace=True)(m.ones(3, requires_grad=True)),
    lambda m: m.nn.functional.celu_(m.tensor([1, 2])),
    lambda m: m.nn.functional.embedding_bag(m.tensor([[0, 2]]), m.ones(5, 2),
                                            m.tensor([0, 1])),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0, 2, 1]), m.ones(5, 2)),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0, 2, 1, 4]), m.ones(5, 2),
                                            m.tensor([1, 3])),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0, 2, 1, 4]), m.ones(5, 2),
                                            m.tensor([0, 1]), per_sample_weights=m.ones(4)),
    lambda m: m.nn.functional.embedding_bag(m.tensor([[0, 2]]), m.ones(5, 2), mode="min"),
    lambda m: m.nn.functional.embedding_bag(m.tensor([[0, 7]]), m.ones(5, 2)),
    lambda m: m.nn.functional.embedding_bag(m.tensor([[0.0, 2.0]]), m.ones(5, 2)),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0, 2, 1, 4]), m.ones(5, 2),
                                            m.tensor([0, 3, 1])),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0, 2, 1, 4]), m.ones(5, 2),
                                            m.tensor([0, 6])),
    lambda m: m.nn.functional.embedding_bag(m.zeros(2, 2, 2, dtype=m.int64), m.ones(5, 2)),
    lambda m: m.nn.EmbeddingBag(10, 4, padding_idx=10),
    lambda m: m.nn.functional.bilinear(m.ones(2, 3), m.ones(3, 4), m.ones(5, 3, 4)),
    lambda m: m.nn.functional.bilinear(m.ones(2, 3), m.ones(2, 4), m.ones(5, 4, 4)),
    lambda m: m.nn.RNNBase("LSTMX", 2, 3),
], ids=lambda c: "")
def test_refusals_as_torch(call):
    same(call)


def test_exact_derivatives_where_torchs_float64_backward_rounds():
    """torch's float64 backward of celu (alpha != 1) and hardsigmoid uses float32 constants;
    tinygradx's is the exact derivative."""
    x = np.array([-2.5, -1.2, -0.3, 0.4, 2.0])
    for fn, exact in ((lambda t: F.celu(t, 0.7), np.where(x > 0, 1, np.exp(x / 0.7))),
                      (F.hardsigmoid, np.full(x.shape, 1 / 6))):
        t = tgx.tensor(x, requires_grad=True)
        fn(t).sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), exact, rtol=0, atol=1e-15)
    tt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.hardsigmoid(tt).sum().backward()
    assert abs(tt.grad.numpy() - 1 / 6).max() > 1e-9          # torch's rounding, measured


INPLACE = [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.5,)), ("SELU", ()),
    ("CELU", (0.7,)), ("SiLU", ()), ("Mish", ()), ("Hardtanh", (-0.5, 0.5)),
    ("Hardsigmoid", ()), ("Hardswish", ()), ("Threshold", (0.1, -2.0)),
    ("RReLU", (0.1, 0.3)), ("Dropout", (0.0,)), ("AlphaDropout", (0.0,))]


@pytest.mark.parametrize("cls, args", INPLACE, ids=[c for c, _ in INPLACE])
def test_inplace_modules_write_into_the_input_and_differentiate_as_torch(cls, args):
    """inplace=True inside a graph: the module returns its input, changed; a view of it sees
    the change; the gradient reaching the weights before it is torch's."""
    def run(m):
        w = m.tensor([[0.5, -1.5, 2.0], [1.0, -0.2, -3.0]], dtype=m.float64,
                     requires_grad=True)
        h = w * 1.5                                    # a non-leaf, as a layer's output
        view = h[1]
        mod = getattr(m.nn, cls)(*args, inplace=True)
        if cls == "RReLU":
            mod.eval()
        y = mod(h)
        out = [y is h, view * 1]
        (y * y).sum().backward()
        return out + [y, w.grad]
    tol = 1e-8 if cls in ("CELU", "Hardsigmoid") else 1e-12      # torch's float32 constants
    same(run, atol=tol, rtol=tol)


def test_inplace_after_an_op_that_saved_its_output_is_refused_as_torch():
    same(lambda m: (lambda a: (lambda y: (m.nn.functional.relu_(y), y.sum().backward()))(
        a.exp()))(m.ones(3, requires_grad=True)))


def test_rrelu_draws_slopes_in_its_range():
    tgx.manual_seed(0)
    x = -tgx.ones(200, 300)
    y = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    slopes = -y
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert slopes.mean() == pytest.approx(0.2, abs=0.002)
    assert slopes.std() == pytest.approx(0.2 / math.sqrt(12), rel=0.03)   # U(0.1, 0.3)
    t = -torch.nn.functional.rrelu(-torch.ones(200, 300), 0.1, 0.3, training=True).numpy()
    assert t.mean() == pytest.approx(0.2, abs=0.002)
    assert np.all(F.rrelu(tgx.ones(5), training=True).numpy() == 1)      # positives kept


def test_softmin_without_dim_warns_as_torch():
    def call(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = m.nn.functional.softmin(m.arange(6.0).reshape(2, 3))
        return [y, len(w)]
    same(call)


def test_embedding_bag_module_and_from_pretrained_as_torch():
    table = np.random.default_rng(0).standard_normal((6, 3))

    def call(m):
        bag = m.nn.EmbeddingBag.from_pretrained(m.tensor(table), mode="max", padding_idx=2)
        ids, offsets = m.tensor([0, 2, 5, 1, 2, 3]), m.tensor([0, 2, 2, 5])
        return [bag(ids, offsets), bag.weight.requires_grad, bag.padding_idx,
                m.nn.EmbeddingBag.from_pretrained(m.tensor(table), freeze=False,
                                                  mode="sum")(m.tensor([[1, 1], [4, 0]])),
                bag.weight.shape]
    same(call)
    bag = nn.EmbeddingBag(7, 2, padding_idx=3)
    assert not bag.weight.detach().numpy()[3].any()
    with pytest.raises(NotImplementedError, match="max_norm"):
        nn.EmbeddingBag(7, 2, max_norm=1.0)(tgx.tensor([[1, 2]]))
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.EmbeddingBag(7, 2, sparse=True)(tgx.tensor([[1, 2]]))


def test_bilinear_initialisation_as_torchs():
    tgx.manual_seed(0)
    ours = nn.Bilinear(20, 30, 40)
    theirs = torch.nn.Bilinear(20, 30, 40)
    bound = 1 / math.sqrt(20)
    for p, q in ((ours.weight, theirs.weight), (ours.bias, theirs.bias)):
        a, b = p.detach().numpy(), q.detach().numpy()
        assert a.shape == b.shape and np.abs(a).max() <= bound and np.abs(b).max() <= bound
    w = ours.weight.detach().numpy()
    assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.03)


def test_container_and_the_recurrent_base_classes_as_torch():
    def call(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = m.nn.Container(a=m.nn.Linear(2, 2), b=m.nn.ReLU())
        base = m.nn.RNNBase("GRU", 2, 3, num_layers=2)
        cell = m.nn.RNNCellBase(2, 3, True, 4)
        return [len(w), [n for n, _ in c.named_children()],
                [n for n, _ in base.named_parameters()], [p.shape for p in cell.parameters()],
                isinstance(m.nn.GRU(2, 3), m.nn.RNNBase),
                isinstance(m.nn.LSTMCell(2, 3), m.nn.RNNCellBase),
                isinstance(m.nn.RNNCell(2, 3), m.nn.RNNCellBase)]
    same(call)


def test_cosine_similarity_module_as_torch():
    x1 = np.random.default_rng(0).standard_normal((4, 5))
    x2 = np.random.default_rng(1).standard_normal((4, 5))

    def call(m):
        a, b = m.tensor(x1, requires_grad=True), m.tensor(x2, requires_grad=True)
        y = m.nn.CosineSimilarity(dim=0, eps=1e-6)(a, b)
        y.sum().backward()
        return [y, a.grad, b.grad]
    same(call, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(6, 10, []),
    lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4, 2]),
    lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4, 10]),
    lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4, 4]),
    lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4])(m.ones(3, 6), m.tensor([1, 10, 2])),
    lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4])(m.ones(3, 6), m.tensor([1, 2])),
    lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4])(m.ones(6), m.tensor([1])),
    lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4])(m.ones(2, 6), m.tensor([[1], [2]])),
], ids=lambda c: "")
def test_adaptive_softmax_refusals_as_torch(call):
    same(call)


def test_adaptive_softmax_as_torch():
    x = np.random.default_rng(0).standard_normal((7, 8))
    t = np.array([0, 2, 5, 9, 12, 19, 3])

    def call(m):
        m.manual_seed(0)
        asm = m.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [3, 10, 15], div_value=2.0,
                                              head_bias=True).double()
        with m.no_grad():                            # the same weights on both sides
            for i, p in enumerate(asm.parameters()):
                p.copy_(m.tensor(np.sin(np.arange(p.numel()) + i).reshape(tuple(p.shape))))
        xt = m.tensor(x, requires_grad=True)
        res = asm(xt, m.tensor(t))
        (res.output.sum() + res.loss).backward()
        return [res.output, res.loss, xt.grad, asm.log_prob(m.tensor(x)),
                asm.predict(m.tensor(x)), list(asm.state_dict()), type(res).__name__,
                asm(m.tensor(x[0]), m.tensor(t[0])).output]
    same(call, atol=1e-12, rtol=1e-12)
