"""torch's layers on tinygradx (conv_layers.py, rnn.py, transformer_layers.py): each module
loads a torch state dict of the same construction as it is (same names, same order) and gives
the same outputs and gradients (input and every parameter), in float64 to 1e-10 and float32 to
1e-5; plus what torch does without a comparison (init bounds, errors, second derivatives)."""
import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn

torch = pytest.importorskip("torch")

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}


def _pair(cls, dtype, *args, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(*args, **kwargs)
    mine = getattr(nn, cls)(*args, **kwargs)
    if dtype == np.float64:
        theirs, mine = theirs.double(), mine.double()
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert list(state) == list(mine.state_dict())
    assert [n for n, _ in theirs.named_parameters()] == [n for n, _ in mine.named_parameters()]
    missing, unexpected = mine.load_state_dict(state)
    assert not missing and not unexpected
    return theirs, mine


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [] if out is None else [out]


def _compare(theirs, mine, inputs, dtype, call=lambda m, *xs, **kw: m(*xs, **kw), **kw):
    """Same outputs, and the same gradients of sum(out * sin(out)) wrt inputs and parameters."""
    tt = [torch.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray)
          else a for a in inputs]
    mt = [tgx.Tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray)
          else a for a in inputs]
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    mkw = {k: tgx.Tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    touts, mouts = _flat(call(theirs, *tt, **tkw)), _flat(call(mine, *mt, **mkw))
    assert len(touts) == len(mouts)
    for t, m in zip(touts, mouts, strict=True):
        assert m.dtype == np.dtype(dtype)
        np.testing.assert_allclose(m.detach().numpy(), t.detach().numpy(), **TOL[dtype])
    sum((t * t.detach().sin()).sum() for t in touts).backward()
    sum((m * m.detach().sin()).sum() for m in mouts).backward()
    for t, m in zip(tt, mt, strict=True):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), **TOL[dtype])
    tp = dict(theirs.named_parameters())
    for name, p in mine.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), err_msg=name,
                                   **TOL[dtype])


def _x(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


DTYPES = (np.float64, np.float32)


# ------------------------------------------------------------------------------------------
# convolution and pooling
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ("zeros", "reflect", "replicate", "circular"))
def test_conv2d_module(dtype, mode):
    theirs, mine = _pair("Conv2d", dtype, 4, 6, (3, 2), stride=(1, 2), padding=1, groups=2,
                         padding_mode=mode)
    _compare(theirs, mine, [_x(2, 4, 7, 6, dtype=dtype)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv1d_module_same_padding(dtype):
    theirs, mine = _pair("Conv1d", dtype, 3, 5, 4, padding="same", dilation=2, bias=False)
    _compare(theirs, mine, [_x(2, 3, 9, dtype=dtype)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_cnn_stack(dtype):
    def build(lib):
        return lib.nn.Sequential(
            lib.nn.Conv2d(1, 4, 3, padding=1), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
            lib.nn.Conv2d(4, 4, 3), lib.nn.ReLU(), lib.nn.AvgPool2d(2, ceil_mode=True),
            lib.nn.AdaptiveAvgPool2d((2, 1)), lib.nn.Upsample(scale_factor=2, mode="bilinear"),
            lib.nn.Flatten(), lib.nn.Linear(32, 3))
    torch.manual_seed(0)
    theirs, mine = build(torch), build(tgx)
    if dtype == np.float64:
        theirs, mine = theirs.double(), mine.double()
    mine.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    _compare(theirs, mine, [_x(2, 1, 11, 10, dtype=dtype)], dtype)


def test_conv_init_and_shapes():
    tgx.manual_seed(0)
    c = nn.Conv2d(6, 8, (3, 5), groups=2)
    assert c.weight.shape == (8, 3, 3, 5) and c.bias.shape == (8,)
    bound = 1 / np.sqrt(3 * 3 * 5)                 # torch: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w = c.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(c.bias.detach().numpy()).max() <= bound


def test_conv_and_pool_errors_name_the_op():
    x = tgx.randn(1, 3, 5, 5)
    with pytest.raises(ValueError, match=r"conv2d: input of shape \(1, 3, 5, 5\) has 3 channels"):
        tgx.functional.conv2d(x, tgx.randn(2, 2, 3, 3))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        tgx.functional.conv2d(x, tgx.randn(2, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(ValueError, match="max_pool2d: the kernel spans 7"):
        tgx.functional.max_pool2d(x, 7)
    with pytest.raises(ValueError, match="at most half of kernel_size"):
        tgx.functional.avg_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="interpolate: mode must be one of .* got 'bicubc'"):
        tgx.functional.interpolate(x, scale_factor=2, mode="bicubc")


def test_conv_second_derivatives():
    rng = np.random.default_rng(0)
    x = tgx.Tensor(rng.standard_normal((1, 2, 4, 5)), requires_grad=True)
    w = tgx.Tensor(rng.standard_normal((2, 1, 2, 3)), requires_grad=True)
    assert tgx.gradgradcheck(lambda x, w: tgx.functional.conv2d(
        x, w, stride=(2, 1), padding=1, dilation=(1, 2), groups=2), (x, w))


# ------------------------------------------------------------------------------------------
# recurrent layers
# ------------------------------------------------------------------------------------------

RNN_CASES = [
    dict(),
    dict(num_layers=2, batch_first=True),
    dict(num_layers=2, bidirectional=True, bias=False),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cls", ("RNN", "GRU", "LSTM"))
@pytest.mark.parametrize("case", range(len(RNN_CASES)))
def test_recurrent(dtype, cls, case):
    kw = RNN_CASES[case]
    theirs, mine = _pair(cls, dtype, 3, 4, **kw)
    L, N = 5, 2
    x = _x(*((N, L, 3) if kw.get("batch_first") else (L, N, 3)), dtype=dtype)
    D = 2 if kw.get("bidirectional") else 1
    h0 = _x(D * kw.get("num_layers", 1), N, 4, dtype=dtype, seed=1)
    if cls == "LSTM":
        c0 = _x(D * kw.get("num_layers", 1), N, 4, dtype=dtype, seed=2)
        _compare(theirs, mine, [x, h0, c0], dtype, call=lambda m, x, h, c: m(x, (h, c)))
    else:
        _compare(theirs, mine, [x, h0], dtype)
    theirs.zero_grad()
    mine.zero_grad()
    _compare(theirs, mine, [x], dtype)                   # zero initial state


@pytest.mark.parametrize("cls", ("RNN", "GRU", "LSTM"))
def test_recurrent_unbatched_and_relu(cls):
    kw = {"nonlinearity": "relu"} if cls == "RNN" else {}
    theirs, mine = _pair(cls, np.float64, 3, 2, num_layers=2, **kw)
    _compare(theirs, mine, [_x(4, 3)], np.float64)


@pytest.mark.parametrize("cls", ("RNNCell", "GRUCell", "LSTMCell"))
def test_cells(cls):
    theirs, mine = _pair(cls, np.float64, 3, 4)
    x, h = _x(2, 3), _x(2, 4, seed=1)
    if cls == "LSTMCell":
        _compare(theirs, mine, [x, h, _x(2, 4, seed=2)], np.float64,
                 call=lambda m, x, h, c: m(x, (h, c)))
    else:
        _compare(theirs, mine, [x, h], np.float64)
    theirs.zero_grad()
    mine.zero_grad()
    _compare(theirs, mine, [x[0]], np.float64)           # unbatched, zero state


def test_lstm_dropout_between_layers_and_second_derivatives():
    tgx.manual_seed(0)
    m = nn.LSTM(2, 3, num_layers=2, dropout=0.5)
    x = tgx.randn(4, 1, 2)
    a, b = m(x)[0], m(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())         # dropout while training
    m.eval()
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())
    small = nn.GRU(2, 2).double()
    xs = tgx.Tensor(np.random.default_rng(0).standard_normal((3, 1, 2)), requires_grad=True)
    assert tgx.gradgradcheck(lambda x: small(x)[0], (xs,))


def test_recurrent_init_and_errors():
    tgx.manual_seed(0)
    m = nn.LSTM(3, 4, bidirectional=True)
    assert m.weight_ih_l0_reverse.shape == (16, 3) and m.bias_hh_l0.shape == (16,)
    assert np.abs(m.weight_hh_l0.detach().numpy()).max() <= 0.5    # U(-1/sqrt(4), 1/sqrt(4))
    with pytest.raises(ValueError, match="LSTM: input has 2 features, expected input_size=3"):
        m(tgx.randn(5, 1, 2))
    with pytest.raises(ValueError, match=r"initial state has shape \(1, 1, 4\)"):
        m(tgx.randn(5, 1, 3), (tgx.zeros(1, 1, 4), tgx.zeros(1, 1, 4)))
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=2)


# ------------------------------------------------------------------------------------------
# MultiheadAttention and the Transformer modules
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first", (False, True))
@pytest.mark.parametrize("kdim", (None, 3))
def test_multihead_attention(dtype, batch_first, kdim):
    theirs, mine = _pair("MultiheadAttention", dtype, 8, 2, batch_first=batch_first,
                         kdim=kdim, vdim=kdim)
    L, S, N = 4, 5, 3
    seq = (lambda n, d: (N, n, d)) if batch_first else (lambda n, d: (n, N, d))
    q, k = _x(*seq(L, 8), dtype=dtype), _x(*seq(S, kdim or 8), dtype=dtype, seed=1)
    rng = np.random.default_rng(0)
    bool_mask = rng.random((L, S)) < 0.4
    bool_mask[:, 0] = False
    padding = np.zeros((N, S), bool)
    padding[0, -2:] = True
    for kw in (dict(), dict(attn_mask=bool_mask), dict(key_padding_mask=padding,
                                                       average_attn_weights=False),
               dict(attn_mask=_x(N * 2, L, S, dtype=dtype, seed=3), key_padding_mask=padding),
               dict(need_weights=False)):
        theirs.zero_grad()
        mine.zero_grad()
        _compare(theirs, mine, [q, k, k], dtype, **kw)


def test_multihead_attention_unbatched_and_errors():
    theirs, mine = _pair("MultiheadAttention", np.float64, 4, 2)
    _compare(theirs, mine, [_x(3, 4), _x(2, 4, seed=1), _x(2, 4, seed=2)], np.float64)
    with pytest.raises(ValueError, match="is_causal=True is a hint that needs"):
        mine(tgx.randn(3, 1, 4), tgx.randn(3, 1, 4), tgx.randn(3, 1, 4), is_causal=True)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(5, 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first", (False, True))
@pytest.mark.parametrize("norm_first", (False, True))
def test_transformer(dtype, batch_first, norm_first):
    theirs, mine = _pair("Transformer", dtype, d_model=8, nhead=2, num_encoder_layers=2,
                         num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
                         batch_first=batch_first, norm_first=norm_first,
                         activation="gelu" if norm_first else "relu")
    S, T, N = 5, 4, 3
    src = _x(*((N, S, 8) if batch_first else (S, N, 8)), dtype=dtype)
    tgt = _x(*((N, T, 8) if batch_first else (T, N, 8)), dtype=dtype, seed=1)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    mask_m = nn.Transformer.generate_square_subsequent_mask(T, dtype=np.float64)
    np.testing.assert_array_equal(mask_m.detach().numpy(), mask_t.detach().numpy())
    padding = np.zeros((N, S), bool)
    padding[0, -2:] = True
    _compare(theirs, mine, [src, tgt], dtype, tgt_mask=mask_m.detach().numpy().astype(dtype),
             src_key_padding_mask=padding, memory_key_padding_mask=padding,
             tgt_is_causal=True)


@pytest.mark.parametrize("norm", (False, True))
def test_encoder_and_decoder_stacks(norm):
    torch.manual_seed(0)
    t_enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
        8, 2, 16, 0.0), 2, norm=torch.nn.LayerNorm(8) if norm else None,
        enable_nested_tensor=False).double()
    m_enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2,
                                  norm=nn.LayerNorm(8) if norm else None).double()
    m_enc.load_state_dict({k: v.detach().numpy() for k, v in t_enc.state_dict().items()})
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    _compare(t_enc, m_enc, [_x(5, 2, 8)], np.float64, mask=mask)
    t_dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, 16, 0.0), 2)
    m_dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, 0.0), 2)
    t_dec, m_dec = t_dec.double(), m_dec.double()
    m_dec.load_state_dict({k: v.detach().numpy() for k, v in t_dec.state_dict().items()})
    _compare(t_dec, m_dec, [_x(4, 2, 8), _x(5, 2, 8, seed=1)], np.float64,
             tgt_mask=np.triu(np.full((4, 4), -np.inf), 1))


def test_transformer_eval_matches_torch_fast_path():
    """torch's encoder takes its nested-tensor fast path in eval under no_grad (batch first,
    padding given); the math is the same."""
    theirs, mine = _pair("Transformer", np.float32, d_model=8, nhead=2, num_encoder_layers=1,
                         num_decoder_layers=1, dim_feedforward=16, batch_first=True)
    assert theirs.encoder.use_nested_tensor
    theirs.eval()
    mine.eval()
    src, tgt = _x(2, 5, 8, dtype=np.float32), _x(2, 4, 8, dtype=np.float32, seed=1)
    padding = np.zeros((2, 5), bool)
    padding[1, 3:] = True
    with torch.no_grad():
        want = theirs(torch.tensor(src), torch.tensor(tgt),
                      src_key_padding_mask=torch.tensor(padding),
                      memory_key_padding_mask=torch.tensor(padding)).detach().numpy()
    got = mine(tgx.Tensor(src), tgx.Tensor(tgt), src_key_padding_mask=tgx.Tensor(padding),
               memory_key_padding_mask=tgx.Tensor(padding)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_torch_modules_are_nn_layers_and_draw():
    """linear1 / out_proj are nn.Linear (isinstance-based init code finds them), and the
    graph tools draw an unrolled LSTM."""
    from tinygradx.graph import viz as viz
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    assert isinstance(layer.linear1, nn.Linear) and isinstance(layer.self_attn.out_proj,
                                                               nn.Linear)
    assert isinstance(layer.norm1, nn.LayerNorm) and isinstance(layer.dropout, nn.Dropout)
    lstm = nn.LSTM(2, 3)
    out, _ = lstm(tgx.randn(3, 1, 2))
    dot = viz.to_dot_source(out.sum())
    assert "sigmoid" in dot and "tanh" in dot


@pytest.mark.parametrize("build", [
    lambda **f: nn.Conv1d(2, 3, 3, **f), lambda **f: nn.GRU(2, 3, **f),
    lambda **f: nn.LSTMCell(2, 3, **f), lambda **f: nn.MultiheadAttention(4, 2, **f),
    lambda **f: nn.Transformer(8, 2, 1, 1, 16, **f)])
def test_factory_arguments(build):
    """device='cpu' and dtype= as in torch; another device is refused by name."""
    m = build(device="cpu", dtype=tgx.float64)
    assert {p.dtype for p in m.parameters()} == {np.dtype(np.float64)}
    with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
        build(device="cuda")
